// Package connguard checks every HTTP/1.x request head on a server's
// connections before net/http reads it, and answers the requests net/http
// must not serve, or would refuse in plain text, itself: in the API's JSON
// error shape ({"error":{"code":"…","message":"…"}}), with Connection:
// close, after which the connection is closed, so no byte after a refused
// head is ever read as a request.
//
// It refuses:
//   - a request framed two ways, with both Content-Length and
//     Transfer-Encoding, or with Transfer-Encoding in HTTP/1.0 (request
//     smuggling: RFC 9112 §6.1 says to close such a connection; net/http
//     reads the first as chunked and keeps the connection): 400
//     invalid_request;
//   - a transfer coding other than chunked (net/http: 501 in text): 400
//     invalid_request;
//   - a malformed request line, target, header, Host or Content-Length, a
//     missing Host, an HTTP version other than 1.0 and 1.1 (net/http: 400
//     or 505 in text): 400 invalid_request;
//   - a head (request line and headers) over the server's MaxHeaderBytes
//     (net/http: 431 in text): 431 header_too_large;
//   - an Expect other than 100-continue (net/http: 417, empty): 417
//     expectation_failed.
//
// To find each head it follows the framing of the requests before it
// (Content-Length, or chunked up to its trailer), as net/http does, and it
// hands bytes on only once their head is checked. A request in flight is
// answered first: the refusal goes out when net/http comes to read the
// refused head, and the guard never writes while net/http may. Once a
// handler takes the connection over (Hijack: WebSocket, event streams) the
// guard steps aside.
//
// Every answer written while the client still sends what it will not read
// (the guard's refusals, and net/http's answers that leave a body unread:
// 413 over a body limit, or any that did not need the body) is followed by
// a lingering close, bounded in time and bytes (see Linger), so that the
// close does not reset the answer away before the client reads it.
//
// Use Guard on the server's listener; it installs the http.Server's
// ConnState hook it needs.
package connguard

import (
	"bytes"
	"errors"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/internal/apierror"
)

// Guard returns ln with every connection it accepts guarded, for srv: heads
// are limited to srv.MaxHeaderBytes (net/http's default when 0), a head
// that started arriving must be whole within srv.ReadHeaderTimeout (when
// set), and srv.ConnState is set to tell the guard when a request is in
// flight, calling the hook srv had before.
func Guard(srv *http.Server, ln net.Listener) net.Listener {
	l := &Listener{Listener: ln, maxHead: srv.MaxHeaderBytes, headTimeout: srv.ReadHeaderTimeout}
	if l.maxHead <= 0 {
		l.maxHead = http.DefaultMaxHeaderBytes
	}
	prev := srv.ConnState
	srv.ConnState = func(c net.Conn, s http.ConnState) {
		ConnState(c, s)
		if prev != nil {
			prev(c, s)
		}
	}
	return l
}

// Listener guards the connections it accepts. Its server must call
// ConnState for them (Guard sets it up).
type Listener struct {
	net.Listener
	maxHead     int
	headTimeout time.Duration
	// closed is set by Close: the server is closing (http.Server's Close
	// and Shutdown close their listeners first), and its connections
	// close at once rather than linger.
	closed atomic.Bool
}

// Accept returns the next connection, guarded.
func (l *Listener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &conn{Conn: c, l: l, maxHead: l.maxHead, headTimeout: l.headTimeout, wake: make(chan struct{}, 1)}, nil
}

// Close closes the listener; connections it accepted close at once from
// then on, without lingering.
func (l *Listener) Close() error {
	l.closed.Store(true)
	return l.Listener.Close()
}

// ConnState tells a guarded connection what net/http is doing with it; it
// is the http.Server.ConnState hook (Guard installs it). Other connections
// are ignored.
func ConnState(c net.Conn, s http.ConnState) {
	g, ok := c.(*conn)
	if !ok {
		return
	}
	switch s {
	case http.StateActive:
		g.active.Store(true)
	case http.StateIdle:
		g.active.Store(false)
	case http.StateHijacked:
		g.hijacked.Store(true)
	default:
		return
	}
	g.signal()
}

// stage is where a connection's byte stream is.
type stage uint8

