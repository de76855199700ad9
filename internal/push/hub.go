// Package push turns a store's room events into per-session updates for
// clients that hold an event stream open (SSE or WebSocket).
//
// The hub does two things with a room's events. A session whose status
// changed (admitted, ended) is told at once, straight from the event: the
// moment a person gets in never waits for anything else. Positions and the
// room's totals are coalesced: a change marks the room dirty, and at most
// once per Interval the hub reads, in one batch call
// (waitroom.Store.Sessions), only the watchers whose turn it is under the
// cadence (see cadence.go), and hands each its new Session only when its
// own numbers moved. A watcher keeps just the latest value: a slow client
// skips intermediate updates and never holds up the room or anyone else.
// Events from other server processes (shared stores) arrive the same way,
// so every process reads and updates only its own clients.
package push

import (
	"context"
	"sync"
	"time"

	"github.com/waitroom/waitroom"
)

// Options tune a Hub.
type Options struct {
	// Interval is the least time between two reads of one room's
	// watchers; changes within it are coalesced. Default 250ms.
	Interval time.Duration
	// Refresh is the longest a watcher goes without being re-read (so
	// its ETA follows the clock and a position that crept is made exact).
	// Each watcher's turn is spread over its last quarter. Default 5s.
	Refresh time.Duration
	// Front is how near the head of the line a waiting person gets every
	// change (positions 1 to Front). Default 100.
	Front int64
	// Step is the fraction of a position that, once that many people
	// ahead may have left the line, earns an update before Refresh is up
	// (at most one a second). Default 0.1.
	Step float64
	// Batch is the most sessions read in one call to the store.
	// Default 1000.
	Batch int
	// Fill, when set, completes a Session before it is compared and sent
	// (the ETA estimator's Fill).
	Fill func(s *waitroom.Session, now time.Time)
	// Clock defaults to waitroom.SystemClock.
	Clock waitroom.Clock
	// OnError receives batch-read failures (for logging); nil ignores them.
	OnError func(room string, err error)
}

// Hub fans room events out to watchers. It is safe for concurrent use.
type Hub struct {
	store waitroom.Store
	opt   Options
	stop  func()

	mu     sync.Mutex
	rooms  map[string]*room
	closed bool
	done   chan struct{}
}

// room is the watchers of one room, what the hub knows of the room from its
// events, and its flush state. Every field is guarded by Hub.mu.
type room struct {
	name     string
	watchers map[*Watch]struct{}
	byID     map[string][]*Watch
	dirty    bool
	running  bool // a flush is scheduled or in progress
	last     time.Time
	clock    roomClock
}

// Watch is one client's subscription to one session.
type Watch struct {
	Room, ID string
	hub      *Hub
	c        chan struct{}
	mu       sync.Mutex
	latest   waitroom.Session
	version  uint64
	closed   bool
	// tells numbers the status changes told straight from events, and
	// toldDone is the latest one handed over (both guarded by mu).
	tells, toldDone uint64
	turn            turn // guarded by Hub.mu
	// notify, when set (WatchFunc), is called instead of signalling c.
	notify func()
}

// New returns a hub following store. Close it to stop.
func New(store waitroom.Store, opt Options) *Hub {
	if opt.Interval <= 0 {
		opt.Interval = 250 * time.Millisecond
	}
	if opt.Refresh <= 0 {
		opt.Refresh = 5 * time.Second
	}
	if opt.Front <= 0 {
		opt.Front = 100
	}
	if opt.Step <= 0 {
		opt.Step = 0.1
	}
	if opt.Batch <= 0 {
		opt.Batch = 1000
	}
	if opt.Clock == nil {
		opt.Clock = waitroom.SystemClock{}
	}
	h := &Hub{store: store, opt: opt, rooms: make(map[string]*room), done: make(chan struct{})}
	h.stop = store.Subscribe(h.observe)
	go h.tick()
	return h
}

// Watch starts watching session id of room, given its current state (the
// caller has just read it, which also counted as presence).
func (h *Hub) Watch(current waitroom.Session) *Watch {
	return h.watch(current, nil)
}

// WatchFunc is Watch for a watcher with no goroutine of its own waiting on
// C: notify is called (quickly, without blocking; it must not call back
// into the watch) whenever Latest has a new value or the watch ends.
func (h *Hub) WatchFunc(current waitroom.Session, notify func()) *Watch {
	return h.watch(current, notify)
}

