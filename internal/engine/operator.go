package engine

import (
	"context"
	"slices"
	"time"

	"github.com/waitroom/waitroom"
)

// The operator's moves (waitroom.Store's QueueAll, Front, Extend and
// Lookup). A moved session leaves the waiting array, which is indexed by
// ticket, for the lane ahead of it.

// QueueAll implements waitroom.Store.
func (s *Store) QueueAll(ctx context.Context, name string, now time.Time) (waitroom.Room, []waitroom.Session, error) {
	r, err := s.get(name)
	if err != nil {
		return waitroom.Room{}, nil, err
	}
	t := r.clock(now)
	s.begin(r, waitroom.EventConfig, t)
	r.settle(t)
	r.cfg.Paused = true
	r.rev++
	tickets := make([]int64, 0, len(r.active))
	for tk := range r.active {
		tickets = append(tickets, tk)
	}
	slices.Sort(tickets)
	k := int64(len(tickets))
	recs := make([]*rec, len(tickets))
	from := make([]waitroom.Status, len(tickets))
	for i, tk := range tickets {
		p := r.active[tk]
		delete(r.active, tk)
		if p.unit {
			r.reserved--
		}
		from[i] = waitroom.StatusActive
		if p.status == stInvited {
			from[i] = waitroom.StatusInvited
		}
		// It had its turn: it is not told it is near again.
		p.unit, p.status, p.admitted, p.touch, p.sched, p.near = false, stWaiting, 0, t, 0, true
		p.place = r.front - k + int64(i)
		recs[i] = p
	}
	// The lane takes places from the largest down: the last ticket first.
	for i := len(recs) - 1; i >= 0; i-- {
		r.lane.add(tickets[i], recs[i])
		r.nWaiting++
		r.schedule(tickets[i], recs[i])
	}
	r.front -= k
	r.lineMoved = true
	moved := make([]rec, len(tickets))
	keys := make([]string, len(tickets))
	for i, tk := range tickets {
		r.record(tk, recs[i], from[i])
		moved[i], keys[i] = *recs[i], r.keyOf[tk]
	}
	r.settle(t)
	// The room is paused, so they are all still waiting, unless the room
	// sold out: then the line, them included, just ended.
	out := make([]waitroom.Session, len(tickets))
	for i, tk := range tickets {
		if p := r.lookup(tk); p != nil {
			out[i] = r.view(tk, p, true)
		} else {
			out[i] = r.final(tk, &moved[i], keys[i], waitroom.ReasonSoldOut, t)
			r.totals(&out[i])
		}
	}
	r.configured()
	info := r.info()
	after := s.commit(r)
	r.mu.Unlock()
	if err := after(); err != nil {
		return waitroom.Room{}, nil, err
	}
	return info, out, nil
}

// Front implements waitroom.Store.
func (s *Store) Front(ctx context.Context, name, id string, now time.Time) (waitroom.Session, error) {
	return s.operate(ctx, name, id, now, notWaiting, func(r *room, tk int64, p *rec, t int64) (*rec, error) {
		if p.status != stWaiting {
			return nil, notWaiting
		}
		q := p
		if p.place < 0 {
			r.lane.remove(tk, p.place)
		} else {
			// Out of the array (and its tier's line) into the lane.
			q = new(rec)
			*q = *p
			if p.place > 0 {
				r.line(int(p.tier)).remove(tk)
			}
			r.unslot(tk, p)
		}
		r.front--
		q.place, q.touch, q.sched = r.front, t, 0
		r.lane.add(tk, q)
		r.lineMoved = true
		r.schedule(tk, q)
		r.record(tk, q, waitroom.StatusWaiting)
		return q, nil
	})
}

// Extend implements waitroom.Store.
func (s *Store) Extend(ctx context.Context, name, id string, by time.Duration, now time.Time) (waitroom.Session, error) {
	if err := waitroom.CheckExtend(by); err != nil {
		return waitroom.Session{}, err
	}
	return s.operate(ctx, name, id, now, notActive, func(r *room, tk int64, p *rec, t int64) (*rec, error) {
		if p.status != stActive {
			return nil, notActive
		}
		if err := waitroom.CheckExtended(time.Duration(p.extra)*time.Millisecond + by); err != nil {
			return nil, err
		}
		p.extra += by.Milliseconds()
		r.touch(tk, p, true, t)
		r.schedule(tk, p)
		r.record(tk, p, waitroom.StatusActive)
		return p, nil
	})
}

