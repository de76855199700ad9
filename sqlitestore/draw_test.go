package sqlitestore

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/waitroom/waitroom"
)

// TestRestartSchedule checks that a scheduled room's seed, pre-queue,
// entrants that left, and then its draw survive closing and opening the
// file again: the commitment never changes, no entrant is lost, ids keep
// working, and a draw once made is the one every later reading shows.
func TestRestartSchedule(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "waitroom.db")
	opens := t0.Add(time.Hour)
	cfg := waitroom.DefaultConfig()
	cfg.Capacity = 2
	cfg.WaitingTimeout = 0
	cfg.OpensAt = opens

	s := open(t, path, t0)
	if _, _, err := s.PutRoom(ctx, "drop", cfg, t0); err != nil {
		t.Fatal(err)
	}
	before, err := s.Draw(ctx, "drop")
	if err != nil {
		t.Fatal(err)
	}
	var entrants []waitroom.Session
	for i := range 6 {
		key := ""
		if i == 2 {
			key = "user-2"
		}
		x, err := s.Join(ctx, "drop", key, t0.Add(time.Duration(i)*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		entrants = append(entrants, x)
	}
	gone, err := s.Leave(ctx, "drop", entrants[4].ID, waitroom.ReasonLeft, t0.Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	s.Close()

	// Before the draw: same commitment, same pre-queue, the leaver in history.
	s = open(t, path, t0.Add(2*time.Minute))
	d, err := s.Draw(ctx, "drop")
	if err != nil || d.Commitment != before.Commitment || d.Drawn || d.Entrants != 5 {
		t.Fatalf("after a restart before the draw: %+v, %v; want commitment %s, not drawn, 5 entrants", d, err, before.Commitment)
	}
	for i, x := range entrants {
		got, err := s.Session(ctx, "drop", x.ID, t0.Add(2*time.Minute))
		if err != nil {
			t.Fatalf("entrant %d after restart: %v", i, err)
		}
		if i == 4 {
			if got.Status != waitroom.StatusLeft || !got.EndedAt.Equal(gone.EndedAt) || got.Ticket != 0 {
				t.Fatalf("the entrant that left, after restart = %+v, want left at %s, ticket 0", got, gone.EndedAt)
			}
			continue
		}
		if got.Status != waitroom.StatusWaiting || got.Entry != x.Entry || got.Key != x.Key || !got.JoinedAt.Equal(x.JoinedAt) || got.Entrants != 5 {
			t.Fatalf("entrant %d after restart = %+v, want waiting with entry %s, key %q, joined %s", i, got, x.Entry, x.Key, x.JoinedAt)
		}
	}
	if _, err := s.Join(ctx, "drop", "user-2", t0.Add(3*time.Minute)); waitroom.ErrorCode(err) != waitroom.CodeAlreadyJoined {
		t.Fatalf("join with an entrant's key after restart: %v, want already_joined", err)
	}
	late, err := s.Join(ctx, "drop", "", t0.Add(3*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if id, _ := waitroom.ParseSessionID(late.ID); id.Entry != 7 {
		t.Fatalf("entry number after restart = %d, want 7: numbers are never reused", id.Entry)
	}
	if _, err := s.Sweep(ctx, "drop", opens); err != nil {
		t.Fatal(err)
	}
	drawn, err := s.Draw(ctx, "drop")
	if err != nil || waitroom.VerifyDraw(drawn) != nil || drawn.Entrants != 6 || drawn.Commitment != before.Commitment {
		t.Fatalf("draw: %+v (%v), verify %v; want 6 entries under the first commitment", drawn, err, waitroom.VerifyDraw(drawn))
	}
	counted, err := s.Room(ctx, "drop")
	if err != nil || counted.Admissions != 2 {
		t.Fatalf("room after the draw: %+v, %v; want 2 admissions (capacity 2)", counted, err)
	}
	s.Close()

	// After the draw: the same draw, every entrant at its drawn ticket.
	s = open(t, path, opens.Add(time.Minute))
	defer s.Close()
	if r, err := s.Room(ctx, "drop"); err != nil || r.Admissions != counted.Admissions || r.Inversions != 0 {
		t.Fatalf("fairness after a restart: %+v, %v; want %d admissions, 0 inversions", r, err, counted.Admissions)
	}
	again, err := s.Draw(ctx, "drop")
	if err != nil || again.Digest != drawn.Digest || again.Seed != drawn.Seed || len(again.Entries) != 6 || !again.DrawnAt.Equal(opens) {
		t.Fatalf("draw after restart = %+v, %v; want the same draw (digest %s)", again, err, drawn.Digest)
	}
	ticket := map[string]int64{}
	for _, e := range drawn.Entries {
		ticket[e.Entry] = e.Ticket
	}
	for i, x := range append(entrants, late) {
		if i == 4 {
			continue
		}
		got, err := s.Session(ctx, "drop", x.ID, opens.Add(time.Minute))
		if err != nil || got.Ticket != ticket[x.Entry] || got.Entry != x.Entry || got.ID != x.ID {
			t.Fatalf("entrant %d after the draw and a restart = %+v, %v; want ticket %d, its entry and id", i, got, err, ticket[x.Entry])
		}
	}
	if _, _, err := s.PutRoom(ctx, "drop", func() waitroom.RoomConfig { c := cfg; c.OpensAt = opens.Add(time.Hour); return c }(), opens.Add(time.Minute)); waitroom.ErrorCode(err) != waitroom.CodeDrawDone {
		t.Fatalf("moving opens_at after the draw and a restart: %v, want draw_done", err)
	}
}
