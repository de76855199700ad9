// Package connlimit caps how many connections a server holds at once, and
// how many one client address holds. Over a cap, a new connection is
// answered at once with the API's JSON error and closed, rather than
// accepted to fail later: a process that runs out of file descriptors
// cannot open its own database files either, so a flood of connections
// must never take the last ones, and one address must never take them all.
package connlimit

import (
	"bytes"
	"errors"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/internal/apierror"
	"github.com/waitroom/waitroom/internal/connguard"
)

// Limits are the caps of a Listener.
type Limits struct {
	// Max is the most connections open at once; 0 is no cap.
	Max int
	// PerAddress is the most connections one client address (Key: IPv4
	// whole, IPv6 by /64) holds at once; 0 is no cap. The address is the
	// TCP peer's: behind a proxy every connection is the proxy's, which is
	// why Exempt exists.
	PerAddress int
	// Exempt, when set, names peers that PerAddress does not cap (trusted
	// proxies, which carry everyone's connections); they count in Max.
	Exempt func(netip.Addr) bool
}

// Listener wraps a net.Listener so that at most Limits.Max connections it
// accepted are open at once, and at most Limits.PerAddress from one address.
type Listener struct {
	net.Listener
	max       int64
	headroom  int64
	exempt    func(netip.Addr) bool
	addrs     *Tally[netip.Prefix]
	open      atomic.Int64
	refused   atomic.Int64
	refusedAt atomic.Int64 // refused for the address's cap
	refusing  atomic.Int64 // refused connections being answered now
}

// maxRefusing bounds the refused connections answered at once; more are
// closed unanswered, so that a flood cannot hold the files kept in reserve.
const maxRefusing = 64

// New caps ln at max open connections; max must be at least 1.
func New(ln net.Listener, max int) *Listener {
	return Limit(ln, Limits{Max: max})
}

// Limit caps ln by lim. With both a global and a per-address cap, the
// last fiftieth of the global cap (at least one connection) is headroom
// that only an address holding no connection yet may take: when a few
// addresses have filled the rest, a health check or a newcomer from
// elsewhere still gets in.
func Limit(ln net.Listener, lim Limits) *Listener {
	l := &Listener{Listener: ln, max: int64(max(lim.Max, 0)), exempt: lim.Exempt, addrs: NewTally[netip.Prefix](lim.PerAddress)}
	if l.addrs != nil && l.max > 1 {
		l.headroom = max(l.max/50, 1)
	}
	return l
}

// full is the answer to a connection over the cap: an HTTP/1.1 503 with the
// API's error shape, then the connection closes. Retry-After is five
// seconds: connections free up as answers finish, not at once.
var full = apierror.Raw(waitroom.Errorf(waitroom.CodeUnavailable,
	"This server holds as many connections as it can; try again shortly."), 5)

// fullAddress is the answer to a connection over the per-address cap: 429
// rate_limited, since it is this address that holds too many; the others
// are still served.
var fullAddress = apierror.Raw(waitroom.Errorf(waitroom.CodeRateLimited,
	"Your address holds as many connections as one address may; close some, or try again shortly."), 5)

// Accept returns the next connection under the caps; connections over
// them are answered and closed here, in the background.
func (l *Listener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if cc := l.admit(c); cc != nil {
			return cc, nil
		}
	}
}

// admit counts c in and returns it wrapped, or refuses it and returns nil.
func (l *Listener) admit(c net.Conn) net.Conn {
	cc := &conn{Conn: c, l: l}
	if l.addrs != nil {
		// A peer without an IP address (a Unix socket) cannot be told
		// apart from the others: it is not capped per address.
		a := peerAddr(c)
		if a.IsValid() && (l.exempt == nil || !l.exempt(a)) {
			cc.key, cc.capped = Key(a), true
		}
	}
	if cc.capped && !l.addrs.Take(cc.key) {
		l.refusedAt.Add(1)
		l.refuse(c, fullAddress)
		return nil
	}
	n := l.open.Add(1)
	over := l.max > 0 && n > l.max
	// The headroom goes to addresses holding nothing else (this one is
	// counted already, hence > 1).
	if !over && l.headroom > 0 && cc.capped && n > l.max-l.headroom && l.addrs.Held(cc.key) > 1 {
		over = true
	}
	if over {
		l.open.Add(-1)
		if cc.capped {
			l.addrs.Give(cc.key)
		}
		l.refused.Add(1)
		l.refuse(c, full)
		return nil
	}
	return cc
}

// refuse answers c with answer in the background, unless too many refusals
// are being answered already.
func (l *Listener) refuse(c net.Conn, answer []byte) {
	if l.refusing.Add(1) > maxRefusing {
		// A flood: answering would hold files of the reserve.
		l.refusing.Add(-1)
		_ = c.Close()
		return
	}
	go func() {
		defer l.refusing.Add(-1)
		answerAndClose(c, answer)
	}()
}

// answerAndClose answers c with answer within refuseTimeout, lingers and closes
// it. It reads the request's head first: an answer sent before the request is
// one an HTTP client drops as unsolicited.
func answerAndClose(c net.Conn, answer []byte) {
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
	if _, err := c.Write(answer); err != nil {
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

// Refused is how many connections were answered 503 for being over the
// global cap (or in its headroom, from an address holding others).
func (l *Listener) Refused() int64 { return l.refused.Load() }

// RefusedPerAddress is how many connections were answered 429 for being
// over the per-address cap.
func (l *Listener) RefusedPerAddress() int64 { return l.refusedAt.Load() }

// conn gives its slot back when closed, once, however it is closed
// (net/http, or a hijacker).
type conn struct {
	net.Conn
	l      *Listener
	key    netip.Prefix
	capped bool // counted in l.addrs under key
	once   sync.Once
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
	c.once.Do(func() {
		c.l.open.Add(-1)
		if c.capped {
			c.l.addrs.Give(c.key)
		}
	})
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
