// Package roomview keeps one snapshot of each room a server reads, for
// every part of the server that needs a room's configuration or counts on
// its hot path: the gate (pass lifetimes, activity pacing), the door
// (invite-only, challenge, invite keys), the waiting pages (target, refresh,
// tiers, and the last known configuration for the fail-open policy) and the
// join limits (the live count behind max-sessions-per-room).
//
// A View is the one subscriber to the store's events that keeps room state;
// every reader reads through it instead of keeping a cache of its own.
// Derived data (the door's parsed invite keys, say) stays with its reader,
// keyed by the snapshot's Config pointer, which changes exactly when the
// configuration may have.
//
// The push hub is no reader: it reads neither configurations nor counts
// from the store, but paces its updates by the events themselves (which
// sessions left, whether a change moves what every page shows), which needs
// each event with the state before it, in order, on the store's goroutine.
// The gate keeps its own subscription too, for what is about passes (ended
// sessions, its resync window), not rooms.
//
// # Staleness
//
// One rule for every reader: a snapshot is fresh for TTL (DefaultTTL, one
// second) after the store read that made it, unless a resynchronisation
// hint marked it stale first. Room returns a fresh snapshot as it is and
// otherwise reads the store (Store.Room) once, however many readers ask at
// the same moment (they share that one read), and keeps the answer.
//
// Between reads, the store's events keep a snapshot current:
//   - a config event replaces the configuration (Event.Config);
//   - every event replaces the counts with the room's totals it carries
//     (Event.Waiting, Active, LastTicket, Admissions, Inversions, Sold),
//     without a store read;
//   - a deleted event drops the room;
//   - a resynchronisation hint (IsResync: a shared store reconnected or
//     noticed a room, and events may have been missed) marks the room
//     stale, so the next Room reads the store; a hint without a room name
//     marks every room stale.
//
// Events do not extend freshness: a room in use is read from the store at
// most once per TTL, so a lost event (pub/sub is at-most-once) is outlived
// by at most TTL. What each reader sees, then: the change it made itself
// at once (a process's own events are delivered before its call returns),
// another process's change as soon as its event arrives over pub/sub, and
// in the worst case, when that event is lost, the state of at most TTL ago.
// The gate (which used to keep configurations for 10 s), the door and the
// join limits (1 s each) and the pages (which read the store on every
// request) all see that. Counts carried by events may briefly lag by the
// changes in flight in other processes, as any count does.
//
// # Last known
//
// Known returns a room's snapshot whatever its age and never reads the
// store: for a reader that must answer while the store is down (the
// pages' fail-open policy sends a visitor to the room's target as last
// known) or that must not wait on it (the gate's activity pacing).
//
// # Memory
//
// A View holds only rooms that were read through it and still exist. A
// room not read (by Room or Known) for IdleAfter (DefaultIdleAfter) is
// dropped, in a sweep made while new rooms are added, so a server with many
// rooms holds only those in use. A dropped room is read again from the store
// when next asked for; its last known configuration is gone with it.
package roomview

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/waitroom/waitroom"
)

// Defaults of Config.
const (
	// DefaultTTL is how long a snapshot is used before the store is read
	// again: the bound on staleness when events are lost.
	DefaultTTL = time.Second
	// DefaultIdleAfter is how long a room may go unread before the view
	// forgets it.
	DefaultIdleAfter = 30 * time.Minute
)

// minSweep is the number of rooms below which adding one never sweeps
// before IdleAfter has passed since the last sweep.
const minSweep = 1024

// Config holds what a View needs.
type Config struct {
	// Store holds the rooms. It is required.
	Store waitroom.Store
	// Clock measures staleness and idleness; nil means
	// waitroom.SystemClock.
	Clock waitroom.Clock
	// TTL is how long a snapshot is fresh after the store read that made
	// it; 0 means DefaultTTL.
	TTL time.Duration
	// IdleAfter is how long a room may go unread before it is dropped; 0
	// means DefaultIdleAfter.
	IdleAfter time.Duration
}

