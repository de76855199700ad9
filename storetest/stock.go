package storetest

import (
	"fmt"
	"time"

	"github.com/waitroom/waitroom"
)

// Stock: a room with an inventory reserves a unit for each automatic
// admission, stops admitting while none is left, and ends its line once
// everything is sold.

var stockSuite = []struct {
	name string
	fn   func(*fixture)
}{
	{"StockReserveOnAdmission", testStockReserveOnAdmission},
	{"StockReleaseOnEnd", testStockReleaseOnEnd},
	{"StockSoldOut", testStockSoldOut},
	{"StockSessionSold", testStockSessionSold},
	{"StockConflicts", testStockConflicts},
	{"StockSet", testStockSet},
	{"StockAdvanceAndExpiry", testStockAdvanceAndExpiry},
	{"StockWithDraw", testStockWithDraw},
	{"StockRemoved", testStockRemoved},
}

func init() { suite = append(suite, stockSuite...) }

func stocked(capacity int, inventory int64) waitroom.RoomConfig {
	c := quiet(capacity)
	c.Inventory = &inventory
	return c
}

// wantStock checks a room's stock counts and that they add up.
func (f *fixture) wantStock(room string, sold, reserved, remaining int64) waitroom.Room {
	f.t.Helper()
	r := f.room(room)
	if r.Remaining == nil || r.Sold != sold || r.Reserved != reserved || *r.Remaining != remaining {
		f.t.Fatalf("Room(%q) stock: sold %d, reserved %d, remaining %v; want %d, %d, %d", room, r.Sold, r.Reserved, fmtPtr(r.Remaining), sold, reserved, remaining)
	}
	if r.Inventory == nil || r.Sold+r.Reserved+*r.Remaining != *r.Inventory {
		f.t.Fatalf("Room(%q): sold %d + reserved %d + remaining %d != inventory %v", room, r.Sold, r.Reserved, *r.Remaining, fmtPtr(r.Inventory))
	}
	return r
}

func fmtPtr(p *int64) string {
	if p == nil {
		return "none"
	}
	return fmt.Sprint(*p)
}

func (f *fixture) stock(room string, op waitroom.StockOp, n int64, id string, now time.Time) waitroom.Room {
	f.t.Helper()
	r, err := f.s.Stock(f.ctx, room, op, n, id, now)
	if err != nil {
		f.t.Fatalf("Stock(%q, %s, %d, id %v) error = %v", room, op, n, id != "", err)
	}
	return r
}

func testStockReserveOnAdmission(f *fixture) {
	f.put("sale", stocked(5, 3), at(0))
	f.wantStock("sale", 0, 0, 3)
	ss := f.joinN("sale", 5, at(sec))
	for i, s := range ss {
		if !s.Stocked {
			f.t.Fatalf("join %d carries no stock: %+v", i, s)
		}
		if i < 3 {
			wantState(f.t, fmt.Sprintf("join %d", i), s, waitroom.StatusActive, 0, "")
			if !s.Unit {
				f.t.Fatalf("admitted join %d holds no unit", i)
			}
		} else {
			// Capacity is free but nothing is left to reserve.
			wantState(f.t, fmt.Sprintf("join %d", i), s, waitroom.StatusWaiting, int64(i-2), "")
		}
	}
	if got := f.peek("sale", ss[4].ID); got.Remaining != 0 || !got.Stocked {
		f.t.Fatalf("a waiting session's remaining = %d (stocked %v), want 0", got.Remaining, got.Stocked)
	}
	f.wantStock("sale", 0, 3, 0)
	// A room without inventory carries no stock at all.
	f.put("plain", quiet(1), at(0))
	p := f.join("plain", "", at(sec))
	if p.Stocked || p.Unit {
		f.t.Fatalf("a session of a room without inventory = %+v, want no stock", p)
	}
	if r := f.room("plain"); r.Remaining != nil || r.Sold != 0 || r.Reserved != 0 {
		f.t.Fatalf("a room without inventory reports stock: %+v", r)
	}
}

