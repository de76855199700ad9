package httpapi_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/internal/clientaddr"
	"github.com/waitroom/waitroom/internal/httpapi"
	"github.com/waitroom/waitroom/internal/limit"
	"github.com/waitroom/waitroom/memstore"
)

// newEnvWith is newEnv with join limits: change sets them.
func newEnvWith(t testing.TB, change func(*limit.Joins)) *env {
	t.Helper()
	e := &env{t: t, store: memstore.New(), clock: waitroom.NewManualClock(time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)), reg: prometheus.NewRegistry()}
	joins := &limit.Joins{}
	change(joins)
	e.raw = httpapi.NewHandler(withParts(t, httpapi.Config{Store: e.store, AdminToken: adminToken, Clock: e.clock, Registry: e.reg, Admit: admission(t, e.store, e.clock, joins)}))
	e.handler = checked(t, e.raw)
	e.srv = httptest.NewServer(e.handler)
	t.Cleanup(func() {
		e.srv.Close()
		_ = e.store.Close()
	})
	return e
}

// joinFrom sends a join straight to the handler as if from remote, with
// optional X-Forwarded-For and Authorization.
func (e *env) joinFrom(remote, xff, authz, body string) *httptest.ResponseRecorder {
	req := httptest.NewRequest("POST", "/v1/rooms/r/sessions", strings.NewReader(body))
	req.RemoteAddr = remote
	if xff != "" {
		req.Header.Set("X-Forwarded-For", xff)
	}
	if authz != "" {
		req.Header.Set("Authorization", authz)
	}
	rec := httptest.NewRecorder()
	e.handler.ServeHTTP(rec, req)
	return rec
}

// wantRefusal checks a refused join: status, code, error shape, Retry-After.
func wantRefusal(t *testing.T, what string, rec *httptest.ResponseRecorder, status int, code waitroom.Code, retry string) {
	t.Helper()
	if rec.Code != status {
		t.Fatalf("%s: got status %d, want %d; body %s", what, rec.Code, status, rec.Body.Bytes())
	}
	v, err := errorShape(rec.Header(), rec.Body.Bytes())
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if v.Error.Code != code {
		t.Fatalf("%s: got code %s, want %s", what, v.Error.Code, code)
	}
	if got := rec.Header().Get("Retry-After"); got != retry {
		t.Fatalf("%s: got Retry-After %q, want %q", what, got, retry)
	}
}

func TestJoinLimitPerAddress(t *testing.T) {
	e := newEnvWith(t, func(c *limit.Joins) {
		c.Rate = limit.NewLimiter(limit.DefaultPerMinute, limit.DefaultBurst, 0)
	})
	e.must(http.StatusCreated, withAdmin, "PUT", "/v1/rooms/r", `{"capacity":1}`)
	for i := range 120 {
		if rec := e.joinFrom("192.0.2.1:4000", "", "", ""); rec.Code != http.StatusCreated {
			t.Fatalf("join %d of 120 from one address: got %d, want 201; body %s", i+1, rec.Code, rec.Body.Bytes())
		}
	}
	wantRefusal(t, "join 121 from one address", e.joinFrom("192.0.2.1:4001", "", "", ""), http.StatusTooManyRequests, waitroom.CodeRateLimited, "1")
	if rec := e.joinFrom("192.0.2.2:4000", "", "", ""); rec.Code != http.StatusCreated {
		t.Fatalf("join from another address: got %d, want 201", rec.Code)
	}
	// The admin token marks a trusted backend: never limited per address.
	for i := range 10 {
		if rec := e.joinFrom("192.0.2.1:4000", "", "Bearer "+adminToken, ""); rec.Code != http.StatusCreated {
			t.Fatalf("admin join %d over the limit: got %d, want 201; body %s", i+1, rec.Code, rec.Body.Bytes())
		}
	}
	// A wrong token is not trusted.
	wantRefusal(t, "join with a wrong token over the limit", e.joinFrom("192.0.2.1:4000", "", "Bearer nope", ""), http.StatusTooManyRequests, waitroom.CodeRateLimited, "1")
	// Half a second earns one join.
	e.clock.Advance(500 * time.Millisecond)
	if rec := e.joinFrom("192.0.2.1:4000", "", "", ""); rec.Code != http.StatusCreated {
		t.Fatalf("join 0.5s later: got %d, want 201", rec.Code)
	}
	wantRefusal(t, "second join 0.5s later", e.joinFrom("192.0.2.1:4000", "", "", ""), http.StatusTooManyRequests, waitroom.CodeRateLimited, "1")
	// Existing sessions are never limited.
	s := e.session(e.must(http.StatusCreated, withAdmin, "POST", "/v1/rooms/r/sessions", ""))
	for range 200 {
		req := httptest.NewRequest("GET", "/v1/rooms/r/sessions/"+s.ID, nil)
		req.RemoteAddr = "192.0.2.1:4000"
		rec := httptest.NewRecorder()
		e.handler.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			t.Fatalf("reading a session from a limited address: got %d, want 200", rec.Code)
		}
	}
}

