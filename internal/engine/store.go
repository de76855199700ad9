// Package engine is the in-memory state machine behind memstore and
// sqlitestore: exact positions in O(log n) through a Fenwick tree over
// tickets, expiry costing work proportional to what expires through a lazy
// deadline heap, a waiting session in well under 128 bytes.
//
// Its Store implements waitroom.Store. Besides the contract it has what a
// durable backend needs to build on it and nobody else should call: a
// Journal and an Archive (WithJournal, WithArchive) and the restore hooks
// (Restore, RestoreTicket, RestoreCounts, RestoreUses, RestoreNear,
// RestoreDraw, ClosedTold, HasRoom). memstore wraps it to expose only the
// contract; sqlitestore gives it a journal and an archive and rebuilds its
// state on start.
package engine

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/waitroom/waitroom"
)

// Journal makes changes durable. Append is called with the room's lock held,
// in the order changes happen, for every event (sessions, config, deleted).
// The function it returns blocks until those changes are durable and reports
// whether they could be made so. Append must not block for long.
type Journal interface {
	Append(ev *waitroom.Event) (wait func() error)
}

// Archive keeps ended sessions outside memory. With one, the store keeps no
// history of its own and asks the archive for ended sessions.
type Archive interface {
	// Find returns the ended session with id in room, if there is one. It
	// must check the id's secret.
	Find(ctx context.Context, room string, id waitroom.SessionID) (waitroom.Session, bool, error)
	// List returns ended sessions of room newest first, as Store.History.
	List(ctx context.Context, room string, status waitroom.Status, page waitroom.Page) ([]waitroom.Session, string, error)
}

// Option configures a Store.
type Option func(*Store)

// WithHistoryLimit sets how many ended sessions each room keeps in memory
// (default 100,000). Older ones are forgotten.
func WithHistoryLimit(n int) Option { return func(s *Store) { s.keepHistory = max(1, n) } }

// WithJournal makes every change durable through j before it is answered.
func WithJournal(j Journal) Option { return func(s *Store) { s.journal = j } }

// WithArchive keeps history in a instead of memory.
func WithArchive(a Archive) Option { return func(s *Store) { s.archive = a } }

// Store is the in-memory waitroom.Store. It is safe for concurrent use.
type Store struct {
	mu      sync.RWMutex
	rooms   map[string]*room
	tickets map[string]int64 // last tickets of deleted rooms, so none is reused

	keepHistory int
	journal     Journal
	archive     Archive

	subMu  sync.RWMutex
	subs   map[int]func(waitroom.Event)
	nextID int
	nSubs  atomic.Int32

	failed atomic.Pointer[error] // set when the journal fails: memory no longer matches disk
	closed atomic.Bool

	// The webhook outbox (hooks.go); hooked is set once a webhook exists.
	hooksOnce sync.Once
	hooks     *hookState
	hooked    atomic.Bool

	// The console's ledger (audit log, stats, sign-ins); see ledger.go.
	ledgerOnce sync.Once
	ledger     *ledgerState
}

var _ waitroom.Store = (*Store)(nil)

// New returns an empty in-memory store.
func New(opts ...Option) *Store {
	s := &Store{
		rooms:       make(map[string]*room),
		tickets:     make(map[string]int64),
		keepHistory: 100_000,
		subs:        make(map[int]func(waitroom.Event)),
	}
	for _, o := range opts {
		o(s)
	}
	if s.archive != nil {
		s.keepHistory = 0
	}
	return s
}

func (s *Store) usable() error {
	if s.closed.Load() {
		return waitroom.Errorf(waitroom.CodeUnavailable, "The store is closed.")
	}
	if e := s.failed.Load(); e != nil {
		return waitroom.Unavailable(*e, "store failed earlier")
	}
	return nil
}

