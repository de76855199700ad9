package sweeper_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/internal/sweeper"
	"github.com/waitroom/waitroom/memstore"
)

// newClock returns a clock the test moves by hand.
func newClock() *waitroom.ManualClock {
	return waitroom.NewManualClock(time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC))
}

// countingStore wraps a store to count the sweeper's calls and to make them
// fail on demand.
type countingStore struct {
	waitroom.Store
	rooms      atomic.Int64
	sweeps     sync.Map // room -> *atomic.Int64
	failRooms  atomic.Bool
	failSweeps atomic.Bool
}

var errBackend = errors.New("backend on fire")

func (s *countingStore) Rooms(ctx context.Context) ([]waitroom.Room, error) {
	s.rooms.Add(1)
	if s.failRooms.Load() {
		return nil, waitroom.Unavailable(errBackend, "list rooms")
	}
	return s.Store.Rooms(ctx)
}

func (s *countingStore) Sweep(ctx context.Context, room string, now time.Time) (waitroom.SweepResult, error) {
	s.sweepCounter(room).Add(1)
	if s.failSweeps.Load() {
		return waitroom.SweepResult{}, waitroom.Unavailable(errBackend, "sweep")
	}
	return s.Store.Sweep(ctx, room, now)
}

func (s *countingStore) sweepCounter(room string) *atomic.Int64 {
	c, _ := s.sweeps.LoadOrStore(room, new(atomic.Int64))
	return c.(*atomic.Int64)
}

// syncBuffer is a log destination safe for the sweeper's goroutine.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// start runs the sweeper until the test ends and reports whether it
// returned an error.
func start(t *testing.T, store waitroom.Store, clock waitroom.Clock, opts sweeper.Options) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- sweeper.Run(ctx, store, clock, opts) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run returned %v, want nil", err)
			}
		case <-time.After(5 * time.Second):
			t.Errorf("Run did not return within 5s of its context ending")
		}
	})
}

// eventually polls cond every few milliseconds for up to 5 seconds. The
// sweeper runs on a real ticker, so the test waits for it, never for a
// deadline: expiry itself is driven by the fake clock.
func eventually(t *testing.T, what string, cond func() (ok bool, state string)) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		ok, state := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 5s: %s did not happen; state: %s", what, state)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func mustPut(t *testing.T, s waitroom.Store, name string, cfg waitroom.RoomConfig, now time.Time) {
	t.Helper()
	if _, _, err := s.PutRoom(context.Background(), name, cfg, now); err != nil {
		t.Fatalf("PutRoom(%q): %v", name, err)
	}
}

func mustJoin(t *testing.T, s waitroom.Store, room string, now time.Time) waitroom.Session {
	t.Helper()
	sess, err := s.Join(context.Background(), room, "", now)
	if err != nil {
		t.Fatalf("Join(%q): %v", room, err)
	}
	return sess
}

// peek reads sessions without counting as presence and without passing a
// time, so only the sweeper can have changed them.
func peek(t *testing.T, s waitroom.Store, room string, ids ...string) []waitroom.Session {
	t.Helper()
	got, err := s.Sessions(context.Background(), room, ids)
	if err != nil {
		t.Fatalf("Sessions(%q): %v", room, err)
	}
	return got
}

func describe(ss []waitroom.Session) string {
	var b strings.Builder
	for _, s := range ss {
		b.WriteString(string(s.Status))
		if s.EndReason != "" {
			b.WriteString("/" + string(s.EndReason))
		}
		b.WriteString(" ")
	}
	return b.String()
}

// idleConfig is a room of capacity 1 whose active session idles out after
// ten seconds and whose waiting sessions never time out.
func idleConfig() waitroom.RoomConfig {
	cfg := waitroom.DefaultConfig()
	cfg.Capacity = 1
	cfg.ActiveTimeout = waitroom.Duration(10 * time.Second)
	cfg.WaitingTimeout = 0
	return cfg
}

