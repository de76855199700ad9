package admintoken

import (
	"net/netip"
	"sync"
	"time"
)

// tries counts wrong tokens per client address over a sliding window:
// IPv4 by address, IPv6 by /64 (one host often holds a whole /64). Unlike
// limit.Limiter (a token bucket, which allows a burst and then a steady
// rate), it never allows more than max wrong tokens in any one window.
//
// Memory is bounded: when size addresses are tracked, those with no wrong
// token in the window are forgotten, then, if need be, an arbitrary one (it
// gets a fresh allowance; no address is ever refused for lack of room). It
// is safe for concurrent use.
type tries struct {
	max    int
	window time.Duration
	size   int

	mu sync.Mutex
	// at holds each address's wrong tokens in the window, oldest first, as
	// Unix nanoseconds; never more than max.
	at map[netip.Prefix][]int64
	// lastSweep is when makeRoom last walked the whole table.
	lastSweep int64
}

func newTries(max int, window time.Duration, size int) *tries {
	return &tries{max: max, window: window, size: size, at: make(map[netip.Prefix][]int64)}
}

// keyOf maps an address to what the limit counts: an IPv4 address whole,
// an IPv6 address by its /64. The zero Addr is a key of its own.
func keyOf(a netip.Addr) netip.Prefix {
	a = a.Unmap().WithZone("")
	switch {
	case a.Is4():
		return netip.PrefixFrom(a, 32)
	case a.Is6():
		p, _ := a.Prefix(64)
		return p
	}
	return netip.Prefix{}
}

// try decides a token presented by a at now, right saying whether it was
// the admin token. An address that has used its max wrong tokens in the
// window is refused whatever it sends (ok false, with how long until its
// oldest wrong token leaves the window); otherwise a wrong token is
// counted. The decision and the count are made under one lock, so racing
// requests get at most max wrong answers a window between them; a right
// token is counted nowhere, so any number of them may be in flight.
func (t *tries) try(a netip.Addr, now time.Time, right bool) (ok bool, retryAfter time.Duration) {
	k := keyOf(a)
	n := now.UnixNano()
	t.mu.Lock()
	defer t.mu.Unlock()
	list, found := t.at[k]
	if !found && right {
		return true, 0 // the common case: nothing to prune, nothing to add
	}
	list = t.prune(list, n)
	if len(list) >= t.max {
		t.at[k] = list
		return false, max(time.Duration(list[0]+int64(t.window)-n), time.Nanosecond)
	}
	switch {
	case !right:
		if !found {
			t.makeRoom(n)
		}
		t.at[k] = append(list, n)
	case len(list) == 0:
		delete(t.at, k)
	default:
		t.at[k] = list
	}
	return true, 0
}

// prune drops the tries that have left the window at n.
func (t *tries) prune(list []int64, n int64) []int64 {
	cut := 0
	for cut < len(list) && list[cut] <= n-int64(t.window) {
		cut++
	}
	return list[cut:]
}

// makeRoom keeps the table under its size before a new address is added:
// it forgets the addresses with no try in the window (walking the table at
// most once a second), then arbitrary ones.
func (t *tries) makeRoom(n int64) {
	if len(t.at) < t.size {
		return
	}
	if n-t.lastSweep >= int64(time.Second) {
		t.lastSweep = n
		for k, list := range t.at {
			if len(t.prune(list, n)) == 0 {
				delete(t.at, k)
			}
		}
	}
	for k := range t.at {
		if len(t.at) < t.size {
			break
		}
		delete(t.at, k)
	}
}

// len returns the number of addresses tracked, for tests.
func (t *tries) len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.at)
}
