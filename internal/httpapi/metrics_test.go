package httpapi_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/internal/httpapi"
)

// TestMetricsExposed checks that /metrics serves the request histogram with
// the route pattern, method and status of earlier requests.
func TestMetricsExposed(t *testing.T) {
	e := newEnv(t)
	e.must(http.StatusCreated, withAdmin, "PUT", "/v1/rooms/r", "")
	e.must(http.StatusCreated, noAuth, "POST", "/v1/rooms/r/sessions", "")
	e.must(http.StatusNotFound, noAuth, "GET", "/no/such/route", "")
	e.must(http.StatusMethodNotAllowed, noAuth, "BREW", "/v1/rooms/r", "")

	// Issue 26: the metrics name every room, so they are the admin's.
	for _, auth := range []auth{noAuth, wrongToken} {
		ans := e.must(http.StatusUnauthorized, auth, "GET", "/metrics", "")
		if ae, err := errorShape(ans.header, ans.body); err != nil || ae.Error.Code != waitroom.CodeUnauthorized || strings.Contains(string(ans.body), "waitroom_") {
			t.Fatalf("/metrics without the token: %s (%v), want 401 unauthorized and no metric", ans.body, err)
		}
	}
	ans := e.must(http.StatusOK, withAdmin, "GET", "/metrics", "")
	text := string(ans.body)
	for _, want := range []string{
		`waitroom_http_request_duration_seconds_count{code="201",method="PUT",route="PUT /v1/rooms/{room}"} 1`,
		`waitroom_http_request_duration_seconds_count{code="201",method="POST",route="POST /v1/rooms/{room}/sessions"} 1`,
		`waitroom_http_request_duration_seconds_count{code="404",method="GET",route="unmatched"} 1`,
		`waitroom_http_request_duration_seconds_count{code="405",method="other",route="unmatched"} 1`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("/metrics lacks %s; got:\n%s", want, text)
		}
	}
	if n := seriesCount(t, e.reg, "waitroom_http_request_duration_seconds"); n != 6 {
		t.Errorf("request histogram series (4 requests, the refused scrapes and the scrape): got %d, want 6", n)
	}

	// A second handler on the same registry shares the histogram rather than
	// failing to register.
	h2 := httpapi.NewHandler(withParts(t, httpapi.Config{Store: e.store, Registry: e.reg, Admit: admission(t, e.store, e.clock, nil)}))
	serve(h2, "GET", "/healthz", "", "")
	if n := seriesCount(t, e.reg, "waitroom_http_request_duration_seconds"); n != 7 {
		t.Errorf("series after a second handler served /healthz: got %d, want 7", n)
	}
}

// seriesCount returns how many series of metric name reg holds.
// (prometheus/testutil would do, but its diff dependency is not in go.mod.)
func seriesCount(t *testing.T, reg *prometheus.Registry, name string) int {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatalf("Gather: %v", err)
	}
	for _, f := range families {
		if f.GetName() == name {
			return len(f.GetMetric())
		}
	}
	return 0
}

// brokenStore fails or panics where a test needs it to.
type brokenStore struct {
	waitroom.Store
	pingErr  error
	panicOn  string
	roomsErr error
}

func (b brokenStore) Ping(ctx context.Context) error { return b.pingErr }

func (b brokenStore) Rooms(ctx context.Context) ([]waitroom.Room, error) {
	if b.panicOn == "Rooms" {
		panic("boom: secret internal detail")
	}
	return nil, b.roomsErr
}

// TestInternalErrors checks that failures become the documented JSON with
// generic messages: internal causes never reach the client.
func TestInternalErrors(t *testing.T) {
	e := newEnv(t)
	const secret = "secret internal detail"
	cases := []struct {
		name   string
		store  brokenStore
		method string
		path   string
		status int
		code   waitroom.Code
	}{
		{"readyz with the store down", brokenStore{Store: e.store, pingErr: errors.New(secret)}, "GET", "/readyz", 503, waitroom.CodeUnavailable},
		{"readyz with a canceled context", brokenStore{Store: e.store, pingErr: context.Canceled}, "GET", "/readyz", 503, waitroom.CodeUnavailable},
		{"panic in a handler", brokenStore{Store: e.store, panicOn: "Rooms"}, "GET", "/v1/rooms", 500, waitroom.CodeInternal},
		{"plain error from the store", brokenStore{Store: e.store, roomsErr: errors.New(secret)}, "GET", "/v1/rooms", 500, waitroom.CodeInternal},
		{"backend failure", brokenStore{Store: e.store, roomsErr: waitroom.Unavailable(errors.New(secret), "listing")}, "GET", "/v1/rooms", 503, waitroom.CodeUnavailable},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := checked(t, httpapi.NewHandler(withParts(t, httpapi.Config{Store: c.store, AdminToken: adminToken, Admit: admission(t, c.store, nil, nil)})))
			rec := serve(h, c.method, c.path, "Bearer "+adminToken, "")
			if rec.Code != c.status {
				t.Errorf("got status %d, want %d; body %s", rec.Code, c.status, rec.Body.Bytes())
			}
			v, err := errorShape(rec.Header(), rec.Body.Bytes())
			if err != nil {
				t.Fatal(err)
			}
			if v.Error.Code != c.code {
				t.Errorf("got code %s, want %s", v.Error.Code, c.code)
			}
			if strings.Contains(rec.Body.String(), "secret") || strings.Contains(rec.Body.String(), "boom") {
				t.Errorf("answer leaks the internal cause: %s", rec.Body.Bytes())
			}
			if c.status == 503 && rec.Header().Get("Retry-After") == "" {
				t.Errorf("503 without Retry-After")
			}
		})
	}
}
