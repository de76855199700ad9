package console_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/internal/console"
	"github.com/waitroom/waitroom/memstore"
)

func TestSignIn(t *testing.T) {
	s := newSite(t, siteOptions{})
	a, sess := s.signIn(token)
	if a.status != 200 {
		t.Fatalf("sign-in: status %d %s, want 200", a.status, a.body)
	}
	if got := a.header.Get("Cache-Control"); got != "no-store" {
		t.Errorf("sign-in Cache-Control %q, want no-store", got)
	}
	if want := start.Add(12 * time.Hour).Format(waitroom.TimeFormat); sess.ExpiresAt != want {
		t.Errorf("expires_at %q, want %q", sess.ExpiresAt, want)
	}
	if len(sess.CSRF) != 43 {
		t.Errorf("csrf %q, want 43 characters of base64url", sess.CSRF)
	}
	if len(a.cookies) != 1 {
		t.Fatalf("got %d cookies, want 1", len(a.cookies))
	}
	c := a.cookies[0]
	if c.Name != "waitroom_console" || !cookieValue.MatchString(c.Value) {
		t.Errorf("cookie %s=%s, want waitroom_console=<id>.<mac>", c.Name, c.Value)
	}
	if !c.HttpOnly || c.SameSite != http.SameSiteStrictMode || c.Path != "/" || c.MaxAge != 43200 || c.Secure {
		t.Errorf("cookie HttpOnly=%v SameSite=%v Path=%q MaxAge=%d Secure=%v, want true Strict / 43200 false (plain HTTP)",
			c.HttpOnly, c.SameSite, c.Path, c.MaxAge, c.Secure)
	}

	g := s.do("GET", "/admin/api/session", "", nil)
	var again session
	_ = json.Unmarshal(g.body, &again)
	if g.status != 200 || again != sess {
		t.Errorf("GET session: %d %s, want 200 with the sign-in's %+v", g.status, g.body, sess)
	}
	if p := s.do("GET", "/v1/probe", "", nil); p.status != 200 {
		t.Errorf("GET admin route with the cookie: %d %s, want 200", p.status, p.body)
	}
	if p := s.do("POST", "/v1/probe", "", map[string]string{"X-CSRF-Token": sess.CSRF}); p.status != 200 {
		t.Errorf("POST admin route with cookie and CSRF token: %d %s, want 200", p.status, p.body)
	}
}

func TestNotSignedIn(t *testing.T) {
	s := newSite(t, siteOptions{})
	g := s.do("GET", "/admin/api/session", "", nil)
	if g.status != 401 || g.errorCode() != "unauthorized" {
		t.Errorf("GET session without a cookie: %d %s, want 401 unauthorized", g.status, g.body)
	}
	r := httptest.NewRequest("GET", "/v1/rooms", nil)
	err := s.console.Authorize(r)
	var e *waitroom.Error
	if !errors.As(err, &e) || e.Code != waitroom.CodeUnauthorized {
		t.Fatalf("Authorize without a cookie: %v, want a *waitroom.Error unauthorized", err)
	}
	if want := "This needs the admin token (Authorization: Bearer <token>)."; e.Message != want {
		t.Errorf("message %q, want the admin API's %q", e.Message, want)
	}
}

func TestSecureCookie(t *testing.T) {
	s := newSite(t, siteOptions{tls: true})
	a, _ := s.signIn(token)
	if a.status != 200 || len(a.cookies) != 1 || !a.cookies[0].Secure {
		t.Fatalf("sign-in over TLS: status %d cookies %v, want one Secure cookie", a.status, a.cookies)
	}
	if p := s.do("GET", "/v1/probe", "", nil); p.status != 200 {
		t.Errorf("admin route over TLS with the cookie: %d, want 200", p.status)
	}
	// A trusted proxy that says the browser came over TLS.
	c := console.New(console.Options{AdminToken: token, Ledger: memstore.New(), TrustedProxies: mustTrust(t, "10.0.0.0/8")})
	for _, tc := range []struct {
		peer, proto string
		secure      bool
	}{
		{"10.1.2.3:5000", "https", true},
		{"10.1.2.3:5000", "https, http", true},
		{"10.1.2.3:5000", "http", false},
		{"192.0.2.7:5000", "https", false}, // not a trusted proxy
	} {
		r := httptest.NewRequest("POST", "/admin/api/session", strings.NewReader(`{"token":"`+token+`"}`))
		r.RemoteAddr = tc.peer
		r.Header.Set("X-Forwarded-Proto", tc.proto)
		w := httptest.NewRecorder()
		c.Handler().ServeHTTP(w, r)
		cs := w.Result().Cookies()
		if w.Code != 200 || len(cs) != 1 || cs[0].Secure != tc.secure {
			t.Errorf("peer %s X-Forwarded-Proto %q: status %d cookies %v, want Secure=%v", tc.peer, tc.proto, w.Code, cs, tc.secure)
		}
	}
	// Options.Secure (an https public URL): Secure on a plain request from
	// anyone.
	c = console.New(console.Options{AdminToken: token, Ledger: memstore.New(), Secure: true})
	r := httptest.NewRequest("POST", "/admin/api/session", strings.NewReader(`{"token":"`+token+`"}`))
	w := httptest.NewRecorder()
	c.Handler().ServeHTTP(w, r)
	if cs := w.Result().Cookies(); w.Code != 200 || len(cs) != 1 || !cs[0].Secure {
		t.Errorf("Options.Secure, plain HTTP: status %d cookies %v, want one Secure cookie", w.Code, cs)
	}
}

