package gatekeeper

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom/gate"

	"github.com/waitroom/waitroom"
)

// FuzzVerify feeds arbitrary tokens to the pass parser: it must never
// panic, and nothing but a pass this key set signed may verify.
func FuzzVerify(f *testing.F) {
	ks, err := gate.NewKeySet(gate.AlgEdDSA)
	if err != nil {
		f.Fatal(err)
	}
	s := waitroom.Session{ID: waitroom.NewSessionID(3).String(), Room: "default", Ticket: 3, Status: waitroom.StatusActive}
	valid, _ := gate.SignPass(ks, gate.DefaultIssuer, s, t0, t0.Add(time.Minute))
	f.Add(valid)
	f.Add("")
	f.Add("a.b.c")
	f.Add("eyJhbGciOiJub25lIn0.eyJzdWIiOiJ4In0.")
	f.Add("eyJhbGciOiJIUzI1NiIsImtpZCI6IngifQ.e30.AAAA")
	f.Add(strings.Repeat("A", 3000))
	parts := strings.Split(valid, ".")
	f.Add(parts[0] + "." + parts[1] + ".")
	f.Add(parts[0] + ".." + parts[2])
	f.Fuzz(func(t *testing.T, token string) {
		c, err := gate.Verify(ks, "", "default", token, t0)
		if err != nil {
			return
		}
		if token != valid {
			// Another encoding of the same signed bytes would have to
			// verify the same signature; JWT's base64url is canonical, so
			// only the token itself may pass.
			t.Fatalf("Verify accepted %q (claims %+v), which this key set did not sign", token, c)
		}
		if c.Room != "default" || c.Session != s.ID {
			t.Fatalf("claims %+v, want the signed session", c)
		}
	})
}

// FuzzForwarded feeds arbitrary X-Forwarded-* values from a trusted proxy:
// whatever they hold, the original URL the gate builds is well formed and
// on a plain host.
func FuzzForwarded(f *testing.F) {
	f.Add("https", "shop.example", "/cart?x=1", "GET")
	f.Add("HTTPS, http", "a.example:8443, b.example", "/", "post")
	f.Add("javascript", "evil.example/path", "//evil.example/", "G E T")
	f.Add("", "user@evil.example", "/\r\nSet-Cookie: x", "")
	f.Add("http", "[::1]:99999", "/a b", "DELETE")
	f.Add("http", "shop.example\\@evil", "/%zz", "GET")
	f.Fuzz(func(t *testing.T, proto, host, uri, method string) {
		g := &Gate{trusted: loopback()}
		r, err := http.NewRequest(http.MethodGet, "http://app.test/x", nil)
		if err != nil {
			t.Skip()
		}
		r.RemoteAddr = "127.0.0.1:1"
		r.Header.Set("X-Forwarded-Proto", proto)
		r.Header.Set("X-Forwarded-Host", host)
		r.Header.Set("X-Forwarded-Uri", uri)
		r.Header.Set("X-Forwarded-Method", method)
		o := g.original(r)
		if o.scheme != "http" && o.scheme != "https" {
			t.Fatalf("scheme %q from %q", o.scheme, proto)
		}
		if o.host != "" && !validHost(o.host) {
			t.Fatalf("host %q is not a plain host", o.host)
		}
		if !strings.HasPrefix(o.uri, "/") || strings.HasPrefix(o.uri, "//") && o.uri != r.URL.RequestURI() {
			t.Fatalf("uri %q is not a path", o.uri)
		}
		if o.host == "" {
			return
		}
		u, err := url.Parse(o.url())
		if err != nil {
			t.Fatalf("original URL %q does not parse: %v", o.url(), err)
		}
		if u.Host != o.host || u.User != nil {
			t.Fatalf("original URL %q has host %q (user %v), want %q", o.url(), u.Host, u.User, o.host)
		}
		loc := g.waitingURL("default", o)
		lu, err := url.Parse(loc)
		if err != nil || lu.Host != o.host || lu.Path != "/r/default" {
			t.Fatalf("waiting URL %q: want /r/default on %q", loc, o.host)
		}
	})
}

// FuzzSafeReturn feeds arbitrary return URLs: an accepted one is an
// absolute http(s) URL without credentials on an allowed origin.
func FuzzSafeReturn(f *testing.F) {
	for _, s := range []string{
		"https://shop.test/cart", "https://shop.test@evil.example/", "//evil.example",
		"https://shop.test\\@evil.example/", "javascript:alert(1)", "https://SHOP.test:443/",
		"https://shop.test/%0d%0aSet-Cookie:x", "http://shop.test/", "https://shop.test#@evil",
	} {
		f.Add(s)
	}
	allowed := map[string]bool{"https://shop.test": true}
	f.Fuzz(func(t *testing.T, raw string) {
		out, ok := SafeReturn(raw, allowed)
		if !ok {
			return
		}
		u, err := url.Parse(out)
		if err != nil {
			t.Fatalf("accepted %q re-encodes to %q, which does not parse", raw, out)
		}
		if u.User != nil || !allowed[strings.ToLower(u.Scheme+"://"+u.Host)] {
			t.Fatalf("accepted %q leads to %q, off the allowed origins", raw, out)
		}
		if strings.ContainsAny(out, "\r\n\\") {
			t.Fatalf("accepted %q holds control characters or a backslash: %q", raw, out)
		}
	})
}

// FuzzBypass checks the bypass rules never let a path climb out of a
// bypassed prefix.
func FuzzBypass(f *testing.F) {
	for _, s := range []string{"/static/a.css", "/static/../admin", "/static/./x", "/healthz", "/x.ico", "/static//x", ""} {
		f.Add(s)
	}
	b := newBypass([]string{"/static/", "/healthz", "*.ico", "/assets/*/logo.png"})
	f.Fuzz(func(t *testing.T, p string) {
		if b.match(p) && strings.Contains(p, "..") && strings.Contains(p, "/../") {
			t.Fatalf("bypass matched %q, which climbs out with ..", p)
		}
	})
}
