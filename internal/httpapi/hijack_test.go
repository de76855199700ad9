package httpapi_test

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/internal/httpapi"
	"github.com/waitroom/waitroom/internal/push"
	"github.com/waitroom/waitroom/memstore"
)

// TestHijackedStreamWire: over HTTP/1.1 an event stream is a close-delimited
// response with the stream's headers and the middleware's, the retry hint
// first, and events after; when the client hangs up, the server notices
// (the open-streams gauge drops) without anything left to write.
func TestHijackedStreamWire(t *testing.T) {
	e := newStreamEnv(t, waitingRoom(0))
	conn, _, resp := rawStream(t, e, "GET", e.join().ID)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" || !resp.Close ||
		resp.ContentLength != -1 || len(resp.TransferEncoding) != 0 || resp.Header.Get("Cache-Control") != "no-store" {
		t.Fatalf("head: %d %v, close %v, length %d, encoding %v", resp.StatusCode, resp.Header, resp.Close, resp.ContentLength, resp.TransferEncoding)
	}
	body := bufio.NewReader(resp.Body)
	if l, _ := body.ReadString('\n'); l != "retry: 2000\n" {
		t.Fatalf("first line %q, want the retry hint", l)
	}
	for _, want := range []string{"\n", "id: ", "event: session\n", "data: {"} {
		l, err := body.ReadString('\n')
		if err != nil || !strings.HasPrefix(l, want) {
			t.Fatalf("line %q (%v), want one starting %q", l, err, want)
		}
	}
	if n := e.openStreams(); n != 1 {
		t.Fatalf("%d streams open, want 1", n)
	}
	conn.Close()
	deadline := time.Now().Add(5 * time.Second)
	for e.openStreams() != 0 {
		if time.Now().After(deadline) {
			t.Fatal("the server did not notice the client hang up within 5s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// rawStream sends method for session id's event stream over a raw
// connection and reads the answer's head; the caller closes conn.
func rawStream(t *testing.T, e *streamEnv, method, id string) (net.Conn, *bufio.Reader, *http.Response) {
	t.Helper()
	addr := strings.TrimPrefix(e.srv.URL, "http://")
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	if _, err := io.WriteString(conn, method+" /v1/rooms/r/sessions/"+id+"/events HTTP/1.1\r\nHost: "+addr+"\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, &http.Request{Method: method})
	if err != nil {
		t.Fatal(err)
	}
	return conn, br, resp
}

// TestStreamOverHTTP2: HTTP/2 cannot be hijacked; the stream is served
// through net/http instead, with the same events.
func TestStreamOverHTTP2(t *testing.T) {
	store := memstore.New()
	t.Cleanup(func() { store.Close() })
	clock := waitroom.NewManualClock(time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC))
	hub := push.New(store, push.Options{Interval: 10 * time.Millisecond, Clock: clock})
	h := httpapi.NewHandler(httpapi.Config{Store: store, AdminToken: adminToken, Clock: clock, Hub: hub, Admit: admission(t, store, clock, nil)})
	srv := httptest.NewUnstartedServer(checked(t, h))
	srv.EnableHTTP2 = true
	srv.StartTLS()
	t.Cleanup(func() { hub.Close(); srv.Close() })
	ctx := context.Background()
	if _, _, err := store.PutRoom(ctx, "r", waitingRoom(0), clock.Now()); err != nil {
		t.Fatal(err)
	}
	x, err := store.Join(ctx, "r", "", clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	resp, err := srv.Client().Get(srv.URL + "/v1/rooms/r/sessions/" + x.ID + "/events")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.ProtoMajor != 2 || resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("%s %d %v, want HTTP/2 200 text/event-stream", resp.Proto, resp.StatusCode, resp.Header)
	}
	br := bufio.NewReader(resp.Body)
	for _, want := range []string{"retry: 2000\n", "\n", "id: ", "event: session\n", "data: {"} {
		l, err := br.ReadString('\n')
		if err != nil || !strings.HasPrefix(l, want) {
			t.Fatalf("line %q (%v), want one starting %q", l, err, want)
		}
	}
}

// TestStreamHead: HEAD on the events endpoint answers the stream's head
// with no body and holds nothing open.
func TestStreamHead(t *testing.T) {
	e := newStreamEnv(t, waitingRoom(0))
	conn, br, resp := rawStream(t, e, "HEAD", e.join().ID)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("HEAD: %d %v, want 200 text/event-stream", resp.StatusCode, resp.Header)
	}
	// Nothing may follow the head: no event, no retry hint.
	_ = conn.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	if b, _ := br.Peek(1); len(b) > 0 {
		rest, _ := br.Peek(br.Buffered())
		t.Fatalf("bytes after the head of a HEAD answer: %q", rest)
	}
	e.waitIdle()
}

// TestMaxStreams: over Config.MaxStreams a new stream is refused with 503
// unavailable, and a slot freed by a closed stream is taken again.
func TestMaxStreams(t *testing.T) {
	store := memstore.New()
	t.Cleanup(func() { store.Close() })
	clock := waitroom.NewManualClock(time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC))
	hub := push.New(store, push.Options{Interval: 10 * time.Millisecond, Clock: clock})
	srv := httptest.NewServer(checked(t, httpapi.NewHandler(httpapi.Config{Store: store, AdminToken: adminToken, Clock: clock, Hub: hub, MaxStreams: 1, Admit: admission(t, store, clock, nil)})))
	t.Cleanup(func() { hub.Close(); srv.Close() })
	ctx := context.Background()
	if _, _, err := store.PutRoom(ctx, "r", waitingRoom(0), clock.Now()); err != nil {
		t.Fatal(err)
	}
	a, _ := store.Join(ctx, "r", "", clock.Now())
	b, _ := store.Join(ctx, "r", "", clock.Now())
	first, err := http.Get(srv.URL + "/v1/rooms/r/sessions/" + a.ID + "/events")
	if err != nil || first.StatusCode != 200 {
		t.Fatalf("first stream: %v %v", err, first)
	}
	second, err := http.Get(srv.URL + "/v1/rooms/r/sessions/" + b.ID + "/events")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(second.Body)
	second.Body.Close()
	if second.StatusCode != 503 || !strings.Contains(string(body), `"unavailable"`) {
		t.Fatalf("second stream: %d %s, want 503 unavailable", second.StatusCode, body)
	}
	first.Body.Close()
	deadline := time.Now().Add(5 * time.Second)
	for {
		again, err := http.Get(srv.URL + "/v1/rooms/r/sessions/" + b.ID + "/events")
		if err == nil && again.StatusCode == 200 {
			again.Body.Close()
			break
		}
		if err == nil {
			again.Body.Close()
		}
		if time.Now().After(deadline) {
			t.Fatal("no stream opened within 5s of the first one closing")
		}
		time.Sleep(20 * time.Millisecond)
	}
}