func TestExpiredSlotIsHandedOnWithoutARequest(t *testing.T) {
	clock := newClock()
	store := &countingStore{Store: memstore.New()}
	defer store.Close()
	mustPut(t, store, "shop", idleConfig(), clock.Now())
	first := mustJoin(t, store, "shop", clock.Now())
	second := mustJoin(t, store, "shop", clock.Now())
	if first.Status != waitroom.StatusActive || second.Status != waitroom.StatusWaiting {
		t.Fatalf("before the sweep: got %s and %s, want active and waiting", first.Status, second.Status)
	}

	start(t, store, clock, sweeper.Options{Interval: time.Millisecond})

	// Not due yet: sweeps must change nothing.
	sweeps := store.sweepCounter("shop")
	eventually(t, "a first sweep", func() (bool, string) {
		return sweeps.Load() >= 1, "no sweep"
	})
	// The clock stands still and no event comes, so no sweep runs until
	// the clock moves.
	n := sweeps.Load()
	clock.Advance(9 * time.Second)
	eventually(t, "a sweep before the deadline", func() (bool, string) {
		return sweeps.Load() > n, "no sweep"
	})
	got := peek(t, store, "shop", first.ID, second.ID)
	if got[0].Status != waitroom.StatusActive || got[1].Status != waitroom.StatusWaiting {
		t.Fatalf("before the deadline: got %s, want active waiting", describe(got))
	}

	clock.Advance(time.Second) // past the deadline: due
	eventually(t, "the idle session expires and the next one is admitted", func() (bool, string) {
		got := peek(t, store, "shop", first.ID, second.ID)
		ok := got[0].Status == waitroom.StatusExpired && got[0].EndReason == waitroom.ReasonIdle &&
			got[1].Status == waitroom.StatusActive
		return ok, describe(got)
	})
}

func TestRoomsCreatedLaterAreSwept(t *testing.T) {
	clock := newClock()
	store := memstore.New()
	defer store.Close()
	start(t, store, clock, sweeper.Options{Interval: 10 * time.Millisecond})

	// The sweeper is already running with no rooms at all.
	mustPut(t, store, "later", idleConfig(), clock.Now())
	first := mustJoin(t, store, "later", clock.Now())
	second := mustJoin(t, store, "later", clock.Now())
	clock.Advance(10 * time.Second)
	eventually(t, "the new room's idle session expires", func() (bool, string) {
		got := peek(t, store, "later", first.ID, second.ID)
		return got[0].Status == waitroom.StatusExpired && got[1].Status == waitroom.StatusActive, describe(got)
	})
}

// Away brings a deadline forward without changing a status, so no event says
// so; the sweeper must still find it within a second of real time.
func TestAwayDeadlineIsFoundWithoutAnEvent(t *testing.T) {
	clock := newClock()
	mem := memstore.New()
	defer mem.Close()
	cfg := idleConfig()
	cfg.ActiveTimeout = waitroom.Duration(time.Hour)
	cfg.Grace = waitroom.Duration(5 * time.Second)
	store := &countingStore{Store: mem}
	mustPut(t, store, "away", cfg, clock.Now())
	first := mustJoin(t, store, "away", clock.Now())
	second := mustJoin(t, store, "away", clock.Now())

	start(t, store, clock, sweeper.Options{Interval: time.Millisecond})
	// Let a sweep record "nothing due for an hour" first.
	clock.Advance(time.Second)
	passes := store.rooms.Load()
	eventually(t, "a few passes", func() (bool, string) {
		return store.rooms.Load() >= passes+3, "fewer passes"
	})
	if err := store.Away(context.Background(), "away", first.ID, clock.Now()); err != nil {
		t.Fatalf("Away: %v", err)
	}
	clock.Advance(5 * time.Second)
	eventually(t, "the away session expires with reason gone", func() (bool, string) {
		got := peek(t, store, "away", first.ID, second.ID)
		return got[0].EndReason == waitroom.ReasonGone && got[1].Status == waitroom.StatusActive, describe(got)
	})
}