// Counts are a room's totals, as the store reports them on every event and
// every read (see waitroom.Room and waitroom.Event).
type Counts struct {
	// Waiting and Active count live sessions.
	Waiting, Active int
	// LastTicket is the highest ticket issued so far.
	LastTicket int64
	// Admissions, Inversions and Sold are the room's fairness counts and
	// units sold.
	Admissions, Inversions, Sold int64
}

// Live is the number of live sessions, waiting and active.
func (c Counts) Live() int { return c.Waiting + c.Active }

// Snapshot is one room as the view knows it. It is immutable: a change makes
// a new Snapshot, so a reader may keep one as long as it likes.
type Snapshot struct {
	// Name is the room's name.
	Name string
	// Config is the room's configuration; never nil. Snapshots share it
	// until the configuration changes, so a reader may key what it derives
	// from the configuration by this pointer. Its slices and pointers are
	// shared too: read them, never change them.
	Config *waitroom.RoomConfig
	// Counts are the room's totals as of the latest event or read.
	Counts
	// ReadAt is when the store read this snapshot's freshness counts from
	// began (by the view's clock). Events change a snapshot's data, not
	// its ReadAt.
	ReadAt time.Time
	// stale is set by a resynchronisation hint: read the store again.
	stale bool
}

// View keeps one snapshot per room, following a store's events. It is safe
// for concurrent use; reading a fresh snapshot takes no lock.
type View struct {
	store waitroom.Store
	clock waitroom.Clock
	ttl   time.Duration
	idle  time.Duration
	// touchEvery is how much later than its last recorded use a read must
	// come to record its own: reads of a busy room then rarely write.
	touchEvery int64

	rooms sync.Map // name → *entry
	n     atomic.Int64
	// sweepMu makes sweeps one at a time; sweepAt and sweptAt (unix nanos)
	// say when the next is due: at that many rooms, or IdleAfter later.
	sweepMu sync.Mutex
	sweepAt atomic.Int64
	sweptAt atomic.Int64

	cancel func()
	closed sync.Once
}

// entry is one room in the view. snap and used are read without a lock;
// everything else is guarded by mu.
type entry struct {
	snap atomic.Pointer[Snapshot]
	used atomic.Int64 // unix nanos of the last read

	mu   sync.Mutex
	gone bool  // dropped from the map: neither read into nor updated
	call *call // the store read in flight, if any
	// Each event bumps the sequence of what it set, and keeps it: a store
	// read that began before an event may answer older data than the
	// event carried, so the read keeps the event's (see finish).
	cfgSeq, cntSeq, hintSeq uint64
	evCfg                   *waitroom.RoomConfig
	evCnt                   Counts
}

// call is one store read that concurrent readers of a room share.
type call struct {
	done                    chan struct{}
	snap                    *Snapshot
	err                     error
	abandoned               bool // the reader making it went away: others try again
	cfgSeq, cntSeq, hintSeq uint64
}

// New returns a View over cfg.Store and subscribes it to the store's
// events. It panics if cfg.Store is nil. Close it to stop following.
func New(cfg Config) *View {
	if cfg.Store == nil {
		panic("roomview: Config.Store is nil")
	}
	v := &View{store: cfg.Store, clock: cfg.Clock, ttl: cfg.TTL, idle: cfg.IdleAfter}
	if v.clock == nil {
		v.clock = waitroom.SystemClock{}
	}
	if v.ttl <= 0 {
		v.ttl = DefaultTTL
	}
	if v.idle <= 0 {
		v.idle = DefaultIdleAfter
	}
	v.touchEvery = int64(v.idle / 16)
	v.sweepAt.Store(minSweep)
	v.sweptAt.Store(v.clock.Now().UnixNano())
	v.cancel = v.store.Subscribe(v.observe)
	return v
}

// Close stops following the store's events. Reads still answer afterwards,
// from snapshots at most TTL old.
func (v *View) Close() {
	v.closed.Do(v.cancel)
}

// Room returns room name's snapshot: the one held while it is fresh, else a
// new one read from the store (one read, shared by concurrent callers).
// Errors are the store's (CodeRoomNotFound for a room that does not exist,
// CodeUnavailable when the store cannot answer or ctx ends first).
func (v *View) Room(ctx context.Context, name string) (*Snapshot, error) {
	now := v.clock.Now()
	if x, ok := v.rooms.Load(name); ok {
		e := x.(*entry)
		if s := e.snap.Load(); s != nil && v.fresh(s, now) {
			v.touch(e, now)
			return s, nil
		}
	}
	return v.load(ctx, name, now)
}

