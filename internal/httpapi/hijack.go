package httpapi

import (
	"context"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/waitroom/waitroom"
)

// An event stream over HTTP/1.x leaves net/http once its request is
// checked: the connection is hijacked and its response head written by hand
// (a body that ends when the connection closes). Then one goroutine owns
// it, blocked reading to notice the client go; a writer goroutine exists
// only while there is an update to write, started by the watch's notify;
// the heartbeat and the presence refresh are timers. The request's
// goroutine with its grown stack, net/http's 4 KiB read and write buffers
// and its chunk writer are all freed, which is most of what an open stream
// costs, and each update is one write with no chunk framing.

// streamWriteTimeout bounds one write to a hijacked stream: a client that
// stops reading for this long is dropped, so it never holds a goroutine.
const streamWriteTimeout = 10 * time.Second

// eventBufs holds the buffers updates are encoded into.
var eventBufs = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}

// hijacked is one hijacked event stream.
type hijacked struct {
	s *server
	// busy is set while a writer goroutine runs; again asks it for one more
	// look before it stops; started is set once the connection is ours.
	busy, again, started atomic.Bool

	// Set by start, before started.
	st     *stream
	conn   net.Conn
	ctx    context.Context
	cancel context.CancelFunc
	beat   *time.Timer
	touch  *time.Timer

	mu   sync.Mutex // serialises writes; guards the fields below
	head []byte     // written before the first event, then nil
	next uint64     // the last event id sent
	sent uint64     // the watch version last sent
	last waitroom.Session
	end  bool
}

// start hijacks the connection of r and serves st on it. It returns false,
// having touched nothing, when the connection cannot be hijacked (a test
// recorder, a wrapper that hides it): the caller then serves it through
// net/http.
func (hs *hijacked) start(w http.ResponseWriter, r *http.Request, st *stream, cur waitroom.Session) bool {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	h.Set("Connection", "close")
	h.Set("Date", time.Now().UTC().Format(http.TimeFormat))
	var hb headerBuf
	if err := h.Write(&hb); err != nil {
		return false
	}
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return false
	}
	// net/http's read deadlines no longer apply: the stream lives as long
	// as it is needed.
	_ = conn.SetDeadline(time.Time{})
	hs.st, hs.conn, hs.last, hs.sent = st, conn, cur, 0
	hs.next = lastEventID(r.Header.Get("Last-Event-ID"))
	hs.head = append(append(append([]byte("HTTP/1.1 200 OK\r\n"), hb...), "\r\n"...), "retry: 2000\n\n"...)
	hs.ctx, hs.cancel = context.WithCancel(context.WithoutCancel(r.Context()))
	// Under mu: a timer may fire (and read its own field) before this
	// goroutine's assignment would otherwise be seen.
	hs.mu.Lock()
	hs.beat = time.AfterFunc(hs.s.beat, hs.heartbeat)
	hs.touch = time.AfterFunc(st.presence, hs.presence)
	hs.mu.Unlock()
	hs.started.Store(true)
	go hs.watchClient()
	hs.kick() // the current state, and anything that changed since
	return true
}

// headerBuf collects a header's wire form.
type headerBuf []byte

func (b *headerBuf) Write(p []byte) (int, error) {
	*b = append(*b, p...)
	return len(p), nil
}

// kick is the watch's notify: it starts a writer unless one runs, in which
// case that one looks again before it stops.
func (hs *hijacked) kick() {
	hs.again.Store(true)
	if !hs.started.Load() || !hs.busy.CompareAndSwap(false, true) {
		return
	}
	go hs.write()
}

// write sends the newest state while there is one it has not sent, then
// stops; it ends the stream when the session ended or the watch did.
func (hs *hijacked) write() {
	for {
		hs.again.Store(false)
		hs.mu.Lock()
		if hs.end {
			hs.mu.Unlock()
			hs.busy.Store(false)
			return
		}
		x, version, ended := hs.last, hs.sent, true
		if w := hs.st.watch; w != nil {
			x, version = w.Latest()
			ended = w.Ended()
		}
		var err error
		if version != hs.sent || hs.head != nil {
			hs.sent, hs.last = version, x
			err = hs.sendLocked(x)
		}
		hs.mu.Unlock()
		switch {
		case err != nil:
			hs.finish(true)
		case ended || x.Status.Final():
			hs.finish(false)
		}
		hs.busy.Store(false)
		if !hs.again.Load() || !hs.busy.CompareAndSwap(false, true) {
			return
		}
	}
}

// sendLocked writes one event (after the head, the first time). hs.mu is held.
func (hs *hijacked) sendLocked(x waitroom.Session) error {
	bp := eventBufs.Get().(*[]byte)
	defer eventBufs.Put(bp)
	hs.next = max(hs.next+1, uint64(hs.s.now().UnixMilli()))
	b := append((*bp)[:0], hs.head...)
	hs.head = nil
	b = append(b, "id: "...)
	b = strconv.AppendUint(b, hs.next, 10)
	b = append(b, "\nevent: session\ndata: "...)
	b = x.AppendJSON(b)
	b = append(b, "\n\n"...)
	*bp = b
	return hs.writeLocked(b)
}

// writeLocked writes b within streamWriteTimeout. hs.mu is held.
func (hs *hijacked) writeLocked(b []byte) error {
	if err := hs.conn.SetWriteDeadline(time.Now().Add(streamWriteTimeout)); err != nil {
		return err
	}
	_, err := hs.conn.Write(b)
	return err
}

// heartbeat writes a comment, so proxies keep an idle stream open.
func (hs *hijacked) heartbeat() {
	hs.mu.Lock()
	var err error
	if !hs.end && hs.head == nil {
		err = hs.writeLocked([]byte(": keep-alive\n\n"))
	}
	end, beat := hs.end, hs.beat
	hs.mu.Unlock()
	if err != nil {
		hs.finish(true)
		return
	}
	if !end {
		beat.Reset(hs.s.beat)
	}
}

// presence refreshes the session's presence while the stream is open.
func (hs *hijacked) presence() {
	hs.mu.Lock()
	end, touch := hs.end, hs.touch
	hs.mu.Unlock()
	if end {
		return
	}
	hs.st.touch(hs.ctx)
	touch.Reset(hs.st.presence)
}

// watchClient reads the connection until it fails (the client went away,
// or the stream ended and closed it). A client sends nothing on an event
// stream; whatever it sends is ignored.
func (hs *hijacked) watchClient() {
	var b [16]byte
	for {
		if _, err := hs.conn.Read(b[:]); err != nil {
			hs.finish(true)
			return
		}
	}
}

// finish ends the stream once: timers stop, the watch ends, the session's
// grace starts if the client went away while waiting, the connection
// closes.
func (hs *hijacked) finish(clientGone bool) {
	hs.mu.Lock()
	if hs.end {
		hs.mu.Unlock()
		return
	}
	hs.end = true
	last, beat, touch := hs.last, hs.beat, hs.touch
	hs.mu.Unlock()
	beat.Stop()
	touch.Stop()
	hs.cancel()
	hs.conn.Close()
	hs.st.close(clientGone, last)
}