// room returns room name, unlocked, or an error.
func (s *Store) room(name string) (*room, error) {
	if err := s.usable(); err != nil {
		return nil, err
	}
	if err := waitroom.CheckRoomName(name); err != nil {
		return nil, err
	}
	s.mu.RLock()
	r := s.rooms[name]
	s.mu.RUnlock()
	if r == nil {
		return nil, waitroom.RoomNotFound(name)
	}
	return r, nil
}

// get returns room name, locked, or an error.
func (s *Store) get(name string) (*room, error) {
	r, err := s.room(name)
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	if r.gone {
		r.mu.Unlock()
		return nil, waitroom.RoomNotFound(name)
	}
	return r, nil
}

// begin starts collecting an event for the operation, when anyone wants it.
func (s *Store) begin(r *room, kind waitroom.EventKind, now int64) {
	if s.journal == nil && s.nSubs.Load() == 0 && !s.hooked.Load() {
		r.ev = nil
		return
	}
	r.ev = &waitroom.Event{Room: r.name, Kind: kind, At: tm(now), PausedBefore: r.cfg.Paused}
	r.wasSoldOut = r.soldOut()
}

// commit finishes the operation's event while the room is still locked and
// returns what must run after unlocking: waiting for durability, then
// telling subscribers.
func (s *Store) commit(r *room) (after func() error) {
	r.tellNear()
	ev := r.ev
	r.ev = nil
	closing := r.closing()
	if closing {
		r.closedTold = ms(r.cfg.ClosesAt)
	}
	// An event of a draw that changed no session (nobody in the pre-queue)
	// still goes out: durable stores keep the draw from it; so does one
	// that took units (the units sold count changes only with those, or
	// in a config event).
	if ev == nil || (ev.Kind == waitroom.EventSessions && len(ev.Changes) == 0 && ev.Draw == nil && len(ev.Units) == 0 && !(r.soldOut() && !r.wasSoldOut) && !closing) {
		return r.barrier()
	}
	ev.Waiting, ev.Active, ev.LastTicket = r.nWaiting, len(r.active), r.lastTicket
	ev.Admissions, ev.Inversions, ev.MaxAdmitted, ev.Sold = r.admissions, r.inversions, r.maxAdmitted, r.sold
	ev.SoldOut = !r.wasSoldOut && r.soldOut()
	ev.Closed = closing && ev.Kind != waitroom.EventDeleted
	s.recordHooks(ev)
	var wait func() error
	if s.journal != nil {
		wait = s.journal.Append(ev)
		r.pending = wait
	}
	return func() error {
		if wait != nil {
			if err := wait(); err != nil {
				s.fail(err)
				return waitroom.Unavailable(err, "making a change durable")
			}
		}
		s.publish(*ev)
		return nil
	}
}

// barrier returns a wait for the room's latest change to be durable, so a
// read never reports state a crash could take back.
func (r *room) barrier() func() error {
	p := r.pending
	if p == nil {
		return func() error { return nil }
	}
	return p
}

func (s *Store) fail(err error) {
	s.failed.CompareAndSwap(nil, &err)
}

func (s *Store) publish(ev waitroom.Event) {
	if s.nSubs.Load() == 0 {
		return
	}
	s.subMu.RLock()
	defer s.subMu.RUnlock()
	for _, fn := range s.subs {
		fn(ev)
	}
}

// Subscribe implements waitroom.Store.
func (s *Store) Subscribe(fn func(waitroom.Event)) (cancel func()) {
	s.subMu.Lock()
	id := s.nextID
	s.nextID++
	s.subs[id] = fn
	s.nSubs.Add(1)
	s.subMu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			s.subMu.Lock()
			delete(s.subs, id)
			s.nSubs.Add(-1)
			s.subMu.Unlock()
		})
	}
}