func (h *Hub) watch(current waitroom.Session, notify func()) *Watch {
	w := &Watch{Room: current.Room, ID: current.ID, hub: h, c: make(chan struct{}, 1), latest: current, version: 1, notify: notify}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		w.closed = true
		close(w.c)
		if notify != nil {
			notify()
		}
		return w
	}
	r := h.rooms[w.Room]
	if r == nil {
		r = &room{name: w.Room, watchers: make(map[*Watch]struct{}), byID: make(map[string][]*Watch)}
		h.rooms[w.Room] = r
	}
	r.watchers[w] = struct{}{}
	r.byID[w.ID] = append(r.byID[w.ID], w)
	// A change may have landed between the caller's read and now: the
	// watcher is read at the next flush, then takes its turns.
	w.turn = newTurn(current, &r.clock, time.Now(), h.opt.Refresh)
	h.mark(r)
	return w
}

// C is signalled when Latest has a new value, and closed when the hub
// closes or the watch is stopped.
func (w *Watch) C() <-chan struct{} { return w.c }

// Latest returns the newest Session and its version (which increases with
// every change handed to this watcher).
func (w *Watch) Latest() (waitroom.Session, uint64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.latest, w.version
}

// Ended reports whether the watch has ended (the hub closed, the room is
// gone, or Stop was called).
func (w *Watch) Ended() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.closed
}

// Stop ends the watch.
func (w *Watch) Stop() {
	h := w.hub
	h.mu.Lock()
	if r := h.rooms[w.Room]; r != nil {
		delete(r.watchers, w)
		r.unindex(w)
		if len(r.watchers) == 0 && !r.running {
			delete(h.rooms, w.Room)
		}
	}
	h.mu.Unlock()
	w.close()
}

// unindex removes w from r.byID. h.mu is held.
func (r *room) unindex(w *Watch) {
	ws := r.byID[w.ID]
	for i, x := range ws {
		if x == w {
			ws = append(ws[:i], ws[i+1:]...)
			break
		}
	}
	if len(ws) == 0 {
		delete(r.byID, w.ID)
	} else {
		r.byID[w.ID] = ws
	}
}

func (w *Watch) close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.closed {
		w.closed = true
		close(w.c)
		if w.notify != nil {
			w.notify()
		}
	}
}

// offer hands s to the watcher unless a person would see no difference
// (exactly, or noticeably when exact is false) from what it holds.
func (w *Watch) offer(s waitroom.Session, exact bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed || same(w.latest, s, exact) {
		return
	}
	w.setLocked(s)
}

// setLocked makes s the latest value and tells the watcher. w.mu is held.
func (w *Watch) setLocked(s waitroom.Session) {
	w.latest = s
	w.version++
	if w.notify != nil {
		w.notify()
		return
	}
	select {
	case w.c <- struct{}{}:
	default: // already signalled: the client will read the latest value
	}
}

// told is one status change to hand a watcher straight from an event.
type told struct {
	w   *Watch
	s   waitroom.Session
	seq uint64
}

// observe is the store subscription. A watched session that left the line
// (admitted or ended) is told at once; everything else only updates what
// the hub knows of the room and marks it dirty.
func (h *Hub) observe(ev waitroom.Event) {
	h.mu.Lock()
	r := h.rooms[ev.Room]
	if r == nil {
		h.mu.Unlock()
		return
	}
	r.clock.apply(ev)
	var now []told
	for _, ch := range ev.Changes {
		if ch.Session.Status == waitroom.StatusWaiting {
			continue // a waiting session's position comes from a read
		}
		for _, w := range r.byID[ch.Session.ID] {
			now = append(now, told{w, ch.Session, w.tellSeq()})
		}
	}
	h.mark(r)
	h.mu.Unlock()

	if len(now) > 0 {
		// Filling (an admitted session's pass is signed) happens off the
		// store's path, in parallel with other events' tells; the sequence
		// numbers keep a later tell from being undone by an earlier one.
		go h.tell(ev, now)
	}
}

// tell completes and hands each status change to its watcher.
func (h *Hub) tell(ev waitroom.Event, now []told) {
	at := h.opt.Clock.Now()
	for _, t := range now {
		s := t.s
		prev, _ := t.w.Latest()
		// The change carries the session, the event the room's totals; the
		// rest of what a page shows is as last read.
		s.Room, s.Position = ev.Room, 0
		s.Waiting, s.Active = ev.Waiting, ev.Active
		s.Capacity, s.Stocked, s.Remaining = prev.Capacity, prev.Stocked, prev.Remaining
		if h.opt.Fill != nil {
			h.opt.Fill(&s, at)
		}
		t.w.offerTold(s, t.seq)
	}
}

// tellSeq numbers a new tell for w. h.mu is held.
func (w *Watch) tellSeq() uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.tells++
	return w.tells
}

// offerTold hands w a status change told straight from an event, unless a
// later one was told already.
func (w *Watch) offerTold(s waitroom.Session, seq uint64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed || seq != w.tells || w.toldDone >= seq {
		return
	}
	w.toldDone = seq
	if same(w.latest, s, true) {
		return
	}
	w.setLocked(s)
}

