package engine

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/waitroom/waitroom"
)

// This file is presence and expiry: Session, Heartbeat and Away, each
// session's deadline, and settling what is due (Sweep).

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

// presenceShared records presence of a live session under the read lock,
// which concurrent callers share. It declines (ok false) whenever the write
// path has work: something due at now (a deadline or the draw), an
// admission the rate now allows, a deadline to schedule, or an id that is
// not a live session here.
func (r *room) presenceShared(id string, activity bool, now int64) (s waitroom.Session, wait func() error, ok bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if r.gone {
		return s, nil, false
	}
	now = max(now, atomic.LoadInt64(&r.lastNow))
	if r.heap.len() > 0 && r.heap.top().at <= now {
		return s, nil, false
	}
	if r.nWaiting > 0 && r.canAdmit() && r.tokenDue(now) {
		return s, nil, false
	}
	if r.preQueue() && now >= r.sch.opensAt {
		return s, nil, false // the draw is due
	}
	if c := r.cfg.ClosesAt; !c.IsZero() && now >= ms(c) && r.closedTold != ms(c) {
		return s, nil, false // the closing is to be told
	}
	sid, err := waitroom.ParseSessionID(id)
	if err != nil || (sid.Entry != 0 && (r.sch == nil || !r.sch.drawn)) {
		return s, nil, false
	}
	r.resolve(&sid)
	p := r.lookup(sid.Ticket)
	if p == nil || !sid.Matches(p.secret) || (p.sched == 0 && r.hasTimer(p.status)) {
		return s, nil, false
	}
	atomicMax(&r.lastNow, now)
	if p.status == stWaiting || activity {
		atomicMax(&p.touch, now)
	}
	if atomic.LoadInt64(&p.away) != 0 {
		atomic.StoreInt64(&p.away, 0)
	}
	return r.viewID(id, sid.Ticket, p, true), r.barrier(), true
}

// hasTimer reports whether a present session with status st has a deadline.
func (r *room) hasTimer(st uint8) bool {
	if st == stWaiting {
		return r.cfg.WaitingTimeout > 0
	}
	return r.cfg.ActiveTimeout > 0 || r.cfg.MaxSession > 0
}

// deadline returns when p is due and why; 0 when it has no deadline.
func (r *room) deadline(p *rec) (int64, waitroom.Reason) {
	var at int64
	var why waitroom.Reason
	consider := func(d int64, reason waitroom.Reason) {
		if d != 0 && (at == 0 || d < at) {
			at, why = d, reason
		}
	}
	switch {
	case p.status == stInvited:
		return p.admitted + r.cfg.HeldWindow().Milliseconds(), waitroom.ReasonUnclaimed
	case p.status == stWaiting && p.held:
		return 0, "" // held: no presence needed
	case p.status == stWaiting:
		if wt := r.cfg.WaitingTimeout.D().Milliseconds(); wt > 0 {
			consider(p.touch+wt, waitroom.ReasonNoPresence)
		}
	default:
		if ms := r.cfg.MaxSession.D().Milliseconds(); ms > 0 {
			consider(p.admitted+ms+p.extra, waitroom.ReasonMaxSession)
		}
		if it := r.cfg.ActiveTimeout.D().Milliseconds(); it > 0 {
			consider(p.touch+it, waitroom.ReasonIdle)
		}
	}
	consider(p.away, waitroom.ReasonGone)
	return at, why
}

// schedule makes sure p's heap entry is no later than its deadline. Later
// deadlines are left to the lazy check when the entry comes due.
func (r *room) schedule(t int64, p *rec) {
	d, _ := r.deadline(p)
	if d == 0 {
		return
	}
	if p.sched == 0 || d < p.sched {
		p.sched = d
		r.heap.push(deadline{at: d, ticket: t})
	}
}

// settle holds a draw that is due, expires everything due at now, then
// admits into free slots.
func (r *room) settle(now int64) (expired, admitted int) {
	r.drawIfDue(now)
	for r.heap.len() > 0 && r.heap.top().at <= now {
		e := r.heap.pop()
		p := r.lookup(e.ticket)
		if p == nil || p.sched != e.at {
			continue // stale entry
		}
		d, why := r.deadline(p)
		switch {
		case d == 0:
			p.sched = 0
		case d > now:
			p.sched = d
			r.heap.push(deadline{at: d, ticket: e.ticket})
		default:
			r.end(e.ticket, p, why, now)
			expired++
		}
	}
	admitted = r.admit(now)
	return expired + r.endSoldOut(now), admitted
}

// touch records presence (and, with activity, activity) for p.
func (r *room) touch(t int64, p *rec, activity bool, now int64) {
	if p.status == stWaiting || activity {
		p.touch = now
	}
	p.away = 0
	if p.sched == 0 {
		r.schedule(t, p)
	}
}

// goAway starts p's grace period; a session that needs no presence (held
// and waiting, or invited) ignores it.
func (r *room) goAway(t int64, p *rec, now int64) {
	if p.status == stInvited || (p.status == stWaiting && p.held) {
		return
	}
	p.away = now + r.cfg.Grace.D().Milliseconds()
	if p.away == 0 {
		p.away = 1 // now is the epoch: keep "away" distinguishable from unset
	}
	r.schedule(t, p)
}

// next returns the earliest time something may be due, 0 for none.
func (r *room) next() int64 {
	var at int64
	if r.heap.len() > 0 {
		at = r.heap.top().at
	}
	if r.preQueue() && (at == 0 || r.sch.opensAt < at) {
		at = r.sch.opensAt
	}
	if rate := int64(r.cfg.RatePerMinute); rate > 0 && r.nWaiting > 0 && r.canAdmit() && r.units < 60_000 {
		t := r.unitsAt + (60_000-r.units+rate-1)/rate
		if at == 0 || t < at {
			at = t
		}
	}
	return at
}
