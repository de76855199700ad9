package storetest

import (
	"fmt"
	"slices"

	"github.com/waitroom/waitroom"
	"pgregory.net/rapid"
)

// The model run's side of rooms with an inventory: configurations that add,
// change or remove one, Stock calls, the units events carry, and the
// invariants of the counts.

// refusal says, for a failure message, why the model expects an operation
// to be refused with a code.
var refusal = map[waitroom.Code]string{
	waitroom.CodeDrawDone:      "moving opens_at after the draw",
	waitroom.CodeStockConflict: "with an inventory below what is sold and reserved",
	waitroom.CodeRoomClosed:    "at or after closes_at",
	waitroom.CodeSoldOut:       "when everything is sold",
}

// withStock gives cfg an inventory, sometimes. A room without one gets one
// (0 to 6) one time in three; a room with one keeps it, changes it (refused
// with CodeStockConflict when below what is sold and reserved) or loses it.
func (h *modelRun) withStock(t *rapid.T, cfg waitroom.RoomConfig) waitroom.RoomConfig {
	var inv *int64
	if h.m.exists {
		inv = h.m.cfg.Inventory
	}
	fresh := func() *int64 {
		v := int64(rapid.IntRange(0, 6).Draw(t, "inventory"))
		return &v
	}
	if inv == nil {
		if rapid.IntRange(0, 2).Draw(t, "stocked") == 0 {
			cfg.Inventory = fresh()
		}
		return cfg
	}
	switch rapid.IntRange(0, 5).Draw(t, "inventory_change") {
	case 0: // removed
	case 1, 2:
		cfg.Inventory = fresh()
	default:
		v := *inv
		cfg.Inventory = &v
	}
	return cfg
}

// stock calls Store.Stock: sold, released or set with a small count, for
// the whole room or (sold, released) for one session, and now and then
// with an unknown operation, a count out of range, set with a session, or
// the id of a session that was never issued.
func (h *modelRun) stock(t *rapid.T) {
	op := rapid.SampledFrom([]waitroom.StockOp{waitroom.StockSold, waitroom.StockSold, waitroom.StockSold,
		waitroom.StockReleased, waitroom.StockReleased, waitroom.StockSet, waitroom.StockSet, waitroom.StockSet,
		waitroom.StockSold, waitroom.StockReleased, "give"}).Draw(t, "stock_op")
	n := int64(rapid.IntRange(0, 3).Draw(t, "stock_n"))
	if op == waitroom.StockSet {
		n = int64(rapid.IntRange(0, 8).Draw(t, "stock_n"))
	}
	if rapid.IntRange(0, 19).Draw(t, "stock_n_bad") == 0 {
		n = rapid.SampledFrom([]int64{-1, waitroom.MaxInventory + 1}).Draw(t, "stock_n")
	}
	var id string
	oneSession := 2
	if op == waitroom.StockSet {
		oneSession = 9
	}
	if len(h.all) > 0 && rapid.IntRange(0, oneSession).Draw(t, "stock_one") == 0 {
		// Mostly an active session: most ids ever issued have ended.
		if active := h.m.holders(); h.m.exists && len(active) > 0 && rapid.IntRange(0, 2).Draw(t, "stock_active") > 0 {
			id = rapid.SampledFrom(active).Draw(t, "stock_session").id
		} else {
			id = h.pick(t)
		}
		if rapid.IntRange(0, 5).Draw(t, "stock_unknown") == 0 {
			id = otherSecret(id)
		}
	}
	now := h.when(t)
	who := "the room"
	if id != "" {
		who = h.label(id)
	}
	h.begin(t, "Stock %s n=%d for %s", op, n, who)
	r, err := h.s.Stock(h.ctx, h.m.name, op, n, id, now)
	if code := h.m.stock(op, n, id, now); code != "" {
		wantCode(t, fmt.Sprintf("Stock %s n=%d for %s", op, n, who), err, code)
		if h.m.exists {
			h.recover(t, now)
			h.checkEvents(t, "")
		}
		return
	}
	if err != nil {
		t.Fatalf("Stock %s n=%d for %s: error = %v", op, n, who, err)
	}
	if want := h.roomInfo(); !sameRoom(r, want) {
		t.Fatalf("Stock = %s, want %s", fmtRoom(r), fmtRoom(want))
	}
	kind := waitroom.EventSessions
	if op == waitroom.StockSet {
		kind = waitroom.EventConfig
	}
	h.checkEvents(t, kind)
}