func testStockReleaseOnEnd(f *fixture) {
	f.put("sale", stocked(5, 2), at(0))
	ss := f.joinN("sale", 4, at(sec))
	// An admitted session that leaves without buying gives its unit to
	// the next in line at once.
	f.leave("sale", ss[0].ID, waitroom.ReasonLeft, at(2*sec))
	got := f.wantPeek("sale", ss[2], waitroom.StatusActive, 0, "")
	if !got.Unit {
		t := f.t
		t.Fatalf("the next in line was admitted without the freed unit")
	}
	f.wantStock("sale", 0, 2, 0)
	// A waiting session that leaves frees nothing.
	f.leave("sale", ss[3].ID, waitroom.ReasonLeft, at(3*sec))
	f.wantStock("sale", 0, 2, 0)
	f.leave("sale", ss[1].ID, waitroom.ReasonRevoked, at(4*sec))
	f.wantStock("sale", 0, 1, 1)
}

func testStockSoldOut(f *fixture) {
	f.put("sale", stocked(5, 2), at(0))
	ss := f.joinN("sale", 5, at(sec))
	f.stock("sale", waitroom.StockSold, 1, "", at(2*sec))
	r := f.wantStock("sale", 1, 1, 0)
	if r.Waiting != 3 {
		f.t.Fatalf("after selling 1 of 2: waiting %d, want 3 still waiting (a reserved unit may come back)", r.Waiting)
	}
	// The unit sold is that of the smallest ticket; selling it does not
	// end the session.
	if got := f.peek("sale", ss[0].ID); got.Status != waitroom.StatusActive || got.Unit {
		f.t.Fatalf("ticket 1 after its unit sold = %s, unit %v; want active without a unit", got.Status, got.Unit)
	}
	if got := f.peek("sale", ss[1].ID); !got.Unit {
		f.t.Fatalf("ticket 2 lost its unit")
	}
	f.stock("sale", waitroom.StockSold, 1, "", at(3*sec))
	r = f.wantStock("sale", 2, 0, 0)
	if r.Waiting != 0 || r.Active != 2 {
		f.t.Fatalf("after selling out: waiting %d, active %d; want 0 and the 2 buyers", r.Waiting, r.Active)
	}
	for _, s := range ss[2:] {
		got := f.peek("sale", s.ID)
		if got.Status != waitroom.StatusExpired || got.EndReason != waitroom.ReasonSoldOut || !got.EndedAt.Equal(at(3*sec)) {
			t := f.t
			t.Fatalf("ticket %d after the sale sold out = %s (%s) at %s, want expired, sold_out, at base+3s", s.Ticket, got.Status, got.EndReason, rel(got.EndedAt))
		}
	}
	_, err := f.s.Join(f.ctx, "sale", "", at(4*sec))
	wantCode(f.t, "join after sold out", err, waitroom.CodeSoldOut)
	_, err = f.s.Join(f.ctx, "sale", "k", at(4*sec))
	wantCode(f.t, "keyed join after sold out", err, waitroom.CodeSoldOut)
	// A buyer leaving changes nothing: its unit is sold.
	f.leave("sale", ss[0].ID, waitroom.ReasonLeft, at(5*sec))
	f.wantStock("sale", 2, 0, 0)
}

func testStockSessionSold(f *fixture) {
	f.put("sale", stocked(5, 3), at(0))
	ss := f.joinN("sale", 4, at(sec))
	f.stock("sale", waitroom.StockSold, 0, ss[1].ID, at(2*sec))
	f.wantStock("sale", 1, 2, 0)
	if got := f.peek("sale", ss[1].ID); got.Unit || got.Status != waitroom.StatusActive {
		f.t.Fatalf("the session whose unit sold = %+v, want active without a unit", got)
	}
	_, err := f.s.Stock(f.ctx, "sale", waitroom.StockSold, 0, ss[1].ID, at(3*sec))
	wantCode(f.t, "selling a session's unit twice", err, waitroom.CodeStockConflict)
	_, err = f.s.Stock(f.ctx, "sale", waitroom.StockSold, 0, ss[3].ID, at(3*sec))
	wantCode(f.t, "selling the unit of a waiting session", err, waitroom.CodeStockConflict)
	_, err = f.s.Stock(f.ctx, "sale", waitroom.StockReleased, 0, unknownID(99), at(3*sec))
	wantCode(f.t, "releasing the unit of an unknown session", err, waitroom.CodeSessionNotFound)
	// Releasing one session's unit hands it to the next in line.
	f.stock("sale", waitroom.StockReleased, 0, ss[0].ID, at(4*sec))
	f.wantPeek("sale", ss[3], waitroom.StatusActive, 0, "")
	f.wantStock("sale", 1, 2, 0)
	if got := f.peek("sale", ss[0].ID); got.Unit || got.Status != waitroom.StatusActive {
		f.t.Fatalf("the session whose unit was released = %+v, want active without a unit", got)
	}
}

