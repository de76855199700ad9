package sqlitestore

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/waitroom/waitroom"
)

// TestRestartKeepsOperatorMoves checks that a queue-all, a move to the front
// and an extension survive closing and opening the file: the line keeps its
// order, the room stays paused, and the extended deadline holds.
func TestRestartKeepsOperatorMoves(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "waitroom.db")
	s := open(t, path, t0)
	cfg := waitroom.DefaultConfig()
	cfg.Capacity = 2
	cfg.ActiveTimeout, cfg.WaitingTimeout = 0, 0
	cfg.MaxSession = waitroom.Duration(time.Hour)
	if _, _, err := s.PutRoom(ctx, "r", cfg, t0); err != nil {
		t.Fatal(err)
	}
	var ss []waitroom.Session
	for range 5 {
		x, err := s.Join(ctx, "r", "", t0)
		if err != nil {
			t.Fatal(err)
		}
		ss = append(ss, x)
	}
	// #1, #2 active; #3–#5 wait. #5 to the front, then everyone active back.
	if _, err := s.Front(ctx, "r", ss[4].ID, t0.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.QueueAll(ctx, "r", t0.Add(2*time.Second)); err != nil {
		t.Fatal(err)
	}
	want := []int64{1, 2, 5, 3, 4}
	check := func(s *Store, when string) {
		t.Helper()
		got, _, err := s.Waiting(ctx, "r", waitroom.Page{})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want) {
			t.Fatalf("%s: %d waiting, want %d", when, len(got), len(want))
		}
		for i, w := range got {
			if w.Ticket != want[i] || w.Position != int64(i+1) {
				t.Fatalf("%s: entry %d is #%d at %d, want #%d at %d", when, i, w.Ticket, w.Position, want[i], i+1)
			}
		}
		if r, err := s.Room(ctx, "r"); err != nil || !r.Paused {
			t.Fatalf("%s: room paused %v, %v; want paused", when, r.Paused, err)
		}
	}
	check(s, "before the restart")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = open(t, path, t0.Add(3*time.Second))
	check(s, "after the restart")
	// A move after the restart still goes ahead of every earlier one.
	got, err := s.Front(ctx, "r", ss[3].ID, t0.Add(4*time.Second))
	if err != nil || got.Position != 1 {
		t.Fatalf("Front after restart = pos %d, %v; want 1", got.Position, err)
	}
	want = []int64{4, 1, 2, 5, 3}
	cfg.Paused = false
	cfg.Capacity = 1
	if _, _, err := s.PutRoom(ctx, "r", cfg, t0.Add(5*time.Second)); err != nil {
		t.Fatal(err)
	}
	a, err := s.Extend(ctx, "r", ss[3].ID, 30*time.Minute, t0.Add(6*time.Second))
	if err != nil || a.Extended != 30*time.Minute {
		t.Fatalf("Extend = %s extended %s, %v; want active extended 30m", a.Status, a.Extended, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = open(t, path, t0.Add(7*time.Second))
	defer s.Close()
	// Admitted at 5s, max_session 1h, extended 30m: due at 1h30m5s.
	if _, err := s.Sweep(ctx, "r", t0.Add(90*time.Minute+4*time.Second)); err != nil {
		t.Fatal(err)
	}
	if x, err := s.Lookup(ctx, "r", 4, ""); err != nil || x.Status != waitroom.StatusActive || x.Extended != 30*time.Minute {
		t.Fatalf("#4 before its extended deadline = %s extended %s, %v; want active, 30m", x.Status, x.Extended, err)
	}
	if _, err := s.Sweep(ctx, "r", t0.Add(90*time.Minute+5*time.Second)); err != nil {
		t.Fatal(err)
	}
	if x, err := s.Lookup(ctx, "r", 4, ""); err != nil || x.EndReason != waitroom.ReasonMaxSession {
		t.Fatalf("#4 at its extended deadline = %s %s, %v; want expired max_session", x.Status, x.EndReason, err)
	}
	// And the fairness count took the moves as no inversion.
	if r, err := s.Room(ctx, "r"); err != nil || r.Inversions != 0 {
		t.Fatalf("inversions %d, %v; want 0", r.Inversions, err)
	}
}
