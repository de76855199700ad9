package push

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/memstore"
)

// line starts a hub with opt on a room of n waiting sessions (capacity 0)
// and watches every one of them.
func line(t *testing.T, n int, opt Options) (*countingStore, *Hub, []waitroom.Session, []*Watch) {
	t.Helper()
	ctx := context.Background()
	s, all := waitingRoom(t, n)
	h := New(s, opt)
	t.Cleanup(h.Close)
	var ws []*Watch
	for _, x := range all {
		cur, err := s.Session(ctx, "r", x.ID, t0)
		if err != nil {
			t.Fatal(err)
		}
		ws = append(ws, h.Watch(cur))
	}
	waitFor(t, "the first read of every watcher", func() bool { return s.ids.Load() >= int32(n) })
	return s, h, all, ws
}

// TestAdmissionToldAtOnce: the session that becomes active is told straight
// from the store's event, long before the room's next coalesced read.
func TestAdmissionToldAtOnce(t *testing.T) {
	s, _, all, ws := line(t, 3, Options{Interval: time.Hour, Refresh: time.Hour})
	batches := s.batches.Load()
	cfg := waitroom.DefaultConfig()
	cfg.Capacity = 1
	if _, _, err := s.PutRoom(context.Background(), "r", cfg, t0); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ws[0].C():
	case <-time.After(5 * time.Second):
		t.Fatal("the admitted session was not told within 5s; the next read is an hour away")
	}
	got, _ := ws[0].Latest()
	if got.Status != waitroom.StatusActive || got.ID != all[0].ID || got.Position != 0 || got.Waiting != 2 || got.Active != 1 {
		t.Errorf("told %+v, want active with 2 waiting and 1 active", got)
	}
	if b := s.batches.Load(); b != batches {
		t.Errorf("%d batch reads happened; the admission must not wait for one", b-batches)
	}
	if got, v := ws[1].Latest(); v != 1 || got.Position != 2 {
		t.Errorf("the second in line holds %+v (version %d), want its first state until the next read", got, v)
	}
}

