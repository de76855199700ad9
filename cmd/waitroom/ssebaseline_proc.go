package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// The processes of `waitroom sse-baseline`: the bare SSE server and the
// clients that hold its streams.

// baselinePayload is a fixed JSON-like payload of n bytes with no newline.
func baselinePayload(n int) []byte {
	const head = `{"id":"s_baseline","room":"fanout","status":"waiting","position":12345,"pad":"`
	if n < len(head)+2 {
		return bytes.Repeat([]byte{'x'}, n)
	}
	b := append(make([]byte, 0, n), head...)
	for len(b) < n-2 {
		b = append(b, 'x')
	}
	return append(b, `"}`...)
}

// The fixed parts of a baseline message, kept so that writing one
// allocates nothing.
var (
	sseID        = []byte("id: ")
	sseEventData = []byte("\nevent: session\ndata: ")
	sseEnd       = []byte("\n\n")
)

// baselineStream is one open stream of the baseline server.
type baselineStream struct {
	pending atomic.Int64  // messages due and not written yet
	wake    chan struct{} // 1 slot: there are pending messages
}

// baselineServer is the baseline: every stream registered in a list, and
// one ticker that hands out messages round robin.
type baselineServer struct {
	payload []byte

	mu      sync.Mutex
	streams []*baselineStream
	next    int // round robin position in streams
}

// ServeHTTP serves GET /stream: SSE headers, then each message handed to
// this stream, written and flushed.
func (b *baselineServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/stream" || r.Method != http.MethodGet {
		http.NotFound(w, r)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	fl := w.(http.Flusher)
	fl.Flush()
	s := &baselineStream{wake: make(chan struct{}, 1)}
	b.mu.Lock()
	b.streams = append(b.streams, s)
	b.mu.Unlock()
	defer b.remove(s)
	var id int64
	var num [20]byte
	for {
		select {
		case <-r.Context().Done():
			return
		case <-s.wake:
		}
		for range s.pending.Swap(0) {
			id++
			w.Write(sseID)
			w.Write(strconv.AppendInt(num[:0], id, 10))
			w.Write(sseEventData)
			w.Write(b.payload)
			if _, err := w.Write(sseEnd); err != nil {
				return
			}
			fl.Flush()
		}
	}
}

// remove unregisters s.
func (b *baselineServer) remove(s *baselineStream) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for i, x := range b.streams {
		if x == s {
			last := len(b.streams) - 1
			b.streams[i] = b.streams[last]
			b.streams[last] = nil
			b.streams = b.streams[:last]
			return
		}
	}
}

// hand gives n messages to the streams, round robin, and returns how many
// it gave (none when no stream is open).
func (b *baselineServer) hand(n int64) int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.streams) == 0 {
		return 0
	}
	for range n {
		if b.next >= len(b.streams) {
			b.next = 0
		}
		s := b.streams[b.next]
		b.next++
		s.pending.Add(1)
		select {
		case s.wake <- struct{}{}:
		default:
		}
	}
	return n
}

// send hands out rate messages a second, every baselineTick, until stop
// closes; then it hands out what is still due and returns the total.
func (b *baselineServer) send(rate float64, stop <-chan struct{}) int64 {
	start := time.Now()
	t := time.NewTicker(baselineTick)
	defer t.Stop()
	var sent int64
	due := func() {
		want := int64(rate * time.Since(start).Seconds())
		sent += b.hand(want - sent)
	}
	for {
		select {
		case <-t.C:
			due()
		case <-stop:
			due()
			return sent
		}
	}
}

// baselineServe is the server process: it listens on a free loopback port,
// says where, and sends between "go" and "stop" on in.
func baselineServe(ctx context.Context, rate float64, size int, deadline time.Duration, in io.Reader, out io.Writer) error {
	ctx, cancel := context.WithTimeout(ctx, deadline)
	defer cancel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("baseline server: listen: %w", err)
	}
	b := &baselineServer{payload: baselinePayload(size)}
	hs := &http.Server{Handler: b, ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	defer func() {
		hs.Close()
		<-served
	}()
	if _, err := fmt.Fprintf(out, "listening on %s\n", ln.Addr()); err != nil {
		return fmt.Errorf("baseline server: %w", err)
	}
	lines := readLines(in)
	var stop chan struct{}
	var total chan int64
	for {
		var line string
		var ok bool
		select {
		case <-ctx.Done():
			return nil
		case line, ok = <-lines:
		}
		switch {
		case !ok:
			return nil
		case line == "go" && stop == nil:
			stop, total = make(chan struct{}), make(chan int64, 1)
			go func(stop chan struct{}, total chan int64) { total <- b.send(rate, stop) }(stop, total)
		case line == "stop" && stop != nil:
			close(stop)
			if _, err := fmt.Fprintf(out, "stopped %d\n", <-total); err != nil {
				return fmt.Errorf("baseline server: %w", err)
			}
			stop = nil
		default:
			return fmt.Errorf("baseline server: unexpected command %q", line)
		}
	}
}

