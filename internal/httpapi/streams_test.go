package httpapi_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/internal/httpapi"
	"github.com/waitroom/waitroom/internal/push"
	"github.com/waitroom/waitroom/memstore"
)

// streamEnv is an API server with fast stream timers and a count of
// requests in flight, so tests can wait for a stream handler to finish.
type streamEnv struct {
	t        *testing.T
	store    *memstore.Store
	clock    *waitroom.ManualClock
	hub      *push.Hub
	srv      *httptest.Server
	inFlight atomic.Int32
	reg      *prometheus.Registry
}

func newStreamEnv(t *testing.T, cfg waitroom.RoomConfig) *streamEnv {
	t.Helper()
	e := &streamEnv{t: t, store: memstore.New(), clock: waitroom.NewManualClock(time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC))}
	e.hub = push.New(e.store, push.Options{Interval: 10 * time.Millisecond, Clock: e.clock})
	e.reg = prometheus.NewRegistry()
	h := checked(t, httpapi.NewHandler(httpapi.Config{
		Store: e.store, AdminToken: adminToken, Clock: e.clock, Hub: e.hub, Registry: e.reg, Admit: admission(t, e.store, e.clock, nil),
		StreamHeartbeat: 50 * time.Millisecond, StreamPresence: 20 * time.Millisecond,
	}))
	e.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		e.inFlight.Add(1)
		defer e.inFlight.Add(-1)
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(func() {
		e.hub.Close() // ends every stream, so Close does not wait for them
		e.srv.Close()
		e.store.Close()
	})
	if _, _, err := e.store.PutRoom(context.Background(), "r", cfg, e.clock.Now()); err != nil {
		t.Fatal(err)
	}
	return e
}

func (e *streamEnv) join() waitroom.Session {
	e.t.Helper()
	x, err := e.store.Join(context.Background(), "r", "", e.clock.Now())
	if err != nil {
		e.t.Fatal(err)
	}
	return x
}

