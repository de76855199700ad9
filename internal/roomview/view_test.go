package roomview

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/memstore"
)

var t0 = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

// testStore counts Room reads, can hold a read after the store answered
// it (so a change can land while it is in flight), and can send events of
// its own to the view (hints, which memstore never sends).
type testStore struct {
	waitroom.Store
	reads atomic.Int64
	hold  atomic.Pointer[hold]
	mu    sync.Mutex
	subs  []func(waitroom.Event)
}

// hold parks Room reads: each says so on entered and waits for release.
type hold struct {
	entered chan struct{}
	release chan struct{}
}

func newHold() *hold { return &hold{entered: make(chan struct{}, 100), release: make(chan struct{})} }

func (s *testStore) Room(ctx context.Context, name string) (waitroom.Room, error) {
	s.reads.Add(1)
	r, err := s.Store.Room(ctx, name)
	if h := s.hold.Load(); h != nil {
		h.entered <- struct{}{}
		select {
		case <-h.release:
		case <-ctx.Done():
			return waitroom.Room{}, waitroom.Unavailable(ctx.Err(), "test read")
		}
	}
	return r, err
}

func (s *testStore) Subscribe(fn func(waitroom.Event)) func() {
	s.mu.Lock()
	s.subs = append(s.subs, fn)
	s.mu.Unlock()
	return s.Store.Subscribe(fn)
}

// emit sends ev to the store's subscribers, as a shared store would.
func (s *testStore) emit(ev waitroom.Event) {
	s.mu.Lock()
	subs := slices.Clone(s.subs)
	s.mu.Unlock()
	for _, fn := range subs {
		fn(ev)
	}
}

type fixture struct {
	ctx   context.Context
	mem   *memstore.Store
	store *testStore
	clock *waitroom.ManualClock
	view  *View
}

func setup(t *testing.T, cfg Config, rooms ...string) *fixture {
	t.Helper()
	mem := memstore.New()
	t.Cleanup(func() { _ = mem.Close() })
	f := &fixture{ctx: context.Background(), mem: mem, store: &testStore{Store: mem}, clock: waitroom.NewManualClock(t0)}
	for _, r := range rooms {
		if _, _, err := mem.PutRoom(f.ctx, r, waitroom.DefaultConfig(), t0); err != nil {
			t.Fatal(err)
		}
	}
	cfg.Store = f.store
	if cfg.Clock == nil {
		cfg.Clock = f.clock
	}
	f.view = New(cfg)
	t.Cleanup(f.view.Close)
	return f
}

func (f *fixture) room(t *testing.T, name string) *Snapshot {
	t.Helper()
	s, err := f.view.Room(f.ctx, name)
	if err != nil {
		t.Fatalf("Room(%q): %v", name, err)
	}
	return s
}

func (f *fixture) reads(t *testing.T, want int64, when string) {
	t.Helper()
	if got := f.store.reads.Load(); got != want {
		t.Fatalf("%s: %d store reads, want %d", when, got, want)
	}
}

// TestStaleness: a snapshot is read from the store once and used for TTL,
// then read again; the store is not read for a room whose snapshot is
// fresh, and a clock that went back counts as stale.
func TestStaleness(t *testing.T) {
	f := setup(t, Config{TTL: time.Second}, "r")
	a := f.room(t, "r")
	if a.Config.Capacity != waitroom.DefaultConfig().Capacity || !a.ReadAt.Equal(t0) || a.Name != "r" {
		t.Fatalf("first snapshot %+v, want the default configuration read at t0", a)
	}
	f.reads(t, 1, "first read")
	f.clock.Advance(999 * time.Millisecond)
	if b := f.room(t, "r"); b != a {
		t.Fatalf("read within TTL made a new snapshot")
	}
	f.reads(t, 1, "read within TTL")
	f.clock.Advance(time.Millisecond)
	if b := f.room(t, "r"); b == a || !b.ReadAt.Equal(t0.Add(time.Second)) {
		t.Fatalf("read at TTL: ReadAt %v, want a new snapshot read at t0+1s", b.ReadAt)
	}
	f.reads(t, 2, "read at TTL")
	f.clock.Set(t0)
	f.room(t, "r")
	f.reads(t, 3, "read after the clock went back")
}

