package httpapi_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/internal/admintoken"
	"github.com/waitroom/waitroom/internal/admit"
	"github.com/waitroom/waitroom/internal/door"
	"github.com/waitroom/waitroom/internal/httpapi"
	"github.com/waitroom/waitroom/internal/limit"
	"github.com/waitroom/waitroom/internal/openapi/openapitest"
	"github.com/waitroom/waitroom/internal/push"
	"github.com/waitroom/waitroom/internal/roomstats"
	"github.com/waitroom/waitroom/internal/roomview"
	"github.com/waitroom/waitroom/memstore"
)

const adminToken = "test-admin-token"

// env is one API server over a fresh memstore.
type env struct {
	t       testing.TB
	store   *memstore.Store
	clock   *waitroom.ManualClock
	reg     *prometheus.Registry
	handler http.Handler // raw, checked against the OpenAPI document for t
	raw     http.Handler // the API handler itself
	srv     *httptest.Server
}

// checkedBy returns the API handler checked against the OpenAPI document
// for t: a fuzz target, whose every input runs as its own test, calls it
// with that input's t, since a problem cannot be reported to the F.
func (e *env) checkedBy(t testing.TB) http.Handler {
	return checked(t, e.raw)
}

func newEnv(t testing.TB) *env {
	t.Helper()
	e := &env{t: t, store: memstore.New(), clock: waitroom.NewManualClock(time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)), reg: prometheus.NewRegistry()}
	e.raw = httpapi.NewHandler(withParts(t, httpapi.Config{
		Store:      e.store,
		AdminToken: adminToken,
		Clock:      e.clock,
		Registry:   e.reg,
		// The route tables send a wrong token to every admin route; the
		// limit on wrong tokens itself is TestAdminTokenLimit's.
		AdminGuard: admintoken.New(admintoken.Config{Clock: e.clock, Registry: e.reg, MaxWrong: 1 << 20}),
	}))
	e.handler = checked(t, e.raw)
	e.srv = httptest.NewServer(e.handler)
	t.Cleanup(func() {
		e.srv.Close()
		_ = e.store.Close()
	})
	return e
}

// withParts fills in what a server gives its API and cfg leaves out: the
// admission, a push hub and the console's numbers over cfg.Store, each
// stopped when t ends.
func withParts(t testing.TB, cfg httpapi.Config) httpapi.Config {
	t.Helper()
	if cfg.Admit == nil {
		cfg.Admit = admission(t, cfg.Store, cfg.Clock, nil)
	}
	if cfg.Hub == nil {
		cfg.Hub = push.New(cfg.Store, push.Options{Clock: cfg.Clock, Fill: cfg.Fill})
		t.Cleanup(cfg.Hub.Close)
	}
	if cfg.Stats == nil {
		cfg.Stats = roomstats.New(cfg.Store, cfg.Store, roomstats.Options{Clock: cfg.Clock, Sample: -1})
		t.Cleanup(func() { _ = cfg.Stats.Close() })
	}
	return cfg
}

// admission is the admission a server gives its API: over st, with a door
// and the limits joins (nil for none), both reading rooms through one room
// view on clock (nil for the system's).
func admission(t testing.TB, st waitroom.Store, clock waitroom.Clock, joins *limit.Joins) *admit.Admission {
	t.Helper()
	rooms := roomview.New(roomview.Config{Store: st, Clock: clock})
	t.Cleanup(rooms.Close)
	if joins != nil && joins.Rooms == nil {
		joins.Rooms = rooms
	}
	dr := door.New(rooms, []byte("the httpapi tests' door secret, 32+ bytes"))
	return admit.New(admit.Config{Store: st, Door: dr, Joins: joins})
}

// checked wraps an API handler so that every answer it writes, to any
// client or recorder, is checked against the OpenAPI document
// (openapi/openapi.json): a status, field, header or error code the
// document does not describe fails t.
func checked(t testing.TB, h http.Handler) http.Handler {
	t.Helper()
	return openapitest.Handler(t, h, apiOnly)
}

// apiOnly says an API handler is the server without its pages: a request
// for a page's route (/r/{room}, /admin, …) is answered as an unknown
// route, as in a server run without the pages.
var apiOnly = openapitest.Serves("/v1/", "/healthz", "/readyz", "/metrics")

// auth says which Authorization header a request carries.
type auth int

const (
	noAuth auth = iota
	withAdmin
	wrongToken
)

func (a auth) String() string {
	return [...]string{"no token", "admin token", "wrong token"}[a]
}

func (a auth) set(h http.Header) {
	switch a {
	case withAdmin:
		h.Set("Authorization", "Bearer "+adminToken)
	case wrongToken:
		h.Set("Authorization", "Bearer not-"+adminToken)
	}
}

// answer is one HTTP answer, read whole.
type answer struct {
	status int
	header http.Header
	body   []byte
}

// do sends one request to the real server.
func (e *env) do(a auth, method, path, body string) answer {
	e.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, e.srv.URL+path, rd)
	if err != nil {
		e.t.Fatalf("%s %s: %v", method, path, err)
	}
	a.set(req.Header)
	resp, err := e.srv.Client().Do(req)
	if err != nil {
		e.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		e.t.Fatalf("%s %s: reading answer: %v", method, path, err)
	}
	return answer{status: resp.StatusCode, header: resp.Header, body: b}
}

// must sends a request and fails the test unless the answer has status want.
func (e *env) must(want int, a auth, method, path, body string) answer {
	e.t.Helper()
	ans := e.do(a, method, path, body)
	if ans.status != want {
		e.t.Fatalf("%s %s: got status %d, want %d; body %s", method, path, ans.status, want, ans.body)
	}
	return ans
}

// session decodes a Session answer.
func (e *env) session(ans answer) waitroom.Session {
	e.t.Helper()
	var s waitroom.Session
	if err := json.Unmarshal(ans.body, &s); err != nil {
		e.t.Fatalf("decoding session %s: %v", ans.body, err)
	}
	return s
}

// sessions decodes a {"sessions":[…],"next":…} answer.
func (e *env) sessions(ans answer) ([]waitroom.Session, string) {
	e.t.Helper()
	var v struct {
		Sessions []waitroom.Session `json:"sessions"`
		Next     string             `json:"next"`
	}
	if err := json.Unmarshal(ans.body, &v); err != nil {
		e.t.Fatalf("decoding sessions %s: %v", ans.body, err)
	}
	return v.Sessions, v.Next
}

// apiError is the documented error shape, decoded strictly.
type apiError struct {
	Error struct {
		Code    waitroom.Code `json:"code"`
		Message string        `json:"message"`
	} `json:"error"`
	Session   json.RawMessage `json:"session"`
	Challenge json.RawMessage `json:"challenge"`
}

// errorShape checks b is exactly the documented error shape and returns it.
func errorShape(header http.Header, b []byte) (apiError, error) {
	var v apiError
	if ct := header.Get("Content-Type"); ct != "application/json; charset=utf-8" {
		return v, fmt.Errorf("Content-Type %q, want application/json; charset=utf-8", ct)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&v); err != nil {
		return v, fmt.Errorf("body %s is not the error shape: %v", b, err)
	}
	if v.Error.Code == "" || v.Error.Message == "" {
		return v, fmt.Errorf("body %s lacks a code or message", b)
	}
	if len(v.Session) > 0 && v.Error.Code != waitroom.CodeAlreadyJoined && v.Error.Code != waitroom.CodeNotInvited {
		return v, fmt.Errorf("body %s carries a session with code %s", b, v.Error.Code)
	}
	return v, nil
}
