package redisstore_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/internal/redistest"
	"github.com/waitroom/waitroom/redisstore"
)

// TestDrawSurvivesRedisRestart kills redis-server (append-only file,
// fsync always) before the draw, in the middle of a draw made in many
// steps, and after it. After every restart no acknowledged entrant is
// missing, the commitment is the one published first, the draw completes
// once, and a second store (another process) and a later restart read the
// same draw.
func TestDrawSurvivesRedisRestart(t *testing.T) {
	ctx := context.Background()
	in := redistest.Start(t, redistest.WithAOF())
	newStore := func(opts ...redisstore.Option) waitroom.Store {
		t.Helper()
		c := redis.NewClient(&redis.Options{Addr: in.Addr, MaxRetries: -1})
		t.Cleanup(func() { _ = c.Close() })
		s, err := redisstore.New(ctx, c, append([]redisstore.Option{redisstore.WithPrefix("restart")}, opts...)...)
		if err != nil {
			t.Fatalf("redisstore.New: %v", err)
		}
		t.Cleanup(func() { _ = s.Close() })
		return s
	}
	s := newStore(redisstore.WithDrawStep(7))
	other := newStore()
	// Redis dies at a different moment of each room's draw: while it reads
	// the pre-queue, takes the draw, or applies its steps.
	for i, delay := range []time.Duration{time.Millisecond, 4 * time.Millisecond, 12 * time.Millisecond, 30 * time.Millisecond} {
		room := fmt.Sprintf("drop-%d", i)
		t.Run(room, func(t *testing.T) { drawThroughRestarts(t, in, s, other, room, delay) })
	}
}

// drawThroughRestarts is one room of TestDrawSurvivesRedisRestart, with
// Redis killed delay after the draw starts.
func drawThroughRestarts(t *testing.T, in *redistest.Instance, s, other waitroom.Store, room string, delay time.Duration) {
	ctx := context.Background()
	scheduledRoom(t, s, room, 3)
	before, err := s.Draw(ctx, room)
	if err != nil {
		t.Fatal(err)
	}
	entrants := fillPreQueue(t, s, room, 300)

	// Before the draw.
	in.Restart()
	d, err := s.Draw(ctx, room)
	if err != nil || d.Commitment != before.Commitment || d.Drawn || d.Entrants != len(entrants) {
		t.Fatalf("after a restart before the draw: %+v, %v; want commitment %s, not drawn, %d entrants", d, err, before.Commitment, len(entrants))
	}

	// During it: the draw runs in 43 steps of 7; Redis dies while it does.
	done := make(chan error, 1)
	go func() {
		_, err := s.Sweep(ctx, room, opens)
		done <- err
	}()
	time.Sleep(delay) // somewhere in the draw, or before or after: every case must hold
	in.Kill()
	err = <-done // an error or not: the draw may or may not have finished
	in.Restart()
	mid, _ := s.Draw(ctx, room)
	t.Logf("the Sweep Redis died under answered %v; after the restart the draw is done: %v", err, mid.Drawn)
	// Any operation at or after the opening carries the draw through.
	for deadline := time.Now().Add(30 * time.Second); ; {
		_, err := s.Sweep(ctx, room, opens.Add(time.Second))
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Sweep after the restart: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	first := checkDrawn(t, s, room, entrants)
	if first.Commitment != before.Commitment {
		t.Fatalf("the draw's commitment %s, want the one published first, %s", first.Commitment, before.Commitment)
	}

	// After it: another process, then another restart, read the same draw.
	if d := checkDrawn(t, other, room, entrants); d.Digest != first.Digest {
		t.Fatalf("another process reads digest %s, want %s", d.Digest, first.Digest)
	}
	in.Restart()
	if d := checkDrawn(t, other, room, entrants); d.Digest != first.Digest || !d.DrawnAt.Equal(first.DrawnAt) {
		t.Fatalf("after a restart: digest %s drawn at %s, want %s at %s", d.Digest, d.DrawnAt, first.Digest, first.DrawnAt)
	}
}