// PutRoom implements waitroom.Store.
func (s *Store) PutRoom(ctx context.Context, name string, cfg waitroom.RoomConfig, now time.Time) (waitroom.Room, bool, error) {
	if err := s.usable(); err != nil {
		return waitroom.Room{}, false, err
	}
	if err := waitroom.CheckRoomName(name); err != nil {
		return waitroom.Room{}, false, err
	}
	if err := cfg.Validate(); err != nil {
		return waitroom.Room{}, false, err
	}
	cfg = cfg.Normalize()
	s.mu.Lock()
	r := s.rooms[name]
	created := r == nil
	if created {
		r = newRoom(name, cfg, s.tickets[name], s.keepHistory)
		s.rooms[name] = r
	}
	r.mu.Lock()
	s.mu.Unlock()
	t := r.clock(now)
	if created {
		r.fillBucket()
	}
	s.begin(r, waitroom.EventConfig, t)
	if created && r.ev != nil {
		r.ev.PausedBefore = false
	}
	r.settle(t)
	if err := firstErr(r.checkSchedule(cfg), r.checkStock(cfg), r.refusesTiers(cfg)); err != nil {
		if r.ev != nil {
			// Refused: nothing was configured, so no config event (one
			// without a Config would make durable stores lose theirs).
			r.ev.Kind = waitroom.EventSessions
		}
		after := s.commit(r)
		r.mu.Unlock()
		return waitroom.Room{}, false, firstErr(after(), err)
	}
	if !created {
		old := r.cfg.Inventory
		r.reconfigure(cfg)
		r.restock(old)
	}
	r.applySchedule(cfg, t)
	r.settle(t)
	if r.ev != nil {
		c := r.cfg
		r.ev.Config = &c
	}
	info := r.info()
	after := s.commit(r)
	r.mu.Unlock()
	if err := after(); err != nil {
		return waitroom.Room{}, false, err
	}
	return info, created, nil
}

// Room implements waitroom.Store.
func (s *Store) Room(ctx context.Context, name string) (waitroom.Room, error) {
	r, err := s.get(name)
	if err != nil {
		return waitroom.Room{}, err
	}
	info := r.info()
	wait := r.barrier()
	r.mu.Unlock()
	return info, wait()
}

