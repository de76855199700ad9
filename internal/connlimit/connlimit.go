// Package connlimit caps how many connections a server holds at once. Over
// the cap, a new connection is answered at once with the API's 503 JSON
// error and closed, rather than accepted to fail later: a process that runs
// out of file descriptors cannot open its own database files either, so a
// flood of connections must never take the last ones.
package connlimit

import (
	"bytes"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/internal/apierror"
	"github.com/waitroom/waitroom/internal/connguard"
)

// Listener wraps a net.Listener so that at most Max connections it
// accepted are open at once.
type Listener struct {
	net.Listener
	max      int64
	open     atomic.Int64
	refused  atomic.Int64
	refusing atomic.Int64 // refused connections being answered now
}

// maxRefusing bounds the refused connections answered at once; more are
// closed unanswered, so that a flood cannot hold the files kept in reserve.
const maxRefusing = 64

// New caps ln at max open connections; max must be at least 1.
func New(ln net.Listener, max int) *Listener {
	return &Listener{Listener: ln, max: int64(max)}
}

// full is the answer to a connection over the cap: an HTTP/1.1 503 with the
// API's error shape, then the connection closes. Retry-After is five
// seconds: connections free up as answers finish, not at once.
var full = apierror.Raw(waitroom.Errorf(waitroom.CodeUnavailable,
	"This server holds as many connections as it can; try again shortly."), 5)

// Accept returns the next connection under the cap; connections over it
// are answered and closed here, in the background.
func (l *Listener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if l.open.Add(1) <= l.max {
			return &conn{Conn: c, l: l}, nil
		}
		l.open.Add(-1)
		l.refused.Add(1)
		if l.refusing.Add(1) > maxRefusing {
			// A flood: answering would hold files of the reserve.
			l.refusing.Add(-1)
			_ = c.Close()
			continue
		}
		go func() {
			defer l.refusing.Add(-1)
			refuse(c)
		}()
	}
}

// refuse answers c with the 503 within refuseTimeout, lingers and closes
// it. It
// reads the request's head first: an answer sent before the request is
// one an HTTP client drops as unsolicited.
func refuse(c net.Conn) {
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(refuseTimeout))
	var buf [4096]byte
	n := 0
	for n < len(buf) && !bytes.Contains(buf[:n], []byte("\r\n\r\n")) {
		m, err := c.Read(buf[n:])
		n += m
		if err != nil {
			return // gone, or silent past the deadline: nothing to answer
		}
	}
	if _, err := c.Write(full); err != nil {
		return
	}
	// Let the client read the answer before the close: a close with its
	// request body unread would reset it. The linger is bounded in time
	// and bytes, and so is the number of refusals answered at once
	// (maxRefusing): this connection is over the cap and counts in none.
	connguard.Linger(c)
}

// refuseTimeout bounds the answer to a refused connection: long enough for
// a busy machine to write it, short enough that a client holding the
// connection open does not keep a goroutine and a file for long.
const refuseTimeout = 5 * time.Second

// Open is how many accepted connections are open now.
func (l *Listener) Open() int64 { return l.open.Load() }

// Refused is how many connections were answered 503 for being over the cap.
func (l *Listener) Refused() int64 { return l.refused.Load() }

// conn gives its slot back when closed, once, however it is closed
// (net/http, or a hijacker).
type conn struct {
	net.Conn
	l    *Listener
	once sync.Once
}

// CloseWrite closes the write side of the connection when it can, for a
// lingering close (connguard's): without it the wrapper would hide the
// TCP connection's.
func (c *conn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return errors.ErrUnsupported
}

func (c *conn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() { c.l.open.Add(-1) })
	return err
}

// Reserve is how many files Auto leaves to the process itself: its
// database and journal, Redis connections, logs, the listener.
const Reserve = 256

// Auto is the default cap for a process: its open-file limit less Reserve,
// or 0 (no cap) when the limit is unknown or too small to leave a reserve.
func Auto() int {
	n := FileLimit()
	if n <= 2*Reserve {
		return 0
	}
	return n - Reserve
}
