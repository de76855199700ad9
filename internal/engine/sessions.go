package engine

import (
	"context"
	"time"

	"github.com/waitroom/waitroom"
)

// This file is finding sessions, live or ended, building what callers see
// of them, and ending them (Leave).

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

// end finishes live session t for reason and returns its final Session. It
// hands nothing on by itself: callers settle afterwards.
func (r *room) end(t int64, p *rec, why waitroom.Reason, now int64) waitroom.Session {
	from := waitroom.StatusWaiting
	ended := *p
	if p.status != stWaiting {
		from = waitroom.StatusActive
		if p.status == stInvited {
			from = waitroom.StatusInvited
		}
		delete(r.active, t)
		if p.unit {
			r.reserved--
		}
	} else {
		r.unwait(t, p)
	}
	var key string
	if ended.hasKey {
		key = r.keyOf[t]
		delete(r.keyOf, t)
		delete(r.keys, key)
	}
	s := r.final(t, &ended, key, why, now)
	if r.hist != nil {
		r.hist.add(s)
	}
	if r.ev != nil {
		c := waitroom.Change{Session: s, From: from}
		if ended.held {
			c.Session.Contact = r.contacts[t] // the webhooks tell the contact why it ended
		}
		r.ev.Changes = append(r.ev.Changes, c)
	}
	if ended.held {
		delete(r.contacts, t)
	}
	return s
}

// final builds the Session of a session that ended.
func (r *room) final(t int64, p *rec, key string, why waitroom.Reason, now int64) waitroom.Session {
	n, entry := r.drawnEntry(t)
	return waitroom.Session{
		Entry:      entry,
		ID:         waitroom.SessionID{Ticket: t, Entry: n, Secret: p.secret}.String(),
		Room:       r.name,
		Status:     why.Status(),
		Ticket:     t,
		Key:        key,
		JoinedAt:   tm(p.joined),
		AdmittedAt: tm(p.admitted),
		EndedAt:    tm(now),
		EndReason:  why,
	}
}

// record adds a change to the current event, if events are wanted.
func (r *room) record(t int64, p *rec, from waitroom.Status) {
	if r.ev == nil {
		return
	}
	r.ev.Changes = append(r.ev.Changes, waitroom.Change{Session: r.view(t, p, false), From: from})
}

// view builds the Session of live session t; with pos, its position too.
func (r *room) view(t int64, p *rec, pos bool) waitroom.Session {
	n, _ := r.drawnEntry(t)
	return r.viewID(waitroom.SessionID{Ticket: t, Entry: n, Secret: p.secret}.String(), t, p, pos)
}

// viewID is view for a caller that already holds the id's string form.
func (r *room) viewID(id string, t int64, p *rec, pos bool) waitroom.Session {
	s := waitroom.Session{
		ID:         id,
		Room:       r.name,
		Ticket:     t,
		JoinedAt:   tm(p.joined),
		AdmittedAt: tm(p.admitted),
		Place:      p.place,
		Extended:   time.Duration(p.extra) * time.Millisecond,
		Tier:       r.tierName(p),
	}
	if p.hasKey {
		s.Key = r.keyOf[t]
	}
	_, s.Entry = r.drawnEntry(t)
	s.Unit = p.unit && p.status != stWaiting
	switch p.status {
	case stWaiting:
		s.Status = waitroom.StatusWaiting
		if pos {
			s.Position = r.position(t, p)
		}
	case stInvited:
		s.Status = waitroom.StatusInvited
		s.ClaimBy = tm(p.admitted + r.cfg.HeldWindow().Milliseconds())
	default:
		s.Status = waitroom.StatusActive
	}
	if p.held {
		s.Contact = r.contacts[t]
	}
	r.totals(&s)
	return s
}

func (r *room) totals(s *waitroom.Session) {
	s.Waiting = r.nWaiting
	s.Active = len(r.active)
	s.Capacity = r.cfg.Capacity
	if r.cfg.Inventory != nil {
		s.Stocked, s.Remaining = true, r.remaining()
	}
}