func TestWrongToken(t *testing.T) {
	s := newSite(t, siteOptions{})
	for _, tok := range []string{"wrong", "", token + "x", token[:len(token)-1]} {
		a, _ := s.signIn(tok)
		if a.status != 401 || a.errorCode() != "unauthorized" || len(a.cookies) != 0 {
			t.Errorf("token %q: %d %s cookies %v, want 401 unauthorized and no cookie", tok, a.status, a.body, a.cookies)
		}
		if a.header.Get("WWW-Authenticate") == "" {
			t.Errorf("token %q: 401 without WWW-Authenticate", tok)
		}
	}
	// A console without an admin token lets nobody in, not even with "".
	off := console.New(console.Options{Ledger: memstore.New()})
	r := httptest.NewRequest("POST", "/admin/api/session", strings.NewReader(`{"token":""}`))
	w := httptest.NewRecorder()
	off.Handler().ServeHTTP(w, r)
	if w.Code != 401 {
		t.Errorf("no admin token configured, empty token: %d, want 401", w.Code)
	}
}

func TestWrongTokenLimit(t *testing.T) {
	clock := waitroom.NewManualClock(start)
	s := newSite(t, siteOptions{clock: clock})
	for i := 1; i <= 5; i++ {
		if a, _ := s.signIn("guess"); a.status != 401 {
			t.Fatalf("wrong try %d: %d %s, want 401", i, a.status, a.body)
		}
		clock.Advance(time.Second)
	}
	a, _ := s.signIn("guess")
	if a.status != 429 || a.errorCode() != "rate_limited" {
		t.Fatalf("6th wrong try: %d %s, want 429 rate_limited", a.status, a.body)
	}
	// The first try was 5 s ago: it leaves the window in 55 s.
	if got := a.header.Get("Retry-After"); got != "55" {
		t.Errorf("Retry-After %q, want 55", got)
	}
	if !strings.Contains(string(a.body), "55 seconds") {
		t.Errorf("message %s does not say how long to wait", a.body)
	}
	// The right token is refused too while the address is limited.
	if a, _ := s.signIn(token); a.status != 429 || len(a.cookies) != 0 {
		t.Errorf("right token while limited: %d %s, want 429 and no cookie", a.status, a.body)
	}
	clock.Advance(55 * time.Second)
	if a, _ := s.signIn(token); a.status != 200 {
		t.Errorf("right token once the first try left the window: %d %s, want 200", a.status, a.body)
	}
	// Only one slot freed: the next wrong try is the 5th in the window.
	if a, _ := s.signIn("guess"); a.status != 401 {
		t.Errorf("wrong try with one slot free: %d, want 401", a.status)
	}
	if a, _ := s.signIn("guess"); a.status != 429 {
		t.Errorf("wrong try with none free: %d, want 429", a.status)
	}
}