const (
	stageHead      stage = iota // a request head (or leading blank lines) next
	stageBody                   // left bytes of a Content-Length body
	stageChunkSize              // a chunk-size line
	stageChunkData              // left bytes of a chunk's data
	stageChunkEnd               // the CRLF after a chunk's data
	stageTrailer                // the trailer section after the last chunk
	stagePass                   // not HTTP any more (hijacked): everything goes through
	stageCut                    // a body net/http cannot read either: nothing more
	stageRefused                // a refused head: answer it, then close
)

// Limits of chunked framing, those of net/http.
const (
	maxChunkLine = 4096 // a chunk-size line, extensions included
	maxTrailer   = 4096 // the trailer section
)

// answerTimeout is the longest the write of an answer may take; the
// connection then lingers (see Linger).
const answerTimeout = 5 * time.Second

// bufSize is the size of the pooled read buffers.
const bufSize = 4 << 10

var bufPool = sync.Pool{New: func() any { b := make([]byte, bufSize); return &b }}

// conn is a guarded connection. Its read side is used by one reader at a
// time (net/http's, or a hijacker's); ConnState, deadlines and Close may
// come from other goroutines.
type conn struct {
	net.Conn
	l           *Listener
	maxHead     int
	headTimeout time.Duration

	// The read side. buf[r:w] are bytes read and not yet handed on, of
	// which the first ok are checked and may be.
	pooled   *[]byte
	buf      []byte
	r, w, ok int
	stage    stage
	left     int64     // bytes left of a body or a chunk's data
	scanned  int       // bytes after the first line of a head known to hold no blank line
	afterPOS bool      // the last request was a POST: net/http skips up to 4 CR or LF before the next
	started  time.Time // when net/http first waited for the rest of this head

	active, hijacked atomic.Bool
	// sending is set while the client is still to send bytes of a body
	// (the stage is one of a body's): a close then lingers. The reader
	// sets it, for Close, which may come from another goroutine.
	sending atomic.Bool
	// lingered is set once the connection lingered (or is lingering).
	lingered atomic.Bool

	mu      sync.Mutex
	wake    chan struct{}
	readDL  time.Time // the read deadline net/http set
	closed  bool
	refusal []byte // the answer of the refused head
	answer  bool   // net/http came to read the refused head: answer it on Close
}

func (c *conn) signal() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// SetDeadline and SetReadDeadline record the read deadline, which a
// reader waiting for a request in flight to end honours.
// They hold mu while they pass the deadline on, so that fill's own head
// deadline never overrides a later one of net/http's.
func (c *conn) SetDeadline(t time.Time) error {
	c.mu.Lock()
	c.readDL = t
	err := c.Conn.SetDeadline(t)
	c.mu.Unlock()
	c.signal()
	return err
}

func (c *conn) SetReadDeadline(t time.Time) error {
	c.mu.Lock()
	c.readDL = t
	err := c.Conn.SetReadDeadline(t)
	c.mu.Unlock()
	c.signal()
	return err
}

// CloseWrite closes the write side when the connection can. net/http
// does just before it closes a connection whose request it answered with
// at least 256 KiB of the body unread (or over a MaxBytesReader's limit),
// to let the client read the answer; it then waits 500 ms, reading
// nothing, and closes. So when the client is still sending that body,
// CloseWrite lingers right away (see Close), and Close does not again.
func (c *conn) CloseWrite() error {
	if c.lingerNow() {
		Linger(c.Conn)
		return nil
	}
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return errors.ErrUnsupported
}

// lingerNow reports whether a close of net/http's now must linger: the
// client is still sending a body net/http left unread, the connection is
// net/http's, and the server is not closing. It is true once.
func (c *conn) lingerNow() bool {
	return !c.hijacked.Load() && !c.l.closed.Load() && c.sending.Load() && !c.lingered.Swap(true)
}

