package connlimit

import (
	"net"
	"net/netip"
	"sync"
)

// Key is the address a per-address cap counts a client by: an IPv4 address
// whole, an IPv6 address by its /64, since one host (or one home) is
// routinely given a whole /64 and counting its addresses apart would let
// it multiply its share at will. IPv4-mapped addresses count as IPv4; a
// zone is dropped. The zero Addr (no known address) is a key of its own.
func Key(a netip.Addr) netip.Prefix {
	if !a.IsValid() {
		return netip.Prefix{}
	}
	a = a.WithZone("").Unmap()
	if a.Is4() {
		return netip.PrefixFrom(a, 32)
	}
	p, _ := a.Prefix(64)
	return p
}

// Tally counts what each key (a client address, a session) holds now, and
// refuses one more over its cap. Keys holding nothing are forgotten, so its
// memory is bounded by what is held. A nil *Tally caps nothing. It is safe
// for concurrent use.
type Tally[K comparable] struct {
	max int
	mu  sync.Mutex
	n   map[K]int
}

// NewTally returns a tally that lets each key hold at most max; max <= 0
// returns nil, which caps nothing.
func NewTally[K comparable](max int) *Tally[K] {
	if max <= 0 {
		return nil
	}
	return &Tally[K]{max: max, n: make(map[K]int)}
}

// Max is the most one key may hold (0 for a nil tally: no cap).
func (t *Tally[K]) Max() int {
	if t == nil {
		return 0
	}
	return t.max
}

// Take counts one more for k and reports true, or reports false, counting
// nothing, when k already holds its cap. Each true is given back by one
// Give.
func (t *Tally[K]) Take(k K) bool {
	if t == nil {
		return true
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.n[k] >= t.max {
		return false
	}
	t.n[k]++
	return true
}

// Give gives back one that Take counted for k.
func (t *Tally[K]) Give(k K) {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if n := t.n[k]; n > 1 {
		t.n[k] = n - 1
	} else {
		delete(t.n, k)
	}
}

// Held is how many k holds now.
func (t *Tally[K]) Held(k K) int {
	if t == nil {
		return 0
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.n[k]
}

// Keys is how many keys hold something now.
func (t *Tally[K]) Keys() int {
	if t == nil {
		return 0
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.n)
}

// peerAddr is the address of a connection's peer, or the zero Addr when
// its RemoteAddr holds none (a listener that is not TCP).
func peerAddr(c net.Conn) netip.Addr {
	switch a := c.RemoteAddr().(type) {
	case *net.TCPAddr:
		return a.AddrPort().Addr().WithZone("").Unmap()
	case nil:
		return netip.Addr{}
	default:
		ap, err := netip.ParseAddrPort(a.String())
		if err != nil {
			return netip.Addr{}
		}
		return ap.Addr().WithZone("").Unmap()
	}
}