func TestJoinLimitRetryAfterWholeSeconds(t *testing.T) {
	e := newEnvWith(t, func(c *limit.Joins) { c.Rate = limit.NewLimiter(7, 1, 0) })
	e.must(http.StatusCreated, withAdmin, "PUT", "/v1/rooms/r", "")
	e.joinFrom("192.0.2.1:1", "", "", "")
	// 60s/7 = 8.57s until the next token: rounded up to 9.
	wantRefusal(t, "second join at 7/min, burst 1", e.joinFrom("192.0.2.1:1", "", "", ""), http.StatusTooManyRequests, waitroom.CodeRateLimited, "9")
	e.clock.Advance(8 * time.Second)
	wantRefusal(t, "8s later", e.joinFrom("192.0.2.1:1", "", "", ""), http.StatusTooManyRequests, waitroom.CodeRateLimited, "1")
	e.clock.Advance(600 * time.Millisecond)
	if rec := e.joinFrom("192.0.2.1:1", "", "", ""); rec.Code != http.StatusCreated {
		t.Fatalf("8.6s later: got %d, want 201", rec.Code)
	}
}

func TestJoinLimitIPv6PerSlash64(t *testing.T) {
	e := newEnvWith(t, func(c *limit.Joins) { c.Rate = limit.NewLimiter(60, 2, 0) })
	e.must(http.StatusCreated, withAdmin, "PUT", "/v1/rooms/r", "")
	for _, a := range []string{"[2001:db8:0:1::1]:1", "[2001:db8:0:1:abcd::2]:1"} {
		if rec := e.joinFrom(a, "", "", ""); rec.Code != http.StatusCreated {
			t.Fatalf("join from %s: got %d, want 201", a, rec.Code)
		}
	}
	wantRefusal(t, "third join from the same /64", e.joinFrom("[2001:db8:0:1::99]:1", "", "", ""), http.StatusTooManyRequests, waitroom.CodeRateLimited, "1")
	if rec := e.joinFrom("[2001:db8:0:2::1]:1", "", "", ""); rec.Code != http.StatusCreated {
		t.Fatalf("join from the next /64: got %d, want 201", rec.Code)
	}
}

func TestJoinLimitTrustedProxies(t *testing.T) {
	proxies, err := clientaddr.Parse("127.0.0.1/32,10.0.0.0/8")
	if err != nil {
		t.Fatal(err)
	}
	e := newEnvWith(t, func(c *limit.Joins) {
		c.Rate = limit.NewLimiter(60, 1, 0)
		c.Proxies = proxies
	})
	e.must(http.StatusCreated, withAdmin, "PUT", "/v1/rooms/r", "")
	// Two clients behind the same proxy chain have their own allowances.
	for _, xff := range []string{"198.51.100.1", "198.51.100.2, 10.1.1.1"} {
		if rec := e.joinFrom("127.0.0.1:1", xff, "", ""); rec.Code != http.StatusCreated {
			t.Fatalf("join through the proxy for %s: got %d, want 201", xff, rec.Code)
		}
	}
	wantRefusal(t, "second join of 198.51.100.1 through the proxy", e.joinFrom("127.0.0.1:1", "198.51.100.1", "", ""), http.StatusTooManyRequests, waitroom.CodeRateLimited, "1")
	// A client prepending a fake hop does not escape: the proxy's entry counts.
	wantRefusal(t, "spoofed hop left of the real client", e.joinFrom("127.0.0.1:1", "203.0.113.50, 198.51.100.1", "", ""), http.StatusTooManyRequests, waitroom.CodeRateLimited, "1")
	// An untrusted peer's X-Forwarded-For is ignored: it is limited as itself.
	if rec := e.joinFrom("192.0.2.9:1", "198.51.100.3", "", ""); rec.Code != http.StatusCreated {
		t.Fatalf("first join of an untrusted peer: got %d, want 201", rec.Code)
	}
	wantRefusal(t, "untrusted peer naming a fresh address", e.joinFrom("192.0.2.9:1", "198.51.100.4", "", ""), http.StatusTooManyRequests, waitroom.CodeRateLimited, "1")
}