// tellCount is how many status changes were told to w so far.
func (w *Watch) tellCount() uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.tells
}

// stale reports whether a read numbered by tells (taken before the read
// began) may predate a status change told since: then it must not replace it.
func (w *Watch) stale(tells uint64) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.tells != tells
}

// mark schedules a flush of r, no sooner than Interval after the last one.
// h.mu is held.
func (h *Hub) mark(r *room) {
	r.dirty = true
	if r.running || h.closed {
		return
	}
	r.running = true
	wait := time.Until(r.last.Add(h.opt.Interval))
	time.AfterFunc(max(wait, 0), func() { h.flush(r) })
}

// flush reads, in one call, the watched sessions of r whose turn it is and
// offers each its new state; it repeats while changes keep arriving.
func (h *Hub) flush(r *room) {
	h.mu.Lock()
	if h.closed {
		r.running = false
		h.mu.Unlock()
		return
	}
	now := time.Now()
	r.dirty = false
	r.last = now
	snap := r.clock
	var watchers []*Watch
	var exact []bool
	var tells []uint64
	var ids []string
	seen := make(map[string]bool)
	for w := range r.watchers {
		due, front := w.turn.due(snap, now, h.opt)
		if !due {
			continue
		}
		w.turn.read(snap, now, h.opt.Refresh)
		watchers = append(watchers, w)
		exact = append(exact, front)
		tells = append(tells, w.tellCount())
		if !seen[w.ID] {
			seen[w.ID] = true
			ids = append(ids, w.ID)
		}
	}
	h.mu.Unlock()

	var got []waitroom.Session
	if len(ids) > 0 {
		var err error
		got, err = h.read(r.name, ids)
		switch {
		case err != nil && waitroom.ErrorCode(err) == waitroom.CodeRoomNotFound:
			for _, w := range watchers {
				w.close() // the room is gone: streams end
			}
			got = nil
		case err != nil:
			if h.opt.OnError != nil {
				h.opt.OnError(r.name, err)
			}
			got = nil
			h.mu.Lock()
			for _, w := range watchers {
				w.turn.retry() // read them again next time
			}
			h.mu.Unlock()
		}
	}
	var byID map[string]waitroom.Session
	if got != nil {
		at := h.opt.Clock.Now()
		byID = make(map[string]waitroom.Session, len(got))
		for i, s := range got {
			if s.ID != "" {
				if h.opt.Fill != nil {
					h.opt.Fill(&s, at)
				}
				byID[ids[i]] = s
			}
		}
		for i, w := range watchers {
			if s, ok := byID[w.ID]; ok {
				if w.stale(tells[i]) {
					delete(byID, w.ID) // told since the read began: read again
					continue
				}
				w.offer(s, exact[i] || (s.Position >= 1 && s.Position <= h.opt.Front))
			}
		}
	}

	h.mu.Lock()
	defer h.mu.Unlock()
	for _, w := range watchers {
		if s, ok := byID[w.ID]; ok {
			w.turn.saw(s)
		} else if got != nil {
			w.turn.retry()
		}
	}
	r.running = false
	switch {
	case r.dirty && !h.closed:
		h.mark(r)
	case len(r.watchers) == 0:
		delete(h.rooms, r.name)
	}
}

// read reads the sessions ids of room in batches of Options.Batch, so a
// shared store (one Redis script per batch) is never held long by one
// process's crowd.
func (h *Hub) read(room string, ids []string) ([]waitroom.Session, error) {
	out := make([]waitroom.Session, 0, len(ids))
	for len(ids) > 0 {
		n := min(len(ids), h.opt.Batch)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		got, err := h.store.Sessions(ctx, room, ids[:n])
		cancel()
		if err != nil {
			return nil, err
		}
		out = append(out, got...)
		ids = ids[n:]
	}
	return out, nil
}

// tick marks every watched room dirty once a second, so that watchers
// whose turn came round are read even when nothing happens.
func (h *Hub) tick() {
	t := time.NewTicker(min(time.Second, h.opt.Refresh))
	defer t.Stop()
	for {
		select {
		case <-h.done:
			return
		case <-t.C:
			h.mu.Lock()
			for _, r := range h.rooms {
				h.mark(r)
			}
			h.mu.Unlock()
		}
	}
}

// Close stops the hub and closes every watch, so streams end (for a
// graceful shutdown).
func (h *Hub) Close() {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return
	}
	h.closed = true
	close(h.done)
	var all []*Watch
	for _, r := range h.rooms {
		for w := range r.watchers {
			all = append(all, w)
		}
	}
	h.rooms = map[string]*room{}
	h.mu.Unlock()
	h.stop()
	for _, w := range all {
		w.close()
	}
}
