package connguard_test

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/connguard"
)

// bodyLimit is the body limit of refuser, as the API's (1 MiB).
const bodyLimit = 1 << 20

// refuser refuses bodies as the API does: a declared length over
// bodyLimit is answered 413 unread, with Connection: close; a chunked body
// is read through http.MaxBytesReader and refused once over it; /unread
// answers 404 without a look at the body.
func refuser(w http.ResponseWriter, r *http.Request) {
	tooLarge := func() {
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		w.Header().Set("Connection", "close")
		w.WriteHeader(http.StatusRequestEntityTooLarge)
		_, _ = io.WriteString(w, `{"error":{"code":"body_too_large","message":"The body is too large."}}`)
	}
	switch {
	case r.URL.Path == "/unread":
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		w.WriteHeader(http.StatusNotFound)
		_, _ = io.WriteString(w, `{"error":{"code":"not_found","message":"Nothing here."}}`)
	case r.ContentLength > bodyLimit:
		tooLarge()
	default:
		if _, err := io.ReadAll(http.MaxBytesReader(w, r.Body, bodyLimit)); err != nil {
			tooLarge()
			return
		}
		_, _ = io.WriteString(w, "ok")
	}
}

// writeThenRead is a client like Python's urllib: it writes the whole
// request (head, then body) before it reads a byte, then reads the answer
// (its head, and its body by Content-Length). It returns the answer's
// status and error code, or why there was none (the connection reset
// while it wrote or read). The deadline only guards against a hang.
func writeThenRead(addr string, head string, body []byte) (int, string, error) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return 0, "", err
	}
	defer c.Close()
	// A small send buffer, as on a real network, where a body of a few
	// MiB is still on its way when the answer comes (on loopback the
	// kernel's buffers could take it all at once).
	_ = c.(*net.TCPConn).SetWriteBuffer(64 << 10)
	_ = c.SetDeadline(time.Now().Add(time.Minute))
	if _, err := io.WriteString(c, head); err != nil {
		return 0, "", fmt.Errorf("write head: %w", err)
	}
	if _, err := c.Write(body); err != nil {
		return 0, "", fmt.Errorf("write body: %w", err)
	}
	r, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return 0, "", fmt.Errorf("read the answer: %w", err)
	}
	b, err := io.ReadAll(r.Body)
	if err != nil {
		return 0, "", fmt.Errorf("read the answer's body: %w", err)
	}
	code, _, _ := strings.Cut(strings.TrimPrefix(string(b), `{"error":{"code":"`), `"`)
	return r.StatusCode, code, nil
}

// tries runs try n times, a few at once, and returns how many succeeded
// and the first failure.
func tries(n int, try func() error) (int, error) {
	var (
		mu    sync.Mutex
		ok    int
		first error
		wg    sync.WaitGroup
	)
	sem := make(chan struct{}, 4)
	for range n {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			err := try()
			mu.Lock()
			defer mu.Unlock()
			if err == nil {
				ok++
			} else if first == nil {
				first = err
			}
		})
	}
	wg.Wait()
	return ok, first
}

// TestRefusalsBeforeTheBodyArrive: every answer written before the body
// was read reaches a client that writes its whole body before it reads:
// net/http's (413 over the limit, declared or chunked; 404 for a body of
// no use) and the guard's own (431 for a head over the limit, 400 for a
// head framed two ways), for bodies of 1.1 and 2 MiB, with and without
// Connection: close (with it, net/http closes without its half-close).
// Without the lingering close most of them are reset before they are
// read.
func TestRefusalsBeforeTheBodyArrive(t *testing.T) {
	addr := start(t, http.HandlerFunc(refuser), true, 10*time.Second)
	const n = 20
	big := strings.Repeat("x", 5000) // over the test server's 4 KiB heads
	for _, size := range []int{1100 << 10, 2 << 20} {
		body := bytes.Repeat([]byte("x"), size)
		chunked := fmt.Appendf(nil, "%x\r\n%s\r\n0\r\n\r\n", size, body)
		for _, tc := range []struct {
			name, head string
			body       []byte
			status     int
			code       string
		}{
			{"413", "POST /join HTTP/1.1\r\nHost: h\r\nContent-Length: %d\r\n\r\n", body, 413, "body_too_large"},
			{"413 Connection: close", "POST /join HTTP/1.1\r\nHost: h\r\nConnection: close\r\nContent-Length: %d\r\n\r\n", body, 413, "body_too_large"},
			{"413 chunked", "POST /join HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n", chunked, 413, "body_too_large"},
			{"404 unread", "POST /unread HTTP/1.1\r\nHost: h\r\nConnection: close\r\nContent-Length: %d\r\n\r\n", body, 404, "not_found"},
			{"431", "POST /join HTTP/1.1\r\nHost: h\r\nX: " + big + "\r\nContent-Length: %d\r\n\r\n", body, 431, "header_too_large"},
			{"400 framed two ways", "POST /join HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\nContent-Length: %d\r\n\r\n", body, 400, "invalid_request"},
		} {
			head := tc.head
			if strings.Contains(head, "%d") {
				head = fmt.Sprintf(head, len(tc.body))
			}
			ok, first := tries(n, func() error {
				status, code, err := writeThenRead(addr, head, tc.body)
				if err == nil && (status != tc.status || code != tc.code) {
					err = fmt.Errorf("answer %d %s", status, code)
				}
				return err
			})
			if ok != n {
				t.Errorf("%s, %d-byte body: %d of %d clients got %d %s; first failure: %v", tc.name, size, ok, n, tc.status, tc.code, first)
			}
		}
	}
}

// TestGoClientGetsTheRefusal: Go's own client, which reads the answer
// while it still sends, gets the 413 for a 2 MiB body too.
func TestGoClientGetsTheRefusal(t *testing.T) {
	addr := start(t, http.HandlerFunc(refuser), true, 10*time.Second)
	client := &http.Client{Timeout: time.Minute}
	for range 20 {
		resp, err := client.Post("http://"+addr+"/join", "application/json", bytes.NewReader(make([]byte, 2<<20)))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 413 || !strings.Contains(string(b), "body_too_large") {
			t.Fatalf("answer %d %q, want 413 body_too_large", resp.StatusCode, b)
		}
	}
}

// TestLingerLetsTheClientReadFirst: Linger closes the write side before
// it reads what the client still sends, so the client sees the answer end
// while it could still be sending; and it stops when the client closes.
func TestLingerLetsTheClientReadFirst(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	done := make(chan struct{})
	go func() {
		defer close(done)
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		_, _ = io.WriteString(c, "answer")
		connguard.Linger(c)
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	_ = c.SetDeadline(time.Now().Add(time.Minute))
	if _, err := c.Write(make([]byte, 64<<10)); err != nil {
		t.Fatal(err)
	}
	if b, err := io.ReadAll(c); string(b) != "answer" || err != nil {
		t.Fatalf("read %q, %v; want the answer, then the end", b, err)
	}
	// Still open for writing: the server reads and drops it.
	if _, err := c.Write(make([]byte, 64<<10)); err != nil {
		t.Fatalf("write after the answer: %v", err)
	}
	c.Close()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("Linger went on after the client closed")
	}
}