func testStockConflicts(f *fixture) {
	f.put("sale", stocked(5, 3), at(0))
	f.joinN("sale", 2, at(sec))
	for _, tc := range []struct {
		what string
		op   waitroom.StockOp
		n    int64
	}{
		{"selling more than is reserved", waitroom.StockSold, 3},
		{"releasing more than is reserved", waitroom.StockReleased, 3},
		{"an inventory below sold and reserved", waitroom.StockSet, 1},
		{"a negative count", waitroom.StockSold, -1},
		{"an inventory over the limit", waitroom.StockSet, waitroom.MaxInventory + 1},
	} {
		_, err := f.s.Stock(f.ctx, "sale", tc.op, tc.n, "", at(2*sec))
		code := waitroom.CodeStockConflict
		if tc.n < 0 || tc.n > waitroom.MaxInventory {
			code = waitroom.CodeInvalidRequest
		}
		wantCode(f.t, tc.what, err, code)
	}
	_, err := f.s.Stock(f.ctx, "sale", "give", 1, "", at(2*sec))
	wantCode(f.t, "an unknown operation", err, waitroom.CodeInvalidRequest)
	f.wantStock("sale", 0, 2, 1)
	f.put("plain", quiet(1), at(0))
	_, err = f.s.Stock(f.ctx, "plain", waitroom.StockSold, 1, "", at(2*sec))
	wantCode(f.t, "stock of a room without inventory", err, waitroom.CodeStockConflict)
	_, err = f.s.Stock(f.ctx, "nope", waitroom.StockSold, 1, "", at(2*sec))
	wantCode(f.t, "stock of an unknown room", err, waitroom.CodeRoomNotFound)
	// A configuration with an inventory below what is sold and reserved
	// is refused too.
	_, _, err = f.s.PutRoom(f.ctx, "sale", stocked(5, 1), at(3*sec))
	wantCode(f.t, "PutRoom with an inventory below reserved", err, waitroom.CodeStockConflict)
	f.wantStock("sale", 0, 2, 1)
}

func testStockSet(f *fixture) {
	f.put("sale", stocked(5, 1), at(0))
	ss := f.joinN("sale", 4, at(sec))
	f.stock("sale", waitroom.StockSold, 1, "", at(2*sec)) // sold out: three end
	f.wantStock("sale", 1, 0, 0)
	_, err := f.s.Join(f.ctx, "sale", "", at(3*sec))
	wantCode(f.t, "join when sold out", err, waitroom.CodeSoldOut)
	// Restocking opens the room again: the next join gets a unit.
	r := f.stock("sale", waitroom.StockSet, 3, "", at(4*sec))
	if r.Inventory == nil || *r.Inventory != 3 {
		f.t.Fatalf("inventory after set 3 = %v", fmtPtr(r.Inventory))
	}
	f.wantStock("sale", 1, 0, 2)
	a := f.join("sale", "", at(5*sec))
	if a.Status != waitroom.StatusActive || !a.Unit {
		f.t.Fatalf("join after a restock = %+v, want active with a unit", a)
	}
	f.wantStock("sale", 1, 1, 1)
	if got := f.peek("sale", ss[3].ID); got.Status != waitroom.StatusExpired {
		f.t.Fatalf("a session ended by the sell-out is %s after the restock, want still expired", got.Status)
	}
	// Replacing the configuration with a larger inventory admits at once.
	b := f.join("sale", "", at(6*sec))
	c := f.join("sale", "", at(6*sec))
	wantState(f.t, "join with nothing left", c, waitroom.StatusWaiting, 1, "")
	f.put("sale", stocked(5, 5), at(7*sec))
	f.wantPeek("sale", c, waitroom.StatusActive, 0, "")
	f.wantStock("sale", 1, 3, 1)
	_ = b
}