// TestJoinLimitOffWithoutLimiter documents the library default: an
// admission without join limits does not limit (the server turns the limit
// on).
func TestJoinLimitOffWithoutLimiter(t *testing.T) {
	e := newEnv(t)
	e.must(http.StatusCreated, withAdmin, "PUT", "/v1/rooms/r", "")
	for i := range 300 {
		if rec := e.joinFrom("192.0.2.1:1", "", "", ""); rec.Code != http.StatusCreated {
			t.Fatalf("join %d without a limiter: got %d, want 201", i+1, rec.Code)
		}
	}
}

func TestMaxSessionsPerRoom(t *testing.T) {
	e := newEnvWith(t, func(c *limit.Joins) { c.MaxSessionsPerRoom = 3 })
	e.must(http.StatusCreated, withAdmin, "PUT", "/v1/rooms/r", `{"capacity":1,"waiting_timeout":"0s"}`)
	e.must(http.StatusCreated, withAdmin, "PUT", "/v1/rooms/other", "")
	var ids []string
	for range 3 {
		ids = append(ids, e.session(e.must(http.StatusCreated, noAuth, "POST", "/v1/rooms/r/sessions", "")).ID)
	}
	wantRefusal(t, "4th join with a cap of 3", e.joinFrom("192.0.2.1:1", "", "", ""), http.StatusServiceUnavailable, waitroom.CodeRoomFull, "5")
	wantRefusal(t, "admin join with a cap of 3", e.joinFrom("192.0.2.1:1", "", "Bearer "+adminToken, `{"key":"k"}`), http.StatusServiceUnavailable, waitroom.CodeRoomFull, "5")
	// Another room has its own count.
	e.must(http.StatusCreated, noAuth, "POST", "/v1/rooms/other/sessions", "")
	// Existing sessions keep working.
	for _, id := range ids {
		e.must(http.StatusOK, noAuth, "GET", "/v1/rooms/r/sessions/"+id, "")
		e.must(http.StatusOK, noAuth, "POST", "/v1/rooms/r/sessions/"+id+"/heartbeat", "")
	}
	// A leave frees a place; the count is read again once it is a second old.
	e.must(http.StatusOK, noAuth, "DELETE", "/v1/rooms/r/sessions/"+ids[0], "")
	e.clock.Advance(1500 * time.Millisecond)
	e.must(http.StatusCreated, noAuth, "POST", "/v1/rooms/r/sessions", "")
	wantRefusal(t, "join once full again", e.joinFrom("192.0.2.1:1", "", "", ""), http.StatusServiceUnavailable, waitroom.CodeRoomFull, "5")
	// Joining a room that does not exist is still room_not_found.
	if rec := serve(e.handler, "POST", "/v1/rooms/nope/sessions", "", ""); rec.Code != http.StatusNotFound {
		t.Fatalf("join of a missing room with a cap: got %d, want 404", rec.Code)
	}
}

func TestMemoryGuardRefusesJoins(t *testing.T) {
	var used atomic.Uint64
	used.Store(100)
	e := newEnvWith(t, func(c *limit.Joins) {
		c.Memory = limit.NewMemoryGuard(1000, used.Load)
	})
	e.must(http.StatusCreated, withAdmin, "PUT", "/v1/rooms/r", `{"capacity":1}`)
	s := e.session(e.must(http.StatusCreated, noAuth, "POST", "/v1/rooms/r/sessions", ""))
	used.Store(5000)
	e.clock.Advance(time.Second) // past the sampling interval
	wantRefusal(t, "join over the memory limit", e.joinFrom("192.0.2.1:1", "", "", ""), http.StatusServiceUnavailable, waitroom.CodeRoomFull, "5")
	wantRefusal(t, "admin join over the memory limit", e.joinFrom("192.0.2.1:1", "", "Bearer "+adminToken, ""), http.StatusServiceUnavailable, waitroom.CodeRoomFull, "5")
	e.must(http.StatusOK, noAuth, "GET", "/v1/rooms/r/sessions/"+s.ID, "")
	e.must(http.StatusOK, noAuth, "POST", "/v1/rooms/r/sessions/"+s.ID+"/heartbeat", "")
	e.must(http.StatusOK, noAuth, "GET", "/v1/rooms/r", "")
	used.Store(900)
	e.clock.Advance(time.Second)
	e.must(http.StatusCreated, noAuth, "POST", "/v1/rooms/r/sessions", "")
}
