package push

import (
	"context"
	"testing"
	"time"

	"github.com/waitroom/waitroom"
)

// TestOperatorMovesReachEveryWatcher: a queue-all tells the active sessions
// they wait again, at the front, and a move to the front tells everyone
// behind it, even far back where the cadence waits for a tenth of the line
// to move (with Refresh an hour, only the move's epoch can do it).
func TestOperatorMovesReachEveryWatcher(t *testing.T) {
	ctx := context.Background()
	s, h, all := setup(t, 300)
	cfg := waitroom.DefaultConfig()
	cfg.Capacity = 2
	if _, _, err := s.PutRoom(ctx, "r", cfg, t0); err != nil {
		t.Fatal(err)
	}
	read := func(x waitroom.Session) waitroom.Session {
		got, err := s.Session(ctx, "r", x.ID, t0)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	first := h.Watch(read(all[0]))  // active
	back := h.Watch(read(all[299])) // waiting at 298, far behind the front
	waitFor(t, "initial read", func() bool { got, _ := back.Latest(); return got.Position == 298 })

	if _, _, err := s.QueueAll(ctx, "r", t0.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the active session told it waits at the front", func() bool {
		got, _ := first.Latest()
		return got.Status == waitroom.StatusWaiting && got.Position == 1
	})
	waitFor(t, "the back of the line told it moved back by 2", func() bool { got, _ := back.Latest(); return got.Position == 300 })

	if _, err := s.Front(ctx, "r", all[150].ID, t0.Add(2*time.Second)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the back of the line, behind the moved one, unchanged", func() bool { got, _ := back.Latest(); return got.Position == 300 })
	if _, err := s.Front(ctx, "r", all[299].ID, t0.Add(3*time.Second)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the moved session told it is first", func() bool { got, _ := back.Latest(); return got.Position == 1 })
	waitFor(t, "the queued-all session told it is now third", func() bool { got, _ := first.Latest(); return got.Position == 3 })
}