// Close answers a refused head net/http came to read, then closes. When
// it answered one, or the client is still sending a body net/http left
// unread (a refusal written before the body was read: 413 over the body
// limit, or any answer that did not need the body), it lingers first (see
// Linger), so that the close does not reset the answer away. It does not
// once the listener is closed: the server is closing, and its Close closes
// connections from its own goroutine, one after the other. net/http calls
// Close for a connection it is done with from that connection's own
// goroutine, which the linger holds, and its slot under the connection
// cap with it.
func (c *conn) Close() error {
	c.mu.Lock()
	answer, refusal, again := c.answer, c.refusal, c.closed
	c.answer, c.closed = false, true
	c.mu.Unlock()
	c.signal()
	var linger bool
	if answer {
		_ = c.Conn.SetWriteDeadline(time.Now().Add(answerTimeout))
		_, err := c.Conn.Write(refusal)
		linger = err == nil && !c.l.closed.Load() && !c.lingered.Swap(true)
	} else {
		linger = !again && c.lingerNow()
	}
	if linger {
		Linger(c.Conn)
	}
	return c.Conn.Close()
}

// Read hands on the bytes of checked requests.
func (c *conn) Read(p []byte) (int, error) {
	n, err := c.read(p)
	switch c.stage {
	case stageBody, stageChunkSize, stageChunkData, stageChunkEnd, stageTrailer:
		c.sending.Store(true)
	default:
		c.sending.Store(false)
	}
	return n, err
}

func (c *conn) read(p []byte) (int, error) {
	for {
		if c.ok > 0 {
			n := copy(p, c.buf[c.r:c.r+c.ok])
			c.r += n
			c.ok -= n
			c.release()
			return n, nil
		}
		if c.hijacked.Load() && c.stage != stagePass {
			c.stage = stagePass
		}
		switch c.stage {
		case stagePass:
			if c.w > c.r {
				c.ok = c.w - c.r
				continue
			}
			return c.Conn.Read(p)
		case stageCut:
			return 0, io.EOF
		case stageRefused:
			if err := c.waitRefused(); err != nil {
				return 0, err
			}
			continue
		case stageBody, stageChunkData:
			if c.w == c.r && len(p) > 0 {
				// Nothing buffered: the body goes straight through.
				n, err := c.Conn.Read(p[:min(int64(len(p)), c.left)])
				c.left -= int64(n)
				if c.left == 0 {
					c.endOfData()
				}
				return n, err
			}
		}
		if c.advance() {
			continue
		}
		if err := c.fill(); err != nil {
			if errors.Is(err, io.EOF) && c.stage == stageHead && c.w > c.r && !c.blankOnly() {
				// The client ended in the middle of a head: net/http
				// would answer 400 in text.
				c.refuse(waitroom.CodeInvalidRequest, "The request ended before its head did.")
				continue
			}
			return 0, err
		}
	}
}

// blankOnly reports whether the unchecked bytes are CR and LF only.
func (c *conn) blankOnly() bool {
	for _, b := range c.buf[c.r+c.ok : c.w] {
		if b != '\r' && b != '\n' {
			return false
		}
	}
	return true
}

// release gives the buffer back once it holds nothing: an idle connection
// (or an event stream's) keeps no buffer.
func (c *conn) release() {
	if c.r < c.w || c.pooled == nil {
		return
	}
	if cap(c.buf) == bufSize {
		bufPool.Put(c.pooled)
	}
	c.pooled, c.buf, c.r, c.w, c.ok = nil, nil, 0, 0, 0
}

// fill reads more from the connection into the buffer, growing it for a
// head that does not fit. A head net/http waits for must be whole within
// headTimeout of when its first bytes came.
func (c *conn) fill() error {
	if c.pooled == nil {
		c.pooled = bufPool.Get().(*[]byte)
		c.buf, c.r, c.w = *c.pooled, 0, 0
	}
	if c.r > 0 && (c.w == len(c.buf) || c.r == c.w) {
		copy(c.buf, c.buf[c.r:c.w])
		c.w -= c.r
		c.r = 0
	}
	if c.w == len(c.buf) {
		// Only a head (or a trailer, or a chunk-size line) grows it, to
		// little more than the most it may be: past that it is refused.
		size := min(2*len(c.buf), max(c.maxHead, maxTrailer)+bufSize)
		if size <= len(c.buf) {
			size = len(c.buf) + bufSize
		}
		grown := make([]byte, size)
		copy(grown, c.buf[:c.w])
		c.buf, c.pooled = grown, &grown
	}
	if c.stage == stageHead && c.headTimeout > 0 && c.w > c.r && !c.active.Load() {
		// net/http would have started its ReadHeaderTimeout on the first
		// bytes it saw; it sees none before the head is whole.
		if c.started.IsZero() {
			c.started = time.Now()
		}
		until := c.started.Add(c.headTimeout)
		c.mu.Lock()
		if c.readDL.IsZero() || until.Before(c.readDL) {
			_ = c.Conn.SetReadDeadline(until)
			defer func() {
				c.mu.Lock()
				_ = c.Conn.SetReadDeadline(c.readDL)
				c.mu.Unlock()
			}()
		}
		c.mu.Unlock()
	}
	n, err := c.Conn.Read(c.buf[c.w:])
	c.w += n
	if n > 0 {
		return nil
	}
	if err == nil {
		err = io.ErrNoProgress
	}
	return err
}

