package sqlitestore

import (
	"context"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/waitroom/waitroom"
)

var t0 = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

type fixedClock time.Time

func (c fixedClock) Now() time.Time { return time.Time(c) }

func open(t *testing.T, path string, at time.Time) *Store {
	t.Helper()
	s, err := Open(context.Background(), path, WithClock(fixedClock(at)))
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	return s
}

// TestRestart checks that rooms, tickets, live sessions (status, position,
// key) and history are the same after closing and opening the file again.
func TestRestart(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "waitroom.db")
	s := open(t, path, t0)
	cfg := waitroom.DefaultConfig()
	cfg.Capacity = 2
	if _, _, err := s.PutRoom(ctx, "r", cfg, t0); err != nil {
		t.Fatal(err)
	}
	var live []waitroom.Session
	for i := range 6 {
		key := ""
		if i == 4 {
			key = "user-4"
		}
		x, err := s.Join(ctx, "r", key, t0)
		if err != nil {
			t.Fatal(err)
		}
		live = append(live, x)
	}
	left, err := s.Leave(ctx, "r", live[0].ID, waitroom.ReasonLeft, t0.Add(time.Second)) // admits ticket 3
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Leave(ctx, "r", live[3].ID, waitroom.ReasonRevoked, t0.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	want := map[string]waitroom.Session{}
	for _, x := range live[1:] {
		got, err := s.Session(ctx, "r", x.ID, t0.Add(2*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		want[x.ID] = got
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s = open(t, path, t0.Add(time.Minute))
	defer s.Close()
	for id, w := range want {
		got, err := s.Session(ctx, "r", id, t0.Add(time.Minute))
		if err != nil {
			t.Fatalf("session %d after restart: %v", w.Ticket, err)
		}
		if got.Status != w.Status || got.Ticket != w.Ticket || got.Position != w.Position || got.Key != w.Key || got.EndReason != w.EndReason {
			t.Errorf("session %d after restart: got %s pos %d key %q reason %q, want %s pos %d key %q reason %q",
				w.Ticket, got.Status, got.Position, got.Key, got.EndReason, w.Status, w.Position, w.Key, w.EndReason)
		}
	}
	got, err := s.Session(ctx, "r", left.ID, t0.Add(time.Minute))
	if err != nil || got.Status != waitroom.StatusLeft {
		t.Errorf("left session after restart: got %v %v, want left", got.Status, err)
	}
	if _, err := s.Join(ctx, "r", "user-4", t0.Add(time.Minute)); waitroom.ErrorCode(err) != waitroom.CodeAlreadyJoined {
		t.Errorf("join with a live key after restart: got %v, want already_joined", err)
	}
	x, err := s.Join(ctx, "r", "", t0.Add(time.Minute))
	if err != nil || x.Ticket != 7 {
		t.Errorf("next join after restart: ticket %d (%v), want 7", x.Ticket, err)
	}
	hist, _, err := s.History(ctx, "r", "", waitroom.Page{})
	if err != nil || len(hist) != 2 || hist[0].EndReason != waitroom.ReasonRevoked || hist[1].EndReason != waitroom.ReasonLeft {
		t.Errorf("history after restart: %+v %v, want revoked then left", hist, err)
	}
}

// TestTicketsSurviveDeletion checks that a room deleted and created again,
// across a restart, continues its tickets.
func TestTicketsSurviveDeletion(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "waitroom.db")
	s := open(t, path, t0)
	if _, _, err := s.PutRoom(ctx, "r", waitroom.DefaultConfig(), t0); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := s.Join(ctx, "r", "", t0); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.DeleteRoom(ctx, "r", true, t0); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s = open(t, path, t0)
	defer s.Close()
	if _, err := s.Room(ctx, "r"); waitroom.ErrorCode(err) != waitroom.CodeRoomNotFound {
		t.Fatalf("deleted room after restart: %v, want room_not_found", err)
	}
	if _, _, err := s.PutRoom(ctx, "r", waitroom.DefaultConfig(), t0); err != nil {
		t.Fatal(err)
	}
	x, err := s.Join(ctx, "r", "", t0)
	if err != nil || x.Ticket != 4 {
		t.Errorf("first join in the re-created room: ticket %d (%v), want 4", x.Ticket, err)
	}
}

// TestSecondProcessRefused checks the data lock.
func TestSecondProcessRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "waitroom.db")
	s := open(t, path, t0)
	defer s.Close()
	_, err := Open(context.Background(), path)
	if err == nil || !strings.Contains(err.Error(), "another waitroom process") {
		t.Fatalf("second open: got %v, want a lock error", err)
	}
}

// TestConcurrentJoinsDurable joins from many goroutines, restarts, and finds
// every acknowledged join with its ticket and status.
func TestConcurrentJoinsDurable(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "waitroom.db")
	s := open(t, path, t0)
	cfg := waitroom.DefaultConfig()
	cfg.Capacity = 10
	if _, _, err := s.PutRoom(ctx, "r", cfg, t0); err != nil {
		t.Fatal(err)
	}
	const workers, each = 16, 50
	got := make([][]waitroom.Session, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for range each {
				x, err := s.Join(ctx, "r", "", t0)
				if err != nil {
					t.Errorf("join: %v", err)
					return
				}
				got[w] = append(got[w], x)
			}
		})
	}
	wg.Wait()
	s.Close()
	s = open(t, path, t0)
	defer s.Close()
	seen := map[int64]bool{}
	for _, xs := range got {
		for _, x := range xs {
			if seen[x.Ticket] {
				t.Errorf("ticket %d issued twice", x.Ticket)
			}
			seen[x.Ticket] = true
			after, err := s.Session(ctx, "r", x.ID, t0)
			if err != nil {
				t.Errorf("ticket %d lost: %v", x.Ticket, err)
				continue
			}
			wantStatus := waitroom.StatusWaiting
			if x.Ticket <= 10 {
				wantStatus = waitroom.StatusActive
			}
			if after.Status != wantStatus || (wantStatus == waitroom.StatusWaiting && after.Position != x.Ticket-10) {
				t.Errorf("ticket %d: got %s position %d, want %s position %d", x.Ticket, after.Status, after.Position, wantStatus, x.Ticket-10)
			}
		}
	}
	if len(seen) != workers*each {
		t.Errorf("%d joins acknowledged, want %d", len(seen), workers*each)
	}
}
