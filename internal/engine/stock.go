package engine

import (
	"context"
	"slices"
	"time"

	"github.com/waitroom/waitroom"
)

// Stock. A room with an inventory reserves a unit for every admission
// while one remains (canAdmit stops automatic admission when none does),
// gives a unit back when its session ends unsold, and ends its line with
// ReasonSoldOut once everything is sold. sold and reserved are the room's
// counts; reserved always equals the active sessions whose unit is set.

// remaining is what is neither sold nor reserved.
func (r *room) remaining() int64 {
	if r.cfg.Inventory == nil {
		return 0
	}
	return *r.cfg.Inventory - r.sold - r.reserved
}

// reserve takes a unit for an admission, if the room counts stock and one
// remains.
func (r *room) reserve() bool {
	if r.cfg.Inventory == nil || r.remaining() <= 0 {
		return false
	}
	r.reserved++
	return true
}

// soldOut reports whether everything is sold.
func (r *room) soldOut() bool {
	return r.cfg.Inventory != nil && r.sold >= *r.cfg.Inventory
}

// endSoldOut ends the line and the pre-queue once everything is sold.
func (r *room) endSoldOut(now int64) int {
	if !r.soldOut() {
		return 0
	}
	n := 0
	for r.nWaiting > 0 {
		t, p := r.first()
		r.end(t, p, waitroom.ReasonSoldOut, now)
		n++
	}
	if r.preQueue() {
		for i := range r.sch.pre {
			if p := &r.sch.pre[i]; p.status == stWaiting {
				r.endEntrant(int64(i+1), p, waitroom.ReasonSoldOut, now)
				n++
			}
		}
	}
	return n
}

// soldOutError is the error of a join once everything is sold.
func (r *room) soldOutError() error {
	if !r.soldOut() {
		return nil
	}
	return waitroom.Errorf(waitroom.CodeSoldOut, "Everything in room %q is sold: all %d.", r.name, *r.cfg.Inventory)
}

// checkStock refuses a configuration whose inventory is below what is sold
// and reserved.
func (r *room) checkStock(cfg waitroom.RoomConfig) error {
	if cfg.Inventory == nil || r.cfg.Inventory == nil || *cfg.Inventory >= r.sold+r.reserved {
		return nil
	}
	return waitroom.Errorf(waitroom.CodeStockConflict, "Room %q has sold %d and reserved %d units; its inventory must be at least %d, not %d.",
		r.name, r.sold, r.reserved, r.sold+r.reserved, *cfg.Inventory)
}

// restock follows a change of inventory from old: a room that stops
// counting forgets its counts and units; one that starts counts from zero,
// its active sessions holding no units.
func (r *room) restock(old *int64) {
	if (old == nil) == (r.cfg.Inventory == nil) {
		return
	}
	r.sold, r.reserved = 0, 0
	for t, p := range r.active {
		if p.unit {
			p.unit = false
			r.unitChange(t, false)
		}
	}
}

// unitChange records a unit taken from or given to an active session
// outside an admission, for the journal.
func (r *room) unitChange(t int64, unit bool) {
	if r.ev != nil {
		r.ev.Units = append(r.ev.Units, waitroom.UnitChange{Ticket: t, Unit: unit})
	}
}

// withUnits returns the tickets of the active sessions holding units, in
// ticket order.
func (r *room) withUnits() []int64 {
	ts := make([]int64, 0, r.reserved)
	for t, p := range r.active {
		if p.unit {
			ts = append(ts, t)
		}
	}
	slices.Sort(ts)
	return ts
}

// Stock implements waitroom.Store.
func (s *Store) Stock(ctx context.Context, name string, op waitroom.StockOp, n int64, id string, now time.Time) (waitroom.Room, error) {
	if err := waitroom.CheckStock(op, n, id); err != nil {
		return waitroom.Room{}, err
	}
	r, err := s.get(name)
	if err != nil {
		return waitroom.Room{}, err
	}
	t := r.clock(now)
	kind := waitroom.EventSessions
	if op == waitroom.StockSet {
		kind = waitroom.EventConfig
	}
	s.begin(r, kind, t)
	r.settle(t)
	err = r.stock(op, n, id)
	if err == nil {
		r.settle(t)
		if op == waitroom.StockSet {
			r.rev++
			r.configured()
		}
	} else if r.ev != nil {
		r.ev.Kind = waitroom.EventSessions // refused: no configuration changed
	}
	info := r.info()
	after := s.commit(r)
	r.mu.Unlock()
	if aerr := after(); aerr != nil {
		return waitroom.Room{}, aerr
	}
	if err != nil {
		return waitroom.Room{}, err
	}
	return info, nil
}

// stock applies one stock change to the locked, settled room, or changes
// nothing and says why.
func (r *room) stock(op waitroom.StockOp, n int64, id string) error {
	if r.cfg.Inventory == nil {
		return waitroom.Errorf(waitroom.CodeStockConflict, "Room %q has no inventory; give it one with inventory in its configuration.", r.name)
	}
	if op == waitroom.StockSet {
		c := r.cfg
		c.Inventory = &n
		if err := r.checkStock(c); err != nil {
			return err
		}
		r.cfg.Inventory = &n
		return nil
	}
	if id != "" {
		sid, err := waitroom.ParseSessionID(id)
		if err != nil {
			return err
		}
		r.resolve(&sid)
		p := r.active[sid.Ticket]
		if p == nil || !sid.Matches(p.secret) {
			if q := r.lookup(sid.Ticket); sid.Ticket != 0 && q != nil && sid.Matches(q.secret) {
				return waitroom.Errorf(waitroom.CodeStockConflict, "That session is waiting; only an admitted session holds a unit.")
			}
			if sid.Entry != 0 && r.preQueue() {
				if q := r.entrant(sid.Entry); q != nil && sid.Matches(q.secret) {
					return waitroom.Errorf(waitroom.CodeStockConflict, "That session is waiting; only an admitted session holds a unit.")
				}
			}
			return waitroom.Errorf(waitroom.CodeSessionNotFound, "There is no such admitted session in this room.")
		}
		if !p.unit {
			return waitroom.Errorf(waitroom.CodeStockConflict, "That session holds no unit: its unit was sold or released already, or it was admitted when none was left.")
		}
		r.takeUnit(sid.Ticket, p, op)
		return nil
	}
	if n > r.reserved {
		return waitroom.Errorf(waitroom.CodeStockConflict, "Room %q has %d reserved units; %s at most that many, not %d.", r.name, r.reserved, op, n)
	}
	for _, t := range r.withUnits()[:n] {
		r.takeUnit(t, r.active[t], op)
	}
	return nil
}

// takeUnit sells or releases active session t's unit.
func (r *room) takeUnit(t int64, p *rec, op waitroom.StockOp) {
	p.unit = false
	r.reserved--
	if op == waitroom.StockSold {
		r.sold++
	}
	r.unitChange(t, false)
}