// advance checks what it can of the unchecked bytes, making them ready to
// hand on or refusing them; it reports whether anything changed.
func (c *conn) advance() bool {
	data := c.buf[c.r+c.ok : c.w]
	switch c.stage {
	case stageHead:
		return c.head(data)
	case stageBody, stageChunkData:
		n := int(min(int64(len(data)), c.left))
		c.ok += n
		c.left -= int64(n)
		if c.left == 0 {
			c.endOfData()
		}
		return n > 0
	case stageChunkSize:
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			if len(data) >= maxChunkLine+2 {
				c.stage = stageCut
				return true
			}
			return false
		}
		size, ok := chunkSize(data[:i+1])
		if !ok || size > math.MaxInt64 {
			// (net/http would wait for exabytes.)
			c.stage = stageCut
			return true
		}
		c.ok += i + 1
		if size == 0 {
			c.stage = stageTrailer
		} else {
			c.stage, c.left = stageChunkData, int64(size)
		}
		return true
	case stageChunkEnd:
		if len(data) < 2 {
			return false
		}
		if data[0] != '\r' || data[1] != '\n' {
			c.stage = stageCut
			return true
		}
		c.ok += 2
		c.stage = stageChunkSize
		return true
	case stageTrailer:
		n, ok := trailerEnd(data)
		switch {
		case !ok:
			c.stage = stageCut
			return true
		case n == 0:
			return false
		}
		c.ok += n
		c.stage = stageHead
		return true
	}
	return false
}

// endOfData moves on from a body, or from a chunk's data, all handed on.
func (c *conn) endOfData() {
	if c.stage == stageBody {
		c.stage = stageHead
	} else {
		c.stage = stageChunkEnd
	}
}

// chunkSize parses a chunk-size line (with its CRLF) as net/http does:
// hexadecimal digits (at most 16), optional blanks and extensions, the line
// ending in CRLF with no other CR.
func chunkSize(line []byte) (uint64, bool) {
	if len(line) < 2 || line[len(line)-2] != '\r' || bytes.IndexByte(line, '\r') != len(line)-2 || len(line)-2 >= maxChunkLine {
		return 0, false
	}
	line = line[:len(line)-2]
	for len(line) > 0 && (line[len(line)-1] == ' ' || line[len(line)-1] == '\t') {
		line = line[:len(line)-1]
	}
	line, _, _ = bytes.Cut(line, []byte(";"))
	if len(line) == 0 || len(line) > 16 {
		return 0, false
	}
	var n uint64
	for _, b := range line {
		switch {
		case '0' <= b && b <= '9':
			b -= '0'
		case 'a' <= b && b <= 'f':
			b -= 'a' - 10
		case 'A' <= b && b <= 'F':
			b -= 'A' - 10
		default:
			return 0, false
		}
		n = n<<4 | uint64(b)
	}
	return n, true
}

