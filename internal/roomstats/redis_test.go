package roomstats_test

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/internal/redistest"
	"github.com/waitroom/waitroom/internal/roomstats"
	"github.com/waitroom/waitroom/redisstore"
)

// TestTwoProcessesCountOnce runs two processes (two clients and stores)
// on one redis-server, each with its own Recorder writing to the shared
// ledger. Joins go through one, admissions and leaves through the other;
// each sees the other's events (Remote) and must not count them, so the
// ledger holds every change once.
func TestTwoProcessesCountOnce(t *testing.T) {
	addr := redistest.Server(t)
	ctx := t.Context()
	clock := waitroom.NewManualClock(at(0))
	type process struct {
		s      *redisstore.Store
		rec    *roomstats.Recorder
		remote atomic.Int64 // remote changes seen
	}
	start := func() *process {
		client := redis.NewClient(&redis.Options{Addr: addr})
		t.Cleanup(func() { _ = client.Close() })
		s, err := redisstore.New(ctx, client, redisstore.WithPrefix("two"))
		if err != nil {
			t.Fatalf("redisstore.New: %v", err)
		}
		t.Cleanup(func() { _ = s.Close() })
		p := &process{s: s}
		t.Cleanup(s.Subscribe(func(ev waitroom.Event) {
			if ev.Remote {
				p.remote.Add(int64(len(ev.Changes)))
			}
		}))
		p.rec = roomstats.New(s, s, roomstats.Options{Sample: -1, Clock: clock})
		t.Cleanup(func() { _ = p.rec.Close() })
		return p
	}
	a, b := start(), start()
	if _, _, err := a.s.PutRoom(ctx, "shared", waitroom.RoomConfig{Mode: waitroom.ModeAuto, Capacity: 3}, at(0)); err != nil {
		t.Fatalf("PutRoom: %v", err)
	}
	var sessions []waitroom.Session
	for i := range 10 {
		s, err := a.s.Join(ctx, "shared", "", at(time.Duration(i)*time.Second))
		if err != nil {
			t.Fatalf("Join: %v", err)
		}
		sessions = append(sessions, s)
	}
	// b: three active leave (each admits the next in line), then two of
	// those still waiting leave.
	for i, s := range []waitroom.Session{sessions[0], sessions[1], sessions[2], sessions[8], sessions[9]} {
		if _, err := b.s.Leave(ctx, "shared", s.ID, waitroom.ReasonLeft, at(time.Duration(20+i)*time.Second)); err != nil {
			t.Fatalf("Leave: %v", err)
		}
	}
	// Wait until each has heard the other's changes: 10 joins to b; 3
	// leaves, 3 admissions and 2 leaves to a.
	deadline := time.Now().Add(10 * time.Second)
	for b.remote.Load() < 10 || a.remote.Load() < 8 {
		if time.Now().After(deadline) {
			t.Fatalf("remote changes seen: a %d (want 8), b %d (want 10)", a.remote.Load(), b.remote.Load())
		}
		time.Sleep(5 * time.Millisecond)
	}
	clock.Set(at(30 * time.Second))
	for _, p := range []*process{a, b} {
		if err := p.rec.Flush(ctx); err != nil {
			t.Fatalf("Flush: %v", err)
		}
	}
	buckets, err := a.s.Stats(ctx, "shared", at(0))
	if err != nil {
		t.Fatalf("Stats: %v", err)
	}
	var joins, adm, ab int64
	var waits int64
	for _, bk := range buckets {
		joins += bk.Joins
		adm += bk.Admissions
		ab += bk.Abandons
		for _, n := range bk.Waits {
			waits += n
		}
	}
	if joins != 10 || adm != 3 || ab != 2 || waits != 3 {
		t.Fatalf("ledger holds %d joins, %d admissions, %d abandons, %d waits; want 10, 3, 2, 3 (each counted once)", joins, adm, ab, waits)
	}
	sum, err := b.rec.Summary(ctx, "shared", at(31*time.Second))
	if err != nil {
		t.Fatalf("Summary: %v", err)
	}
	last := sum.Series[len(sum.Series)-1]
	if last.Waiting != 2 || last.Active != 3 || sum.Waits.Count != 3 {
		t.Fatalf("Summary now: waiting %d, active %d, %d waits; want 2, 3, 3", last.Waiting, last.Active, sum.Waits.Count)
	}
}
