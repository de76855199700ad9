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
