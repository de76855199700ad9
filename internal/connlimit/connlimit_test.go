package connlimit

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"testing"
	"time"
)

// TestCapAnswersAndFrees: with the cap reached by idle connections, a new
// request is answered 503 in the API's JSON shape; once one of them closes,
// requests are served again.
func TestCapAnswersAndFrees(t *testing.T) {
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := New(raw, 3)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	addr := raw.Addr().String()
	var idle []net.Conn
	for range 3 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		idle = append(idle, c)
	}
	deadline := time.Now().Add(5 * time.Second)
	for l.Open() < 3 {
		if time.Now().After(deadline) {
			t.Fatalf("%d connections accepted, want 3", l.Open())
		}
		time.Sleep(5 * time.Millisecond)
	}
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := client.Get("http://" + addr + "/")
	if err != nil {
		t.Fatal(err)
	}
	var body struct {
		Error struct{ Code, Message string } `json:"error"`
	}
	err = json.NewDecoder(resp.Body).Decode(&body)
	resp.Body.Close()
	if resp.StatusCode != 503 || err != nil || body.Error.Code != "unavailable" || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("over the cap: %d %v %+v, want 503 unavailable with Retry-After", resp.StatusCode, err, body)
	}
	if l.Refused() != 1 {
		t.Errorf("refused %d, want 1", l.Refused())
	}
	idle[0].Close()
	for {
		resp, err := client.Get("http://" + addr + "/")
		if err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == 200 && string(b) == "ok" {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("not served again after a connection closed: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	for _, c := range idle[1:] {
		c.Close()
	}
}

// TestCloseOnce: closing a connection twice gives back one slot.
func TestCloseOnce(t *testing.T) {
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := New(raw, 2)
	defer l.Close()
	go func() {
		if c, err := net.Dial("tcp", raw.Addr().String()); err == nil {
			defer c.Close()
			time.Sleep(time.Second)
		}
	}()
	c, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	if l.Open() != 1 {
		t.Fatalf("open %d, want 1", l.Open())
	}
	c.Close()
	c.Close()
	if l.Open() != 0 {
		t.Errorf("open %d after two closes, want 0", l.Open())
	}
}

// TestFloodIsClosedUnanswered: past maxRefusing refusals in flight (silent
// clients), more connections over the cap are closed at once, unanswered,
// so a flood cannot hold the reserve's files.
func TestFloodIsClosedUnanswered(t *testing.T) {
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := New(raw, 1)
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	addr := raw.Addr().String()
	var held []net.Conn
	defer func() {
		for _, c := range held {
			c.Close()
		}
	}()
	for range 1 + maxRefusing + 10 { // one accepted, then silent ones over the cap
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, c)
	}
	deadline := time.Now().Add(5 * time.Second)
	for l.Refused() < maxRefusing+10 {
		if time.Now().After(deadline) {
			t.Fatalf("refused %d, want %d", l.Refused(), maxRefusing+10)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if n := l.refusing.Load(); n > maxRefusing {
		t.Errorf("%d refusals in flight, want at most %d", n, maxRefusing)
	}
	// The last ones were closed unanswered: a read sees the end at once.
	last := held[len(held)-1]
	_ = last.SetReadDeadline(time.Now().Add(3 * time.Second))
	var b [1]byte
	if _, err := last.Read(b[:]); err == nil || isTimeout(err) {
		t.Errorf("a connection past the flood bound: read %v, want it closed", err)
	}
}

func isTimeout(err error) bool {
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
}
