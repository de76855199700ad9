package push

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/memstore"
)

// countingStore counts the hub's batch reads.
type countingStore struct {
	*memstore.Store
	batches atomic.Int32
	ids     atomic.Int32
}

func (c *countingStore) Sessions(ctx context.Context, room string, ids []string) ([]waitroom.Session, error) {
	c.batches.Add(1)
	c.ids.Add(int32(len(ids)))
	return c.Store.Sessions(ctx, room, ids)
}

var t0 = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

func setup(t *testing.T, n int) (*countingStore, *Hub, []waitroom.Session) {
	t.Helper()
	s, all := waitingRoom(t, n)
	h := New(s, Options{Interval: 50 * time.Millisecond, Refresh: time.Hour})
	t.Cleanup(h.Close)
	return s, h, all
}

// waitingRoom is room "r" of capacity 0 with n sessions waiting in it.
func waitingRoom(t *testing.T, n int) (*countingStore, []waitroom.Session) {
	t.Helper()
	ctx := context.Background()
	s := &countingStore{Store: memstore.New()}
	cfg := waitroom.DefaultConfig()
	cfg.Capacity = 0
	if _, _, err := s.PutRoom(ctx, "r", cfg, t0); err != nil {
		t.Fatal(err)
	}
	var all []waitroom.Session
	for range n {
		x, err := s.Join(ctx, "r", "", t0)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, x)
	}
	return s, all
}

// waitFor waits for cond, failing after 20s: a bound for a machine under
// load (CI's two shared cores with -race), never a verdict on speed, which
// the tests check by other means (no batch read happened, versions).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 20s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestBurstIsOneBatch: a burst of changes reaches every watcher through a
// few batch reads of the whole room, not one read per watcher or change.
func TestBurstIsOneBatch(t *testing.T) {
	s, h, all := setup(t, 200)
	var watches []*Watch
	for _, x := range all[100:] {
		watches = append(watches, h.Watch(x))
	}
	waitFor(t, "initial check", func() bool { return s.batches.Load() >= 1 })
	time.Sleep(60 * time.Millisecond)
	before := s.batches.Load()
	ctx := context.Background()
	for _, x := range all[:100] { // 100 leaves in a burst
		if _, err := s.Leave(ctx, "r", x.ID, waitroom.ReasonLeft, t0); err != nil {
			t.Fatal(err)
		}
	}
	for i, w := range watches {
		waitFor(t, "watcher sees its new position", func() bool {
			got, _ := w.Latest()
			return got.Position == int64(i+1)
		})
	}
	if b := s.batches.Load() - before; b < 1 || b > 4 {
		t.Errorf("100 changes took %d batch reads, want 1 to 4 (coalesced)", b)
	}
}

// TestOnlyWhenChanged: a watcher is signalled only when its own values
// change, and a watcher that never reads just holds the latest value.
func TestOnlyWhenChanged(t *testing.T) {
	s, h, all := setup(t, 3)
	fresh := func(x waitroom.Session) waitroom.Session {
		got, err := s.Session(context.Background(), "r", x.ID, t0)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	front := h.Watch(fresh(all[0]))
	slow := h.Watch(fresh(all[2])) // never drained until the end
	waitFor(t, "initial check", func() bool { return s.batches.Load() >= 1 })
	// Drain a possible signal from the initial check (values unchanged: none).
	select {
	case <-front.C():
		t.Error("front was signalled with nothing changed")
	case <-time.After(100 * time.Millisecond):
	}
	ctx := context.Background()
	// Ticket 2 leaves: the front's position (1) is unchanged but the room's
	// waiting total is, so it is told; the slow one moves 3 → 2.
	if _, err := s.Leave(ctx, "r", all[1].ID, waitroom.ReasonLeft, t0); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "slow watcher moves", func() bool { got, _ := slow.Latest(); return got.Position == 2 })
	// Ticket 1 leaves too: the slow watcher, still unread, holds only the latest.
	if _, err := s.Leave(ctx, "r", all[0].ID, waitroom.ReasonLeft, t0); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "slow watcher at the front", func() bool { got, _ := slow.Latest(); return got.Position == 1 })
	got, version := slow.Latest()
	if got.Position != 1 || version != 3 {
		t.Errorf("slow watcher: position %d version %d, want 1 and 3 (two changes)", got.Position, version)
	}
	select {
	case <-slow.C():
	default:
		t.Error("slow watcher has no pending signal")
	}
	select {
	case <-slow.C():
		t.Error("slow watcher was signalled twice; want one pending signal whatever the number of changes")
	default:
	}
}

// TestCloseEndsWatches: closing the hub closes every watch channel.
func TestCloseEndsWatches(t *testing.T) {
	_, h, all := setup(t, 1)
	w := h.Watch(all[0])
	h.Close()
	select {
	case _, open := <-w.C():
		if open {
			t.Error("got a signal, want the channel closed")
		}
	case <-time.After(time.Second):
		t.Error("watch not closed by Close")
	}
	late := h.Watch(all[0])
	if _, open := <-late.C(); open {
		t.Error("a watch after Close is open")
	}
}
