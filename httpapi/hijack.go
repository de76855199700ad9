package httpapi

import (
	"context"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/waitroom/waitroom"
)

// An event stream over HTTP/1.x leaves net/http once its request is
// checked: the connection is hijacked, its response head written by hand
// (a body that ends when the connection closes), and two small goroutines
// own it: one writes the updates, one notices the client going. The
// request's goroutine, its grown stack and net/http's 4 KiB read and write
// buffers and chunk writer are all freed, which is most of what an open
// stream costs, and each update is one write with no chunk framing.

// streamWriteTimeout bounds one write to a hijacked stream: a client that
// stops reading for this long is dropped, so it never holds a goroutine.
const streamWriteTimeout = 10 * time.Second

// eventBufs holds the buffers updates are encoded into.
var eventBufs = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}

// hijackEvents serves the event stream st on the hijacked connection of r.
// It returns false, having touched nothing, when the connection cannot be
// hijacked (HTTP/2, a test recorder): the caller then serves it through
// net/http.
func (s *server) hijackEvents(w http.ResponseWriter, r *http.Request, st *stream, cur waitroom.Session) bool {
	if r.ProtoMajor != 1 {
		return false
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	h.Set("Connection", "close")
	h.Set("Date", time.Now().UTC().Format(http.TimeFormat))
	head := []byte("HTTP/1.1 200 OK\r\n")
	var hb headerBuf
	if err := h.Write(&hb); err != nil {
		return false
	}
	head = append(append(head, hb...), "\r\n"...)
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return false
	}
	// net/http's read deadlines no longer apply: the stream lives as long
	// as it is needed.
	_ = conn.SetDeadline(time.Time{})
	next := lastEventID(r.Header.Get("Last-Event-ID"))
	ctx, cancel := context.WithCancel(context.WithoutCancel(r.Context()))
	go watchClient(conn, cancel)
	go s.hijackedPump(ctx, cancel, conn, st, cur, next, head)
	return true
}

// headerBuf collects a header's wire form.
type headerBuf []byte

func (b *headerBuf) Write(p []byte) (int, error) {
	*b = append(*b, p...)
	return len(p), nil
}

// watchClient reads the connection until it fails (the client went away,
// or the server closed it) and then cancels the stream. A client sends
// nothing on an event stream; whatever it sends is ignored.
func watchClient(conn net.Conn, cancel context.CancelFunc) {
	var b [64]byte
	for {
		if _, err := conn.Read(b[:]); err != nil {
			cancel()
			return
		}
	}
}

// hijackedPump writes the stream: the head, the retry hint and the current
// state, then every update until the session ends, the watch closes or
// the client goes; then it closes the connection.
func (s *server) hijackedPump(ctx context.Context, cancel context.CancelFunc, conn net.Conn, st *stream, cur waitroom.Session, next uint64, head []byte) {
	defer cancel()
	defer conn.Close()
	write := func(b []byte) error {
		if err := conn.SetWriteDeadline(time.Now().Add(streamWriteTimeout)); err != nil {
			return err
		}
		_, err := conn.Write(b)
		return err
	}
	send := func(x waitroom.Session) error {
		bp := eventBufs.Get().(*[]byte)
		defer eventBufs.Put(bp)
		next = max(next+1, uint64(s.now().UnixMilli()))
		b := append((*bp)[:0], head...)
		head = nil // only before the first event
		b = append(b, "id: "...)
		b = strconv.AppendUint(b, next, 10)
		b = append(b, "\nevent: session\ndata: "...)
		b = x.AppendJSON(b)
		b = append(b, "\n\n"...)
		*bp = b
		return write(b)
	}
	head = append(head, "retry: 2000\n\n"...)
	if err := send(cur); err != nil || st.watch == nil {
		st.close(err != nil, cur)
		return
	}
	last, gone := st.pump(ctx, cur, send, func() error { return write([]byte(": keep-alive\n\n")) })
	st.close(gone, last)
}