// trailerEnd returns the length of the trailer section at the start of
// data (its final CRLF included), 0 when more is needed, or false for one
// net/http might read otherwise: over maxTrailer, or with a line that does
// not end in CRLF.
func trailerEnd(data []byte) (int, bool) {
	if len(data) >= 2 && data[0] == '\r' && data[1] == '\n' {
		return 2, true
	}
	end := bytes.Index(data, []byte("\r\n\r\n"))
	look := data
	if end >= 0 {
		look = data[:end+4]
	}
	for i, b := range look {
		if b == '\n' && (i == 0 || look[i-1] != '\r') {
			return 0, false
		}
	}
	switch {
	case end >= 0 && end+4 <= maxTrailer:
		return end + 4, true
	case end >= 0 || len(data) > maxTrailer:
		return 0, false
	}
	return 0, true
}

// head checks the next head in data once it is whole.
func (c *conn) head(data []byte) bool {
	if c.afterPOS {
		// After a POST net/http drops up to 4 leading CR or LF (old
		// clients' stray CRLF), looking at 4 bytes.
		k := 0
		for k < len(data) && k < 4 && (data[k] == '\r' || data[k] == '\n') {
			k++
		}
		if k == len(data) && k < 4 {
			return false // not enough to know yet
		}
		c.afterPOS = false
		c.ok += k
		return true
	}
	end := c.headEnd(data)
	if end < 0 {
		if len(data) > c.maxHead {
			c.refuse(apierror.CodeHeaderTooLarge,
				"The request's head (its request line and headers) is over "+strconv.Itoa(c.maxHead)+" bytes.")
			return true
		}
		return false
	}
	c.scanned, c.started = 0, time.Time{}
	if end > c.maxHead {
		c.refuse(apierror.CodeHeaderTooLarge,
			"The request's head (its request line and headers) is over "+strconv.Itoa(c.maxHead)+" bytes.")
		return true
	}
	v := check(data[:end])
	if v.code != "" {
		c.refuse(v.code, v.msg)
		return true
	}
	c.ok += end
	c.afterPOS = v.post
	switch {
	case v.chunked:
		c.stage = stageChunkSize
	case v.length > 0:
		c.stage, c.left = stageBody, v.length
	}
	return true
}

// headEnd returns the length of the head at the start of data, through the
// blank line that ends it, or -1 while it is not whole. Lines end in LF,
// with or without CR, as net/http reads them; the first line is the
// request line, whatever it holds.
func (c *conn) headEnd(data []byte) int {
	first := bytes.IndexByte(data, '\n')
	if first < 0 {
		return -1
	}
	start := max(first+1, c.scanned)
	for {
		i := bytes.IndexByte(data[start:], '\n')
		if i < 0 {
			c.scanned = start
			return -1
		}
		if i == 0 || (i == 1 && data[start] == '\r') {
			return start + i + 1
		}
		start += i + 1
	}
}

// refuse makes the head at hand the refused one, answered with code (and
// its status) and msg.
func (c *conn) refuse(code waitroom.Code, msg string) {
	c.stage = stageRefused
	c.mu.Lock()
	c.refusal = apierror.Raw(&waitroom.Error{Code: code, Message: msg}, apierror.DefaultRetryAfter)
	c.mu.Unlock()
}

// waitRefused is a read of the refused head: io.EOF (and the answer on
// Close) once no request is in flight, so that net/http closes the
// connection; while one is, it waits like a read the client sends nothing
// to, until the request ends, the read deadline (net/http's way to stop a
// read) or the close. It returns nil when the connection was hijacked.
func (c *conn) waitRefused() error {
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		if c.hijacked.Load() {
			c.stage = stagePass
			return nil
		}
		c.mu.Lock()
		closed, dl := c.closed, c.readDL
		if !closed && !c.active.Load() {
			c.answer = true
			c.mu.Unlock()
			return io.EOF
		}
		c.mu.Unlock()
		if closed {
			return net.ErrClosed
		}
		var expired <-chan time.Time
		if !dl.IsZero() {
			d := time.Until(dl)
			if d <= 0 {
				return os.ErrDeadlineExceeded
			}
			if timer == nil {
				timer = time.NewTimer(d)
			} else {
				timer.Reset(d)
			}
			expired = timer.C
		}
		select {
		case <-c.wake:
		case <-expired:
		}
	}
}

// clip shortens s, which may quote the client's input, for a message.
func clip(s string) string {
	const maxLen = 100
	if len(s) > maxLen {
		s = s[:maxLen] + "…"
	}
	return s
}
