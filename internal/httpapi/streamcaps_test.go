package httpapi_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/internal/clientaddr"
	"github.com/waitroom/waitroom/internal/httpapi"
	"github.com/waitroom/waitroom/internal/push"
	"github.com/waitroom/waitroom/memstore"
)

// capsEnv is an API server with per-session and per-address stream caps,
// behind a trusted proxy at 127.0.0.1, so X-Forwarded-For names the client.
type capsEnv struct {
	t     *testing.T
	store *memstore.Store
	clock *waitroom.ManualClock
	reg   *prometheus.Registry
	srv   *httptest.Server
}

func newCapsEnv(t *testing.T, perSession, perAddress int) *capsEnv {
	t.Helper()
	e := &capsEnv{t: t, store: memstore.New(), clock: waitroom.NewManualClock(time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)), reg: prometheus.NewRegistry()}
	hub := push.New(e.store, push.Options{Interval: 10 * time.Millisecond, Clock: e.clock})
	proxies, err := clientaddr.Parse("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	e.srv = httptest.NewServer(checked(t, httpapi.NewHandler(httpapi.Config{
		Store: e.store, AdminToken: adminToken, Clock: e.clock, Hub: hub, Registry: e.reg, Admit: admission(t, e.store, e.clock, nil),
		MaxStreamsPerSession: perSession, MaxStreamsPerAddress: perAddress, TrustedProxies: proxies,
	})))
	t.Cleanup(func() { hub.Close(); e.srv.Close(); e.store.Close() })
	if _, _, err := e.store.PutRoom(context.Background(), "r", waitingRoom(0), e.clock.Now()); err != nil {
		t.Fatal(err)
	}
	return e
}

func (e *capsEnv) join() string {
	e.t.Helper()
	x, err := e.store.Join(context.Background(), "r", "", e.clock.Now())
	if err != nil {
		e.t.Fatal(err)
	}
	return x.ID
}

// stream opens session id's event stream (or, with ws, asks for its
// WebSocket) as client from; an open stream is closed at the test's end.
// It returns the status and, on a refusal, the error code and Retry-After.
func (e *capsEnv) stream(id, from string, ws bool) (resp *http.Response, code string) {
	e.t.Helper()
	path := "/events"
	if ws {
		path = "/ws"
	}
	req, _ := http.NewRequest("GET", e.srv.URL+"/v1/rooms/r/sessions/"+id+path, nil)
	req.Header.Set("X-Forwarded-For", from)
	if ws {
		req.Header.Set("Connection", "Upgrade")
		req.Header.Set("Upgrade", "websocket")
		req.Header.Set("Sec-WebSocket-Version", "13")
		req.Header.Set("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ==")
	}
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		e.t.Fatalf("stream of %s from %s: %v", id, from, err)
	}
	if resp.StatusCode == 200 || resp.StatusCode == 101 {
		e.t.Cleanup(func() { resp.Body.Close() })
		return resp, ""
	}
	defer resp.Body.Close()
	var body struct {
		Error struct{ Code string } `json:"error"`
	}
	_ = json.NewDecoder(io.LimitReader(resp.Body, 4096)).Decode(&body)
	return resp, body.Error.Code
}

// want opens a stream and checks its status (and, for 429, the code and
// Retry-After).
func (e *capsEnv) want(id, from string, ws bool, status int) *http.Response {
	e.t.Helper()
	resp, code := e.stream(id, from, ws)
	if resp.StatusCode != status {
		e.t.Fatalf("stream of %s from %s (ws %v): %d %q, want %d", id, from, ws, resp.StatusCode, code, status)
	}
	if status == 429 && (code != "rate_limited" || resp.Header.Get("Retry-After") != "5") {
		e.t.Fatalf("stream of %s from %s refused with %q, Retry-After %q; want rate_limited, 5", id, from, code, resp.Header.Get("Retry-After"))
	}
	return resp
}

// refusals reads waitroom_stream_refusals_total by reason.
func (e *capsEnv) refusals() map[string]float64 {
	e.t.Helper()
	mfs, err := e.reg.Gather()
	if err != nil {
		e.t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != "waitroom_stream_refusals_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			out[m.GetLabel()[0].GetValue()] = m.GetCounter().GetValue()
		}
	}
	return out
}

// eventually retries open until it answers 200, for a stream slot freed by
// a closed stream (the server notices the close in the background).
func (e *capsEnv) eventually(id, from string) {
	e.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, _ := e.stream(id, from, false)
		if resp.StatusCode == 200 {
			return
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("stream of %s from %s: still %d 10s after a stream closed", id, from, resp.StatusCode)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestStreamsPerSession: one session holds at most MaxStreamsPerSession
// streams, SSE and WebSocket together; over it 429 rate_limited with
// Retry-After, counted; other sessions are unaffected, and a closed stream
// gives its slot back.
func TestStreamsPerSession(t *testing.T) {
	e := newCapsEnv(t, 2, 0)
	a, b := e.join(), e.join()
	first := e.want(a, "198.51.100.1", false, 200)
	e.want(a, "198.51.100.2", false, 200)
	e.want(a, "198.51.100.3", false, 429)
	e.want(a, "198.51.100.3", true, 429)
	e.want(b, "198.51.100.3", false, 200)
	if got := e.refusals(); got["per_session"] != 2 || got["per_address"] != 0 || got["global"] != 0 {
		t.Errorf("refusals %v, want 2 per_session", got)
	}
	first.Body.Close()
	e.eventually(a, "198.51.100.4")
}

// TestStreamsPerAddress: one client address (IPv6 by /64, as the trusted
// proxy's X-Forwarded-For names it) holds at most MaxStreamsPerAddress
// streams, over any number of sessions; other addresses and other /64s are
// served; refused or failed streams hold nothing.
func TestStreamsPerAddress(t *testing.T) {
	e := newCapsEnv(t, 1, 3)
	a, b, c, d := e.join(), e.join(), e.join(), e.join()
	first := e.want(a, "2001:db8::1", false, 200)
	// Refused for its session: the address's count is given back.
	e.want(a, "2001:db8::2", false, 429)
	// A session that does not exist: likewise.
	if resp, code := e.stream("nope", "2001:db8::2", false); resp.StatusCode != 400 && resp.StatusCode != 404 {
		t.Fatalf("stream of an unknown session: %d %q, want 400 or 404", resp.StatusCode, code)
	}
	e.want(b, "2001:db8::2", true, 101)
	e.want(c, "2001:db8::3", false, 200)
	// The /64 holds 3: a fourth address in it is refused, for any session.
	e.want(d, "2001:db8::ffff", false, 429)
	e.want(d, "2001:db8::ffff", true, 429)
	// Another /64, and an IPv4 address, are served.
	e.want(d, "2001:db8:0:1::1", false, 200)
	if got := e.refusals(); got["per_session"] != 1 || got["per_address"] != 2 {
		t.Errorf("refusals %v, want 1 per_session and 2 per_address", got)
	}
	first.Body.Close()
	x := e.join()
	e.eventually(x, "2001:db8::9")
}
