package connguard

import (
	"context"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"testing"
	"time"
)

// pair returns both ends of a loopback TCP connection: the server's, and
// the client's.
func pair(t *testing.T) (server, client net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	client, err = net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	server, err = ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { server.Close(); client.Close() })
	return server, client
}

// send writes to c from a goroutine, a piece every gap (none: at once),
// until a write fails or stop closes.
func send(c net.Conn, piece int, gap time.Duration, stop <-chan struct{}) {
	go func() {
		b := make([]byte, piece)
		for {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := c.Write(b); err != nil {
				return
			}
			if gap > 0 {
				time.Sleep(gap)
			}
		}
	}()
}

// TestLingerBounds: a linger ends when the client closes, falls quiet,
// sends for too long or too much, whichever comes first; the bounds not
// under test are an hour, so an end by any other would hang the test.
func TestLingerBounds(t *testing.T) {
	const hour, most = time.Hour, 1 << 40
	t.Run("client closes", func(t *testing.T) {
		s, c := pair(t)
		go func() {
			_, _ = c.Write(make([]byte, 100<<10))
			_ = c.Close()
		}()
		if n, err := linger(s, hour, hour, most); n != 100<<10 || !errors.Is(err, io.EOF) {
			t.Errorf("linger = %d, %v; want %d, EOF", n, err, 100<<10)
		}
	})
	t.Run("quiet", func(t *testing.T) {
		s, c := pair(t)
		_, _ = c.Write(make([]byte, 10))
		if n, err := linger(s, hour, time.Second, most); n != 10 || !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Errorf("linger = %d, %v; want 10, deadline exceeded", n, err)
		}
	})
	t.Run("time", func(t *testing.T) {
		s, c := pair(t)
		stop := make(chan struct{})
		defer close(stop)
		send(c, 1, 10*time.Millisecond, stop)
		if _, err := linger(s, 300*time.Millisecond, hour, most); !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Errorf("linger ended with %v, want deadline exceeded", err)
		}
	})
	t.Run("bytes", func(t *testing.T) {
		s, c := pair(t)
		stop := make(chan struct{})
		defer close(stop)
		send(c, 64<<10, 0, stop)
		if n, err := linger(s, hour, hour, 1<<20); n != 1<<20 || err != nil {
			t.Errorf("linger = %d, %v; want %d, nil", n, err, 1<<20)
		}
	})
}

// TestNoLingerOnceTheServerCloses: a connection whose body was left
// unread closes at once when the server is shutting down, rather than
// linger (here: for an hour, to a client that never stops sending).
func TestNoLingerOnceTheServerCloses(t *testing.T) {
	defer func(t, q time.Duration, b int64) { lingerTime, lingerQuiet, lingerBytes = t, q, b }(lingerTime, lingerQuiet, lingerBytes)
	lingerTime, lingerQuiet, lingerBytes = time.Hour, time.Hour, 1<<40

	entered, release := make(chan struct{}), make(chan struct{})
	srv := &http.Server{ErrorLog: log.New(io.Discard, "", 0), Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(entered)
		<-release // returns once Shutdown has closed the listener
		w.Header().Set("Connection", "close")
		w.WriteHeader(http.StatusRequestEntityTooLarge)
	})}
	srv.RegisterOnShutdown(func() { close(release) })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(Guard(srv, ln)) }()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := io.WriteString(c, "POST / HTTP/1.1\r\nHost: h\r\nConnection: close\r\nContent-Length: 1000000000000\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	defer close(stop)
	send(c, 1, 10*time.Millisecond, stop)
	<-entered
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v (the connection lingered)", err)
	}
}
