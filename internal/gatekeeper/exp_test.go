package gatekeeper

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	"github.com/waitroom/waitroom/gate"

	"github.com/waitroom/waitroom"
)

// TestPassRefusedSoonAfterItsExpiry: a pass is refused by the reverse proxy,
// auth-request and forward-auth once it is more than Leeway (1s) past its
// exp (issue 17: one was still accepted about 3s after, refused by 10s),
// whether the gate has seen it before or not; it is accepted until then.
func TestPassRefusedSoonAfterItsExpiry(t *testing.T) {
	if gate.Leeway > time.Second {
		t.Errorf("Leeway = %v, want at most 1s", gate.Leeway)
	}
	for _, tc := range []struct {
		name   string
		offset time.Duration // from the pass's exp
		seen   bool          // the gate checked the pass before (its cache)
		ok     bool
	}{
		{"1s before exp", -time.Second, false, true},
		{"exp, within the leeway", 0, true, true},
		{"0.5s past exp, within the leeway", 500 * time.Millisecond, true, true},
		{"1.5s past exp, first check", 1500 * time.Millisecond, false, false},
		{"1.5s past exp, seen before", 1500 * time.Millisecond, true, false},
		{"3s past exp, seen before", 3 * time.Second, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock := waitroom.NewManualClock(t0)
			e, srv, _ := proxyEnvWithClock(t, clock)
			s := e.join()
			pass := e.pass(s)
			c, err := gate.Verify(e.keys, "", waitroom.DefaultRoom, pass, clock.Now())
			if err != nil || c.Expires.Sub(c.IssuedAt) != time.Minute {
				t.Fatalf("Verify the fresh pass: %+v, %v; want a pass of a minute", c, err)
			}
			withPass := func(r *http.Request) {
				r.AddCookie(&http.Cookie{Name: gate.CookieName(waitroom.DefaultRoom, false), Value: pass})
				r.Header.Set("Accept", "application/json")
			}
			endpoint := func(path string) int {
				r := httptest.NewRequest(http.MethodGet, "http://waitroom.internal"+path, nil)
				r.RemoteAddr = "127.0.0.1:4000"
				r.Header.Set("X-Forwarded-Proto", "http")
				r.Header.Set("X-Forwarded-Host", "shop.test")
				r.Header.Set("X-Forwarded-Uri", "/cart")
				withPass(r)
				w := httptest.NewRecorder()
				e.gate.Handler().ServeHTTP(w, r)
				return w.Code
			}
			if tc.seen {
				// The gate checks it once while it is fresh: later checks
				// come from its cache of verified passes.
				if code := endpoint("/v1/gate/default/auth-request"); code != http.StatusNoContent {
					t.Fatalf("auth-request with the fresh pass: got %d, want 204", code)
				}
			}
			clock.Set(c.Expires.Add(tc.offset))

			wantAuth, wantForward, wantProxy := http.StatusUnauthorized, http.StatusUnauthorized, http.StatusServiceUnavailable
			if tc.ok {
				wantAuth, wantForward, wantProxy = http.StatusNoContent, http.StatusOK, http.StatusOK
			}
			if code := endpoint("/v1/gate/default/auth-request"); code != wantAuth {
				t.Errorf("auth-request at exp%+v: got %d, want %d", tc.offset, code, wantAuth)
			}
			if code := endpoint("/v1/gate/default/forward-auth"); code != wantForward {
				t.Errorf("forward-auth at exp%+v: got %d, want %d", tc.offset, code, wantForward)
			}
			resp, body := get(t, srv.URL+"/page", withPass)
			if resp.StatusCode != wantProxy || (tc.ok && body != "app:"+s.ID+":1") {
				t.Errorf("proxy at exp%+v: got %d %q, want %d", tc.offset, resp.StatusCode, body, wantProxy)
			}
		})
	}
}

// proxyEnvWithClock is a proxy in front of an app at clock, for a room of
// capacity 1 whose sessions stay active for an hour without activity while
// passes live a minute: a pass expires while its session is still active,
// so only the pass's exp can refuse it.
func proxyEnvWithClock(t *testing.T, clock waitroom.Clock) (*env, *httptest.Server, chan struct{}) {
	t.Helper()
	cfg := waitroom.DefaultConfig()
	cfg.Capacity = 1
	cfg.ActiveTimeout = waitroom.Duration(time.Hour)
	e := newEnv(t, envConfig{room: cfg, clock: clock, gateCfg: func(c *Config) {
		c.ResyncWindow = time.Nanosecond
		c.MaxPassTTL = time.Minute
	}})
	release := make(chan struct{})
	up := upstream(t, release)
	u, err := url.Parse(up.URL)
	if err != nil {
		t.Fatal(err)
	}
	srv := e.serve(&ProxyConfig{Upstream: u, Room: waitroom.DefaultRoom})
	return e, srv, release
}