// TestEvents: a config event replaces the configuration, a sessions event
// the counts, neither reading the store; a deleted event drops the room.
func TestEvents(t *testing.T) {
	f := setup(t, Config{}, "r")
	a := f.room(t, "r")
	if a.Live() != 0 || a.LastTicket != 0 {
		t.Fatalf("counts of a new room: %+v, want zeros", a.Counts)
	}
	cfg := waitroom.DefaultConfig()
	cfg.Capacity = 1
	cfg.TargetURL = "/app/"
	if _, _, err := f.mem.PutRoom(f.ctx, "r", cfg, t0); err != nil {
		t.Fatal(err)
	}
	b := f.room(t, "r")
	if b.Config.Capacity != 1 || b.Config.TargetURL != "/app/" || b.Config == a.Config {
		t.Fatalf("after a config event: %+v, want capacity 1 and target /app/ in a new Config", *b.Config)
	}
	if a.Config.Capacity == 1 {
		t.Fatalf("the old snapshot changed: snapshots must be immutable")
	}
	for range 3 {
		if _, err := f.mem.Join(f.ctx, "r", "", t0); err != nil {
			t.Fatal(err)
		}
	}
	c := f.room(t, "r")
	if c.Active != 1 || c.Waiting != 2 || c.LastTicket != 3 || c.Live() != 3 || c.Admissions != 1 {
		t.Fatalf("counts after three joins at capacity 1: %+v, want 1 active, 2 waiting, last ticket 3, 1 admission", c.Counts)
	}
	if c.Config != b.Config {
		t.Fatalf("a sessions event replaced the Config pointer; derived data keyed by it would be thrown away")
	}
	f.reads(t, 1, "after events")
	// A configuration set to what it was keeps its pointer, too.
	if _, _, err := f.mem.PutRoom(f.ctx, "r", cfg, t0); err != nil {
		t.Fatal(err)
	}
	if d := f.room(t, "r"); d.Config != c.Config {
		t.Fatalf("an unchanged configuration got a new pointer")
	}
	if _, _, err := f.mem.PutRoom(f.ctx, "gone", waitroom.DefaultConfig(), t0); err != nil {
		t.Fatal(err)
	}
	f.room(t, "gone")
	if err := f.mem.DeleteRoom(f.ctx, "gone", true, t0); err != nil {
		t.Fatal(err)
	}
	if s := f.view.Known("gone"); s != nil {
		t.Fatalf("Known after a deleted event = %+v, want nil", s)
	}
	if _, err := f.view.Room(f.ctx, "gone"); waitroom.ErrorCode(err) != waitroom.CodeRoomNotFound {
		t.Fatalf("Room after deletion: %v, want room_not_found", err)
	}
}

