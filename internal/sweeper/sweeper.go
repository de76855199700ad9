// Package sweeper runs a store's expiry in the background, so that a slot
// freed by a deadline (an idle session, a waiting session that stopped
// showing presence, an away period that ran out) is handed on without
// waiting for the next request to that room.
//
// Every operation on a store already expires what is due before it works;
// the sweeper only makes that happen when no request comes.
package sweeper

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/waitroom/waitroom"
)

// DefaultInterval is the time between two passes when Options.Interval is 0.
// A pass every 200ms keeps the delay from a deadline to the hand-off well
// under the one second the specification allows.
const DefaultInterval = 200 * time.Millisecond

// maxQuiet bounds how long a room may go unswept even when its last sweep
// said nothing is due before later. Some changes move a deadline earlier
// without an event (Away starts a grace period without changing a status),
// so the sweeper never trusts a SweepResult.Next for longer than this. With
// the default interval a room is swept at least every 800ms.
const maxQuiet = time.Second

// errorEvery is how often a failure that keeps happening is logged again.
const errorEvery = 30 * time.Second

// Options configures Run.
type Options struct {
	// Interval is the time between two passes over the rooms;
	// 0 means DefaultInterval.
	Interval time.Duration
	// Logger receives failures; nil means slog.Default().
	Logger *slog.Logger
}

// roomState is what the sweeper remembers about one room between passes.
type roomState struct {
	// lastSwept is the clock time of the last successful sweep.
	lastSwept time.Time
	// next is the SweepResult.Next of that sweep (zero: nothing scheduled).
	next time.Time
	// gen is the room's event generation when that sweep started; an event
	// since then may have brought a deadline forward.
	gen uint64
}

// generations counts store events per room. The store calls bump on the
// goroutine that made a change, so it only takes a short lock.
type generations struct {
	mu  sync.Mutex
	gen map[string]uint64
}

func (g *generations) bump(ev waitroom.Event) {
	g.mu.Lock()
	g.gen[ev.Room]++
	g.mu.Unlock()
}

func (g *generations) get(room string) uint64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.gen[room]
}

// forget drops rooms that no longer exist, so the map does not grow with
// every room ever deleted.
func (g *generations) forget(keep map[string]bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for r := range g.gen {
		if !keep[r] {
			delete(g.gen, r)
		}
	}
}

// Run sweeps every room of store until ctx is done. Each pass lists the
// rooms again, so new rooms are picked up, and calls store.Sweep with
// clock.Now() for each room that may have something due. A room is skipped
// only while its last sweep reported nothing due yet, no event has touched
// it since, and it was swept less than a second ago.
//
// Failures are logged, never fatal: the store may come back. Run returns nil
// once ctx is done, and an error only for invalid options.
func Run(ctx context.Context, store waitroom.Store, clock waitroom.Clock, opts Options) error {
	if opts.Interval < 0 {
		return fmt.Errorf("sweeper: negative interval %s", opts.Interval)
	}
	if opts.Interval == 0 {
		opts.Interval = DefaultInterval
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	s := &sweeper{
		store:    store,
		clock:    clock,
		interval: opts.Interval,
		log:      opts.Logger,
		gens:     &generations{gen: make(map[string]uint64)},
		rooms:    make(map[string]*roomState),
		failures: make(map[string]*failure),
	}
	cancel := store.Subscribe(s.gens.bump)
	defer cancel()

	t := time.NewTicker(s.interval)
	defer t.Stop()
	for {
		// The first pass runs at once: after a restart, whatever fell due
		// while the server was down is expired without delay.
		s.pass(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

type sweeper struct {
	store    waitroom.Store
	clock    waitroom.Clock
	interval time.Duration
	log      *slog.Logger
	gens     *generations
	rooms    map[string]*roomState
	failures map[string]*failure
}

// failure tracks one failure that keeps happening, so it is logged when it
// starts, every errorEvery while it lasts, and when it ends.
type failure struct {
	since   time.Time
	logged  time.Time
	repeats int
}

// pass sweeps every room that may have something due.
func (s *sweeper) pass(ctx context.Context) {
	if ctx.Err() != nil {
		return
	}
	rooms, err := s.store.Rooms(ctx)
	if err != nil {
		if ctx.Err() == nil {
			s.failed("rooms", "sweeper: cannot list rooms", err)
		}
		return
	}
	s.recovered("rooms", "sweeper: listing rooms works again")

	keep := make(map[string]bool, len(rooms))
	for _, r := range rooms {
		keep[r.Name] = true
		if ctx.Err() != nil {
			return
		}
		s.sweepRoom(ctx, r.Name)
	}
	for name := range s.rooms {
		if !keep[name] {
			delete(s.rooms, name)
			delete(s.failures, "room "+name)
		}
	}
	s.gens.forget(keep)
}

// sweepRoom sweeps one room unless its last sweep proves there is nothing to do.
func (s *sweeper) sweepRoom(ctx context.Context, name string) {
	now := s.clock.Now()
	gen := s.gens.get(name)
	st := s.rooms[name]
	if st != nil && s.canSkip(st, gen, now) {
		return
	}
	res, err := s.store.Sweep(ctx, name, now)
	if err != nil {
		switch {
		case ctx.Err() != nil:
		case waitroom.ErrorCode(err) == waitroom.CodeRoomNotFound:
			// Deleted between the listing and the sweep: nothing to do.
			delete(s.rooms, name)
		default:
			s.failed("room "+name, "sweeper: sweep failed", err, "room", name)
		}
		return
	}
	s.recovered("room "+name, "sweeper: sweeping works again", "room", name)
	if st == nil {
		st = new(roomState)
		s.rooms[name] = st
	}
	*st = roomState{lastSwept: now, next: res.Next, gen: gen}
	if res.Expired > 0 || res.Admitted > 0 {
		s.log.Debug("sweeper: swept", "room", name, "expired", res.Expired, "admitted", res.Admitted)
	}
}

// canSkip reports whether the room's last sweep still vouches that nothing
// is due at now.
func (s *sweeper) canSkip(st *roomState, gen uint64, now time.Time) bool {
	if gen != st.gen {
		return false // something happened in the room since
	}
	if !st.next.IsZero() && !now.Before(st.next) {
		return false // something falls due
	}
	// Sweep anyway if waiting for the next tick would leave the room
	// unswept for maxQuiet or more.
	return now.Sub(st.lastSwept)+s.interval < maxQuiet
}

func (s *sweeper) failed(key, msg string, err error, attrs ...any) {
	now := time.Now()
	f := s.failures[key]
	if f == nil {
		f = &failure{since: now}
		s.failures[key] = f
	}
	f.repeats++
	if !f.logged.IsZero() && now.Sub(f.logged) < errorEvery {
		return
	}
	f.logged = now
	attrs = append(attrs, "err", err)
	if f.repeats > 1 {
		attrs = append(attrs, "failures", f.repeats, "since", f.since.Format(time.RFC3339))
	}
	s.log.Warn(msg, attrs...)
}

func (s *sweeper) recovered(key, msg string, attrs ...any) {
	f := s.failures[key]
	if f == nil {
		return
	}
	delete(s.failures, key)
	attrs = append(attrs, "failures", f.repeats)
	s.log.Info(msg, attrs...)
}