// TestBackOfLineCadence: when the head of a long line leaves, the front is
// read and told at once, a watcher further back only once a tenth of its
// position may have gone, and a change of the room's totals alone wakes
// nobody behind the front.
func TestBackOfLineCadence(t *testing.T) {
	const n, front = 400, 10
	s, _, all, ws := line(t, n, Options{Interval: 20 * time.Millisecond, Refresh: time.Hour, Front: front, Step: 0.1})
	ctx := context.Background()
	versions := make([]uint64, n)
	for i, w := range ws {
		_, versions[i] = w.Latest()
	}
	ids := s.ids.Load()
	// Five leave from the head: positions 6..400 become 1..395.
	for _, x := range all[:5] {
		if _, err := s.Leave(ctx, "r", x.ID, waitroom.ReasonLeft, t0); err != nil {
			t.Fatal(err)
		}
	}
	for i := 5; i < 5+front; i++ { // the new front: every change
		waitFor(t, "a front watcher is told", func() bool { got, _ := ws[i].Latest(); return got.Position == int64(i-4) })
	}
	// After a second the step rule applies: five departures are a tenth of
	// positions up to 50 (as last read, 6..50, at indexes 5..49).
	deadline := time.Now().Add(10 * time.Second)
	for i := 5; i < 50; i++ {
		for got, _ := ws[i].Latest(); got.Position != int64(i-4); got, _ = ws[i].Latest() {
			if time.Now().After(deadline) {
				t.Fatalf("watcher at %d: position %d, want %d (five ahead left, a tenth or more)", i+1, got.Position, i-4)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	time.Sleep(300 * time.Millisecond) // a few more flushes, to be sure nobody else is told
	for i := 50; i < n; i++ {
		if got, v := ws[i].Latest(); v != versions[i] {
			t.Errorf("watcher at %d was told position %d; five departures are under a tenth of its position", i+1, got.Position)
		}
	}
	read := s.ids.Load() - ids
	if read > int32(60+front*60) {
		t.Errorf("%d sessions read for five departures in a line of %d; want about the front and the first 50", read, n)
	}
}

// TestRefreshMakesExact: once Refresh has passed, every watcher holds its
// exact position, however little it moved.
func TestRefreshMakesExact(t *testing.T) {
	const n = 300
	s, _, all, ws := line(t, n, Options{Interval: 20 * time.Millisecond, Refresh: 600 * time.Millisecond, Front: 5})
	ctx := context.Background()
	if _, err := s.Leave(ctx, "r", all[0].ID, waitroom.ReasonLeft, t0); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for i := 1; i < n; i++ {
		for {
			got, _ := ws[i].Latest()
			if got.Position == int64(i) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("watcher %d holds position %d, want %d after the refresh period", i, got.Position, i)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}

// TestConfigTellsEveryone: a configuration change that moves what every
// page shows (here a schedule) reaches every watcher at the next read; one
// that does not (a new target URL, a pause) reads nobody behind the front.
func TestConfigTellsEveryone(t *testing.T) {
	const n = 200
	s, _, _, ws := line(t, n, Options{Interval: 20 * time.Millisecond, Refresh: time.Hour, Front: 5})
	ctx := context.Background()
	cfg := waitroom.DefaultConfig()
	cfg.Capacity = 0
	// The first configuration event of a room reads everyone (the hub
	// cannot tell what changed); it is not what is measured here.
	if _, _, err := s.PutRoom(ctx, "r", cfg, t0); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "every watcher read after the first configuration event", func() bool { return s.ids.Load() >= 2*n })
	time.Sleep(100 * time.Millisecond)
	cfg.TargetURL = "/elsewhere"
	ids := s.ids.Load()
	if _, _, err := s.PutRoom(ctx, "r", cfg, t0); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	if read := s.ids.Load() - ids; read > 5*15 {
		t.Errorf("a target URL change read %d sessions, want only the front's", read)
	}
	cfg.Paused = true // only ETAs move: each page gets it at its turn
	if _, _, err := s.PutRoom(ctx, "r", cfg, t0); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	if read := s.ids.Load() - ids; read > 5*30 {
		t.Errorf("a pause read %d sessions at once, want only the front's", read)
	}
	cfg.Capacity = 0
	cfg.OpensAt = t0.Add(time.Hour) // a schedule: every page shows it
	cfg.Paused = false
	if _, _, err := s.PutRoom(ctx, "r", cfg, t0); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "every watcher read after a new schedule", func() bool { return s.ids.Load()-ids >= n })
	_ = ws
}

// slowStore holds every batch read until release is closed, returning what
// the store held when the read began.
type slowStore struct {
	*memstore.Store
	started chan struct{}
	release chan struct{}
}

func (s *slowStore) Sessions(ctx context.Context, room string, ids []string) ([]waitroom.Session, error) {
	got, err := s.Store.Sessions(ctx, room, ids)
	select {
	case s.started <- struct{}{}:
	default:
	}
	<-s.release
	return got, err
}

// TestReadNeverUndoesATell: a batch read that began before an admission
// was told ends after it; the watcher keeps the admission.
func TestReadNeverUndoesATell(t *testing.T) {
	ctx := context.Background()
	s := &slowStore{Store: memstore.New(), started: make(chan struct{}, 1), release: make(chan struct{})}
	cfg := waitroom.DefaultConfig()
	cfg.Capacity = 0
	if _, _, err := s.PutRoom(ctx, "r", cfg, t0); err != nil {
		t.Fatal(err)
	}
	x, err := s.Join(ctx, "r", "", t0)
	if err != nil {
		t.Fatal(err)
	}
	h := New(s, Options{Interval: 10 * time.Millisecond, Refresh: time.Hour})
	t.Cleanup(h.Close)
	w := h.Watch(x)
	<-s.started // the first read holds position 1, waiting
	cfg.Capacity = 1
	if _, _, err := s.PutRoom(ctx, "r", cfg, t0); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the admission is told", func() bool { got, _ := w.Latest(); return got.Status == waitroom.StatusActive })
	close(s.release)
	// The stale read lands, then fresh ones: the watcher must never hold
	// the old state again, not even between two reads.
	for end := time.Now().Add(300 * time.Millisecond); time.Now().Before(end); {
		if got, _ := w.Latest(); got.Status != waitroom.StatusActive {
			t.Fatalf("after the stale read the watcher holds %s at position %d, want active", got.Status, got.Position)
		}
		time.Sleep(200 * time.Microsecond)
	}
}

// TestReadsInBatches: a crowd is read in batches of Options.Batch.
func TestReadsInBatches(t *testing.T) {
	s, _, _, _ := line(t, 250, Options{Interval: 20 * time.Millisecond, Refresh: time.Hour, Batch: 100})
	if b, n := s.batches.Load(), s.ids.Load(); n < 250 || b < 3 || n > 100*b {
		t.Errorf("%d sessions read in %d calls, want 250 or more in calls of at most 100", n, b)
	}
}

// TestWatchFuncNotifies: a watch made with WatchFunc calls its notify on a
// change instead of signalling C, and once more when it ends.
func TestWatchFuncNotifies(t *testing.T) {
	s, all := waitingRoom(t, 2)
	h := New(s, Options{Interval: 10 * time.Millisecond, Refresh: time.Hour})
	t.Cleanup(h.Close)
	cur, err := s.Session(context.Background(), "r", all[1].ID, t0)
	if err != nil {
		t.Fatal(err)
	}
	var calls atomic.Int32
	w := h.WatchFunc(cur, func() { calls.Add(1) })
	if _, err := s.Leave(context.Background(), "r", all[0].ID, waitroom.ReasonLeft, t0); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the watcher is notified of its new position", func() bool {
		got, _ := w.Latest()
		return got.Position == 1 && calls.Load() >= 1
	})
	select {
	case <-w.C():
		t.Error("C was signalled; a WatchFunc watcher is only notified")
	default:
	}
	before := calls.Load()
	w.Stop()
	if !w.Ended() || calls.Load() != before+1 {
		t.Errorf("after Stop: ended %v, notify calls %d, want true and %d", w.Ended(), calls.Load(), before+1)
	}
}