// TestWrongTokenLimitPerAddress checks the addresses the limit counts:
// each IPv4 address, each IPv6 /64, the client behind a trusted proxy.
func TestWrongTokenLimitPerAddress(t *testing.T) {
	clock := waitroom.NewManualClock(start)
	c := console.New(console.Options{AdminToken: token, Ledger: memstore.New(), Clock: clock,
		TrustedProxies: mustTrust(t, "10.0.0.1")})
	try := func(peer, xff, tok string) int {
		r := httptest.NewRequest("POST", "/admin/api/session", strings.NewReader(`{"token":"`+tok+`"}`))
		r.RemoteAddr = peer
		if xff != "" {
			r.Header.Set("X-Forwarded-For", xff)
		}
		w := httptest.NewRecorder()
		c.Handler().ServeHTTP(w, r)
		return w.Code
	}
	for i := range 5 {
		if got := try("[2001:db8:1:2::1]:1", "", "x"); got != 401 {
			t.Fatalf("try %d: %d, want 401", i, got)
		}
	}
	if got := try("[2001:db8:1:2:ffff::9]:1", "", "x"); got != 429 {
		t.Errorf("another address of the same /64: %d, want 429", got)
	}
	if got := try("[2001:db8:1:3::1]:1", "", token); got != 200 {
		t.Errorf("another /64: %d, want 200", got)
	}
	for range 5 {
		try("10.0.0.1:1", "198.51.100.4", "x")
	}
	if got := try("10.0.0.1:1", "198.51.100.4", token); got != 429 {
		t.Errorf("client behind the trusted proxy after 5 wrong tries: %d, want 429", got)
	}
	if got := try("10.0.0.1:1", "198.51.100.5", token); got != 200 {
		t.Errorf("another client behind the same proxy: %d, want 200", got)
	}
	// A bad body is no try at all.
	for range 10 {
		try("192.0.2.1:1", "", `"}`)
	}
	if got := try("192.0.2.1:1", "", token); got != 200 {
		t.Errorf("after malformed bodies: %d, want 200 (they are not wrong tokens)", got)
	}
}

// TestCrossSiteSignIn checks that a page of another site cannot sign in,
// nor spend the tries of the operator's address.
func TestCrossSiteSignIn(t *testing.T) {
	s := newSite(t, siteOptions{})
	for range 10 {
		a := s.do("POST", "/admin/api/session", `{"token":"guess"}`, map[string]string{"Sec-Fetch-Site": "cross-site"})
		if a.status != 403 || a.errorCode() != "forbidden" {
			t.Fatalf("cross-site sign-in: %d %s, want 403 forbidden", a.status, a.body)
		}
	}
	a := s.do("POST", "/admin/api/session", `{"token":"`+token+`"}`, map[string]string{"Sec-Fetch-Site": "same-site"})
	if a.status != 403 {
		t.Errorf("sign-in from a sibling subdomain: %d, want 403", a.status)
	}
	a = s.do("POST", "/admin/api/session", `{"token":"`+token+`"}`, map[string]string{"Sec-Fetch-Site": "same-origin"})
	if a.status != 200 {
		t.Errorf("same-origin sign-in after 10 refused cross-site tries: %d %s, want 200", a.status, a.body)
	}
}