// baselineClient is a client process: it opens count streams to target
// (stream i from source 127.0.0.(2 + i mod sources) when sources > 0),
// says how many opened, counts the messages that arrive, and answers each
// "report" on in with the count so far.
func baselineClient(ctx context.Context, target string, first, count, sources int, deadline time.Duration, in io.Reader, out io.Writer) error {
	ctx, cancel := context.WithTimeout(ctx, deadline)
	defer cancel()
	if target == "" || count < 1 {
		return errors.New("baseline client: needs --target and --streams")
	}
	var newlines atomic.Int64 // four to a message: "id", "event", "data" and the blank line
	var opened, failed atomic.Int64
	var firstErr sync.Once
	var wg, openWG sync.WaitGroup
	// Dialing everything at once overflows the listen backlog, and a lost
	// SYN costs a second; a few hundred at a time opens as fast.
	gate := make(chan struct{}, 256)
	for i := range count {
		wg.Add(1)
		openWG.Add(1)
		go func() {
			defer wg.Done()
			gate <- struct{}{}
			conn, br, err := openBaselineStream(ctx, target, first+i, sources)
			<-gate
			if err != nil {
				failed.Add(1)
				openWG.Done()
				firstErr.Do(func() { fmt.Fprintf(os.Stderr, "sse-baseline client: %v\n", err) })
				return
			}
			opened.Add(1)
			openWG.Done()
			defer conn.Close()
			stop := context.AfterFunc(ctx, func() { conn.Close() })
			defer stop()
			buf := make([]byte, 1024)
			for {
				n, err := br.Read(buf)
				newlines.Add(int64(bytes.Count(buf[:n], []byte{'\n'})))
				if err != nil {
					return
				}
			}
		}()
	}
	openWG.Wait()
	if _, err := fmt.Fprintf(out, "open %d %d\n", opened.Load(), failed.Load()); err != nil {
		return fmt.Errorf("baseline client: %w", err)
	}
	lines := readLines(in)
	defer wg.Wait()
	defer cancel()
	for {
		select {
		case <-ctx.Done():
			return nil
		case line, ok := <-lines:
			switch {
			case !ok:
				return nil
			case line == "report":
				if _, err := fmt.Fprintf(out, "delivered %d\n", newlines.Load()/4); err != nil {
					return fmt.Errorf("baseline client: %w", err)
				}
			default:
				return fmt.Errorf("baseline client: unexpected command %q", line)
			}
		}
	}
}

// openBaselineStream opens stream i: it connects (from a source address
// when sources > 0), asks for GET /stream and checks the answer is an
// event stream. The body reader it returns yields the stream's bytes.
func openBaselineStream(ctx context.Context, target string, i, sources int) (net.Conn, io.Reader, error) {
	var d net.Dialer
	d.Timeout = 30 * time.Second
	if sources > 0 {
		d.LocalAddr = &net.TCPAddr{IP: net.IPv4(127, 0, 0, byte(2+i%sources))}
	}
	conn, err := d.DialContext(ctx, "tcp", target)
	if err != nil {
		return nil, nil, fmt.Errorf("open stream %d: %w", i, err)
	}
	req, _ := http.NewRequest(http.MethodGet, "http://"+target+"/stream", nil)
	conn.SetDeadline(time.Now().Add(30 * time.Second))
	if err := req.Write(conn); err != nil {
		conn.Close()
		return nil, nil, fmt.Errorf("open stream %d: %w", i, err)
	}
	resp, err := http.ReadResponse(bufio.NewReaderSize(conn, 1024), req)
	if err != nil {
		conn.Close()
		return nil, nil, fmt.Errorf("open stream %d: %w", i, err)
	}
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		conn.Close()
		return nil, nil, fmt.Errorf("open stream %d: %s, Content-Type %q", i, resp.Status, resp.Header.Get("Content-Type"))
	}
	conn.SetDeadline(time.Time{})
	return conn, resp.Body, nil
}
