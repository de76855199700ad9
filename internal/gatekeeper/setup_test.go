package gatekeeper

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/waitroom/waitroom/gate"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/internal/admit"
	"github.com/waitroom/waitroom/internal/clientaddr"
	"github.com/waitroom/waitroom/internal/door"
	"github.com/waitroom/waitroom/internal/httpapi"
	"github.com/waitroom/waitroom/internal/openapi/openapitest"
	"github.com/waitroom/waitroom/internal/roomview"
	"github.com/waitroom/waitroom/internal/web"
	"github.com/waitroom/waitroom/memstore"
)

const adminToken = "gate-test-admin-token"

var t0 = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

// countingStore counts Heartbeat calls, to check activity batching.
type countingStore struct {
	waitroom.Store
	beats atomic.Int64
}

func (c *countingStore) Heartbeat(ctx context.Context, room, id string, now time.Time) (waitroom.Session, error) {
	c.beats.Add(1)
	return c.Store.Heartbeat(ctx, room, id, now)
}

// env is a store, a gate and (when started) a waitroom server with the
// real API, the real waiting pages and the gate's endpoints.
type env struct {
	t     testing.TB
	mem   *memstore.Store
	store *countingStore
	rooms *roomview.View
	clock waitroom.Clock
	keys  *gate.KeySet
	gate  *Gate
	// admit is the one admission of the gate, the API and the pages, with
	// a door, as `waitroom serve` wires it.
	admit *admit.Admission
	srv   *httptest.Server
}

type envConfig struct {
	room    waitroom.RoomConfig
	clock   waitroom.Clock
	gateCfg func(*Config)
	// admit, when set, changes the admission's Config (its limits).
	admit func(*admit.Config)
	// proxy, when set, is mounted at "/" of the waitroom server (the
	// reverse-proxy mode); otherwise "/" is the API.
	proxy *ProxyConfig
}

func loopback() clientaddr.Trusted {
	t, err := clientaddr.Parse("127.0.0.0/8, ::1")
	if err != nil {
		panic(err)
	}
	return t
}

func newEnv(t testing.TB, ec envConfig) *env {
	t.Helper()
	if ec.clock == nil {
		ec.clock = waitroom.NewManualClock(t0)
	}
	mem := memstore.New()
	e := &env{t: t, mem: mem, store: &countingStore{Store: mem}, clock: ec.clock}
	ks, err := gate.NewKeySet(gate.AlgEdDSA)
	if err != nil {
		t.Fatalf("NewKeySet: %v", err)
	}
	e.keys = ks
	if ec.room.Mode == "" {
		ec.room = waitroom.DefaultConfig()
	}
	if _, _, err := mem.PutRoom(context.Background(), waitroom.DefaultRoom, ec.room, ec.clock.Now()); err != nil {
		t.Fatalf("PutRoom: %v", err)
	}
	e.rooms = newRooms(t, e.store, ec.clock)
	dr := door.New(e.rooms, []byte("the gate tests' door secret, 32+ bytes"))
	ac := admit.Config{Store: e.store, Door: dr}
	if ec.admit != nil {
		ec.admit(&ac)
	}
	e.admit = admit.New(ac)
	cfg := Config{Store: e.store, Rooms: e.rooms, Keys: ks, Clock: ec.clock, TrustedProxies: loopback(), ActivityInterval: time.Second, Admit: e.admit}
	if ec.gateCfg != nil {
		ec.gateCfg(&cfg)
	}
	g, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	e.gate = g
	t.Cleanup(func() {
		if e.srv != nil {
			e.srv.Close()
		}
		_ = g.Close()
		_ = mem.Close()
	})
	return e
}

// newRooms returns a room view over s (clock nil for the system's), closed
// when the test ends: each process of a test has its own, as a server does.
func newRooms(t testing.TB, s waitroom.Store, clock waitroom.Clock) *roomview.View {
	t.Helper()
	v := roomview.New(roomview.Config{Store: s, Clock: clock})
	t.Cleanup(v.Close)
	return v
}

// serve starts the waitroom server: API, pages, gate endpoints and, with
// a proxy config, the reverse proxy at "/" as `waitroom serve --upstream`
// would mount it.
func (e *env) serve(proxy *ProxyConfig) *httptest.Server {
	e.t.Helper()
	api := httpapi.NewHandler(httpapi.Config{Store: e.store, AdminToken: adminToken, Clock: e.clock, Fill: e.gate.Fill, Admit: e.admit})
	webCfg := web.Config{Store: e.store, Rooms: e.rooms, Clock: e.clock, Admit: e.admit}
	pages, err := web.New(webCfg)
	if err != nil {
		e.t.Fatalf("web.New: %v", err)
	}
	mux := http.NewServeMux()
	if proxy == nil {
		mux.Handle("/", api)
	}
	for _, p := range web.Prefixes(webCfg) {
		mux.Handle(p, pages)
	}
	mux.Handle(Prefix, e.gate.Handler())
	mux.Handle(JWKSPath, e.gate.Handler())
	if proxy != nil {
		h, err := e.gate.Proxy(*proxy)
		if err != nil {
			e.t.Fatalf("Proxy: %v", err)
		}
		mux.Handle("/v1/", api)
		mux.Handle("/healthz", api)
		mux.Handle("/", h)
	}
	// Every answer is checked against the OpenAPI document; in the
	// reverse-proxy mode the paths the document does not list, and `/`
	// (the home page, which --upstream gives to the app), are the
	// protected app's, whose answers are not the server's.
	var outside []openapitest.Option
	if proxy != nil {
		outside = append(outside, openapitest.Outside("/"), openapitest.App("/"))
	}
	e.srv = httptest.NewServer(checked(e.t, mux, outside...))
	return e.srv
}

// checked wraps a handler of the server (the gate's, or the whole server's)
// so that every answer it writes is checked against the OpenAPI document
// (openapi/openapi.json): a status, header or field it does not describe
// fails t.
func checked(t testing.TB, h http.Handler, opts ...openapitest.Option) http.Handler {
	t.Helper()
	return openapitest.Handler(t, h, opts...)
}

// join makes a session in the default room.
func (e *env) join() waitroom.Session {
	e.t.Helper()
	s, err := e.store.Join(context.Background(), waitroom.DefaultRoom, "", e.clock.Now())
	if err != nil {
		e.t.Fatalf("Join: %v", err)
	}
	return s
}

// pass returns a pass for an active session.
func (e *env) pass(s waitroom.Session) string {
	e.t.Helper()
	if s.Status != waitroom.StatusActive {
		e.t.Fatalf("session is %s, want active", s.Status)
	}
	e.gate.Fill(&s, e.clock.Now())
	if s.Pass == "" {
		e.t.Fatal("Fill left the pass empty for an active session")
	}
	return s.Pass
}

// noRedirect is a client that does not follow redirects.
var noRedirect = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }, Timeout: 10 * time.Second}