func TestQuietRoomIsNotSweptEveryTick(t *testing.T) {
	clock := newClock() // frozen unless the test moves it
	store := &countingStore{Store: memstore.New()}
	defer store.Close()
	mustPut(t, store, "quiet", waitroom.DefaultConfig(), clock.Now())
	sweeps := store.sweepCounter("quiet")

	start(t, store, clock, sweeper.Options{Interval: time.Millisecond})
	eventually(t, "a first sweep", func() (bool, string) {
		return sweeps.Load() >= 1, "no sweep yet"
	})
	// Count passes, not time: after ten more listings of the rooms the quiet
	// room, with nothing scheduled and no event, must not have been swept again.
	passes := store.rooms.Load()
	eventually(t, "ten more passes", func() (bool, string) {
		return store.rooms.Load() >= passes+10, "fewer passes"
	})
	if n := sweeps.Load(); n != 1 {
		t.Errorf("quiet room swept %d times in 10 passes with nothing due, want 1", n)
	}

	// An event (a join) makes the room worth a sweep again.
	mustJoin(t, store, "quiet", clock.Now())
	eventually(t, "a sweep after the join event", func() (bool, string) {
		return sweeps.Load() >= 2, "still one sweep"
	})

	// And so does the passing of a second, whatever the last sweep said.
	n := sweeps.Load()
	passes = store.rooms.Load()
	eventually(t, "ten more passes", func() (bool, string) {
		return store.rooms.Load() >= passes+10, "fewer passes"
	})
	if m := sweeps.Load(); m != n {
		t.Errorf("quiet room swept %d more times with nothing due, want 0", m-n)
	}
	clock.Advance(time.Second)
	eventually(t, "a sweep a second later", func() (bool, string) {
		return sweeps.Load() > n, "no new sweep"
	})
}

func TestFailuresAreLoggedAndSweepingGoesOn(t *testing.T) {
	clock := newClock()
	store := &countingStore{Store: memstore.New()}
	defer store.Close()
	mustPut(t, store, "shop", idleConfig(), clock.Now())
	first := mustJoin(t, store, "shop", clock.Now())
	second := mustJoin(t, store, "shop", clock.Now())

	var logs syncBuffer
	logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	store.failRooms.Store(true)
	start(t, store, clock, sweeper.Options{Interval: time.Millisecond, Logger: logger})

	passes := store.rooms.Load()
	eventually(t, "ten failing listings", func() (bool, string) {
		return store.rooms.Load() >= passes+10, "fewer listings"
	})
	if n := strings.Count(logs.String(), "cannot list rooms"); n != 1 {
		t.Errorf("a repeated listing failure was logged %d times, want once until it ends; log:\n%s", n, logs.String())
	}
	if !strings.Contains(logs.String(), errBackend.Error()) {
		t.Errorf("log does not name the cause %q; log:\n%s", errBackend, logs.String())
	}

	store.failRooms.Store(false)
	store.failSweeps.Store(true)
	eventually(t, "a failed sweep is logged", func() (bool, string) {
		return strings.Contains(logs.String(), "sweep failed"), logs.String()
	})
	if !strings.Contains(logs.String(), "listing rooms works again") {
		t.Errorf("the end of the listing failure was not logged; log:\n%s", logs.String())
	}

	store.failSweeps.Store(false)
	clock.Advance(10 * time.Second)
	eventually(t, "expiry once the store works again", func() (bool, string) {
		got := peek(t, store, "shop", first.ID, second.ID)
		return got[0].Status == waitroom.StatusExpired && got[1].Status == waitroom.StatusActive, describe(got)
	})
}

func TestDeletedRoomIsForgotten(t *testing.T) {
	clock := newClock()
	store := &countingStore{Store: memstore.New()}
	defer store.Close()
	var logs syncBuffer
	logger := slog.New(slog.NewTextHandler(&logs, nil))
	mustPut(t, store, "gone", waitroom.DefaultConfig(), clock.Now())
	start(t, store, clock, sweeper.Options{Interval: time.Millisecond, Logger: logger})
	eventually(t, "a first sweep", func() (bool, string) {
		return store.sweepCounter("gone").Load() >= 1, "no sweep"
	})
	if err := store.DeleteRoom(context.Background(), "gone", false, clock.Now()); err != nil {
		t.Fatalf("DeleteRoom: %v", err)
	}
	passes := store.rooms.Load()
	eventually(t, "ten more passes", func() (bool, string) {
		return store.rooms.Load() >= passes+10, "fewer passes"
	})
	if strings.Contains(logs.String(), "level=WARN") {
		t.Errorf("deleting a room made the sweeper complain; log:\n%s", logs.String())
	}
}

func TestRunReturnsWhenContextEnds(t *testing.T) {
	store := memstore.New()
	defer store.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- sweeper.Run(ctx, store, waitroom.SystemClock{}, sweeper.Options{}) }()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run returned %v after cancel, want nil", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return within 5s of cancel")
	}
}

func TestNegativeIntervalIsRefused(t *testing.T) {
	store := memstore.New()
	defer store.Close()
	err := sweeper.Run(context.Background(), store, waitroom.SystemClock{}, sweeper.Options{Interval: -time.Second})
	if err == nil {
		t.Fatal("Run with a negative interval returned nil, want an error")
	}
}
