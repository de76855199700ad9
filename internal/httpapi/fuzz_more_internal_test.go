package httpapi

import (
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/internal/apierror"
)

// FuzzLastEventID: any header gives a number; the decimal ids this server
// sends (up to 2^62) come back as themselves, anything else as 0.
func FuzzLastEventID(f *testing.F) {
	for _, s := range []string{"", "0", "1", "1767322245000", "4611686018427387904", "4611686018427387905", "18446744073709551615",
		"99999999999999999999999", "-5", "+5", " 5", "5 ", "0x10", "1e3", "garbage", "1\x00", strings.Repeat("9", 10_000)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		got := lastEventID(v)
		if got > 1<<62 {
			t.Fatalf("lastEventID(%q) = %d, over 2^62", v, got)
		}
		if n, err := strconv.ParseUint(v, 10, 64); err == nil && n <= 1<<62 && v[0] != '+' && len(v) <= 20 {
			if got != n {
				t.Fatalf("lastEventID(%q) = %d, want %d", v, got, n)
			}
		} else if got != 0 {
			t.Fatalf("lastEventID(%q) = %d, want 0 for what the server never sends", v, got)
		}
	})
}

// FuzzQueryParams: limit, after, status and force from any query string are
// either accepted within their ranges or refused with invalid_request.
func FuzzQueryParams(f *testing.F) {
	for _, s := range []string{"", "limit=10", "limit=0", "limit=-1", "limit=1000000", "limit=ten", "limit=", "limit=5&limit=7",
		"after=abc", "after=" + strings.Repeat("x", 300), "status=left", "status=waiting", "status=LEFT", "force=true", "force=1",
		"force=yes", "%zz", "limit=%00", "status=left%00", "limit=+5", "limit=0x10"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		q, err := url.ParseQuery(raw)
		if err != nil {
			return // net/http hands handlers what parses; Query() drops the rest
		}
		check := func(what string, err error) {
			t.Helper()
			if err != nil && waitroom.ErrorCode(err) != waitroom.CodeInvalidRequest {
				t.Fatalf("%s of %q: code %s, want invalid_request", what, raw, waitroom.ErrorCode(err))
			}
		}
		p, err := pageParams(q)
		check("pageParams", err)
		if err == nil && (p.Limit < 1 || p.Limit > waitroom.MaxPageLimit || len(p.After) > maxCursorLen) {
			t.Fatalf("pageParams(%q) = %+v, out of range", raw, p)
		}
		st, err := historyStatus(q)
		check("historyStatus", err)
		if err == nil && st != "" && !st.Final() {
			t.Fatalf("historyStatus(%q) = %q, not a final status", raw, st)
		}
		_, err = forceParam(q)
		check("forceParam", err)
	})
}

// FuzzBearer: only "Bearer " (any case) followed by a token yields a token,
// and it is exactly the rest of the header.
func FuzzBearer(f *testing.F) {
	for _, s := range []string{"", "Bearer", "Bearer ", "Bearer t", "bearer t", "BEARER t", "Basic dXNlcjpwdw==", "Bearer  t", "Bearert", "Bear t", "Bearer\tt"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, h string) {
		tok, ok := bearer(h)
		want := len(h) > 7 && strings.EqualFold(h[:7], "Bearer ")
		if ok != want {
			t.Fatalf("bearer(%q) ok = %v, want %v", h, ok, want)
		}
		if ok && tok != h[7:] {
			t.Fatalf("bearer(%q) = %q, want %q", h, tok, h[7:])
		}
		a := newAdminToken("secret")
		r := httptest.NewRequest("GET", "/", nil)
		r.Header.Set("Authorization", h)
		if right, presented := a.right(r); right != (ok && tok == "secret") || presented != ok {
			t.Fatalf("right with Authorization %q: %v, %v; want right only for the token, presented for any bearer token", h, right, presented)
		}
	})
}

// FuzzHandshake: checkHandshake accepts only a complete version-13 upgrade
// whose Origin, if any, names this host; it refuses with invalid_request or
// forbidden.
func FuzzHandshake(f *testing.F) {
	f.Add("Upgrade", "websocket", "13", "k", "", "waitroom.test")
	f.Add("keep-alive, Upgrade", "WebSocket", "13", "k", "http://waitroom.test", "waitroom.test")
	f.Add("Upgrade", "websocket", "8", "k", "", "waitroom.test")
	f.Add("Upgrade", "websocket", "13", "k", "https://evil.example", "waitroom.test")
	f.Add("close", "h2c", "13", "", "null", "waitroom.test")
	f.Add("Upgrade", "websocket", "13", "k", "http://WAITROOM.test", "waitroom.test")
	f.Fuzz(func(t *testing.T, conn, upg, version, key, origin, host string) {
		r := httptest.NewRequest("GET", "/", nil)
		r.Host = host
		for k, v := range map[string]string{"Connection": conn, "Upgrade": upg, "Sec-WebSocket-Version": version, "Sec-WebSocket-Key": key, "Origin": origin} {
			if v != "" {
				r.Header.Set(k, v)
			}
		}
		err := checkHandshake(r)
		if err != nil {
			if c := waitroom.ErrorCode(err); c != waitroom.CodeInvalidRequest && c != apierror.CodeForbidden {
				t.Fatalf("checkHandshake: code %s, want invalid_request or forbidden", c)
			}
			return
		}
		if !headerHas(r.Header, "Connection", "upgrade") || !headerHas(r.Header, "Upgrade", "websocket") || version != "13" || key == "" {
			t.Fatalf("checkHandshake accepted Connection %q Upgrade %q version %q key %q", conn, upg, version, key)
		}
		if origin != "" {
			u, err := url.Parse(origin)
			if err != nil || !strings.EqualFold(u.Host, host) {
				t.Fatalf("checkHandshake accepted Origin %q for host %q", origin, host)
			}
		}
	})
}

// FuzzLogPath: a logged path never holds more of a session id than its
// first ten characters (the ticket), and paths without one are unchanged.
func FuzzLogPath(f *testing.F) {
	id := waitroom.NewSessionID(42).String()
	for _, s := range []string{"/v1/rooms/r/sessions/" + id, "/v1/rooms/r/sessions/" + id + "/events", "/v1/rooms/r", "/sessions/", "/sessions/short",
		"/v1/rooms/r/sessions/" + id + "/sessions/" + id, "/x/sessions/" + strings.Repeat("é", 20)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		got := logPath(p)
		if !strings.Contains(p, "/sessions/") && got != p {
			t.Fatalf("logPath(%q) = %q, want it unchanged", p, got)
		}
		// Every segment after /sessions/ is at most 10 bytes plus the ellipsis.
		rest := got
		for {
			i := strings.Index(rest, "/sessions/")
			if i < 0 {
				break
			}
			rest = rest[i+len("/sessions/"):]
			seg, _, _ := strings.Cut(rest, "/")
			if len(strings.TrimSuffix(seg, "…")) > 10 {
				t.Fatalf("logPath(%q) = %q keeps segment %q", p, got, seg)
			}
		}
		if utf8.ValidString(p) && len(got) > len(p)+len("…")*strings.Count(p, "/sessions/") {
			t.Fatalf("logPath(%q) = %q grew", p, got)
		}
	})
}