// waitIdle waits until no request is in flight and no event stream is
// open (a hijacked stream outlives its handler).
func (e *streamEnv) waitIdle() {
	e.t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for e.inFlight.Load() > 0 || e.openStreams() > 0 {
		if time.Now().After(deadline) {
			e.t.Fatalf("%d requests in flight and %d streams open after 5s", e.inFlight.Load(), e.openStreams())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// openStreams reads the server's gauge of open event streams.
func (e *streamEnv) openStreams() int {
	e.t.Helper()
	mfs, err := e.reg.Gather()
	if err != nil {
		e.t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == "waitroom_event_streams_open" {
			return int(mf.GetMetric()[0].GetGauge().GetValue())
		}
	}
	e.t.Fatal("no waitroom_event_streams_open gauge")
	return 0
}

// sseEvent is one parsed Server-Sent Event.
type sseEvent struct {
	id      uint64
	name    string
	session waitroom.Session
}

// sse is a client reading one event stream in the background.
type sse struct {
	resp     *http.Response
	events   chan sseEvent
	comments atomic.Int32
	done     chan struct{}
}

func (e *streamEnv) open(id string, header http.Header) *sse {
	e.t.Helper()
	req, _ := http.NewRequest("GET", e.srv.URL+"/v1/rooms/r/sessions/"+id+"/events", nil)
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := e.srv.Client().Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	if resp.StatusCode != 200 {
		e.t.Fatalf("open stream: status %d, want 200", resp.StatusCode)
	}
	c := &sse{resp: resp, events: make(chan sseEvent, 1000), done: make(chan struct{})}
	go c.read()
	e.t.Cleanup(c.close)
	return c
}

func (c *sse) read() {
	defer close(c.done)
	sc := bufio.NewScanner(c.resp.Body)
	var ev sseEvent
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if ev.name != "" {
				c.events <- ev
			}
			ev = sseEvent{}
		case strings.HasPrefix(line, ":"):
			c.comments.Add(1)
		case strings.HasPrefix(line, "id: "):
			ev.id, _ = strconv.ParseUint(line[4:], 10, 64)
		case strings.HasPrefix(line, "event: "):
			ev.name = line[7:]
		case strings.HasPrefix(line, "data: "):
			if err := json.Unmarshal([]byte(line[6:]), &ev.session); err != nil {
				ev.name = "bad data: " + err.Error()
			}
		}
	}
}

func (c *sse) close() {
	c.resp.Body.Close()
	<-c.done
}

// streamWait is how long a test waits for an event it expects: long enough
// for a machine saturated by other tests; a verdict on speed is measured
// separately where a test makes one.
const streamWait = 10 * time.Second

// next returns the next event, failing after streamWait.
func (c *sse) next(t *testing.T) sseEvent {
	t.Helper()
	select {
	case ev := <-c.events:
		if ev.name != "session" {
			t.Fatalf("event %q, want session", ev.name)
		}
		return ev
	case <-time.After(streamWait):
		t.Fatalf("no event within %s", streamWait)
	}
	return sseEvent{}
}

// until reads events until one satisfies ok, within streamWait.
func (c *sse) until(t *testing.T, what string, ok func(waitroom.Session) bool) sseEvent {
	t.Helper()
	deadline := time.After(streamWait)
	for {
		select {
		case ev := <-c.events:
			if ok(ev.session) {
				return ev
			}
		case <-deadline:
			t.Fatalf("no event with %s within %s", what, streamWait)
		}
	}
}

func waitingRoom(capacity int) waitroom.RoomConfig {
	cfg := waitroom.DefaultConfig()
	cfg.Capacity = capacity
	return cfg
}

// TestEventStreamPositions: a waiting session's stream starts with its
// state and follows its position as the line moves, with increasing ids and
// the SSE headers a proxy needs.
func TestEventStreamPositions(t *testing.T) {
	e := newStreamEnv(t, waitingRoom(1))
	a, b, c := e.join(), e.join(), e.join()
	st := e.open(c.ID, nil)
	for k, want := range map[string]string{"Content-Type": "text/event-stream", "X-Accel-Buffering": "no", "Cache-Control": "no-store"} {
		if got := st.resp.Header.Get(k); got != want {
			t.Errorf("header %s = %q, want %q", k, got, want)
		}
	}
	first := st.next(t)
	if first.session.Status != waitroom.StatusWaiting || first.session.Position != 2 {
		t.Fatalf("first event: %s position %d, want waiting position 2", first.session.Status, first.session.Position)
	}
	if _, err := e.store.Leave(context.Background(), "r", a.ID, waitroom.ReasonLeft, e.clock.Now()); err != nil {
		t.Fatal(err)
	}
	ev := st.until(t, "position 1", func(s waitroom.Session) bool { return s.Position == 1 })
	if ev.id <= first.id {
		t.Errorf("event id %d after %d, want increasing", ev.id, first.id)
	}
	if _, err := e.store.Leave(context.Background(), "r", b.ID, waitroom.ReasonLeft, e.clock.Now()); err != nil {
		t.Fatal(err)
	}
	st.until(t, "status active", func(s waitroom.Session) bool { return s.Status == waitroom.StatusActive })
}

// TestEventStreamLastEventID: a reconnecting client's ids continue above the
// Last-Event-ID it sends; junk in the header is ignored.
func TestEventStreamLastEventID(t *testing.T) {
	e := newStreamEnv(t, waitingRoom(0))
	x := e.join()
	const last = 1 << 50
	st := e.open(x.ID, http.Header{"Last-Event-Id": {strconv.FormatUint(last, 10)}})
	if ev := st.next(t); ev.id <= last {
		t.Errorf("first id after Last-Event-ID %d: got %d, want more", uint64(last), ev.id)
	}
	junk := e.open(x.ID, http.Header{"Last-Event-Id": {"'; DROP TABLE--"}})
	if ev := junk.next(t); ev.id == 0 {
		t.Error("junk Last-Event-ID: got id 0, want a normal id")
	}
}

// TestEventStreamHeartbeat: an idle stream gets keep-alive comments.
func TestEventStreamHeartbeat(t *testing.T) {
	e := newStreamEnv(t, waitingRoom(0))
	st := e.open(e.join().ID, nil)
	st.next(t)
	deadline := time.Now().Add(2 * time.Second)
	for st.comments.Load() < 3 {
		if time.Now().After(deadline) {
			t.Fatalf("%d keep-alive comments in 2s with a 50ms heartbeat, want at least 3", st.comments.Load())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestEventStreamIsPresence: a waiting session with an open stream stays in
// line past waiting_timeout; one without a stream is dropped.
func TestEventStreamIsPresence(t *testing.T) {
	e := newStreamEnv(t, waitingRoom(0)) // waiting_timeout 1m
	streamed, silent := e.join(), e.join()
	e.open(streamed.ID, nil).next(t)
	for range 3 {
		e.clock.Advance(40 * time.Second)
		time.Sleep(100 * time.Millisecond) // several presence ticks (20ms) at this time
	}
	ctx := context.Background()
	if _, err := e.store.Sweep(ctx, "r", e.clock.Now()); err != nil {
		t.Fatal(err)
	}
	got, err := e.store.Sessions(ctx, "r", []string{streamed.ID, silent.ID})
	if err != nil {
		t.Fatal(err)
	}
	if got[0].Status != waitroom.StatusWaiting {
		t.Errorf("session with an open stream after 120s: %s (%s), want waiting", got[0].Status, got[0].EndReason)
	}
	if got[1].Status != waitroom.StatusExpired || got[1].EndReason != waitroom.ReasonNoPresence {
		t.Errorf("session without a stream after 120s: %s (%s), want expired (no_presence)", got[1].Status, got[1].EndReason)
	}
}

// TestDroppedStreamStartsGrace: when the client drops the stream, the
// session keeps its place for grace and then expires as gone.
func TestDroppedStreamStartsGrace(t *testing.T) {
	cfg := waitingRoom(0)
	cfg.WaitingTimeout = 0 // only grace can end it
	cfg.Grace = waitroom.Duration(30 * time.Second)
	e := newStreamEnv(t, cfg)
	x := e.join()
	st := e.open(x.ID, nil)
	st.next(t)
	st.close()
	e.waitIdle() // the handler has called Away
	ctx := context.Background()
	e.clock.Advance(29 * time.Second)
	if got, _ := e.store.Sessions(ctx, "r", []string{x.ID}); got[0].Status != waitroom.StatusWaiting {
		t.Fatalf("29s after the drop: %s, want still waiting", got[0].Status)
	}
	e.clock.Advance(2 * time.Second)
	if _, err := e.store.Sweep(ctx, "r", e.clock.Now()); err != nil {
		t.Fatal(err)
	}
	got, _ := e.store.Sessions(ctx, "r", []string{x.ID})
	if got[0].Status != waitroom.StatusExpired || got[0].EndReason != waitroom.ReasonGone {
		t.Errorf("31s after the drop: %s (%s), want expired (gone)", got[0].Status, got[0].EndReason)
	}
}

// TestStalledReaderDoesNotDelayOthers: a client that never reads its
// stream does not hold up another client's updates.
func TestStalledReaderDoesNotDelayOthers(t *testing.T) {
	e := newStreamEnv(t, waitingRoom(0))
	var ids []string
	for range 3000 {
		ids = append(ids, e.join().ID)
	}
	stalled := e.join()
	watched := e.join()
	// A raw connection that sends the request and never reads a byte.
	conn, err := net.Dial("tcp", e.srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "GET /v1/rooms/r/sessions/%s/events HTTP/1.1\r\nHost: x\r\n\r\n", stalled.ID)
	st := e.open(watched.ID, nil)
	st.next(t)
	// Every leave moves both; the stalled stream's buffers fill up.
	ctx := context.Background()
	start := time.Now()
	for i, id := range ids {
		if _, err := e.store.Leave(ctx, "r", id, waitroom.ReasonLeft, e.clock.Now()); err != nil {
			t.Fatal(err)
		}
		if i%100 == 0 {
			time.Sleep(2 * time.Millisecond) // let the hub flush between bursts
		}
	}
	ev := st.until(t, "position 2", func(s waitroom.Session) bool { return s.Position == 2 })
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("the watched client reached position %d after %v, want well within 5s", ev.session.Position, d)
	}
}

// TestWebSocketUpdates: the same updates arrive over WebSocket, and the
// connection closes when the session ends.
func TestWebSocketUpdates(t *testing.T) {
	e := newStreamEnv(t, waitingRoom(1))
	a, b := e.join(), e.join()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, _, err := websocket.Dial(ctx, strings.Replace(e.srv.URL, "http", "ws", 1)+"/v1/rooms/r/sessions/"+b.ID+"/ws", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	read := func() waitroom.Session {
		t.Helper()
		_, data, err := c.Read(ctx)
		if err != nil {
			t.Fatalf("read: %v", err)
		}
		var s waitroom.Session
		if err := json.Unmarshal(data, &s); err != nil {
			t.Fatalf("message %s: %v", data, err)
		}
		return s
	}
	if s := read(); s.Status != waitroom.StatusWaiting || s.Position != 1 {
		t.Fatalf("first message: %s position %d, want waiting 1", s.Status, s.Position)
	}
	if _, err := e.store.Leave(ctx, "r", a.ID, waitroom.ReasonLeft, e.clock.Now()); err != nil {
		t.Fatal(err)
	}
	for s := read(); s.Status != waitroom.StatusActive; s = read() {
	}
	if _, err := e.store.Leave(ctx, "r", b.ID, waitroom.ReasonLeft, e.clock.Now()); err != nil {
		t.Fatal(err)
	}
	for s := read(); s.Status != waitroom.StatusLeft; s = read() {
	}
	if _, _, err := c.Read(ctx); websocket.CloseStatus(err) != websocket.StatusNormalClosure {
		t.Errorf("after the session ended: %v, want a normal close", err)
	}
}

// TestStreamErrorsAreJSON: a stream for an unknown session or room answers
// the usual JSON errors before streaming anything.
func TestStreamErrorsAreJSON(t *testing.T) {
	e := newStreamEnv(t, waitingRoom(1))
	for _, tc := range []struct {
		path string
		code int
		want waitroom.Code
	}{
		{"/v1/rooms/r/sessions/" + waitroom.NewSessionID(99).String() + "/events", 404, waitroom.CodeSessionNotFound},
		{"/v1/rooms/nope/sessions/" + waitroom.NewSessionID(1).String() + "/events", 404, waitroom.CodeRoomNotFound},
		{"/v1/rooms/r/sessions/short/events", 400, waitroom.CodeInvalidSessionID},
		{"/v1/rooms/r/sessions/" + waitroom.NewSessionID(99).String() + "/ws", 404, waitroom.CodeSessionNotFound},
		{"/v1/rooms/BAD/sessions/x/ws", 400, waitroom.CodeInvalidRoomName},
	} {
		resp, err := e.srv.Client().Get(e.srv.URL + tc.path)
		if err != nil {
			t.Fatal(err)
		}
		var body struct {
			Error struct{ Code waitroom.Code } `json:"error"`
		}
		json.NewDecoder(resp.Body).Decode(&body)
		resp.Body.Close()
		if resp.StatusCode != tc.code || body.Error.Code != tc.want {
			t.Errorf("GET %s: %d %q, want %d %q", tc.path, resp.StatusCode, body.Error.Code, tc.code, tc.want)
		}
	}
}

// TestAdmittedStreamCloseKeepsSlot: once a stream has told its page the
// session is admitted, the page moves on to the target and the stream
// closes; that must not start the grace period of the active session.
func TestAdmittedStreamCloseKeepsSlot(t *testing.T) {
	cfg := waitingRoom(1)
	cfg.Grace = waitroom.Duration(30 * time.Second)
	e := newStreamEnv(t, cfg)
	x := e.join() // active at once
	st := e.open(x.ID, nil)
	if ev := st.next(t); ev.session.Status != waitroom.StatusActive {
		t.Fatalf("first event: %s, want active", ev.session.Status)
	}
	st.close()
	e.waitIdle()
	e.clock.Advance(time.Minute) // past grace, within active_timeout (5m)
	ctx := context.Background()
	if _, err := e.store.Sweep(ctx, "r", e.clock.Now()); err != nil {
		t.Fatal(err)
	}
	if got, _ := e.store.Sessions(ctx, "r", []string{x.ID}); got[0].Status != waitroom.StatusActive {
		t.Errorf("a minute after its stream closed: %s (%s), want still active", got[0].Status, got[0].EndReason)
	}
}
