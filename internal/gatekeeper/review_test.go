package gatekeeper

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	"github.com/waitroom/waitroom/gate"

	"github.com/waitroom/waitroom"
)

// A pass whose session ended before this gate started (a restart, or
// another process) is refused for as long as it lives, not only during the
// first seconds after the start.
func TestPassOfSessionEndedBeforeStartIsRefused(t *testing.T) {
	e := newEnv(t, envConfig{})
	s := e.join()
	pass := e.pass(s)
	if _, err := e.mem.Leave(context.Background(), waitroom.DefaultRoom, s.ID, waitroom.ReasonRevoked, e.clock.Now()); err != nil {
		t.Fatal(err)
	}
	later, err := New(Config{Store: e.store, Rooms: newRooms(t, e.store, e.clock), Keys: e.keys, Clock: e.clock, TrustedProxies: loopback(), Admit: e.admit})
	if err != nil {
		t.Fatal(err)
	}
	defer later.Close()
	e.clock.(*waitroom.ManualClock).Advance(DefaultResyncWindow + time.Second)
	if _, err := later.Check(context.Background(), waitroom.DefaultRoom, pass, e.clock.Now()); !errors.Is(err, gate.ErrRevoked) {
		t.Errorf("Check of a pass revoked before the gate started, past its resync window: %v, want ErrRevoked", err)
	}
	// A session still active keeps its pass through a restart.
	s2 := e.join()
	pass2 := e.pass(s2)
	if _, err := later.Check(context.Background(), waitroom.DefaultRoom, pass2, e.clock.Now()); err != nil {
		t.Errorf("Check of a live session's pass: %v, want it accepted", err)
	}
}

// A handler that only sets Waitroom-Command and returns (net/http then
// answers 200 by itself) still revokes, and the header does not leak.
func TestMiddlewareRevokeWithoutWrite(t *testing.T) {
	e := newEnv(t, envConfig{})
	s := e.join()
	pass := e.pass(s)
	h := e.gate.Middleware(waitroom.DefaultRoom)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set(gate.HeaderCommand, "revoke")
	}))
	srv := httptest.NewServer(h)
	defer srv.Close()
	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/x", nil)
	req.Header.Set("Authorization", "Bearer "+pass)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got := resp.Header.Get(gate.HeaderCommand); got != "" {
		t.Errorf("the command header reached the visitor: %q", got)
	}
	if _, err := e.gate.Check(context.Background(), waitroom.DefaultRoom, pass, e.clock.Now()); !errors.Is(err, gate.ErrRevoked) {
		t.Errorf("Check after a revoke command from a handler that wrote nothing: %v, want ErrRevoked", err)
	}
}

// Path parameters (';') are never bypassed: servlet containers read
// "/static/..;/admin" as "/admin".
func TestBypassRefusesPathParameters(t *testing.T) {
	cfg := waitroom.DefaultConfig()
	cfg.Capacity = 0 // nobody is let in but through a bypass
	e := newEnv(t, envConfig{room: cfg})
	reached := false
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { reached = true }))
	defer up.Close()
	u, _ := url.Parse(up.URL)
	h, err := e.gate.Proxy(ProxyConfig{Upstream: u, Room: waitroom.DefaultRoom, Bypass: []string{"/static/", "*.css"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"/static/..;/admin", "/admin;.css", "/static/x;y.png"} {
		reached = false
		req := httptest.NewRequest(http.MethodGet, "http://app.example"+p, nil)
		req.Header.Set("Accept", "application/json")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if reached {
			t.Errorf("%s reached the app without a pass (%d)", p, rec.Code)
		}
	}
	reached = false
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "http://app.example/static/site.css", nil))
	if !reached {
		t.Errorf("a plain bypassed path did not reach the app (%d)", rec.Code)
	}
}
