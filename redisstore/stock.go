package redisstore

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/waitroom/waitroom"
)

// Stock. A room with an inventory reserves a unit for each automatic
// admission while one remains, gives it back when its session ends unsold,
// and ends its line and pre-queue with ReasonSoldOut once everything is
// sold; stock.lua holds the rules and the keys. Ending a long sold-out
// line is batched like expiry: a run ends at most the expiry batch, and
// every operation on the room, reads included, ends more of it before it
// does anything else, so no answer shows a waiting session of a room that
// sold out. The fairness counts (Room.Admissions, Room.Inversions) live
// there too.

// Stock implements waitroom.Store.
func (s *Store) Stock(ctx context.Context, room string, op waitroom.StockOp, n int64, id string, now time.Time) (waitroom.Room, error) {
	if err := waitroom.CheckStock(op, n, id); err != nil {
		return waitroom.Room{}, err
	}
	if err := s.usable(); err != nil {
		return waitroom.Room{}, err
	}
	if err := waitroom.CheckRoomName(room); err != nil {
		return waitroom.Room{}, err
	}
	args := []any{string(op), n, ""}
	if id != "" {
		args = []any{string(op), 0, "1"}
	}
	args = append(args, idArgs(id)...)
	r, err := s.run(ctx, "stock", room, now.UnixMilli(), args...)
	if err != nil {
		return waitroom.Room{}, err
	}
	if err := errorFor(room, r); err != nil {
		return waitroom.Room{}, err
	}
	info, _, err := decodeRoom(room, first(r.rest))
	if err != nil {
		return waitroom.Room{}, err
	}
	if num(r.rest, 1) == 1 {
		// The room sold out with more in line than one run ends: end the
		// rest, then report the room as it is after.
		if _, err := s.settle(ctx, room, now); err != nil {
			return waitroom.Room{}, err
		}
		return s.Room(ctx, room)
	}
	return info, nil
}

// stockError maps the script's stock statuses to the contract's errors.
func stockError(room string, r result) error {
	v := r.rest
	switch r.status {
	case "sold_out":
		return waitroom.Errorf(waitroom.CodeSoldOut, "Everything in room %q is sold: all %d.", room, num(v, 0))
	case "stock_not_found":
		return waitroom.Errorf(waitroom.CodeSessionNotFound, "There is no such admitted session in this room.")
	}
	conflict := func(format string, args ...any) error {
		return waitroom.Errorf(waitroom.CodeStockConflict, format, args...)
	}
	switch str(v, 0) {
	case "none":
		return conflict("Room %q has no inventory; give it one with inventory in its configuration.", room)
	case "below":
		sold, reserved := num(v, 1), num(v, 2)
		return conflict("Room %q has sold %d and reserved %d units; its inventory must be at least %d, not %d.",
			room, sold, reserved, sold+reserved, num(v, 3))
	case "waiting":
		return conflict("That session is waiting; only an admitted session holds a unit.")
	case "no_unit":
		return conflict("That session holds no unit: its unit was sold or released already, or it was admitted when none was left.")
	case "reserved":
		return conflict("Room %q has %d reserved units; %s at most that many, not %d.", room, num(v, 1), str(v, 3), num(v, 2))
	}
	return malformed("stock", v)
}

// stockFields completes a session of a room with an inventory from its
// array, whose stock part starts at i: the units remaining, and 1 when it
// holds one (stockTail in stock.lua).
func stockFields(s *waitroom.Session, v []any, i int) {
	// A session an operator moved or extended has nil stock fields
	// without an inventory (placeTail in operator.lua).
	if len(v) < i+2 || v[i] == nil {
		return
	}
	s.Stocked, s.Remaining, s.Unit = true, num(v, i), num(v, i+1) == 1
}

// decodeRoomStock completes a room with an inventory from its info array
// (info in machinery.lua): sold, reserved and remaining at 8, 9 and 10.
func decodeRoomStock(r *waitroom.Room, v []any) {
	if r.Inventory == nil || len(v) < 11 {
		return
	}
	rem := num(v, 10)
	r.Sold, r.Reserved, r.Remaining = num(v, 8), num(v, 9), &rem
}

// decodeUnit parses an event line of a unit taken or given outside a
// status change: "u", ticket, 0 or 1.
func decodeUnit(line string) (waitroom.UnitChange, bool) {
	f := strings.Split(line, "\t")
	if len(f) != 3 || f[0] != "u" || (f[2] != "0" && f[2] != "1") {
		return waitroom.UnitChange{}, false
	}
	t, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil {
		return waitroom.UnitChange{}, false
	}
	return waitroom.UnitChange{Ticket: t, Unit: f[2] == "1"}, true
}
