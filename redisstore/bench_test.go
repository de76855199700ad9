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
	"github.com/waitroom/waitroom/redisstore"
	"github.com/waitroom/waitroom/redistest"
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

// seedMax is the seed's MAX_OCCUPANCY; the participants hash is filled to
// it so every join waits, as in a full room.
const (
	seedMax     = 100
	seedTTL     = 3600 // WAITING_TTL and CHECKIN_TTL, seconds
	seedDropout = 60 * time.Second
)

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
	cfg.Capacity = seedMax
	now := time.Now()
	if _, _, err := s.PutRoom(ctx, "r", cfg, now); err != nil {
		b.Fatalf("PutRoom: %v", err)
	}
	for i := 0; i < seedMax; i++ {
		if _, err := s.Join(ctx, "r", "", now); err != nil {
			b.Fatalf("Join: %v", err)
		}
	}
	return s
}

// seedRoom is one room of the seed design.
type seedRoom struct {
	c                            *redis.Client
	participants, waiting, check string
}

func newSeedRoom(b *testing.B, c *redis.Client) *seedRoom {
	b.Helper()
	p := freshPrefix()
	r := &seedRoom{c: c, participants: p + ":room:participants", waiting: p + ":room:waiting", check: p + ":room:checkin"}
	ctx := context.Background()
	for i := 0; i < seedMax; i++ {
		if err := c.HSet(ctx, r.participants, "p"+strconv.Itoa(i), "{}").Err(); err != nil {
			b.Fatalf("HSET: %v", err)
		}
	}
	return r
}

// checkQuery is the seed's five-command check pipeline.
func (r *seedRoom) checkQuery(ctx context.Context, user string) (participants, waiting int64, rank *int64, err error) {
	var hlen, zcard *redis.IntCmd
	var zrank *redis.IntCmd
	_, err = r.c.Pipelined(ctx, func(p redis.Pipeliner) error {
		hlen = p.HLen(ctx, r.participants)
		zcard = p.ZCard(ctx, r.waiting)
		zrank = p.ZRank(ctx, r.waiting, user)
		p.HGet(ctx, r.participants, user)
		p.ZRangeByScore(ctx, r.check, &redis.ZRangeBy{Min: "0", Max: strconv.FormatInt(time.Now().Add(-seedDropout).UnixMilli(), 10)})
		return nil
	})
	if err != nil && err != redis.Nil {
		return 0, 0, nil, err
	}
	if v, err := zrank.Result(); err == nil {
		rank = &v
	}
	return hlen.Val(), zcard.Val(), rank, nil
}

// join is the seed's check() for a newcomer to a full room.
func (r *seedRoom) join(ctx context.Context, user string) (int64, error) {
	participants, waiting, rank, err := r.checkQuery(ctx, user)
	if err != nil {
		return 0, err
	}
	if rank != nil || participants+waiting < seedMax {
		return 0, fmt.Errorf("the benchmark room is not full")
	}
	// findLastUser: the last entry of the waiting set with its score.
	last, err := r.c.ZRevRangeWithScores(ctx, r.waiting, 0, 0).Result()
	if err != nil {
		return 0, err
	}
	score := 1.0
	if len(last) > 0 {
		score = last[0].Score + 1
	}
	now := float64(time.Now().UnixMilli())
	var zrank *redis.IntCmd
	_, err = r.c.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.ZAdd(ctx, r.waiting, redis.Z{Score: score, Member: user})
		p.Expire(ctx, r.waiting, seedTTL*time.Second)
		p.ZAdd(ctx, r.check, redis.Z{Score: now, Member: user})
		p.Expire(ctx, r.check, seedTTL*time.Second)
		zrank = p.ZRank(ctx, r.waiting, user)
		return nil
	})
	if err != nil {
		return 0, err
	}
	return zrank.Val() + 1, nil
}

// position is the seed's check() for a waiting user: the check pipeline,
// then the check-in update.
func (r *seedRoom) position(ctx context.Context, user string) (int64, error) {
	_, _, rank, err := r.checkQuery(ctx, user)
	if err != nil {
		return 0, err
	}
	if rank == nil {
		return 0, fmt.Errorf("user %s is not waiting", user)
	}
	_, err = r.c.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.ZAdd(ctx, r.check, redis.Z{Score: float64(time.Now().UnixMilli()), Member: user})
		p.Expire(ctx, r.check, seedTTL*time.Second)
		return nil
	})
	return *rank + 1, err
}

// duplicateScores counts waiting users that share their score with an
// earlier one: joins whose order was lost.
func (r *seedRoom) duplicateScores(ctx context.Context) (int, error) {
	zs, err := r.c.ZRangeWithScores(ctx, r.waiting, 0, -1).Result()
	if err != nil {
		return 0, err
	}
	seen := make(map[float64]bool, len(zs))
	dups := 0
	for _, z := range zs {
		if seen[z.Score] {
			dups++
		}
		seen[z.Score] = true
	}
	return dups, nil
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
				_, err := r.join(ctx, "u"+strconv.Itoa(i))
				return err
			})
			dups, err := r.duplicateScores(ctx)
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
				if _, err := r.join(ctx, "u"+strconv.Itoa(i)); err != nil {
					b.Fatalf("join: %v", err)
				}
			}
			runCallers(b, callers, func(caller, i int) error {
				_, err := r.position(ctx, "u"+strconv.Itoa(rand.IntN(benchWaiting)))
				return err
			})
		})
	}
}