// checkStockEvents checks the units the operation's own events carry: an
// admission says whether it got a unit, and Units lists the units taken
// from sessions that stayed active (sold, released, or forgotten with the
// inventory). A shared store's remote events are not checked; like the
// fairness counts, an event's Sold is left to the stores that keep it.
func (h *modelRun) checkStockEvents(t *rapid.T, events []waitroom.Event) {
	t.Helper()
	m := h.m
	var local []waitroom.Event
	for _, e := range events {
		if !e.Remote {
			local = append(local, e)
		}
	}
	if len(m.unitsOut) > 0 && len(events) == 0 {
		t.Fatalf("the operation took units from #%v, but it sent no event", m.unitsOut)
	}
	if len(local) == 0 {
		return
	}
	var got []int64
	for _, e := range local {
		for _, u := range e.Units {
			if u.Unit {
				t.Fatalf("an event gives #%d a unit outside its admission", u.Ticket)
			}
			got = append(got, u.Ticket)
		}
		for _, c := range e.Changes {
			if (c.Session.Status != waitroom.StatusActive && c.Session.Status != waitroom.StatusInvited) ||
				c.From == waitroom.StatusActive || c.From == waitroom.StatusInvited || c.Near {
				continue
			}
			if want, ok := m.admitUnit[c.Session.ID]; !ok || c.Session.Unit != want {
				t.Fatalf("the event of #%d's admission says unit %v, want %v (admitted now: %v)", c.Session.Ticket, c.Session.Unit, want, ok)
			}
		}
	}
	want := slices.Clone(m.unitsOut)
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("events %s: units taken from %v, want %v", describeEvents(events), got, want)
	}
}

// checkStockCounts checks the invariants of a room's stock as the store
// reports it, whatever the model says: sold + reserved + remaining is the
// inventory, none is negative, reserved is the number of active sessions
// (all of them in live) holding a unit, and nobody waits once everything
// is sold. A room without an inventory reports no stock at all.
func checkStockCounts(t *rapid.T, r waitroom.Room, live []waitroom.Session) {
	t.Helper()
	var units int64
	for _, s := range live {
		if (s.Status == waitroom.StatusActive || s.Status == waitroom.StatusInvited) && s.Unit {
			units++
		}
		if s.Status.Live() && s.Stocked != (r.Inventory != nil) {
			t.Fatalf("session #%d: stocked %v in a room with inventory %s", s.Ticket, s.Stocked, fmtPtr(r.Inventory))
		}
	}
	if r.Inventory == nil {
		if r.Sold != 0 || r.Reserved != 0 || r.Remaining != nil || units != 0 {
			t.Fatalf("a room without inventory: sold %d, reserved %d, remaining %s, %d sessions with units; want no stock",
				r.Sold, r.Reserved, fmtPtr(r.Remaining), units)
		}
		return
	}
	if r.Remaining == nil || r.Sold < 0 || r.Reserved < 0 || *r.Remaining < 0 || r.Sold+r.Reserved+*r.Remaining != *r.Inventory {
		t.Fatalf("room stock: sold %d + reserved %d + remaining %s, want non-negative counts that add up to the inventory %d",
			r.Sold, r.Reserved, fmtPtr(r.Remaining), *r.Inventory)
	}
	if units != r.Reserved {
		t.Fatalf("room stock: %d reserved, but %d active sessions hold a unit", r.Reserved, units)
	}
	if r.Sold >= *r.Inventory && (r.Waiting > 0 || r.Entrants > 0) {
		t.Fatalf("everything is sold (%d of %d), but %d wait and %d wait for the draw", r.Sold, *r.Inventory, r.Waiting, r.Entrants)
	}
}

// fmtRoom shows a Room with its inventory and remaining units, which %+v
// shows as pointers.
func fmtRoom(r waitroom.Room) string {
	return fmt.Sprintf("%+v (inventory %s, remaining %s)", r, fmtPtr(r.Inventory), fmtPtr(r.Remaining))
}
