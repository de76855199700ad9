package redisstore_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/internal/redistest"
	"github.com/waitroom/waitroom/internal/seedredis"
	"github.com/waitroom/waitroom/redisstore"
)

// The benchmarks compare redisstore with the command sequence of the seed
// design (/work/shared/seeds/001: "Using Redis sorted sets to build a
// scalable real-time web waiting list"), on one real Redis in one run, at
// 64 and 256 concurrent callers:
//
//	go test -run '^$' -bench . -benchtime 20000x ./redisstore
//
// The seed's join is check() for a newcomer to a full room: the five-command
// check pipeline, then findLastUser (the last score), then a pipeline that
// adds the user at that score + 1 and reads its rank. Its three round trips
// are not atomic, so concurrent joins can read the same last score and get
// the same score: their order is then by user id, not by arrival (a FIFO
// violation). The benchmark counts those duplicate scores. Its position read
// is check() for a waiting user: the check pipeline, then the check-in
// update. redisstore does each in one script run, with unique tickets.
// Both sides get the same client and callers; redisstore pipelines what
// queues up (see the package doc), the seed's sequence cannot, since each
// of its steps needs the previous step's answer.

var benchCallers = []int{64, 256}

// runCallers runs n operations over callers goroutines and returns how long
// that took. op gets the caller's number and the operation's.
func runCallers(b *testing.B, callers int, op func(caller, i int) error) time.Duration {
	b.Helper()
	var next atomic.Int64
	var failed atomic.Value
	var wg sync.WaitGroup
	b.ResetTimer()
	start := time.Now()
	for c := 0; c < callers; c++ {
		wg.Add(1)
		go func(c int) {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= b.N {
					return
				}
				if err := op(c, i); err != nil {
					failed.CompareAndSwap(nil, err)
					return
				}
			}
		}(c)
	}
	wg.Wait()
	took := time.Since(start)
	b.StopTimer()
	if err, _ := failed.Load().(error); err != nil {
		b.Fatalf("operation failed: %v", err)
	}
	b.ReportMetric(float64(b.N)/took.Seconds(), "ops/s")
	return took
}

func benchClient(addr string, callers int) *redis.Client {
	return redis.NewClient(&redis.Options{Addr: addr, PoolSize: callers + 8})
}

// benchStore returns a store with a full default room "r".
func benchStore(b *testing.B, client *redis.Client) *redisstore.Store {
	b.Helper()
	ctx := context.Background()
	s, err := redisstore.New(ctx, client, redisstore.WithPrefix(freshPrefix()))
	if err != nil {
		b.Fatalf("New: %v", err)
	}
	b.Cleanup(func() { _ = s.Close() })
	cfg := waitroom.DefaultConfig()
	cfg.Capacity = seedredis.Max
	now := time.Now()
	if _, _, err := s.PutRoom(ctx, "r", cfg, now); err != nil {
		b.Fatalf("PutRoom: %v", err)
	}
	for i := 0; i < seedredis.Max; i++ {
		if _, err := s.Join(ctx, "r", "", now); err != nil {
			b.Fatalf("Join: %v", err)
		}
	}
	return s
}

// newSeedRoom returns a full room of the seed design on fresh keys.
func newSeedRoom(b *testing.B, c *redis.Client) *seedredis.Room {
	b.Helper()
	r, err := seedredis.New(context.Background(), c, freshPrefix())
	if err != nil {
		b.Fatalf("seed room: %v", err)
	}
	return r
}

func BenchmarkJoin(b *testing.B) {
	addr := redistest.Server(b)
	ctx := context.Background()
	for _, callers := range benchCallers {
		b.Run(fmt.Sprintf("redisstore/callers=%d", callers), func(b *testing.B) {
			c := benchClient(addr, callers)
			defer c.Close()
			s := benchStore(b, c)
			var mu sync.Mutex
			tickets := make(map[int64]bool, b.N)
			dups := 0
			runCallers(b, callers, func(_, _ int) error {
				got, err := s.Join(ctx, "r", "", time.Now())
				if err != nil {
					return err
				}
				mu.Lock()
				if tickets[got.Ticket] {
					dups++
				}
				tickets[got.Ticket] = true
				mu.Unlock()
				return nil
			})
			b.ReportMetric(float64(dups), "duplicate-order")
		})
		b.Run(fmt.Sprintf("seed/callers=%d", callers), func(b *testing.B) {
			c := benchClient(addr, callers)
			defer c.Close()
			r := newSeedRoom(b, c)
			runCallers(b, callers, func(_, i int) error {
				_, err := r.Join(ctx, "u"+strconv.Itoa(i))
				return err
			})
			dups, err := r.DuplicateScores(ctx)
			if err != nil {
				b.Fatalf("reading scores: %v", err)
			}
			b.ReportMetric(float64(dups), "duplicate-order")
		})
	}
}

// benchWaiting is how many sessions wait in the position benchmarks.
const benchWaiting = 10_000

func BenchmarkPosition(b *testing.B) {
	addr := redistest.Server(b)
	ctx := context.Background()
	for _, callers := range benchCallers {
		b.Run(fmt.Sprintf("redisstore/callers=%d", callers), func(b *testing.B) {
			c := benchClient(addr, callers)
			defer c.Close()
			s := benchStore(b, c)
			ids := make([]string, benchWaiting)
			for i := range ids {
				got, err := s.Join(ctx, "r", "", time.Now())
				if err != nil {
					b.Fatalf("Join: %v", err)
				}
				ids[i] = got.ID
			}
			runCallers(b, callers, func(caller, i int) error {
				id := ids[rand.IntN(len(ids))]
				got, err := s.Session(ctx, "r", id, time.Now())
				if err == nil && got.Position < 1 {
					err = fmt.Errorf("session %s at position %d", id, got.Position)
				}
				return err
			})
		})
		b.Run(fmt.Sprintf("seed/callers=%d", callers), func(b *testing.B) {
			c := benchClient(addr, callers)
			defer c.Close()
			r := newSeedRoom(b, c)
			for i := 0; i < benchWaiting; i++ {
				if _, err := r.Join(ctx, "u"+strconv.Itoa(i)); err != nil {
					b.Fatalf("join: %v", err)
				}
			}
			runCallers(b, callers, func(caller, i int) error {
				_, err := r.Position(ctx, "u"+strconv.Itoa(rand.IntN(benchWaiting)))
				return err
			})
		})
	}
}
