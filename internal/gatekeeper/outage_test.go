package gatekeeper

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/internal/admit"
	"github.com/waitroom/waitroom/internal/limit"
)

// downStore is a real store that a test can make unreachable: every call
// a gate makes for a visitor then fails as a lost Redis does.
type downStore struct {
	waitroom.Store
	down *atomic.Bool
}

func (s downStore) unavailable() error {
	return waitroom.Errorf(waitroom.CodeUnavailable, "the store cannot be reached")
}

func (s downStore) Join(ctx context.Context, room, key string, now time.Time) (waitroom.Session, error) {
	if s.down.Load() {
		return waitroom.Session{}, s.unavailable()
	}
	return s.Store.Join(ctx, room, key, now)
}

func (s downStore) JoinWith(ctx context.Context, room string, req waitroom.JoinRequest, now time.Time) (waitroom.Session, error) {
	if s.down.Load() {
		return waitroom.Session{}, s.unavailable()
	}
	return s.Store.JoinWith(ctx, room, req, now)
}

func (s downStore) Room(ctx context.Context, room string) (waitroom.Room, error) {
	if s.down.Load() {
		return waitroom.Room{}, s.unavailable()
	}
	return s.Store.Room(ctx, room)
}

// While the store is down the gate fails closed (503) unless told to fail
// open, when a visitor without a pass goes through to the app.
func TestGateFailsClosedOrOpen(t *testing.T) {
	var down, open atomic.Bool
	cfg := waitroom.DefaultConfig()
	cfg.Capacity = 0 // nobody is admitted while the store works
	e := newEnv(t, envConfig{room: cfg, gateCfg: func(c *Config) {
		c.Store = downStore{Store: c.Store, down: &down}
		c.FailOpen = open.Load
	}, admit: func(c *admit.Config) {
		// The gate's joins go through the admission: its store is down too.
		c.Store = downStore{Store: c.Store, down: &down}
	}})
	app := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusTeapot) })
	h := e.gate.Middleware(waitroom.DefaultRoom)(app)
	visit := func() int {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "http://app.example/page", nil))
		return rec.Code
	}
	if got := visit(); got != http.StatusSeeOther && got != http.StatusFound {
		t.Fatalf("store up, no pass: %d, want a redirect to the waiting page", got)
	}
	down.Store(true)
	if got := visit(); got != http.StatusServiceUnavailable {
		t.Errorf("store down, failing closed: %d, want 503", got)
	}
	open.Store(true)
	if got := visit(); got != http.StatusTeapot {
		t.Errorf("store down, failing open: %d, want the app's answer (418)", got)
	}
	down.Store(false)
	if got := visit(); got == http.StatusTeapot {
		t.Errorf("store back: the app answered, want the line again")
	}
}

// The gate's joins go through the same per-address limit as the API's.
func TestGateJoinsAreLimited(t *testing.T) {
	cfg := waitroom.DefaultConfig()
	cfg.Capacity = 0
	e := newEnv(t, envConfig{room: cfg, admit: func(c *admit.Config) {
		c.Joins = &limit.Joins{Rate: limit.NewLimiter(60, 2, 0)}
	}})
	h := e.gate.Middleware(waitroom.DefaultRoom)(http.NotFoundHandler())
	visit := func() *httptest.ResponseRecorder {
		req := httptest.NewRequest(http.MethodGet, "http://app.example/page", nil)
		req.RemoteAddr = "192.0.2.9:5000"
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec
	}
	for i := range 2 {
		if rec := visit(); rec.Code == http.StatusTooManyRequests {
			t.Fatalf("join %d within the burst refused", i+1)
		}
	}
	rec := visit()
	if rec.Code != http.StatusTooManyRequests || rec.Header().Get("Retry-After") == "" {
		t.Errorf("third join from one address: %d, Retry-After %q; want 429 with Retry-After", rec.Code, rec.Header().Get("Retry-After"))
	}
	if room, _ := e.mem.Room(context.Background(), waitroom.DefaultRoom); room.Waiting != 2 {
		t.Errorf("%d waiting, want 2 (the refused visitor made no session)", room.Waiting)
	}
}
