package limit

import (
	"runtime/metrics"
	"sync"
	"sync/atomic"
	"time"
)

// MemorySampleEvery is how often a MemoryGuard reads the memory in use at
// most: reading runtime/metrics costs a few microseconds, joins may come in
// the hundreds of thousands a second, and memory does not climb far in 100ms.
const MemorySampleEvery = 100 * time.Millisecond

// MemoryGuard tells whether the process uses more memory than a limit, so
// that new joins can be refused (503 room_full) before the process runs out
// of memory, while existing sessions keep being served. A nil *MemoryGuard
// is never over. It is safe for concurrent use.
type MemoryGuard struct {
	limit  uint64
	sample func() uint64
	mu     sync.Mutex // held by the one caller taking a sample
	next   atomic.Int64
	over   atomic.Bool
	last   atomic.Uint64
}

// NewMemoryGuard returns a guard that is over while sample() > limit
// bytes; limit 0 returns nil (no guard). sample nil means RuntimeMemory.
// Tests pass their own sample rather than allocating gigabytes.
func NewMemoryGuard(limit uint64, sample func() uint64) *MemoryGuard {
	if limit == 0 {
		return nil
	}
	if sample == nil {
		sample = RuntimeMemory
	}
	return &MemoryGuard{limit: limit, sample: sample}
}

// Over reports whether memory in use exceeded the limit at the latest
// sample, taking a new sample when the latest is older than
// MemorySampleEvery at now.
func (g *MemoryGuard) Over(now time.Time) bool {
	if g == nil {
		return false
	}
	t := now.UnixNano()
	if t >= g.next.Load() && g.mu.TryLock() {
		// One caller samples; the others use the previous answer meanwhile.
		if t >= g.next.Load() {
			used := g.sample()
			g.last.Store(used)
			g.over.Store(used > g.limit)
			g.next.Store(t + int64(MemorySampleEvery))
		}
		g.mu.Unlock()
	}
	return g.over.Load()
}

// Limit returns the limit in bytes (0 for a nil guard).
func (g *MemoryGuard) Limit() uint64 {
	if g == nil {
		return 0
	}
	return g.limit
}

// Last returns the latest sample in bytes.
func (g *MemoryGuard) Last() uint64 {
	if g == nil {
		return 0
	}
	return g.last.Load()
}

// runtimeMetrics are the runtime/metrics read by RuntimeMemory.
var runtimeMetrics = []string{"/memory/classes/total:bytes", "/memory/classes/heap/released:bytes"}

// RuntimeMemory returns the memory the Go runtime holds from the operating
// system and has not returned to it: all memory classes minus released heap.
// It is the quantity GOMEMLIMIT limits, so a guard at about 90% of
// GOMEMLIMIT refuses joins before the garbage collector starts thrashing.
func RuntimeMemory() uint64 {
	s := []metrics.Sample{{Name: runtimeMetrics[0]}, {Name: runtimeMetrics[1]}}
	metrics.Read(s)
	var v [2]uint64
	for i := range s {
		if s[i].Value.Kind() == metrics.KindUint64 {
			v[i] = s[i].Value.Uint64()
		}
	}
	if v[1] > v[0] {
		return 0
	}
	return v[0] - v[1]
}
