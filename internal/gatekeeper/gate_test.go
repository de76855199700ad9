package gatekeeper

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom/gate"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/internal/admit"
)

func TestFillCachesAndBoundsPasses(t *testing.T) {
	cfg := waitroom.DefaultConfig()
	cfg.ActiveTimeout = waitroom.Duration(4 * time.Minute)
	cfg.MaxSession = waitroom.Duration(10 * time.Minute)
	e := newEnv(t, envConfig{room: cfg})
	clock := e.clock.(*waitroom.ManualClock)
	s := e.join()
	first := e.pass(s)
	c, err := gate.Verify(e.keys, "", "default", first, clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	if got, want := c.Expires.Sub(c.IssuedAt), 4*time.Minute; got != want {
		t.Errorf("pass life: got %v, want active_timeout %v", got, want)
	}
	clock.Advance(time.Minute)
	if again := e.pass(s); again != first {
		t.Error("Fill before half life: got a new pass, want the cached one")
	}
	clock.Advance(90 * time.Second)
	renewed := e.pass(s)
	if renewed == first {
		t.Error("Fill past half life: got the same pass, want a new one")
	}
	// Near max_session the pass ends with the session.
	clock.Set(s.AdmittedAt.Add(9 * time.Minute))
	last := e.pass(s)
	c, _ = gate.Verify(e.keys, "", "default", last, clock.Now())
	if want := s.AdmittedAt.Add(10 * time.Minute).Truncate(time.Second); !c.Expires.Equal(want) {
		t.Errorf("pass expiry near max_session: got %v, want %v", c.Expires, want)
	}
	w := s
	w.Status = waitroom.StatusWaiting
	w.Pass = "stale"
	e.gate.Fill(&w, clock.Now())
	if w.Pass != "" {
		t.Errorf("Fill of a waiting session: got pass %q, want none", w.Pass)
	}
}

func TestPassRefusedRightAfterLeaveOrDelete(t *testing.T) {
	e := newEnv(t, envConfig{gateCfg: func(c *Config) { c.ResyncWindow = time.Nanosecond }})
	srv := e.serve(nil)
	ctx := context.Background()
	now := e.clock.Now()

	a := e.join()
	passA := e.pass(a)
	if _, err := e.gate.Check(ctx, "default", passA, now); err != nil {
		t.Fatalf("Check before leave: %v", err)
	}
	if _, err := e.store.Leave(ctx, "default", a.ID, waitroom.ReasonRevoked, now); err != nil {
		t.Fatal(err)
	}
	if _, err := e.gate.Check(ctx, "default", passA, now); !errors.Is(err, gate.ErrRevoked) {
		t.Errorf("Check right after Leave: got %v, want ErrRevoked", err)
	}

	b := e.join()
	passB := e.pass(b)
	req, _ := http.NewRequest(http.MethodDelete, srv.URL+"/v1/rooms/default/sessions/"+b.ID, nil)
	req.Header.Set("Authorization", "Bearer "+adminToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("admin DELETE: got %d, want 200", resp.StatusCode)
	}
	if _, err := e.gate.Check(ctx, "default", passB, now); !errors.Is(err, gate.ErrRevoked) {
		t.Errorf("Check right after admin DELETE: got %v, want ErrRevoked", err)
	}

	// Deleting the room refuses every pass issued before.
	c := e.join()
	passC := e.pass(c)
	if err := e.store.DeleteRoom(ctx, "default", true, now); err != nil {
		t.Fatal(err)
	}
	if _, err := e.gate.Check(ctx, "default", passC, now); !errors.Is(err, gate.ErrRevoked) {
		t.Errorf("Check after the room was deleted: got %v, want ErrRevoked", err)
	}
}

func TestResyncWindowChecksStore(t *testing.T) {
	e := newEnv(t, envConfig{})
	ctx := context.Background()
	s := e.join()
	pass := e.pass(s)
	// A second gate that started after the session ended (it saw no event)
	// must still refuse the pass: it checks the store while in its window.
	if _, err := e.store.Leave(ctx, "default", s.ID, waitroom.ReasonLeft, e.clock.Now()); err != nil {
		t.Fatal(err)
	}
	g2, err := New(Config{Store: e.store, Rooms: newRooms(t, e.store, e.clock), Keys: e.keys, Clock: e.clock, Admit: e.admit})
	if err != nil {
		t.Fatal(err)
	}
	defer g2.Close()
	if _, err := g2.Check(ctx, "default", pass, e.clock.Now()); !errors.Is(err, gate.ErrRevoked) {
		t.Errorf("Check in a fresh gate of an ended session: got %v, want ErrRevoked", err)
	}
	// A resync hint opens the window again.
	live := e.join()
	livePass := e.pass(live)
	e.clock.(*waitroom.ManualClock).Advance(time.Minute)
	g2.onEvent(waitroom.Event{Room: "default", Kind: waitroom.EventSessions, Remote: true})
	before := e.store.beats.Load()
	if _, err := g2.Check(ctx, "default", livePass, e.clock.Now()); err != nil {
		t.Errorf("Check of a live session after a resync hint: got %v, want valid", err)
	}
	if e.store.beats.Load() != before {
		t.Error("Check counted as activity; want a plain read")
	}
}

func TestActivityIsBatched(t *testing.T) {
	e := newEnv(t, envConfig{})
	s := e.join()
	pass := e.pass(s)
	h := e.gate.Middleware("default")(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	for i := 0; i < 100; i++ {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.Header.Set("Authorization", "Bearer "+pass)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != http.StatusOK {
			t.Fatalf("request %d: got %d, want 200", i, w.Code)
		}
	}
	// The background writer may not have run yet; wait for the one beat.
	deadline := time.Now().Add(5 * time.Second)
	for e.store.beats.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if got := e.store.beats.Load(); got != 1 {
		t.Errorf("heartbeats for 100 requests in one interval: got %d, want 1", got)
	}
	e.clock.(*waitroom.ManualClock).Advance(2 * time.Second)
	r := httptest.NewRequest(http.MethodGet, "/", nil)
	r.Header.Set("Authorization", "Bearer "+pass)
	h.ServeHTTP(httptest.NewRecorder(), r)
	deadline = time.Now().Add(5 * time.Second)
	for e.store.beats.Load() < 2 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if got := e.store.beats.Load(); got != 2 {
		t.Errorf("heartbeats after the interval passed: got %d, want 2", got)
	}
}

func TestForwardedHeadersTrust(t *testing.T) {
	e := newEnv(t, envConfig{})
	spoof := func(r *http.Request) {
		r.Header.Set("X-Forwarded-Proto", "https")
		r.Header.Set("X-Forwarded-Host", "shop.example")
		r.Header.Set("X-Forwarded-Uri", "/cart?x=1")
		r.Header.Set("X-Forwarded-Method", "get")
	}
	tests := []struct {
		name   string
		remote string
		mod    func(*http.Request)
		want   original
	}{
		{"trusted proxy", "127.0.0.1:5555", spoof, original{"https", "shop.example", "/cart?x=1", "GET"}},
		{"untrusted peer", "203.0.113.9:5555", spoof, original{"http", "app.test", "/v1/gate/default/forward-auth", "GET"}},
		// The proxies are clientaddr's: an IPv4-mapped peer is its IPv4
		// address, and the peer's own zone is dropped before the check.
		{"trusted proxy, IPv4-mapped", "[::ffff:127.0.0.1]:5555", spoof, original{"https", "shop.example", "/cart?x=1", "GET"}},
		{"trusted proxy, IPv6", "[::1]:5555", spoof, original{"https", "shop.example", "/cart?x=1", "GET"}},
		{"trusted proxy, zoned", "[::1%lo]:5555", spoof, original{"https", "shop.example", "/cart?x=1", "GET"}},
		{"untrusted IPv4-mapped peer", "[::ffff:203.0.113.9]:5555", spoof, original{"http", "app.test", "/v1/gate/default/forward-auth", "GET"}},
		{"trusted, malformed values", "127.0.0.1:1", func(r *http.Request) {
			r.Header.Set("X-Forwarded-Proto", "gopher")
			r.Header.Set("X-Forwarded-Host", "evil.example/path")
			r.Header.Set("X-Forwarded-Uri", "//evil.example/")
			r.Header.Set("X-Forwarded-Method", "G E T")
		}, original{"http", "app.test", "/v1/gate/default/forward-auth", "GET"}},
		{"trusted, list takes the first", "127.0.0.1:1", func(r *http.Request) {
			r.Header.Set("X-Forwarded-Proto", "https, http")
			r.Header.Set("X-Forwarded-Host", "a.example, b.example")
		}, original{"https", "a.example", "/v1/gate/default/forward-auth", "GET"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodGet, "http://app.test/v1/gate/default/forward-auth", nil)
			r.RemoteAddr = tc.remote
			tc.mod(r)
			if got := e.gate.original(r); got != tc.want {
				t.Errorf("original: got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestForwardAuthEndpoints(t *testing.T) {
	cfg := waitroom.DefaultConfig()
	cfg.Capacity = 1
	e := newEnv(t, envConfig{room: cfg})
	h := checked(t, e.gate.Handler())
	active := e.join()
	pass := e.pass(active)
	waiting := e.join()

	call := func(path string, mod func(*http.Request)) *httptest.ResponseRecorder {
		r := httptest.NewRequest(http.MethodGet, "http://waitroom.internal"+path, nil)
		r.RemoteAddr = "127.0.0.1:4000"
		r.Header.Set("X-Forwarded-Proto", "http")
		r.Header.Set("X-Forwarded-Host", "shop.test")
		r.Header.Set("X-Forwarded-Uri", "/cart")
		r.Header.Set("X-Forwarded-Method", "GET")
		if mod != nil {
			mod(r)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w
	}
	browser := func(r *http.Request) { r.Header.Set("Accept", "text/html") }
	withPass := func(r *http.Request) { r.AddCookie(&http.Cookie{Name: gate.CookieName("default", false), Value: pass}) }
	withSID := func(id string) func(*http.Request) {
		return func(r *http.Request) {
			r.Header.Set("Accept", "text/html")
			r.AddCookie(&http.Cookie{Name: admit.CookieName("default"), Value: id})
		}
	}
	wantWait := "http://shop.test/r/default?return_to=" + url.QueryEscape("http://shop.test/cart")

	w := call("/v1/gate/default/forward-auth", withPass)
	if w.Code != http.StatusOK || w.Header().Get(gate.HeaderSession) != active.ID || w.Header().Get(gate.HeaderTicket) != "1" {
		t.Errorf("forward-auth with pass: got %d %v, want 200 with identity", w.Code, w.Header())
	}
	w = call("/v1/gate/default/forward-auth", browser)
	if w.Code != http.StatusSeeOther || w.Header().Get("Location") != wantWait {
		t.Errorf("forward-auth browser without pass: got %d Location %q, want 303 %q", w.Code, w.Header().Get("Location"), wantWait)
	}
	w = call("/v1/gate/default/forward-auth", func(r *http.Request) { r.Header.Set("Accept", "application/json") })
	if w.Code != http.StatusUnauthorized || !strings.Contains(w.Body.String(), `"code":"unauthorized"`) || w.Header().Get(gate.HeaderLocation) != wantWait {
		t.Errorf("forward-auth API client: got %d %s, want 401 JSON with Waitroom-Location", w.Code, w.Body)
	}
	w = call("/v1/gate/default/auth-request", withPass)
	if w.Code != http.StatusNoContent || w.Header().Get(gate.HeaderSession) != active.ID {
		t.Errorf("auth-request with pass: got %d, want 204 with identity", w.Code)
	}
	w = call("/v1/gate/default/auth-request", browser)
	if w.Code != http.StatusUnauthorized || w.Header().Get(gate.HeaderLocation) != wantWait {
		t.Errorf("auth-request without pass: got %d %q, want 401 with Waitroom-Location %q", w.Code, w.Header().Get(gate.HeaderLocation), wantWait)
	}
	// A waiting session is still turned away.
	w = call("/v1/gate/default/auth-request", withSID(waiting.ID))
	if w.Code != http.StatusUnauthorized {
		t.Errorf("auth-request of a waiting session: got %d, want 401", w.Code)
	}
	// An active session from the waiting page earns its pass: nginx gets
	// it on the 2xx, Caddy/Traefik by a redirect back to the same URL.
	w = call("/v1/gate/default/auth-request", withSID(active.ID))
	if w.Code != http.StatusNoContent || !strings.HasPrefix(w.Header().Get("Set-Cookie"), gate.CookieName("default", false)+"=") {
		t.Errorf("auth-request of an active session: got %d Set-Cookie %q, want 204 with the pass cookie", w.Code, w.Header().Get("Set-Cookie"))
	}
	w = call("/v1/gate/default/forward-auth", withSID(active.ID))
	if w.Code != http.StatusTemporaryRedirect || w.Header().Get("Location") != "http://shop.test/cart" || w.Header().Get("Set-Cookie") == "" {
		t.Errorf("forward-auth of an active session: got %d Location %q, want 307 to the original URL with the pass", w.Code, w.Header().Get("Location"))
	}
	// Over TLS the cookie is __Host- prefixed and Secure.
	w = call("/v1/gate/default/auth-request", func(r *http.Request) {
		withSID(active.ID)(r)
		r.Header.Set("X-Forwarded-Proto", "https")
	})
	if sc := w.Header().Get("Set-Cookie"); !strings.HasPrefix(sc, "__Host-waitroom-default=") || !strings.Contains(sc, "Secure") || !strings.Contains(sc, "HttpOnly") || !strings.Contains(sc, "SameSite=Lax") || !strings.Contains(sc, "Path=/") {
		t.Errorf("pass cookie over TLS: got %q, want __Host-, Secure, HttpOnly, SameSite=Lax, Path=/", sc)
	}
	w = call("/v1/gate/Bad!/auth-request", nil)
	if w.Code != http.StatusBadRequest {
		t.Errorf("bad room name: got %d, want 400", w.Code)
	}
	w = call("/v1/gate/nosuchroom/auth-request", nil)
	if w.Code != http.StatusNotFound {
		t.Errorf("unknown room: got %d, want 404", w.Code)
	}
	w = call(JWKSPath, nil)
	if w.Code != http.StatusOK || !strings.Contains(w.Body.String(), `"kty":"OKP"`) {
		t.Errorf("JWKS: got %d %s, want 200 with an OKP key", w.Code, w.Body)
	}
}

func TestNoOpenRedirect(t *testing.T) {
	e := newEnv(t, envConfig{gateCfg: func(c *Config) { c.PublicURL = "https://shop.test" }})
	s := e.join()
	h := checked(t, e.gate.Handler())
	tests := []struct {
		name, host, uri string
		wantReturn      bool
	}{
		{"same origin", "shop.test", "/cart", true},
		{"other host", "evil.example", "/cart", false},
		{"scheme-relative uri", "shop.test", "//evil.example/x", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodGet, "http://waitroom.internal/v1/gate/default/forward-auth", nil)
			r.RemoteAddr = "127.0.0.1:4000"
			r.Header.Set("Accept", "text/html")
			r.Header.Set("X-Forwarded-Proto", "https")
			r.Header.Set("X-Forwarded-Host", tc.host)
			r.Header.Set("X-Forwarded-Uri", tc.uri)
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			loc := w.Header().Get("Location")
			if !strings.HasPrefix(loc, "https://shop.test/r/default") {
				t.Fatalf("Location: got %q, want the waiting page at the public URL", loc)
			}
			u, _ := url.Parse(loc)
			rt := u.Query().Get("return_to")
			if tc.wantReturn != (rt != "") {
				t.Errorf("return_to: got %q, want present=%v", rt, tc.wantReturn)
			}
			if rt != "" && !strings.HasPrefix(rt, "https://shop.test/") {
				t.Errorf("return_to: got %q, want on https://shop.test", rt)
			}
		})
	}
	// An admitted visitor arriving on a foreign host is not sent there.
	r := httptest.NewRequest(http.MethodGet, "http://waitroom.internal/v1/gate/default/forward-auth", nil)
	r.RemoteAddr = "127.0.0.1:4000"
	r.Header.Set("Accept", "text/html")
	r.Header.Set("X-Forwarded-Host", "evil.example")
	r.Header.Set("X-Forwarded-Uri", "/")
	r.AddCookie(&http.Cookie{Name: admit.CookieName("default"), Value: s.ID})
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	if loc := w.Header().Get("Location"); strings.Contains(loc, "evil.example") {
		t.Errorf("admitted visitor on a foreign host: got Location %q, want no redirect there", loc)
	}
}

func TestSafeReturn(t *testing.T) {
	allowed := map[string]bool{"https://shop.test": true}
	tests := []struct {
		raw string
		ok  bool
	}{
		{"https://shop.test/cart?a=1", true},
		{"https://SHOP.test/", true},
		{"http://shop.test/", false},
		{"https://evil.example/", false},
		{"https://shop.test@evil.example/", false},
		{"https://user@shop.test/", false},
		{"//shop.test/", false},
		{"/relative", false},
		{"javascript:alert(1)", false},
		{"https://shop.test\\@evil.example/", false},
		{"https://shop.test/\r\nSet-Cookie: x", false},
		{"https://shop.test:99999/", false},
		{"", false},
	}
	for _, tc := range tests {
		if _, ok := SafeReturn(tc.raw, allowed); ok != tc.ok {
			t.Errorf("SafeReturn(%q): got %v, want %v", tc.raw, ok, tc.ok)
		}
	}
}

// TestNewNeedsAnAdmission: the gate joins visitors only through the
// server's one admission; without it there is no gate.
func TestNewNeedsAnAdmission(t *testing.T) {
	e := newEnv(t, envConfig{})
	if g, err := New(Config{Store: e.store, Rooms: e.rooms, Keys: e.keys}); err == nil {
		g.Close()
		t.Fatal("New without Admit: got a gate, want an error")
	}
}

func TestValidateIsCheckAndTouch(t *testing.T) {
	e := newEnv(t, envConfig{gateCfg: func(c *Config) { c.ResyncWindow = time.Nanosecond }})
	s := e.join()
	pass := e.pass(s)
	c, err := e.gate.Validate(context.Background(), "default", pass)
	if err != nil || c.Session != s.ID {
		t.Fatalf("Validate: got %+v %v, want the session", c, err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for e.store.beats.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if e.store.beats.Load() != 1 {
		t.Errorf("heartbeats after Validate: got %d, want 1", e.store.beats.Load())
	}
	if _, err := e.gate.Validate(context.Background(), "other", pass); err == nil {
		t.Error("Validate for another room: got valid, want refused")
	}
}
