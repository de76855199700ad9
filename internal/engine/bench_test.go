package engine

import (
	"context"
	"math/rand/v2"
	"runtime"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/waitroom/waitroom"
)

var benchT0 = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

// filled returns a store whose room "r" has n waiting sessions (capacity 0,
// so nobody is admitted) and their ids.
func filled(tb testing.TB, n int) (*Store, []string) {
	tb.Helper()
	ctx := context.Background()
	s := New()
	cfg := waitroom.DefaultConfig()
	cfg.Capacity = 0
	if _, _, err := s.PutRoom(ctx, "r", cfg, benchT0); err != nil {
		tb.Fatal(err)
	}
	ids := make([]string, n)
	for i := range ids {
		x, err := s.Join(ctx, "r", "", benchT0)
		if err != nil {
			tb.Fatal(err)
		}
		ids[i] = x.ID
	}
	return s, ids
}

const million = 1_000_000

// BenchmarkJoin measures joining the back of a line a million long.
func BenchmarkJoin(b *testing.B) {
	s, _ := filled(b, million)
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, err := s.Join(ctx, "r", "", benchT0); err != nil {
			b.Fatal(err)
		}
	}
}

// stream lays ids out in a random order in one buffer that a benchmark reads
// front to back: the caller's ids arrive hot, as they do from a request,
// while the store's accesses land anywhere in the line.
func stream(ids []string) func(i int) string {
	rng := rand.New(rand.NewPCG(1, 2))
	buf := make([]byte, 0, len(ids)*waitroom.SessionIDLen)
	for _, j := range rng.Perm(len(ids)) {
		buf = append(buf, ids[j]...)
	}
	return func(i int) string {
		i %= len(ids)
		return unsafe.String(&buf[i*waitroom.SessionIDLen], waitroom.SessionIDLen)
	}
}

// BenchmarkPosition measures reading a random session's exact position
// (Store.Session, which also records presence) with a million waiting.
func BenchmarkPosition(b *testing.B) {
	s, ids := filled(b, million)
	benchPositions(b, s, ids)
}

// benchPositions reads the positions of ids in random order.
func benchPositions(b *testing.B, s *Store, ids []string) {
	id := stream(ids)
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	i := 0
	for b.Loop() {
		x, err := s.Session(ctx, "r", id(i), benchT0)
		if err != nil || x.Position == 0 {
			b.Fatal(err, x.Position)
		}
		i++
	}
}

// BenchmarkPositionParallel is BenchmarkPosition from every core at once.
func BenchmarkPositionParallel(b *testing.B) {
	s, ids := filled(b, million)
	id := stream(ids)
	ctx := context.Background()
	var next atomic.Int64
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		i := int(next.Add(1)) * 100_003
		for pb.Next() {
			if _, err := s.Session(ctx, "r", id(i), benchT0); err != nil {
				b.Error(err)
				return
			}
			i++
		}
	})
}

// BenchmarkPositionBatch measures Store.Sessions, the push hub's batch read,
// per session read, in batches of 1,000 with a million waiting.
func BenchmarkPositionBatch(b *testing.B) {
	s, ids := filled(b, million)
	id := stream(ids)
	ctx := context.Background()
	batch := make([]string, 1000)
	b.ReportAllocs()
	b.ResetTimer()
	i := 0
	for b.Loop() {
		batch[i%len(batch)] = id(i)
		i++
		if i%len(batch) == 0 {
			if _, err := s.Sessions(ctx, "r", batch); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchmarkLeave measures leaving from a random place in a line a million long.
func BenchmarkLeave(b *testing.B) {
	s, ids := filled(b, million)
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(1, 2))
	rng.Shuffle(len(ids), func(i, j int) { ids[i], ids[j] = ids[j], ids[i] })
	b.ReportAllocs()
	b.ResetTimer()
	i := 0
	for b.Loop() {
		if i == len(ids) {
			// Keep the line a million long: refill outside the timer.
			b.StopTimer()
			s, ids = filled(b, million)
			rng.Shuffle(len(ids), func(i, j int) { ids[i], ids[j] = ids[j], ids[i] })
			i = 0
			b.StartTimer()
		}
		if _, err := s.Leave(ctx, "r", ids[i], waitroom.ReasonLeft, benchT0); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// BenchmarkMemoryPerWaiting reports heap bytes per waiting session.
func BenchmarkMemoryPerWaiting(b *testing.B) {
	for b.Loop() {
		b.ReportMetric(heapPerSession(b, million), "bytes/waiting")
	}
}

// heapPerSession measures the live heap a room of n waiting sessions adds.
func heapPerSession(tb testing.TB, n int) float64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	s, ids := filled(tb, n)
	ids = nil // the ids are the test's, not the store's
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(s)
	_ = ids
	return float64(after.HeapAlloc-before.HeapAlloc) / float64(n)
}

// TestWaitingSessionMemory holds the line to the budget of 128 bytes per
// waiting session, everything included (slot, position tree, deadline heap).
func TestWaitingSessionMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("allocates a large room")
	}
	got := heapPerSession(t, 300_000)
	t.Logf("%.1f bytes per waiting session", got)
	if got > 128 {
		t.Errorf("a waiting session costs %.1f bytes, want ≤ 128", got)
	}
}

// BenchmarkRank measures the order-statistic alone: the exact position of
// a random waiting ticket among a million, without the Store's locking,
// id parsing and presence bookkeeping.
func BenchmarkRank(b *testing.B) {
	s, _ := filled(b, million)
	r := s.rooms["r"]
	rng := rand.New(rand.NewPCG(1, 2))
	n := int64(r.wait.len())
	b.ResetTimer()
	var sum int64
	for b.Loop() {
		t := r.base + rng.Int64N(n)
		sum += r.position(t, r.wait.at(int(t-r.base)))
	}
	if sum == 0 {
		b.Fatal("no positions")
	}
}

// BenchmarkJoinGrowing joins b.N people into an empty room and reports the
// slowest single join (max-ms) next to the average: what one unlucky
// joiner, and everyone else in the room, waits while the line grows. Run
// it to two million waiting:
//
//	go test -run '^$' -bench JoinGrowing -benchtime 2000000x ./internal/engine
func BenchmarkJoinGrowing(b *testing.B) {
	ctx := context.Background()
	s := New()
	defer s.Close()
	cfg := waitroom.DefaultConfig()
	cfg.Capacity = 0
	if _, _, err := s.PutRoom(ctx, "r", cfg, benchT0); err != nil {
		b.Fatal(err)
	}
	var slowest time.Duration
	b.ResetTimer()
	for range b.N {
		t0 := time.Now()
		if _, err := s.Join(ctx, "r", "", benchT0); err != nil {
			b.Fatal(err)
		}
		slowest = max(slowest, time.Since(t0))
	}
	b.ReportMetric(float64(slowest)/1e6, "max-ms")
}
