package console

import (
	"net/netip"
	"sync"
	"time"
)

// The sign-in limit: at most maxWrongTries wrong tokens in any
// wrongTryWindow from one address. Five a minute lets a person mistype;
// it lets a guesser try 7,200 tokens a day from an address, against a
// generated token of 256 bits.
const (
	maxWrongTries  = 5
	wrongTryWindow = time.Minute
	// maxTrackedAddresses bounds the limiter's memory (about 150 bytes an
	// address, so at most about 10 MB).
	maxTrackedAddresses = 1 << 16
)

// tries counts sign-in tries per client address over a sliding window:
// IPv4 by address, IPv6 by /64 (one host often holds a whole /64). Unlike
// limit.Limiter (a token bucket, which allows a burst and then a steady
// rate), it never allows more than max tries in any one window, and a try
// can be given back once it turns out right.
//
// Memory is bounded: when max addresses are tracked, those with no try in
// the window are forgotten, then, if need be, an arbitrary one (it gets a
// fresh allowance; no address is ever refused for lack of room). It is safe
// for concurrent use.
type tries struct {
	max    int
	window time.Duration
	size   int

	mu sync.Mutex
	// at holds each address's tries in the window, oldest first, as Unix
	// nanoseconds; never more than max.
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

// begin counts a try by a at now, unless a has used its tries in the
// window: then it returns false and how long until the oldest leaves the
// window. The returned stamp identifies the try for forgive.
func (t *tries) begin(a netip.Addr, now time.Time) (stamp int64, ok bool, retryAfter time.Duration) {
	k := keyOf(a)
	n := now.UnixNano()
	t.mu.Lock()
	defer t.mu.Unlock()
	list, found := t.at[k]
	list = t.prune(list, n)
	if len(list) >= t.max {
		t.at[k] = list
		return 0, false, max(time.Duration(list[0]+int64(t.window)-n), time.Nanosecond)
	}
	if !found {
		t.makeRoom(n)
	}
	t.at[k] = append(list, n)
	return n, true, 0
}

// forgive gives back the try begun at stamp by a (a right token, or a body
// that was not a try at all).
func (t *tries) forgive(a netip.Addr, stamp int64) {
	k := keyOf(a)
	t.mu.Lock()
	defer t.mu.Unlock()
	list := t.at[k]
	for i, s := range list {
		if s == stamp {
			list = append(list[:i], list[i+1:]...)
			break
		}
	}
	if len(list) == 0 {
		delete(t.at, k)
		return
	}
	t.at[k] = list
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