var (
	notWaiting = waitroom.Errorf(waitroom.CodeInvalidRequest, "Only a waiting session can be moved to the front.")
	notActive  = waitroom.Errorf(waitroom.CodeInvalidRequest, "Only an active session can be extended.")
)

// operate runs f on live session id of room name, settled at now, and
// answers the session after it (after a second settle, which may admit it).
// A session that ended, or waits in a pre-queue, gets refuse.
func (s *Store) operate(ctx context.Context, name, id string, now time.Time, refuse error, f func(r *room, tk int64, p *rec, t int64) (*rec, error)) (waitroom.Session, error) {
	r, err := s.get(name)
	if err != nil {
		return waitroom.Session{}, err
	}
	t := r.clock(now)
	s.begin(r, waitroom.EventSessions, t)
	r.settle(t)
	sid, p, _, err := s.liveOrEnded(ctx, r, id)
	if err != nil {
		return waitroom.Session{}, err
	}
	if p == nil {
		return waitroom.Session{}, refuse // it ended; liveOrEnded unlocked r
	}
	if sid.Ticket == 0 { // an entrant of a pre-queue
		after := s.commit(r)
		r.mu.Unlock()
		return waitroom.Session{}, firstErr(after(), refuse)
	}
	q, err := f(r, sid.Ticket, p, t)
	var out waitroom.Session
	if err == nil {
		r.settle(t)
		if live := r.lookup(sid.Ticket); live != nil {
			out = r.viewID(id, sid.Ticket, live, true)
		} else {
			out = r.view(sid.Ticket, q, true)
		}
	}
	after := s.commit(r)
	r.mu.Unlock()
	return out, firstErr(after(), err)
}

// Lookup implements waitroom.Store.
func (s *Store) Lookup(ctx context.Context, name string, ticket int64, key string) (waitroom.Session, error) {
	r, err := s.get(name)
	if err != nil {
		return waitroom.Session{}, err
	}
	if ticket <= 0 {
		tk, ok := r.keys[key]
		if !ok && r.preQueue() {
			if n, ok := r.sch.keys[key]; ok {
				if p := r.entrant(n); p != nil {
					out := r.entrantView(waitroom.SessionID{Entry: n, Secret: p.secret}.String(), n, p)
					wait := r.barrier()
					r.mu.Unlock()
					return out, wait()
				}
			}
		}
		if !ok {
			r.mu.Unlock()
			return waitroom.Session{}, waitroom.SessionNotFound()
		}
		ticket = tk
	}
	if p := r.lookup(ticket); p != nil {
		out := r.view(ticket, p, true)
		wait := r.barrier()
		r.mu.Unlock()
		return out, wait()
	}
	wait := r.barrier()
	hist := r.hist
	r.mu.Unlock()
	if err := wait(); err != nil {
		return waitroom.Session{}, err
	}
	var got waitroom.Session
	var ok bool
	switch a, can := s.archive.(TicketArchive); {
	case hist != nil:
		r.mu.Lock()
		got, ok = hist.findTicket(ticket)
		r.mu.Unlock()
	case can:
		got, ok, err = a.FindTicket(ctx, name, ticket)
		if err != nil {
			return waitroom.Session{}, waitroom.Unavailable(err, "reading history")
		}
	}
	if !ok {
		return waitroom.Session{}, waitroom.SessionNotFound()
	}
	r.mu.Lock()
	r.totals(&got)
	r.mu.Unlock()
	return got, nil
}

// TicketArchive is an Archive that can also find an ended session by its
// ticket alone, for Lookup.
type TicketArchive interface {
	Archive
	FindTicket(ctx context.Context, room string, ticket int64) (waitroom.Session, bool, error)
}
