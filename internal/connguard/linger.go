package connguard

import (
	"net"
	"sync"
	"time"
)

// A refusal is often written before the request's body was read: a body
// over the limit (413), a head too large (431) or malformed (400), a
// connection over the cap (503). Closing a socket with bytes of the client's
// still unread makes the kernel send a reset, and a client still writing
// its body (Python's urllib writes all of it before it reads a byte) then
// loses the answer waiting in its buffer. So, as nginx's lingering close
// does, the write side is closed first (the client reads the answer and
// then the end) and what the client still sends is read and dropped until
// it closes too, or a bound is reached: then the close resets nothing that
// was not already hopeless.
//
// The bounds keep a client from holding a connection by never stopping:
// lingerTime in all, lingerQuiet without a byte, lingerBytes read. A
// connection lingering after net/http's answer is still open, so it still
// counts against the connection cap (internal/connlimit) until it closes.
// (Variables for the tests.)
var (
	// lingerTime is the longest a connection lingers. nginx's
	// lingering_time is 30 s; a client on a sane network sends a few MiB
	// in much less.
	lingerTime = 5 * time.Second
	// lingerQuiet ends the linger when the client sends nothing for this
	// long (nginx's lingering_timeout is 5 s): it has read the answer and
	// keeps its end open, or stopped. Long enough that a busy machine
	// does not take a pause of its own for the client's.
	lingerQuiet = 2 * time.Second
	// lingerBytes is the most read and dropped: four times the largest
	// body any endpoint accepts (1 MiB), so that a client's upload of up
	// to that size gets its answer, and no client makes the server read
	// for the whole lingerTime.
	lingerBytes int64 = 4 << 20
)

// lingerBufs holds the buffers lingering reads drop bytes into.
var lingerBufs = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

// Linger is the lingering close of c, but for the Close itself: it closes
// c's write side (when c can) and reads and drops what the client still
// sends, until the client closes, sends nothing for lingerQuiet, or
// lingerTime or lingerBytes are reached. Call it after writing an answer
// that leaves a request's body (or head) unread, then close c. A Close of
// c from another goroutine ends it at once.
func Linger(c net.Conn) {
	linger(c, lingerTime, lingerQuiet, lingerBytes)
}

// linger is Linger with its bounds; it returns how many bytes it dropped
// and why it stopped (nil: the byte bound).
func linger(c net.Conn, total, quiet time.Duration, most int64) (int64, error) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		// Without a half-close the client still reads the answer, which
		// has a length; it only sees the end later, at the close.
		_ = cw.CloseWrite()
	}
	bp := lingerBufs.Get().(*[]byte)
	defer lingerBufs.Put(bp)
	buf := *bp
	end := time.Now().Add(total)
	var n int64
	for n < most {
		dl := time.Now().Add(quiet)
		if end.Before(dl) {
			dl = end
		}
		if err := c.SetReadDeadline(dl); err != nil {
			return n, err
		}
		m, err := c.Read(buf[:min(int64(len(buf)), most-n)])
		n += int64(m)
		if err != nil {
			return n, err
		}
	}
	return n, nil
}
