package engine

import (
	"sync"

	"github.com/waitroom/waitroom"
)

// This file is each operation's event: collected while the room is locked,
// made durable through the journal, then told to subscribers.

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