// TestResync: a hint (Remote, no Changes) for a room marks it stale, taking
// its totals; one without a room marks every room stale; config and
// deleted events are never hints.
func TestResync(t *testing.T) {
	f := setup(t, Config{}, "a", "b")
	f.room(t, "a")
	f.room(t, "b")
	f.reads(t, 2, "first reads")
	f.store.emit(waitroom.Event{Room: "a", Kind: waitroom.EventSessions, Waiting: 7, Active: 2, LastTicket: 9, Remote: true})
	if k := f.view.Known("a"); k.Waiting != 7 || k.Active != 2 || k.LastTicket != 9 {
		t.Fatalf("Known after a hint: %+v, want the hint's totals", k.Counts)
	}
	f.room(t, "b")
	f.reads(t, 2, "room b after a hint for a")
	if s := f.room(t, "a"); s.Waiting != 0 {
		t.Fatalf("room a after the hint and a read: waiting %d, want the store's 0", s.Waiting)
	}
	f.reads(t, 3, "room a after a hint for it")
	f.room(t, "a")
	f.reads(t, 3, "room a read again")
	f.store.emit(waitroom.Event{Kind: waitroom.EventSessions, Remote: true})
	f.room(t, "a")
	f.room(t, "b")
	f.reads(t, 5, "both rooms after a hint for every room")
	for _, ev := range []waitroom.Event{
		{Room: "a", Kind: waitroom.EventSessions, Remote: true, Changes: []waitroom.Change{{}}},
		{Room: "a", Kind: waitroom.EventConfig, Remote: true, Config: &waitroom.RoomConfig{Mode: waitroom.ModeManual}},
		{Room: "a", Kind: waitroom.EventSessions}, // this process's own, no change told
	} {
		if IsResync(ev) {
			t.Fatalf("IsResync(%+v) = true, want false", ev)
		}
		f.store.emit(ev)
	}
	if s := f.room(t, "a"); s.Config.Mode != waitroom.ModeManual {
		t.Fatalf("a remote config event: mode %q, want manual", s.Config.Mode)
	}
	f.reads(t, 5, "after events that are no hints")
	// A config event that carries no configuration says it changed: read.
	f.store.emit(waitroom.Event{Room: "a", Kind: waitroom.EventConfig})
	f.room(t, "a")
	f.reads(t, 6, "after a config event without its configuration")
}

// TestSharedRead: readers of a stale room at once share one store read.
func TestSharedRead(t *testing.T) {
	f := setup(t, Config{}, "r")
	h := newHold()
	f.store.hold.Store(h)
	const n = 50
	var wg sync.WaitGroup
	got := make([]*Snapshot, n)
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got[i], errs[i] = f.view.Room(f.ctx, "r")
		}()
	}
	<-h.entered
	// Let the other readers arrive; those that do not make it in time read
	// the snapshot afterwards, fresh either way: the count below holds.
	time.Sleep(20 * time.Millisecond)
	f.store.hold.Store(nil)
	close(h.release)
	wg.Wait()
	for i := range n {
		if errs[i] != nil || got[i] != got[0] {
			t.Fatalf("reader %d: %p, %v; want the shared snapshot %p", i, got[i], errs[i], got[0])
		}
	}
	f.reads(t, 1, "fifty readers at once")
}

// TestAbandonedRead: when the reader making the shared read gives up (its
// request ended), the others do not fail with it: one of them reads.
func TestAbandonedRead(t *testing.T) {
	f := setup(t, Config{}, "r")
	h := newHold()
	f.store.hold.Store(h)
	ctx, cancel := context.WithCancel(f.ctx)
	first := make(chan error, 1)
	go func() {
		_, err := f.view.Room(ctx, "r")
		first <- err
	}()
	<-h.entered
	second := make(chan error, 1)
	go func() {
		_, err := f.view.Room(f.ctx, "r")
		second <- err
	}()
	time.Sleep(20 * time.Millisecond) // the second reader waits on the first's read (or reads after it)
	cancel()
	if err := <-first; waitroom.ErrorCode(err) != waitroom.CodeUnavailable {
		t.Fatalf("the cancelled reader: %v, want unavailable", err)
	}
	<-h.entered // the second reader's own read
	f.store.hold.Store(nil)
	close(h.release)
	if err := <-second; err != nil {
		t.Fatalf("the other reader: %v, want the room", err)
	}
}

