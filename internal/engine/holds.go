package engine

import (
	"context"
	"math"
	"time"

	"github.com/waitroom/waitroom"
)

// Holding places and telling sessions they are near (see waitroom's
// holds.go). A held session is a rec with held set and its contact in
// room.contacts; its admission makes it stInvited, which lives in active
// (so it holds a slot) with admitted as its invitation, due a claim window
// later. Claim makes it stActive.

// addContact makes p (ticket t) held when contact is set.
func (r *room) addContact(t int64, p *rec, contact string) {
	if contact == "" {
		return
	}
	p.held = true
	r.contacts[t] = contact
}

// Claim implements waitroom.Store.
func (s *Store) Claim(ctx context.Context, name, id string, now time.Time) (waitroom.Session, error) {
	r, err := s.get(name)
	if err != nil {
		return waitroom.Session{}, err
	}
	t := r.clock(now)
	s.begin(r, waitroom.EventSessions, t)
	r.settle(t)
	sid, p, out, err := s.liveOrEnded(ctx, r, id)
	if p == nil {
		if err != nil {
			return out, err
		}
		return waitroom.Session{}, waitroom.NotInvited(out)
	}
	if sid.Ticket == 0 {
		out = r.entrantView(id, sid.Entry, p)
		after := s.commit(r)
		r.mu.Unlock()
		return waitroom.Session{}, firstErr(after(), waitroom.NotInvited(out))
	}
	tk := sid.Ticket
	switch p.status {
	case stWaiting:
		out = r.viewID(id, tk, p, true)
		after := s.commit(r)
		r.mu.Unlock()
		return waitroom.Session{}, firstErr(after(), waitroom.NotInvited(out))
	case stInvited:
		p.status, p.admitted, p.touch, p.away, p.sched = stActive, t, t, 0, 0
		r.schedule(tk, p)
		r.record(tk, p, waitroom.StatusInvited)
		r.settle(t)
	}
	out = r.viewID(id, tk, p, true)
	after := s.commit(r)
	r.mu.Unlock()
	return out, after()
}

// nearMoves notes that waiting session p (ticket t), which joins or
// leaves the line, may change who stands within notify_at: it does when
// its position is within it. Joins at the back of a long line and leaves
// far behind cost nothing more.
func (r *room) nearMoves(t int64, p *rec) {
	if n := r.cfg.NotifyAt; n > 0 && !r.lineMoved && r.position(t, p) <= int64(n) {
		r.lineMoved = true
	}
}

// tellNear tells the waiting sessions at positions up to notify_at that
// were never told, in line order, once the line moved. It runs at every
// commit, after the operation's last settle, and reads at most notify_at
// sessions (plus the empty slots between them).
func (r *room) tellNear() {
	moved := r.lineMoved
	r.lineMoved = false
	n := r.cfg.NotifyAt
	if n <= 0 || !moved || r.nWaiting == 0 || r.gone {
		return
	}
	var pos int64
	tell := func(t int64, p *rec) bool {
		pos++
		if !p.near {
			p.near = true
			if r.ev != nil {
				v := r.view(t, p, false)
				v.Position = pos
				r.ev.Changes = append(r.ev.Changes, waitroom.Change{Session: v, From: waitroom.StatusWaiting, Near: true})
			}
		}
		return int(pos) < n
	}
	for _, e := range r.lane.after(math.MinInt64) {
		if !tell(e.ticket, e.rec) {
			return
		}
	}
	if r.tiered() {
		for _, tk := range r.tierMerge(0, n-int(pos)) {
			if !tell(tk, r.wait.at(int(tk-r.base))) {
				return
			}
		}
		return
	}
	for i := r.head; i < r.wait.len(); i++ {
		if p := r.wait.at(i); p.status == stWaiting && !tell(r.base+int64(i), p) {
			return
		}
	}
}