// Known returns room name's snapshot as last known, fresh or not, or nil
// when the view holds none. It never reads the store.
func (v *View) Known(name string) *Snapshot {
	x, ok := v.rooms.Load(name)
	if !ok {
		return nil
	}
	e := x.(*entry)
	s := e.snap.Load()
	if s != nil {
		v.touch(e, v.clock.Now())
	}
	return s
}

// IsResync reports whether ev is a resynchronisation hint: an event another
// process's store sent with no changes, meaning events may have been missed
// (see waitroom.Event.Remote). Config and deleted events are never hints:
// they say what changed.
func IsResync(ev waitroom.Event) bool {
	return ev.Remote && len(ev.Changes) == 0 && ev.Kind != waitroom.EventConfig && ev.Kind != waitroom.EventDeleted
}

// fresh reports whether s may be returned without reading the store.
func (v *View) fresh(s *Snapshot, now time.Time) bool {
	return !s.stale && !now.Before(s.ReadAt) && now.Sub(s.ReadAt) < v.ttl
}

// touch records that e was read at now, rarely writing: a busy room's
// readers would otherwise all write one word on every read.
func (v *View) touch(e *entry, now time.Time) {
	n := now.UnixNano()
	if last := e.used.Load(); n-last > v.touchEvery || n < last {
		e.used.Store(n)
	}
}

// load is Room's slow path: wait for the read in flight or make one.
func (v *View) load(ctx context.Context, name string, now time.Time) (*Snapshot, error) {
	for {
		e := v.entry(name, now)
		e.mu.Lock()
		if e.gone {
			e.mu.Unlock()
			continue // dropped meanwhile: start again with a new entry
		}
		if s := e.snap.Load(); s != nil && v.fresh(s, now) {
			e.mu.Unlock()
			v.touch(e, now)
			return s, nil
		}
		if c := e.call; c != nil {
			e.mu.Unlock()
			select {
			case <-c.done:
			case <-ctx.Done():
				return nil, waitroom.Unavailable(ctx.Err(), "reading room "+name)
			}
			if c.abandoned && ctx.Err() == nil {
				continue // the read ended with its reader's request: make one
			}
			return c.snap, c.err
		}
		c := &call{done: make(chan struct{}), cfgSeq: e.cfgSeq, cntSeq: e.cntSeq, hintSeq: e.hintSeq}
		e.call = c
		e.mu.Unlock()
		v.fetch(ctx, name, e, c, now)
		return c.snap, c.err
	}
}

// entry returns room name's entry, adding an empty one (and sweeping, when
// due) if there is none.
func (v *View) entry(name string, now time.Time) *entry {
	if x, ok := v.rooms.Load(name); ok {
		return x.(*entry)
	}
	e := &entry{}
	e.used.Store(now.UnixNano())
	x, loaded := v.rooms.LoadOrStore(name, e)
	if !loaded {
		if n := v.n.Add(1); n >= v.sweepAt.Load() || now.UnixNano()-v.sweptAt.Load() >= int64(v.idle) {
			v.sweep(now)
		}
	}
	return x.(*entry)
}

// fetch reads room name from the store for call c and settles e with the
// answer.
func (v *View) fetch(ctx context.Context, name string, e *entry, c *call, now time.Time) {
	var r waitroom.Room
	var err error
	returned := false
	defer func() {
		// Whatever happened (a panic too, which goes on up), the waiting
		// readers go on.
		if !returned {
			err = errors.New("roomview: the store's Room panicked")
		}
		c.snap, c.err = v.finish(name, e, c, r, err, now)
		if c.err != nil && ctx.Err() != nil {
			c.abandoned = true
		}
		close(c.done)
	}()
	r, err = v.store.Room(ctx, name)
	returned = true
}