// TestEventDuringRead: a change whose event lands while a read is in
// flight wins over the read's answer, which may predate it; a hint during
// the read leaves the new snapshot stale.
func TestEventDuringRead(t *testing.T) {
	f := setup(t, Config{}, "r")
	h := newHold()
	f.store.hold.Store(h)
	done := make(chan *Snapshot, 1)
	go func() {
		s, _ := f.view.Room(f.ctx, "r")
		done <- s
	}()
	<-h.entered // the store answered the default configuration; the answer is held
	cfg := waitroom.DefaultConfig()
	cfg.Capacity = 1
	if _, _, err := f.mem.PutRoom(f.ctx, "r", cfg, t0); err != nil {
		t.Fatal(err)
	}
	if _, err := f.mem.Join(f.ctx, "r", "", t0); err != nil {
		t.Fatal(err)
	}
	f.store.emit(waitroom.Event{Room: "r", Kind: waitroom.EventSessions, Remote: true, Waiting: 0, Active: 1, LastTicket: 1})
	f.store.hold.Store(nil)
	close(h.release)
	s := <-done
	if s.Config.Capacity != 1 || s.Active != 1 || s.LastTicket != 1 {
		t.Fatalf("after a read that predates a change: capacity %d, counts %+v; want the change's", s.Config.Capacity, s.Counts)
	}
	f.reads(t, 1, "the held read")
	f.room(t, "r")
	f.reads(t, 2, "after a hint that came during the read")
}

// TestKnown: the last known snapshot is there while the store is down and
// whatever its age; Known never reads the store.
func TestKnown(t *testing.T) {
	f := setup(t, Config{}, "r")
	if s := f.view.Known("r"); s != nil {
		t.Fatalf("Known of a room never read = %+v, want nil", s)
	}
	a := f.room(t, "r")
	f.clock.Advance(time.Hour)
	if k := f.view.Known("r"); k != a {
		t.Fatalf("Known an hour later = %p, want the snapshot %p", k, a)
	}
	f.reads(t, 1, "Known")
	down := waitroom.Unavailable(errors.New("down"), "test")
	f.store.Store = downStore{Store: f.mem, err: down}
	if _, err := f.view.Room(f.ctx, "r"); waitroom.ErrorCode(err) != waitroom.CodeUnavailable {
		t.Fatalf("Room of a stale room while the store is down: %v, want unavailable", err)
	}
	if k := f.view.Known("r"); k != a {
		t.Fatalf("Known while the store is down = %p, want the last known %p", k, a)
	}
}

// downStore fails every room read.
type downStore struct {
	waitroom.Store
	err error
}

func (d downStore) Room(context.Context, string) (waitroom.Room, error) {
	return waitroom.Room{}, d.err
}

// TestMemory: unknown rooms take no memory; rooms nobody read for
// IdleAfter are dropped when rooms are added; a room read meanwhile stays.
func TestMemory(t *testing.T) {
	f := setup(t, Config{IdleAfter: time.Minute}, "a", "b", "c")
	for i := range 100 {
		if _, err := f.view.Room(f.ctx, fmt.Sprint("nope", i)); waitroom.ErrorCode(err) != waitroom.CodeRoomNotFound {
			t.Fatalf("unknown room: %v, want room_not_found", err)
		}
	}
	if n := f.view.n.Load(); n != 0 {
		t.Fatalf("after 100 unknown rooms the view holds %d, want 0", n)
	}
	f.room(t, "a")
	f.room(t, "b")
	f.clock.Advance(40 * time.Second)
	f.view.Known("b") // used: stays
	f.clock.Advance(40 * time.Second)
	f.room(t, "c") // a new room, a minute after the last sweep: sweeps
	if f.view.Known("a") != nil {
		t.Fatalf("room a, unread for 80s with IdleAfter 1m, is still held")
	}
	if f.view.Known("b") == nil || f.view.Known("c") == nil {
		t.Fatalf("rooms b (read 40s ago) and c (just read) were dropped")
	}
	if n := f.view.n.Load(); n != 2 {
		t.Fatalf("the view holds %d rooms, want 2", n)
	}
}

