package connlimit

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"testing"
	"time"
)

// TestRefusalArrivesAfterAWholeBody: over the cap, a client that writes
// its whole request (head and a body of 1.1 or 2 MiB) before it reads a
// byte, as Python's urllib does, still reads the 503: the refusal lingers
// rather than reset the connection under it.
func TestRefusalArrivesAfterAWholeBody(t *testing.T) {
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := New(raw, 1)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	addr := raw.Addr().String()
	held, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	for deadline := time.Now().Add(time.Minute); l.Open() < 1; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the held connection was never accepted")
		}
	}
	const n = 20
	for _, size := range []int{1100 << 10, 2 << 20} {
		body := make([]byte, size)
		ok := 0
		var first error
		for range n {
			err := writeThenRead(addr, fmt.Sprintf("POST /upload HTTP/1.1\r\nHost: h\r\nContent-Length: %d\r\n\r\n", size), body)
			if err == nil {
				ok++
			} else if first == nil {
				first = err
			}
		}
		if ok != n {
			t.Errorf("%d-byte body: %d of %d clients read the 503; first failure: %v", size, ok, n, first)
		}
	}
}

// writeThenRead writes head and body whole, then reads the answer, which
// must be the 503 unavailable. Its small send buffer is a real network's,
// where the body is still on its way when the answer comes.
func writeThenRead(addr, head string, body []byte) error {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.(*net.TCPConn).SetWriteBuffer(64 << 10)
	_ = c.SetDeadline(time.Now().Add(time.Minute)) // a hang guard
	if _, err := io.WriteString(c, head); err != nil {
		return fmt.Errorf("write head: %w", err)
	}
	if _, err := c.Write(body); err != nil {
		return fmt.Errorf("write body: %w", err)
	}
	r, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return fmt.Errorf("read the answer: %w", err)
	}
	var v struct {
		Error struct{ Code string } `json:"error"`
	}
	if err := json.NewDecoder(r.Body).Decode(&v); err != nil || r.StatusCode != 503 || v.Error.Code != "unavailable" {
		return fmt.Errorf("answer %d %+v (%v), want 503 unavailable", r.StatusCode, v, err)
	}
	return nil
}