// finish makes the snapshot of a store read and keeps it, unless the room
// was dropped meanwhile. A change an event reported while the read was in
// flight wins over the read's answer, which may predate it; a hint marks
// the snapshot stale.
func (v *View) finish(name string, e *entry, c *call, r waitroom.Room, err error, now time.Time) (*Snapshot, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.call = nil
	if err != nil {
		if waitroom.ErrorCode(err) == waitroom.CodeRoomNotFound || e.snap.Load() == nil {
			// Gone, or never known: nothing to keep (the room is read
			// again when asked for, so unknown names take no memory).
			v.drop(name, e)
		}
		return nil, err
	}
	cfg := &r.RoomConfig
	if e.cfgSeq != c.cfgSeq && e.evCfg != nil {
		cfg = e.evCfg
	}
	cnt := Counts{Waiting: r.Waiting, Active: r.Active, LastTicket: r.LastTicket, Admissions: r.Admissions, Inversions: r.Inversions, Sold: r.Sold}
	if e.cntSeq != c.cntSeq {
		cnt = e.evCnt
	}
	s := &Snapshot{Name: name, Config: cfg, Counts: cnt, ReadAt: now, stale: e.hintSeq != c.hintSeq}
	if cur := e.snap.Load(); cur != nil && cur.Config.Equal(*cfg) {
		s.Config = cur.Config // unchanged: derived data stays valid
	}
	if !e.gone {
		e.snap.Store(s)
	}
	return s, nil
}

// drop removes e from the view. e.mu is held.
func (v *View) drop(name string, e *entry) {
	if e.gone {
		return
	}
	e.gone = true
	if v.rooms.CompareAndDelete(name, e) {
		v.n.Add(-1)
	}
}

// sweep drops the rooms nobody read for IdleAfter, and sets when the next
// sweep is due: once the view has doubled, or IdleAfter from now.
func (v *View) sweep(now time.Time) {
	if !v.sweepMu.TryLock() {
		return // another reader is sweeping
	}
	defer v.sweepMu.Unlock()
	cutoff := now.UnixNano() - int64(v.idle)
	v.rooms.Range(func(k, x any) bool {
		e := x.(*entry)
		if e.used.Load() > cutoff {
			return true
		}
		e.mu.Lock()
		if e.call == nil {
			v.drop(k.(string), e)
		}
		e.mu.Unlock()
		return true
	})
	v.sweptAt.Store(now.UnixNano())
	v.sweepAt.Store(max(minSweep, 2*v.n.Load()))
}

// observe applies one store event. It runs on the store's goroutine, so it
// takes only the room's lock, briefly, and never calls the store.
func (v *View) observe(ev waitroom.Event) {
	if ev.Room == "" {
		if IsResync(ev) {
			v.rooms.Range(func(_, x any) bool {
				e := x.(*entry)
				e.mu.Lock()
				e.hintSeq++
				e.setStale()
				e.mu.Unlock()
				return true
			})
		}
		return
	}
	x, ok := v.rooms.Load(ev.Room)
	if !ok {
		return // not read here: the first read will get it from the store
	}
	e := x.(*entry)
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.gone {
		return
	}
	if ev.Kind == waitroom.EventDeleted {
		v.drop(ev.Room, e)
		return
	}
	e.cntSeq++
	e.evCnt = Counts{Waiting: ev.Waiting, Active: ev.Active, LastTicket: ev.LastTicket,
		Admissions: ev.Admissions, Inversions: ev.Inversions, Sold: ev.Sold}
	stale := IsResync(ev)
	if ev.Kind == waitroom.EventConfig {
		if ev.Config != nil {
			cfg := *ev.Config
			e.cfgSeq++
			e.evCfg = &cfg
		} else {
			stale = true // a change of configuration it does not carry
		}
	}
	if stale {
		e.hintSeq++
	}
	cur := e.snap.Load()
	if cur == nil {
		return // the read in flight takes the event's data (finish)
	}
	s := *cur
	s.Counts = e.evCnt
	if ev.Kind == waitroom.EventConfig && ev.Config != nil && !cur.Config.Equal(*e.evCfg) {
		s.Config = e.evCfg
	}
	s.stale = s.stale || stale
	e.snap.Store(&s)
}

// setStale marks e's snapshot stale. e.mu is held.
func (e *entry) setStale() {
	if cur := e.snap.Load(); cur != nil && !cur.stale {
		s := *cur
		s.stale = true
		e.snap.Store(&s)
	}
}