func testStockAdvanceAndExpiry(f *fixture) {
	cfg := stocked(1, 2)
	cfg.ActiveTimeout = dur(10 * sec)
	f.put("sale", cfg, at(0))
	ss := f.joinN("sale", 4, at(0))
	// Advance ignores capacity and takes a unit while one is left...
	got := f.advance("sale", 1, at(sec))
	if len(got) != 1 || !got[0].Unit {
		f.t.Fatalf("advance with a unit left = %+v, want ticket 2 with a unit", got)
	}
	f.wantStock("sale", 0, 2, 0)
	// ...and admits without one when none is.
	got = f.advance("sale", 1, at(2*sec))
	if len(got) != 1 || got[0].Unit || got[0].Status != waitroom.StatusActive {
		f.t.Fatalf("advance with nothing left = %+v, want ticket 3 active without a unit", got)
	}
	f.wantStock("sale", 0, 2, 0)
	// An idle expiry gives the unit back; with 2 active of capacity 1 it
	// waits for the next admission.
	f.sweep("sale", at(10*sec))
	f.wantStock("sale", 0, 1, 1)
	if p := f.peek("sale", ss[0].ID); p.Status != waitroom.StatusExpired {
		f.t.Fatalf("ticket 1 after its idle timeout = %s", p.Status)
	}
	f.sweep("sale", at(11*sec))
	f.wantStock("sale", 0, 0, 2)
	f.sweep("sale", at(12*sec)) // ticket 3 (no unit) expires: room for ticket 4
	f.wantPeek("sale", ss[3], waitroom.StatusActive, 0, "")
	f.wantStock("sale", 0, 1, 1)
}

func testStockWithDraw(f *fixture) {
	cfg := stocked(10, 2)
	cfg.OpensAt = at(time.Hour)
	f.put("drop", cfg, at(0))
	es := f.joinN("drop", 5, at(sec))
	if !es[0].Stocked || es[0].Remaining != 2 {
		f.t.Fatalf("an entrant = %+v, want remaining 2", es[0])
	}
	f.sweep("drop", at(time.Hour))
	f.wantStock("drop", 0, 2, 0)
	f.wantCounts("drop", 3, 2)
	f.stock("drop", waitroom.StockSold, 2, "", at(time.Hour+sec))
	f.wantStock("drop", 2, 0, 0)
	f.wantCounts("drop", 0, 2)
	// Sold out before the opening: the pre-queue ends too.
	cfg2 := stocked(10, 0)
	cfg2.OpensAt = at(2 * time.Hour)
	f.put("zero", cfg2, at(0))
	_, err := f.s.Join(f.ctx, "zero", "", at(sec))
	wantCode(f.t, "join into a pre-queue with nothing to sell", err, waitroom.CodeSoldOut)
	cfg3 := stocked(10, 1)
	cfg3.OpensAt = at(2 * time.Hour)
	f.put("one", cfg3, at(0))
	e := f.join("one", "", at(sec))
	f.stock("one", waitroom.StockSet, 0, "", at(2*sec))
	if got := f.peek("one", e.ID); got.Status != waitroom.StatusExpired || got.EndReason != waitroom.ReasonSoldOut {
		f.t.Fatalf("an entrant when the inventory went to 0 = %s (%s), want expired sold_out", got.Status, got.EndReason)
	}
}

func testStockRemoved(f *fixture) {
	f.put("sale", stocked(2, 1), at(0))
	ss := f.joinN("sale", 3, at(sec))
	// Removing the inventory stops counting and admits by capacity alone.
	f.put("sale", quiet(2), at(2*sec))
	f.wantPeek("sale", ss[1], waitroom.StatusActive, 0, "")
	r := f.room("sale")
	if r.Remaining != nil || r.Sold != 0 || r.Reserved != 0 {
		f.t.Fatalf("room after removing its inventory = %+v, want no stock", r)
	}
	if got := f.peek("sale", ss[0].ID); got.Stocked || got.Unit {
		f.t.Fatalf("a session after the inventory was removed = %+v, want no stock", got)
	}
	// Adding one again starts from the sessions active now: they hold no
	// units, and new admissions reserve.
	f.put("sale", stocked(3, 5), at(3*sec))
	f.wantStock("sale", 0, 1, 4)
}
