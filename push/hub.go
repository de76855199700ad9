// Package push turns a store's room events into per-session updates for
// clients that hold an event stream open (SSE or WebSocket).
//
// A change in a room marks the room dirty; at most once per Interval the hub
// reads every watched session of the room in one batch call
// (waitroom.Store.Sessions) and hands each watcher its new Session only when
// its own values changed. A watcher keeps just the latest value: a slow
// client skips intermediate updates and never holds up the room or anyone
// else. Events from other server processes (shared stores) arrive the same
// way, so every process updates its own clients.
package push

import (
	"context"
	"sync"
	"time"

	"github.com/waitroom/waitroom"
)

// Options tune a Hub.
type Options struct {
	// Interval is the least time between two updates of one room's
	// watchers; changes within it are coalesced. Default 250ms.
	Interval time.Duration
	// Refresh re-reads watched rooms this often even without events, so
	// ETAs follow the clock. Default 5s.
	Refresh time.Duration
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

// room is the watchers of one room and its flush state.
type room struct {
	name     string
	watchers map[*Watch]struct{}
	dirty    bool
	running  bool // a flush is scheduled or in progress
	last     time.Time
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
}

// New returns a hub following store. Close it to stop.
func New(store waitroom.Store, opt Options) *Hub {
	if opt.Interval <= 0 {
		opt.Interval = 250 * time.Millisecond
	}
	if opt.Refresh <= 0 {
		opt.Refresh = 5 * time.Second
	}
	if opt.Clock == nil {
		opt.Clock = waitroom.SystemClock{}
	}
	h := &Hub{store: store, opt: opt, rooms: make(map[string]*room), done: make(chan struct{})}
	h.stop = store.Subscribe(h.observe)
	go h.refresh()
	return h
}

// Watch starts watching session id of room, given its current state (the
// caller has just read it, which also counted as presence).
func (h *Hub) Watch(current waitroom.Session) *Watch {
	w := &Watch{Room: current.Room, ID: current.ID, hub: h, c: make(chan struct{}, 1), latest: current, version: 1}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		w.closed = true
		close(w.c)
		return w
	}
	r := h.rooms[w.Room]
	if r == nil {
		r = &room{name: w.Room, watchers: make(map[*Watch]struct{})}
		h.rooms[w.Room] = r
	}
	r.watchers[w] = struct{}{}
	// A change may have landed between the caller's read and now: check.
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

// Stop ends the watch.
func (w *Watch) Stop() {
	h := w.hub
	h.mu.Lock()
	if r := h.rooms[w.Room]; r != nil {
		delete(r.watchers, w)
		if len(r.watchers) == 0 && !r.running {
			delete(h.rooms, w.Room)
		}
	}
	h.mu.Unlock()
	w.close()
}

func (w *Watch) close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.closed {
		w.closed = true
		close(w.c)
	}
}

// offer hands s to the watcher if its own values changed.
func (w *Watch) offer(s waitroom.Session) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed || same(w.latest, s) {
		return
	}
	w.latest = s
	w.version++
	select {
	case w.c <- struct{}{}:
	default: // already signalled: the client will read the latest value
	}
}

// same reports whether a client would see no difference between a and b.
func same(a, b waitroom.Session) bool {
	if a.Status != b.Status || a.Position != b.Position || a.Waiting != b.Waiting ||
		a.Active != b.Active || a.Capacity != b.Capacity || (a.ETA == nil) != (b.ETA == nil) ||
		a.Ticket != b.Ticket || !a.OpensAt.Equal(b.OpensAt) || !sameEntrants(a.Entrants, b.Entrants) ||
		a.Stocked != b.Stocked || a.Remaining != b.Remaining || a.Unit != b.Unit {
		return false
	}
	return a.ETA == nil || *a.ETA == *b.ETA
}

// sameEntrants reports whether a pre-queue's size moved too little to tell
// its watchers: every arrival in a pre-queue of under ten, but then only a
// move of a tenth, so a pre-queue filling at hundreds a second wakes each
// watcher a few dozen times in all (20,000 arrivals with 2% steps cost
// 1.5 million updates in one measured run), not at every flush.
func sameEntrants(a, b int) bool {
	d := a - b
	if d < 0 {
		d = -d
	}
	return d < max(1, a/10)
}

// observe is the store subscription: it only marks the room dirty.
func (h *Hub) observe(ev waitroom.Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if r := h.rooms[ev.Room]; r != nil {
		h.mark(r)
	}
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

// flush reads every watched session of r in one call and offers each its
// new state; it repeats while changes keep arriving.
func (h *Hub) flush(r *room) {
	h.mu.Lock()
	if h.closed {
		r.running = false
		h.mu.Unlock()
		return
	}
	r.dirty = false
	r.last = time.Now()
	watchers := make([]*Watch, 0, len(r.watchers))
	ids := make([]string, 0, len(r.watchers))
	seen := make(map[string]bool, len(r.watchers))
	for w := range r.watchers {
		watchers = append(watchers, w)
		if !seen[w.ID] {
			seen[w.ID] = true
			ids = append(ids, w.ID)
		}
	}
	h.mu.Unlock()

	if len(ids) > 0 {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		got, err := h.store.Sessions(ctx, r.name, ids)
		cancel()
		switch {
		case err != nil && waitroom.ErrorCode(err) == waitroom.CodeRoomNotFound:
			for _, w := range watchers {
				w.close() // the room is gone: streams end
			}
		case err != nil:
			if h.opt.OnError != nil {
				h.opt.OnError(r.name, err)
			}
		default:
			now := h.opt.Clock.Now()
			byID := make(map[string]waitroom.Session, len(got))
			for i, s := range got {
				if s.ID != "" {
					if h.opt.Fill != nil {
						h.opt.Fill(&s, now)
					}
					byID[ids[i]] = s
				}
			}
			for _, w := range watchers {
				if s, ok := byID[w.ID]; ok {
					w.offer(s)
				}
			}
		}
	}

	h.mu.Lock()
	defer h.mu.Unlock()
	r.running = false
	switch {
	case r.dirty && !h.closed:
		h.mark(r)
	case len(r.watchers) == 0:
		delete(h.rooms, r.name)
	}
}

// refresh marks every watched room dirty now and then, so ETAs move with
// time even when nothing happens.
func (h *Hub) refresh() {
	t := time.NewTicker(h.opt.Refresh)
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