// HasRoom reports whether room name exists, without waiting for its
// latest change to be durable (Room does): for a journal's own work, which
// runs while that change may be the one being written.
func (s *Store) HasRoom(name string) bool {
	r, err := s.room(name)
	if err != nil {
		return false
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	return !r.gone
}

// Rooms implements waitroom.Store.
func (s *Store) Rooms(ctx context.Context) ([]waitroom.Room, error) {
	if err := s.usable(); err != nil {
		return nil, err
	}
	s.mu.RLock()
	rs := make([]*room, 0, len(s.rooms))
	for _, r := range s.rooms {
		rs = append(rs, r)
	}
	s.mu.RUnlock()
	out := make([]waitroom.Room, 0, len(rs))
	for _, r := range rs {
		r.mu.Lock()
		if !r.gone {
			out = append(out, r.info())
		}
		r.mu.Unlock()
	}
	slices.SortFunc(out, func(a, b waitroom.Room) int {
		if a.Name < b.Name {
			return -1
		}
		if a.Name > b.Name {
			return 1
		}
		return 0
	})
	return out, nil
}

// DeleteRoom implements waitroom.Store.
func (s *Store) DeleteRoom(ctx context.Context, name string, force bool, now time.Time) error {
	r, err := s.get(name)
	if err != nil {
		return err
	}
	t := r.clock(now)
	s.begin(r, waitroom.EventSessions, t)
	r.settle(t)
	live := r.nWaiting + len(r.active)
	if r.preQueue() {
		live += r.sch.nPre
	}
	if !force && live > 0 {
		after := s.commit(r)
		r.mu.Unlock()
		return firstErr(after(), waitroom.Errorf(waitroom.CodeRoomNotEmpty, "Room %q has %d live sessions; delete it with force to end them.", name, live))
	}
	if r.ev != nil {
		r.ev.Kind = waitroom.EventDeleted
	}
	for tk, p := range r.active {
		r.end(tk, p, waitroom.ReasonRoomDeleted, t)
	}
	for r.nWaiting > 0 {
		tk, p := r.first()
		r.end(tk, p, waitroom.ReasonRoomDeleted, t)
	}
	if r.preQueue() {
		for i := range r.sch.pre {
			if p := &r.sch.pre[i]; p.status == stWaiting {
				r.endEntrant(int64(i+1), p, waitroom.ReasonRoomDeleted, t)
			}
		}
	}
	r.gone = true
	after := s.commit(r)
	s.mu.Lock()
	delete(s.rooms, name)
	s.tickets[name] = r.lastTicket
	s.mu.Unlock()
	r.mu.Unlock()
	return after()
}

// Join implements waitroom.Store.
func (s *Store) Join(ctx context.Context, name string, key string, now time.Time) (waitroom.Session, error) {
	return s.JoinWith(ctx, name, waitroom.JoinRequest{Key: key}, now)
}

// JoinWith implements waitroom.Store.
func (s *Store) JoinWith(ctx context.Context, name string, req waitroom.JoinRequest, now time.Time) (waitroom.Session, error) {
	if err := waitroom.CheckJoin(req, now); err != nil {
		return waitroom.Session{}, err
	}
	key := req.Key
	r, err := s.get(name)
	if err != nil {
		return waitroom.Session{}, err
	}
	t := r.clock(now)
	s.begin(r, waitroom.EventSessions, t)
	r.settle(t)
	if err := firstErr(r.closedError(t), r.soldOutError()); err != nil {
		after := s.commit(r)
		r.mu.Unlock()
		return waitroom.Session{}, firstErr(after(), err)
	}
	if key != "" {
		lt, ok := r.keys[key]
		var n int64
		if !ok && r.preQueue() {
			n, ok = r.sch.keys[key]
		}
		if ok {
			var live waitroom.Session
			if n != 0 {
				live = r.entrantView(waitroom.SessionID{Entry: n, Secret: r.sch.pre[n-1].secret}.String(), n, &r.sch.pre[n-1])
			} else {
				live = r.view(lt, r.lookup(lt), true)
			}
			after := s.commit(r)
			r.mu.Unlock()
			if err := after(); err != nil {
				return waitroom.Session{}, err
			}
			return waitroom.Session{}, &waitroom.Error{
				Code:    waitroom.CodeAlreadyJoined,
				Message: "This key already holds a live session in this room.",
				Session: &live,
			}
		}
	}
	if req.Contact != "" && (!r.cfg.HoldPlaces || r.preQueue()) {
		after := s.commit(r)
		r.mu.Unlock()
		return waitroom.Session{}, firstErr(after(), waitroom.NotHeld(r.name, r.cfg.HoldPlaces && r.preQueue()))
	}
	tier := r.cfg.TierIndex(req.Tier)
	if err := r.spendable(req.Uses, t); tier < 0 || err != nil {
		if tier < 0 {
			err = waitroom.NoTierError(r.name, req.Tier)
		}
		after := s.commit(r)
		r.mu.Unlock()
		return waitroom.Session{}, firstErr(after(), err)
	}
	r.spend(req.Uses, t)
	if r.preQueue() {
		out := r.enter(key, tier, t)
		after := s.commit(r)
		r.mu.Unlock()
		return out, after()
	}
	tk, _ := r.join(key, tier, req.Contact, t)
	r.settle(t)
	var out waitroom.Session
	if p := r.lookup(tk); p != nil {
		out = r.view(tk, p, true)
	}
	after := s.commit(r)
	r.mu.Unlock()
	return out, after()
}

// find resolves id in a locked room: the live rec, or nil with the parsed id
// for a history lookup.
func (s *Store) find(r *room, id string) (waitroom.SessionID, *rec, error) {
	sid, err := waitroom.ParseSessionID(id)
	if err != nil {
		return sid, nil, err
	}
	if sid.Entry != 0 && r.preQueue() {
		p := r.entrant(sid.Entry)
		if p != nil && !sid.Matches(p.secret) {
			return sid, nil, waitroom.SessionNotFound()
		}
		return sid, p, nil
	}
	r.resolve(&sid)
	if sid.Ticket == 0 {
		return sid, nil, nil // an entry id of no live session: look in the history
	}
	p := r.lookup(sid.Ticket)
	if p != nil && !sid.Matches(p.secret) {
		return sid, nil, waitroom.SessionNotFound()
	}
	return sid, p, nil
}

// liveOrEnded returns the live session id names in the locked, settled room
// r. When there is none it finishes the call: it commits, unlocks r and
// returns (with a nil rec) the ended session or the error to answer.
func (s *Store) liveOrEnded(ctx context.Context, r *room, id string) (waitroom.SessionID, *rec, waitroom.Session, error) {
	sid, p, err := s.find(r, id)
	if err == nil && p != nil {
		return sid, p, waitroom.Session{}, nil
	}
	after := s.commit(r)
	hist := r.hist
	r.mu.Unlock()
	if err != nil {
		return sid, nil, waitroom.Session{}, firstErr(after(), err)
	}
	out, err := s.ended(ctx, r, sid, hist, after)
	return sid, nil, out, err
}

// ended finds an ended session after the room was unlocked. wait is the
// barrier to pass first.
func (s *Store) ended(ctx context.Context, r *room, sid waitroom.SessionID, hist *history, wait func() error) (waitroom.Session, error) {
	if err := wait(); err != nil {
		return waitroom.Session{}, err
	}
	if hist != nil {
		r.mu.Lock()
		got, ok := hist.find(sid)
		var totals waitroom.Session
		r.totals(&totals)
		r.mu.Unlock()
		if !ok {
			return waitroom.Session{}, waitroom.SessionNotFound()
		}
		got.Waiting, got.Active, got.Capacity = totals.Waiting, totals.Active, totals.Capacity
		got.Stocked, got.Remaining = totals.Stocked, totals.Remaining
		return got, nil
	}
	if s.archive == nil {
		return waitroom.Session{}, waitroom.SessionNotFound()
	}
	got, ok, err := s.archive.Find(ctx, r.name, sid)
	if err != nil {
		return waitroom.Session{}, waitroom.Unavailable(err, "reading history")
	}
	if !ok {
		return waitroom.Session{}, waitroom.SessionNotFound()
	}
	r.mu.Lock()
	r.totals(&got)
	r.mu.Unlock()
	return got, nil
}

// Session implements waitroom.Store.
func (s *Store) Session(ctx context.Context, room, id string, now time.Time) (waitroom.Session, error) {
	return s.presence(ctx, room, id, false, now)
}

// Heartbeat implements waitroom.Store.
func (s *Store) Heartbeat(ctx context.Context, room, id string, now time.Time) (waitroom.Session, error) {
	return s.presence(ctx, room, id, true, now)
}

func (s *Store) presence(ctx context.Context, name, id string, activity bool, now time.Time) (waitroom.Session, error) {
	r, err := s.room(name)
	if err != nil {
		return waitroom.Session{}, err
	}
	if out, wait, ok := r.presenceShared(id, activity, ms(now)); ok {
		return out, wait()
	}
	r.mu.Lock()
	if r.gone {
		r.mu.Unlock()
		return waitroom.Session{}, waitroom.RoomNotFound(name)
	}
	t := r.clock(now)
	s.begin(r, waitroom.EventSessions, t)
	r.settle(t)
	sid, p, out, err := s.liveOrEnded(ctx, r, id)
	if p == nil {
		return out, err
	}
	if sid.Ticket == 0 {
		// An entrant needs no presence before the draw; its last seen
		// time is kept for nothing but the record.
		p.touch = t
		out = r.entrantView(id, sid.Entry, p)
	} else {
		r.touch(sid.Ticket, p, activity, t)
		out = r.viewID(id, sid.Ticket, p, true)
	}
	after := s.commit(r)
	r.mu.Unlock()
	return out, after()
}

func firstErr(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

// Away implements waitroom.Store.
func (s *Store) Away(ctx context.Context, name, id string, now time.Time) error {
	r, err := s.get(name)
	if err != nil {
		return err
	}
	t := r.clock(now)
	s.begin(r, waitroom.EventSessions, t)
	r.settle(t)
	sid, p, err := s.find(r, id)
	if err == nil && p != nil && sid.Ticket != 0 {
		// Entrants need no presence before the draw, so going away
		// changes nothing for them.
		r.goAway(sid.Ticket, p, t)
		r.settle(t)
	}
	after := s.commit(r)
	hist := r.hist
	r.mu.Unlock()
	if aerr := after(); aerr != nil {
		return aerr
	}
	if err != nil {
		return err
	}
	if p == nil {
		// Away on an ended session does nothing, but an unknown one is
		// still an error.
		_, err = s.ended(ctx, r, sid, hist, func() error { return nil })
		return err
	}
	return nil
}

// Leave implements waitroom.Store.
func (s *Store) Leave(ctx context.Context, name, id string, reason waitroom.Reason, now time.Time) (waitroom.Session, error) {
	if reason != waitroom.ReasonLeft && reason != waitroom.ReasonRevoked {
		return waitroom.Session{}, waitroom.Errorf(waitroom.CodeInvalidRequest, "A session leaves with reason left or revoked, not %q.", string(reason))
	}
	r, err := s.get(name)
	if err != nil {
		return waitroom.Session{}, err
	}
	t := r.clock(now)
	s.begin(r, waitroom.EventSessions, t)
	r.settle(t)
	sid, p, out, err := s.liveOrEnded(ctx, r, id)
	if p == nil {
		return out, err
	}
	if sid.Ticket == 0 {
		out = r.endEntrant(sid.Entry, p, reason, t)
	} else {
		out = r.end(sid.Ticket, p, reason, t)
	}
	r.settle(t)
	r.totals(&out)
	after := s.commit(r)
	r.mu.Unlock()
	return out, after()
}

// Advance implements waitroom.Store.
func (s *Store) Advance(ctx context.Context, name string, n int, now time.Time) ([]waitroom.Session, error) {
	if n < 1 || n > waitroom.MaxAdvance {
		return nil, waitroom.Errorf(waitroom.CodeInvalidRequest, "n must be between 1 and %d.", waitroom.MaxAdvance)
	}
	r, err := s.get(name)
	if err != nil {
		return nil, err
	}
	t := r.clock(now)
	s.begin(r, waitroom.EventSessions, t)
	r.settle(t)
	if r.nWaiting == 0 {
		after := s.commit(r)
		r.mu.Unlock()
		return nil, firstErr(after(), waitroom.Errorf(waitroom.CodeQueueEmpty, "Nobody is waiting in room %q.", name))
	}
	out := r.advance(n, t)
	r.settle(t)
	for i := range out {
		r.totals(&out[i])
	}
	after := s.commit(r)
	r.mu.Unlock()
	return out, after()
}

// Sweep implements waitroom.Store.
func (s *Store) Sweep(ctx context.Context, name string, now time.Time) (waitroom.SweepResult, error) {
	r, err := s.get(name)
	if err != nil {
		return waitroom.SweepResult{}, err
	}
	t := r.clock(now)
	s.begin(r, waitroom.EventSessions, t)
	expired, admitted := r.settle(t)
	res := waitroom.SweepResult{Expired: expired, Admitted: admitted, Next: tm(r.next())}
	after := s.commit(r)
	r.mu.Unlock()
	return res, after()
}

// Ping implements waitroom.Store.
func (s *Store) Ping(ctx context.Context) error { return s.usable() }

// Close implements waitroom.Store.
func (s *Store) Close() error {
	s.closed.Store(true)
	return nil
}