// TestWrongTokenLimitRace sends many wrong tokens at once: at most five
// are ever compared.
func TestWrongTokenLimitRace(t *testing.T) {
	s := newSite(t, siteOptions{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	counts := map[int]int{}
	for range 40 {
		wg.Go(func() {
			b := strings.NewReader(`{"token":"guess"}`)
			res, err := s.client.Post(s.srv.URL+"/admin/api/session", "application/json", b)
			if err != nil {
				t.Errorf("post: %v", err)
				return
			}
			res.Body.Close()
			mu.Lock()
			counts[res.StatusCode]++
			mu.Unlock()
		})
	}
	wg.Wait()
	if counts[401] != 5 || counts[429] != 35 {
		t.Errorf("40 wrong tries at once: %v, want 5×401 and 35×429", counts)
	}
}

func TestCSRF(t *testing.T) {
	s := newSite(t, siteOptions{})
	sess := s.mustSignIn()
	other := newSite(t, siteOptions{ledger: memstore.New()}).mustSignIn()
	for _, tc := range []struct {
		method, csrf string
		want         int
	}{
		{"GET", "", 200},
		{"HEAD", "", 200},
		{"OPTIONS", "", 200},
		{"POST", "", 403},
		{"POST", "wrong", 403},
		{"POST", other.CSRF, 403},
		{"POST", sess.CSRF[:42], 403},
		{"PUT", sess.CSRF + "A", 403},
		{"DELETE", strings.ToUpper(sess.CSRF), 403},
		{"POST", sess.CSRF, 200},
		{"PUT", sess.CSRF, 200},
		{"DELETE", sess.CSRF, 200},
		{"PATCH", sess.CSRF, 200},
	} {
		h := map[string]string{}
		if tc.csrf != "" {
			h["X-CSRF-Token"] = tc.csrf
		}
		a := s.do(tc.method, "/v1/probe", "", h)
		if a.status != tc.want {
			t.Errorf("%s with X-CSRF-Token %q: %d %s, want %d", tc.method, tc.csrf, a.status, a.body, tc.want)
		}
		if a.status == 403 && tc.method != "HEAD" && a.errorCode() != "forbidden" {
			t.Errorf("%s: code %q, want forbidden", tc.method, a.errorCode())
		}
	}
	// Sign-out needs it too.
	if a := s.do("DELETE", "/admin/api/session", "", nil); a.status != 403 || a.errorCode() != "forbidden" {
		t.Errorf("sign-out without X-CSRF-Token: %d %s, want 403 forbidden", a.status, a.body)
	}
	if a := s.do("GET", "/admin/api/session", "", nil); a.status != 200 {
		t.Errorf("after a refused sign-out: %d, want still signed in", a.status)
	}
}

// TestSignOutEverywhere signs in on one process and out on it: another
// process with the same token and store took the cookie before and
// refuses it after.
func TestSignOutEverywhere(t *testing.T) {
	store := memstore.New()
	clock := waitroom.NewManualClock(start)
	a := newSite(t, siteOptions{ledger: store, clock: clock})
	b := newSite(t, siteOptions{ledger: store, clock: clock})
	sess := a.mustSignIn()
	old := a.consoleCookie()
	if old == nil {
		t.Fatal("no cookie in the jar after signing in")
	}
	bURL, _ := url.Parse(b.srv.URL)
	b.client.Jar.SetCookies(bURL, []*http.Cookie{{Name: old.Name, Value: old.Value, Path: "/"}})
	if g := b.do("GET", "/admin/api/session", "", nil); g.status != 200 {
		t.Fatalf("the other process before sign-out: %d %s, want 200", g.status, g.body)
	}

	out := a.do("DELETE", "/admin/api/session", "", map[string]string{"X-CSRF-Token": sess.CSRF})
	if out.status != 204 {
		t.Fatalf("sign-out: %d %s, want 204", out.status, out.body)
	}
	if len(out.cookies) != 1 || out.cookies[0].MaxAge >= 0 || out.cookies[0].Value != "" {
		t.Errorf("sign-out cookies %v, want the cookie cleared", out.cookies)
	}
	if a.consoleCookie() != nil {
		t.Errorf("the browser kept the cookie after sign-out")
	}
	if g := b.do("GET", "/admin/api/session", "", nil); g.status != 401 {
		t.Errorf("the other process after sign-out: %d %s, want 401", g.status, g.body)
	}
	if p := b.do("GET", "/v1/probe", "", nil); p.status != 401 {
		t.Errorf("admin route on the other process after sign-out: %d, want 401", p.status)
	}
}

func TestExpiredSession(t *testing.T) {
	clock := waitroom.NewManualClock(start)
	s := newSite(t, siteOptions{clock: clock})
	s.mustSignIn()
	clock.Advance(12*time.Hour - time.Millisecond)
	if g := s.do("GET", "/v1/probe", "", nil); g.status != 200 {
		t.Errorf("1ms before expiry: %d, want 200", g.status)
	}
	clock.Advance(time.Millisecond)
	if g := s.do("GET", "/v1/probe", "", nil); g.status != 401 {
		t.Errorf("at expiry: %d, want 401", g.status)
	}
	if g := s.do("GET", "/admin/api/session", "", nil); g.status != 401 {
		t.Errorf("GET session at expiry: %d, want 401", g.status)
	}
}

func TestForgedCookie(t *testing.T) {
	s := newSite(t, siteOptions{})
	s.mustSignIn()
	good := s.consoleCookie().Value
	// A session signed with another token.
	o := newSite(t, siteOptions{ledger: memstore.New(), token: "another-token"})
	o.mustSignIn()
	foreign := o.consoleCookie().Value
	flip := func(v string, i int) string {
		b := []byte(v)
		if b[i] == 'A' {
			b[i] = 'B'
		} else {
			b[i] = 'A'
		}
		return string(b)
	}
	for name, v := range map[string]string{
		"mac changed":     flip(good, len(good)-2),
		"id changed":      flip(good, 3),
		"expiry changed":  flip(good, 28),
		"other token":     foreign,
		"mac only":        good[33:],
		"no mac":          good[:32],
		"empty":           "",
		"padded":          good + "=",
		"other's id, mac": foreign[:33] + good[33:],
		"swapped":         good[33:] + "." + good[:32],
	} {
		r := httptest.NewRequest("GET", "/v1/rooms", nil)
		r.AddCookie(&http.Cookie{Name: console.CookieName, Value: v})
		if err := s.console.Authorize(r); waitroom.ErrorCode(err) != waitroom.CodeUnauthorized {
			t.Errorf("%s: Authorize = %v, want unauthorized", name, err)
		}
	}
	// A forged cookie next to the real one does not hide it.
	r := httptest.NewRequest("GET", "/v1/rooms", nil)
	r.AddCookie(&http.Cookie{Name: console.CookieName, Value: foreign})
	r.AddCookie(&http.Cookie{Name: console.CookieName, Value: good})
	if err := s.console.Authorize(r); err != nil {
		t.Errorf("forged cookie then the real one: %v, want nil", err)
	}
}
