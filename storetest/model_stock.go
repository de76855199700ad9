package storetest

import (
	"time"

	"github.com/waitroom/waitroom"
)

// The model's rules for a room with an inventory. Every admission (at a
// join, by settle, or by Advance in an auto room) reserves a unit while one
// remains; automatic admission waits while none does. The units reserved
// are not counted but read off the sessions: an active session's unit
// flag. A session that ends gives its unsold unit back. Once everything is
// sold, settle ends the line and the pre-queue (ReasonSoldOut) and joins
// are refused.

// reserved counts the units the active sessions hold.
func (m *model) reserved() int64 {
	var n int64
	for _, s := range m.holders() {
		if s.unit {
			n++
		}
	}
	return n
}

// remaining is what is neither sold nor reserved; 0 without an inventory.
func (m *model) remaining() int64 {
	if m.cfg.Inventory == nil {
		return 0
	}
	return *m.cfg.Inventory - m.sold - m.reserved()
}

// reserve reports whether an admission now gets a unit.
func (m *model) reserve() bool {
	return m.cfg.Inventory != nil && m.remaining() > 0
}

func (m *model) soldOut() bool {
	return m.cfg.Inventory != nil && m.sold >= *m.cfg.Inventory
}

// endSoldOut ends everyone waiting, in line or in the pre-queue, once
// everything is sold, and returns how many.
func (m *model) endSoldOut(now time.Time) int {
	if !m.soldOut() {
		return 0
	}
	ending := append(m.line(), m.liveEntrants()...)
	for _, s := range ending {
		m.end(s, []waitroom.Reason{waitroom.ReasonSoldOut}, now)
	}
	return len(ending)
}

// refusesStock reports whether cfg gives the room an inventory below what
// is sold and reserved (CodeStockConflict).
func (m *model) refusesStock(cfg waitroom.RoomConfig) bool {
	return cfg.Inventory != nil && m.cfg.Inventory != nil && *cfg.Inventory < m.sold+m.reserved()
}

// restock follows a configuration that added or removed the inventory
// (old is the one before): either way the room counts from zero, and the
// active sessions hold no units.
func (m *model) restock(old *int64) {
	if (old == nil) == (m.cfg.Inventory == nil) {
		return
	}
	m.sold = 0
	for _, s := range m.holders() {
		if s.unit {
			m.takeUnit(s, waitroom.StockReleased)
		}
	}
}

// takeUnit sells or releases active session s's unit; s stays active.
func (m *model) takeUnit(s *mSession, op waitroom.StockOp) {
	s.unit = false
	if op == waitroom.StockSold {
		m.sold++
	}
	m.unitsOut = append(m.unitsOut, s.ticket)
}

// stock is Store.Stock. It returns the code the store must refuse the
// call with, "" when it succeeds. Arguments are checked before the room;
// a refused change changes nothing, though the settle before it stands.
func (m *model) stock(op waitroom.StockOp, n int64, id string, now time.Time) waitroom.Code {
	switch op {
	case waitroom.StockSold, waitroom.StockReleased, waitroom.StockSet:
	default:
		return waitroom.CodeInvalidRequest
	}
	if (id == "" && (n < 0 || n > waitroom.MaxInventory)) || (id != "" && op == waitroom.StockSet) {
		return waitroom.CodeInvalidRequest
	}
	if !m.exists {
		return waitroom.CodeRoomNotFound
	}
	now = m.clock(now)
	m.settle(now)
	if code := m.changeStock(op, n, id); code != "" {
		return code
	}
	m.settle(now)
	return ""
}

func (m *model) changeStock(op waitroom.StockOp, n int64, id string) waitroom.Code {
	switch {
	case m.cfg.Inventory == nil:
		return waitroom.CodeStockConflict
	case op == waitroom.StockSet:
		if n < m.sold+m.reserved() {
			return waitroom.CodeStockConflict
		}
		m.cfg.Inventory = &n // n is this call's own copy
		m.rev++
		return ""
	case id != "":
		s := m.find(id)
		switch {
		case s == nil || s.status.Final():
			return waitroom.CodeSessionNotFound
		case s.status == waitroom.StatusWaiting || !s.unit:
			return waitroom.CodeStockConflict
		}
		m.takeUnit(s, op)
		return ""
	}
	// The units of the smallest tickets.
	var holding []*mSession
	for _, s := range m.holders() {
		if s.unit {
			holding = append(holding, s)
		}
	}
	if n > int64(len(holding)) {
		return waitroom.CodeStockConflict
	}
	for _, s := range holding[:n] {
		m.takeUnit(s, op)
	}
	return ""
}

// stockFields sets what the view of s adds in a room with an inventory:
// the room's remaining units, and whether an active s holds one.
func (m *model) stockFields(v *waitroom.Session, s *mSession) {
	if m.cfg.Inventory == nil {
		return
	}
	v.Stocked, v.Remaining = true, m.remaining()
	v.Unit = s.unit && (s.status == waitroom.StatusActive || s.status == waitroom.StatusInvited)
}

// stockInfo returns r with the stock counts the room reports.
func (m *model) stockInfo(r waitroom.Room) waitroom.Room {
	if m.cfg.Inventory != nil {
		left := m.remaining()
		r.Sold, r.Reserved, r.Remaining = m.sold, m.reserved(), &left
	}
	return r
}
