package engine

import (
	"context"
	"time"

	"github.com/waitroom/waitroom"
)

// This file is admission: joining the line, the rate's token bucket, and
// moving the head of the line into free slots (automatically or by Advance).

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
	// A spent token is refused before its key is looked at: an already_joined
	// answer carries the key's live session, and a token whose uses are
	// gone (a forwarded invite link) must not lead anyone to it.
	if err := firstErr(r.closedError(t), r.soldOutError(), r.spendable(req.Uses, t)); err != nil {
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
	if tier < 0 {
		after := s.commit(r)
		r.mu.Unlock()
		return waitroom.Session{}, firstErr(after(), waitroom.NoTierError(r.name, req.Tier))
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

// tokenDue reports, without changing the bucket, whether the rate allows an
// admission at now.
func (r *room) tokenDue(now int64) bool {
	rate := int64(r.cfg.RatePerMinute)
	if rate == 0 {
		return true
	}
	elapsed := now - r.unitsAt
	return elapsed > 60_000 || r.units+elapsed*rate >= 60_000
}

// refill brings the token bucket up to now.
func (r *room) refill(now int64) {
	rate := int64(r.cfg.RatePerMinute)
	if rate == 0 {
		return
	}
	full := burst(rate) * 60_000
	if elapsed := now - r.unitsAt; elapsed > 0 {
		if elapsed >= full/rate+1 {
			r.units = full
		} else {
			r.units = min(full, r.units+elapsed*rate)
		}
	}
	r.unitsAt = now
}

// burst is the bucket size in tokens: one second's worth, at least one.
func burst(rate int64) int64 { return max(1, (rate+59)/60) }

func (r *room) fillBucket() {
	r.units = burst(int64(r.cfg.RatePerMinute)) * 60_000
	r.unitsAt = r.lastNow
}

// takeToken reports whether the rate allows one admission now, taking it.
func (r *room) takeToken(now int64) bool {
	if r.cfg.RatePerMinute == 0 {
		return true
	}
	r.refill(now)
	if r.units < 60_000 {
		return false
	}
	r.units -= 60_000
	return true
}

// canAdmit reports whether automatic admission is open at all.
func (r *room) canAdmit() bool {
	return r.cfg.Mode == waitroom.ModeAuto && !r.cfg.Paused && len(r.active) < r.cfg.Capacity &&
		(r.cfg.Inventory == nil || r.remaining() > 0)
}

// admit moves the head of the line into free slots.
func (r *room) admit(now int64) int {
	n := 0
	for r.nWaiting > 0 && r.canAdmit() && r.takeToken(now) {
		t, p := r.first()
		r.activate(t, p, now)
		n++
	}
	return n
}

// activate makes waiting session t (at p, a slot of the array) active, or
// invited when it is held.
func (r *room) activate(t int64, p *rec, now int64) {
	a := new(rec)
	*a = *p
	a.status = stActive
	if a.held {
		a.status = stInvited
	}
	a.admitted = now
	a.touch = now
	a.sched = 0
	a.unit = r.reserve()
	r.unwait(t, p)
	r.active[t] = a
	r.schedule(t, a)
	r.record(t, a, waitroom.StatusWaiting)
	r.count(t, a)
}

// first returns the first session in line; someone must wait.
func (r *room) first() (int64, *rec) {
	if t, p := r.lane.first(); p != nil {
		return t, p
	}
	if r.tiered() {
		return r.tierFirst()
	}
	return r.base + int64(r.head), r.wait.at(r.head)
}

// count records the admission (or service) of ticket t, whose record is p.
// A session an operator moved is counted but is no inversion: it was placed
// on purpose. In a tiered room order is kept inside each tier.
func (r *room) count(t int64, p *rec) {
	r.admissions++
	if p.place < 0 {
		return
	}
	if p.place > 0 {
		r.letInTier(t, int(p.tier), p.place)
		return
	}
	if t < r.maxAdmitted {
		r.inversions++
	}
	r.maxAdmitted = max(r.maxAdmitted, t)
}

// join issues the next ticket, in tier (0 in a room without tiers); a
// contact makes it held.
func (r *room) join(key string, tier int, contact string, now int64) (int64, *rec) {
	r.lastTicket++
	t := r.lastTicket
	id := waitroom.NewSessionID(t)
	var place int64
	if r.tiered() {
		place = r.placeFor(tier, t)
	}
	if r.nWaiting == 0 && r.canAdmit() && r.takeToken(now) {
		a := &rec{secret: id.Secret, joined: now, admitted: now, touch: now, status: stActive, unit: r.reserve(),
			place: place, tier: uint8(tier)}
		r.active[t] = a
		r.base = t + 1 // nobody waits: the array stays empty
		r.addKey(t, a, key)
		r.addContact(t, a, contact)
		if a.held {
			a.status = stInvited
		}
		r.schedule(t, a)
		r.record(t, a, "")
		r.count(t, a)
		return t, a
	}
	p := r.enqueue(t, rec{secret: id.Secret, joined: now, touch: now, status: stWaiting, place: place, tier: uint8(tier)})
	r.addKey(t, p, key)
	r.addContact(t, p, contact)
	r.schedule(t, p)
	r.record(t, p, "")
	return t, p
}

// enqueue puts waiting session p with ticket t (the largest yet) at the
// back of the array and, in a tiered room, of its tier's line.
func (r *room) enqueue(t int64, p rec) *rec {
	for r.base+int64(r.wait.len()) < t {
		// Tickets that never waited here (restored state) keep their slots.
		r.wait.push(rec{})
		r.ranks.push(false)
	}
	q := r.wait.push(p)
	r.ranks.push(true)
	r.nWaiting++
	r.nLine++
	if p.place > 0 {
		r.line(int(p.tier)).add(t, p.place)
	}
	r.nearMoves(t, q)
	return q
}

func (r *room) addKey(t int64, p *rec, key string) {
	if key == "" {
		return
	}
	p.hasKey = true
	r.keys[key] = t
	r.keyOf[t] = key
}

// advance moves up to n of the line on; it returns their Sessions.
func (r *room) advance(n int, now int64) []waitroom.Session {
	out := make([]waitroom.Session, 0, min(n, r.nWaiting))
	for len(out) < n && r.nWaiting > 0 {
		t, p := r.first()
		if r.cfg.Mode == waitroom.ModeManual {
			was := *p
			out = append(out, r.end(t, p, waitroom.ReasonServed, now))
			r.count(t, &was)
			continue
		}
		r.activate(t, p, now)
		out = append(out, r.view(t, r.active[t], false))
	}
	return out
}