// TestManyRooms: with many rooms each read once, what the view holds stays
// near what was read within IdleAfter.
func TestManyRooms(t *testing.T) {
	f := setup(t, Config{IdleAfter: time.Minute})
	const n = 3 * minSweep
	for i := range n {
		name := fmt.Sprint("r", i)
		if _, _, err := f.mem.PutRoom(f.ctx, name, waitroom.DefaultConfig(), t0); err != nil {
			t.Fatal(err)
		}
		f.room(t, name)
		f.clock.Advance(time.Second)
	}
	// A sweep is due a minute after the last (or at a doubling): it keeps
	// the rooms of the last minute, and a minute's more come before the next.
	if got := f.view.n.Load(); got > 2*60+2 {
		t.Fatalf("the view holds %d of %d rooms read one a second with IdleAfter 1m, want at most two minutes' worth", got, n)
	}
}

// TestConcurrent is for the race detector: readers, joins, configuration
// changes, deletions and hints at once.
func TestConcurrent(t *testing.T) {
	f := setup(t, Config{TTL: time.Millisecond, Clock: waitroom.SystemClock{}}, "a", "b")
	ctx, cancel := context.WithTimeout(f.ctx, 300*time.Millisecond)
	defer cancel()
	var wg sync.WaitGroup
	run := func(fn func(i int)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ctx.Err() == nil; i++ {
				fn(i)
			}
		}()
	}
	for range 4 {
		run(func(i int) {
			for _, r := range []string{"a", "b", "c"} {
				if s, err := f.view.Room(f.ctx, r); err == nil && (s.Config == nil || s.Name != r) {
					t.Errorf("room %q: snapshot %+v, want one of that room with a configuration", r, s)
				}
				_ = f.view.Known(r)
			}
		})
	}
	run(func(i int) { _, _ = f.mem.Join(f.ctx, "a", "", time.Now()) })
	run(func(i int) {
		cfg := waitroom.DefaultConfig()
		cfg.Capacity = i % 7
		_, _, _ = f.mem.PutRoom(f.ctx, "b", cfg, time.Now())
	})
	run(func(i int) {
		if i%2 == 0 {
			_, _, _ = f.mem.PutRoom(f.ctx, "c", waitroom.DefaultConfig(), time.Now())
		} else {
			_ = f.mem.DeleteRoom(f.ctx, "c", true, time.Now())
		}
	})
	run(func(i int) {
		f.store.emit(waitroom.Event{Room: "a", Kind: waitroom.EventSessions, Remote: true})
		time.Sleep(time.Millisecond)
	})
	wg.Wait()
	// Quiet now: a read gives the store's state.
	f.view.Close()
	time.Sleep(2 * time.Millisecond) // past the TTL
	want, err := f.mem.Room(f.ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	if s := f.room(t, "a"); s.Live() != want.Waiting+want.Active {
		t.Fatalf("room a: %d live, want the store's %d", s.Live(), want.Waiting+want.Active)
	}
}

// BenchmarkRoom is the hot path: a fresh snapshot read by many goroutines.
func BenchmarkRoom(b *testing.B) {
	mem := memstore.New()
	defer mem.Close()
	ctx := context.Background()
	if _, _, err := mem.PutRoom(ctx, "r", waitroom.DefaultConfig(), time.Now()); err != nil {
		b.Fatal(err)
	}
	v := New(Config{Store: mem, TTL: time.Hour})
	defer v.Close()
	if _, err := v.Room(ctx, "r"); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := v.Room(ctx, "r"); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkKnown is the last-known read (the gate's per-request pacing).
func BenchmarkKnown(b *testing.B) {
	mem := memstore.New()
	defer mem.Close()
	ctx := context.Background()
	if _, _, err := mem.PutRoom(ctx, "r", waitroom.DefaultConfig(), time.Now()); err != nil {
		b.Fatal(err)
	}
	v := New(Config{Store: mem})
	defer v.Close()
	if _, err := v.Room(ctx, "r"); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if v.Known("r") == nil {
				b.Fatal("not known")
			}
		}
	})
}
