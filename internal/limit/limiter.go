// Package limit protects a waitroom server from abuse and from running out
// of memory: a per-client-address join limit (Limiter), a guard on the
// process's memory (MemoryGuard), and Joins, which combines them with a cap
// on live sessions per room into the one check a join goes through. The API
// (httpapi) and the waiting page (web) share one Limiter and one
// MemoryGuard, so a client gets the same allowance whichever way it joins.
package limit

import (
	"encoding/binary"
	"math/bits"
	"net/netip"
	"sync"
	"time"
)

// Defaults of the per-address join limit: 120 joins a minute, in bursts of
// up to 120, enough for a household or office behind one address reloading
// a page, far below what a script could do.
const (
	DefaultPerMinute = 120
	DefaultBurst     = 120
	// DefaultMaxAddresses bounds the addresses a Limiter tracks at once:
	// about 70 bytes each (measured), so at most about 9 MB.
	DefaultMaxAddresses = 1 << 17
)

// shards spreads the table over independent locks.
const shards = 64

// Limiter allows each client address at most Burst events at once and
// PerMinute a minute on average (a token bucket, kept as a theoretical
// arrival time per address: one int64). IPv6 clients are limited per /64,
// since one host often holds a whole /64. Memory is bounded: at most
// MaxAddresses addresses are tracked; an address whose bucket has refilled
// is forgotten, and when the table is full of recently active addresses, the
// least recently refilled of a sample is forgotten (that address gets a full
// bucket again; no address is ever refused for lack of room).
//
// A nil *Limiter allows everything. Methods take now rather than reading
// the clock, so tests control time. It is safe for concurrent use.
type Limiter struct {
	interval time.Duration // time to earn one token
	window   time.Duration // burst × interval
	perShard int
	shard    [shards]shard
}

type shard struct {
	mu sync.Mutex
	// tat is each key's theoretical arrival time in Unix nanoseconds: the
	// bucket is full when tat <= now, and each event pushes it one interval
	// later.
	tat       map[key]int64
	lastSweep int64
}

// key is an address as the limiter counts it: IPv4 whole, IPv6 by /64.
type key struct{ hi, lo uint64 }

// NewLimiter returns a limiter of perMinute events a minute per address in
// bursts of burst, tracking at most maxAddresses addresses (0 means
// DefaultMaxAddresses). perMinute <= 0 returns nil, which allows
// everything: "--join-limit 0" disables the limit. burst < 1 means 1.
func NewLimiter(perMinute, burst, maxAddresses int) *Limiter {
	if perMinute <= 0 {
		return nil
	}
	burst = max(burst, 1)
	if maxAddresses <= 0 {
		maxAddresses = DefaultMaxAddresses
	}
	l := &Limiter{
		interval: time.Minute / time.Duration(perMinute),
		perShard: max(maxAddresses/shards, 1),
	}
	l.window = l.interval * time.Duration(burst)
	for i := range l.shard {
		l.shard[i].tat = make(map[key]int64)
	}
	return l
}

// keyOf maps an address to its bucket: IPv4 (and IPv4-mapped IPv6) by
// address, IPv6 by its /64. The zero Addr (no known address) is one bucket
// of its own.
func keyOf(a netip.Addr) key {
	a = a.Unmap()
	switch {
	case a.Is4():
		b := a.As4()
		return key{lo: 1<<32 | uint64(binary.BigEndian.Uint32(b[:]))}
	case a.Is6():
		b := a.As16()
		return key{hi: binary.BigEndian.Uint64(b[:8]), lo: 2 << 32}
	}
	return key{}
}

func (k key) shard() int {
	h := (k.hi ^ bits.RotateLeft64(k.lo, 29)) * 0x9e3779b97f4a7c15
	return int(h >> (64 - 6)) // shards = 64 = 2^6
}

// Allow takes one token from a's bucket at now. When the bucket is empty it
// returns false and how long until a token is earned (at least 1ns).
func (l *Limiter) Allow(a netip.Addr, now time.Time) (ok bool, retryAfter time.Duration) {
	if l == nil {
		return true, 0
	}
	k := keyOf(a)
	s := &l.shard[k.shard()]
	t := now.UnixNano()
	s.mu.Lock()
	defer s.mu.Unlock()
	tat, found := s.tat[k]
	if !found {
		s.makeRoom(t, l.perShard)
	}
	tat = max(tat, t)
	next := tat + int64(l.interval)
	if allowAt := next - int64(l.window); t < allowAt {
		return false, time.Duration(allowAt - t)
	}
	s.tat[k] = next
	return true, 0
}

// makeRoom keeps the shard under its size before a new key is added: first
// it forgets every full bucket (at most once a second, since it walks the
// whole shard), then, if still full, the bucket nearest to full among a
// sample (map iteration order is random enough for that).
func (s *shard) makeRoom(t int64, size int) {
	if len(s.tat) < size {
		return
	}
	if t-s.lastSweep >= int64(time.Second) {
		s.lastSweep = t
		for k, tat := range s.tat {
			if tat <= t {
				delete(s.tat, k)
			}
		}
	}
	for len(s.tat) >= size {
		var victim key
		oldest, n := int64(0), 0
		for k, tat := range s.tat {
			if n == 0 || tat < oldest {
				victim, oldest = k, tat
			}
			if n++; n == 8 {
				break
			}
		}
		delete(s.tat, victim)
	}
}

// Len returns the number of addresses tracked, for tests and metrics.
func (l *Limiter) Len() int {
	if l == nil {
		return 0
	}
	n := 0
	for i := range l.shard {
		s := &l.shard[i]
		s.mu.Lock()
		n += len(s.tat)
		s.mu.Unlock()
	}
	return n
}
