package engine

import (
	"fmt"
	"slices"
	"time"

	"github.com/waitroom/waitroom"
)

// Restore loads one room's durable state into an empty store, for a durable
// backend recovering on start. live holds the room's waiting and active
// sessions (any order). Presence and activity timers restart at now: who was
// present before the restart gets a full timeout to show up again. Restore
// records nothing in the journal; call it before the store serves.
func (s *Store) Restore(name string, cfg waitroom.RoomConfig, lastTicket int64, live []waitroom.Session, now time.Time) error {
	if err := waitroom.CheckRoomName(name); err != nil {
		return fmt.Errorf("restore room %q: %w", name, err)
	}
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("restore room %q: %w", name, err)
	}
	byTicket := func(a, b waitroom.Session) int { return int(min(max(a.Ticket-b.Ticket, -1), 1)) }
	if !slices.IsSortedFunc(live, byTicket) {
		// A durable backend usually reads them in ticket order already;
		// only otherwise is the caller's slice copied to be sorted.
		live = slices.Clone(live)
		slices.SortFunc(live, byTicket)
	}
	for _, x := range live {
		lastTicket = max(lastTicket, x.Ticket)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.rooms[name] != nil {
		return fmt.Errorf("restore room %q: it is already loaded", name)
	}
	r := newRoom(name, cfg, lastTicket, s.keepHistory)
	var moved []laneItem
	t := r.clock(now)
	r.fillBucket()
	for _, x := range live {
		id, err := waitroom.ParseSessionID(x.ID)
		if err != nil || (id.Ticket != x.Ticket && (id.Entry == 0 || id.Ticket != 0)) {
			return fmt.Errorf("restore room %q: session %d has a bad id", name, x.Ticket)
		}
		p := rec{secret: id.Secret, joined: ms(x.JoinedAt), touch: t, place: x.Place, extra: x.Extended.Milliseconds()}
		tier := cfg.TierIndex(x.Tier)
		if tier < 0 || (x.Place > 0 && len(cfg.Tiers) == 0) || (x.Place == 0 && len(cfg.Tiers) > 0) {
			return fmt.Errorf("restore room %q: session %d has tier %q and place %d, which the room's tiers do not allow", name, x.Ticket, x.Tier, x.Place)
		}
		p.tier = uint8(tier)
		if x.Place > 0 && x.Ticket > 0 {
			r.restorePlace(tier, x.Place, x.Status == waitroom.StatusActive)
		}
		r.front = min(r.front, x.Place)
		switch {
		case x.Status == waitroom.StatusWaiting && x.Place < 0:
			p.status = stWaiting
			q := new(rec)
			*q = p
			moved = append(moved, laneItem{place: x.Place, ticket: x.Ticket, rec: q})
			r.nWaiting++
			r.addKey(x.Ticket, q, x.Key)
			r.addContact(x.Ticket, q, x.Contact)
		case x.Status == waitroom.StatusWaiting:
			if r.nLine == 0 {
				r.base = x.Ticket
			}
			for r.base+int64(r.wait.len()) < x.Ticket {
				r.wait.push(rec{})
				r.ranks.push(false)
			}
			p.status = stWaiting
			q := r.enqueue(x.Ticket, p)
			r.addKey(x.Ticket, q, x.Key)
			r.addContact(x.Ticket, q, x.Contact)
		case x.Status == waitroom.StatusActive || x.Status == waitroom.StatusInvited:
			p.status = stActive
			if x.Status == waitroom.StatusInvited {
				// Its claim window runs from its invitation, kept in
				// admitted_at, across the restart.
				p.status = stInvited
			}
			p.admitted = ms(x.AdmittedAt)
			if x.Unit && cfg.Inventory != nil {
				p.unit = true
				r.reserved++
			}
			a := new(rec)
			*a = p
			r.active[x.Ticket] = a
			r.addKey(x.Ticket, a, x.Key)
			r.addContact(x.Ticket, a, x.Contact)
		default:
			return fmt.Errorf("restore room %q: session %d has status %q, want waiting, invited or active", name, x.Ticket, x.Status)
		}
	}
	if r.nLine == 0 {
		r.base = lastTicket + 1
	}
	r.lineMoved = true // RestoreNear marks who was told; the rest are told at the first commit
	// The lane runs from the largest place to the smallest.
	slices.SortFunc(moved, func(a, b laneItem) int { return int(min(max(b.place-a.place, -1), 1)) })
	for i, e := range moved {
		if i > 0 && e.place == moved[i-1].place {
			return fmt.Errorf("restore room %q: sessions %d and %d share place %d", name, moved[i-1].ticket, e.ticket, e.place)
		}
		r.lane.add(e.ticket, e.rec)
		r.schedule(e.ticket, e.rec)
	}
	for i := range r.wait.len() {
		if p := r.wait.at(i); p.status == stWaiting {
			r.schedule(r.base+int64(i), p)
		}
	}
	for t, p := range r.active {
		r.schedule(t, p)
	}
	s.rooms[name] = r
	return nil
}

// restorePlace takes the weighted state of a restored tiered session: the
// tier's last tag is its largest, and the virtual time at least the tag of
// every session admitted (a lower bound of what it was: new joins may land
// a little earlier than before the restart, never behind their tier).
func (r *room) restorePlace(tier int, place int64, admitted bool) {
	if r.cfg.TierPolicy != waitroom.TierWeighted {
		return
	}
	for len(r.tiers.fin) <= tier {
		r.tiers.fin = append(r.tiers.fin, 0)
	}
	tag := waitroom.PlaceTag(place)
	r.tiers.fin[tier] = max(r.tiers.fin[tier], tag)
	if admitted {
		r.tiers.vt = max(r.tiers.vt, tag)
	}
}

// RestoreTicket records the last ticket of a deleted room, so a room created
// again under its name never reuses a ticket.
func (s *Store) RestoreTicket(name string, lastTicket int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tickets[name] = max(s.tickets[name], lastTicket)
}

// RestoreCounts sets a restored room's fairness counts and units sold (see
// waitroom.Room), for a durable backend recovering on start.
func (s *Store) RestoreCounts(name string, admissions, inversions, maxAdmitted, sold int64) {
	s.withLoaded(name, func(r *room) {
		r.admissions, r.inversions, r.maxAdmitted, r.sold = admissions, inversions, maxAdmitted, sold
	})
}

// RestoreUses sets a restored room's token use counts, for a durable
// backend recovering on start: each use of uses counted counts[i] times,
// those still valid at now.
func (s *Store) RestoreUses(name string, uses []waitroom.TokenUse, counts []int, now time.Time) {
	s.withLoaded(name, func(r *room) {
		if r.uses == nil {
			r.uses = make(map[string]use)
		}
		for i, u := range uses {
			if ms(u.Expires) > ms(now) {
				r.uses[useKey(u)] = use{n: counts[i], expires: ms(u.Expires)}
			}
		}
	})
}

// withLoaded runs f on room name, locked, when it is loaded.
func (s *Store) withLoaded(name string, f func(r *room)) {
	s.mu.Lock()
	r := s.rooms[name]
	s.mu.Unlock()
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	f(r)
}

// RestoreNear marks the sessions of a room Restore loaded as told that
// they are near (waitroom.Change.Near), so a restart does not tell them
// again. Tickets that are not live sessions of the room are ignored.
func (s *Store) RestoreNear(name string, tickets []int64) {
	s.withLoaded(name, func(r *room) {
		for _, t := range tickets {
			if p := r.lookup(t); p != nil {
				p.near = true
			}
		}
	})
}
