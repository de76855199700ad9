package storetest

import (
	"sync"
	"time"

	"github.com/waitroom/waitroom"
)

// Configuration revisions (waitroom.Room.Revision) and the conditional
// change that reads them (Store.UpdateRoom).

// wantRevision checks the revision of room as Room and Rooms report it.
func (f *fixture) wantRevision(what, room string, want int64) {
	f.t.Helper()
	if got := f.room(room).Revision; got != want {
		f.t.Errorf("%s: Room revision = %d, want %d", what, got, want)
	}
	rooms, err := f.s.Rooms(f.ctx)
	if err != nil {
		f.t.Fatalf("Rooms error = %v", err)
	}
	for _, r := range rooms {
		if r.Name == room && r.Revision != want {
			f.t.Errorf("%s: Rooms revision = %d, want %d", what, r.Revision, want)
		}
	}
}

// testRevisions: a new room is at revision 1; every configuration change
// raises it by one, whether or not a value changed, and nothing else does;
// a room deleted and made again continues above its last revision.
func testRevisions(f *fixture) {
	inv := int64(10)
	cfg := quiet(1)
	cfg.Inventory = &inv
	if r := f.put("r", cfg, at(0)); r.Revision != 1 {
		f.t.Errorf("PutRoom(new) revision = %d, want 1", r.Revision)
	}
	f.wantRevision("after create", "r", 1)
	if r := f.put("r", cfg, at(sec)); r.Revision != 2 {
		f.t.Errorf("PutRoom(same config) revision = %d, want 2", r.Revision)
	}
	a := f.join("r", "", at(2*sec))
	f.join("r", "", at(2*sec))
	f.sweep("r", at(3*sec))
	f.heartbeat("r", a.ID, at(3*sec))
	f.stock("r", waitroom.StockSold, 1, "", at(3*sec))
	f.wantRevision("after joins, a sweep, a heartbeat and a sale", "r", 2)
	if r := f.stock("r", waitroom.StockSet, 20, "", at(4*sec)); r.Revision != 3 {
		f.t.Errorf("Stock(set) revision = %d, want 3", r.Revision)
	}
	if _, err := f.s.Stock(f.ctx, "r", waitroom.StockSet, 0, "", at(4*sec)); waitroom.ErrorCode(err) != waitroom.CodeStockConflict {
		f.t.Fatalf("Stock(set below sold) error = %v, want stock_conflict", err)
	}
	f.wantRevision("after a refused stock change", "r", 3)
	r, _, err := f.s.QueueAll(f.ctx, "r", at(5*sec))
	if err != nil {
		f.t.Fatalf("QueueAll error = %v", err)
	}
	if r.Revision != 4 {
		f.t.Errorf("QueueAll revision = %d, want 4", r.Revision)
	}
	if r, err = f.s.UpdateRoom(f.ctx, "r", cfg, 4, at(6*sec)); err != nil || r.Revision != 5 {
		f.t.Fatalf("UpdateRoom(rev 4) = revision %d, %v; want 5", r.Revision, err)
	}
	if r, err = f.s.UpdateRoom(f.ctx, "r", cfg, 0, at(6*sec)); err != nil || r.Revision != 6 {
		f.t.Fatalf("UpdateRoom(no condition) = revision %d, %v; want 6", r.Revision, err)
	}
	if err := f.s.DeleteRoom(f.ctx, "r", true, at(7*sec)); err != nil {
		f.t.Fatalf("DeleteRoom error = %v", err)
	}
	if r := f.put("r", quiet(1), at(8*sec)); r.Revision != 7 {
		f.t.Errorf("PutRoom after delete revision = %d, want 7 (above the deleted room's 6)", r.Revision)
	}
	if r := f.put("other", quiet(1), at(8*sec)); r.Revision != 1 {
		f.t.Errorf("PutRoom(another new room) revision = %d, want 1", r.Revision)
	}
}

// testUpdateRoomCondition: UpdateRoom with a revision the room no longer
// has changes nothing and fails with CodePreconditionFailed; it never
// creates a room; its config events carry the revision.
func testUpdateRoomCondition(f *fixture) {
	inv := int64(100)
	cfg := quiet(5)
	cfg.Inventory = &inv
	cfg.TargetURL = "https://shop.example/checkout"
	f.put("r", cfg, at(0))
	events := f.events("r")

	other := quiet(2)
	for _, rev := range []int64{2, 7} {
		_, err := f.s.UpdateRoom(f.ctx, "r", other, rev, at(sec))
		wantCode(f.t, "UpdateRoom with a revision the room never had", err, waitroom.CodePreconditionFailed)
	}
	got := f.room("r")
	if !got.RoomConfig.Equal(cfg) || got.Revision != 1 {
		f.t.Errorf("after refused updates: room = %+v (revision %d), want the configuration unchanged at revision 1", got.RoomConfig, got.Revision)
	}
	for _, e := range events() {
		if e.Kind == waitroom.EventConfig {
			f.t.Errorf("a refused UpdateRoom made a config event: %+v", e)
		}
	}

	paused := cfg
	paused.Paused = true
	r, err := f.s.UpdateRoom(f.ctx, "r", paused, 1, at(2*sec))
	if err != nil {
		f.t.Fatalf("UpdateRoom(rev 1) error = %v", err)
	}
	if !r.RoomConfig.Equal(paused) || r.Revision != 2 {
		f.t.Errorf("UpdateRoom(rev 1) = %+v (revision %d), want paused at revision 2", r.RoomConfig, r.Revision)
	}
	seen := false
	for _, e := range events() {
		if e.Kind == waitroom.EventConfig && !e.Remote {
			seen = true
			if e.Revision != 2 || e.Config == nil || !e.Config.Equal(paused) {
				f.t.Errorf("UpdateRoom's config event: revision %d, config %+v; want 2 and the new configuration", e.Revision, e.Config)
			}
		}
	}
	if !seen {
		f.t.Errorf("UpdateRoom made no config event")
	}
	// The revision read before is stale now.
	_, err = f.s.UpdateRoom(f.ctx, "r", cfg, 1, at(3*sec))
	wantCode(f.t, "UpdateRoom with the revision before the last change", err, waitroom.CodePreconditionFailed)
	if got := f.room("r"); !got.Paused || got.Revision != 2 {
		f.t.Errorf("a stale UpdateRoom changed the room: paused %v, revision %d", got.Paused, got.Revision)
	}

	_, err = f.s.UpdateRoom(f.ctx, "nowhere", cfg, 0, at(3*sec))
	wantCode(f.t, "UpdateRoom of an unknown room", err, waitroom.CodeRoomNotFound)
	if _, err := f.s.Room(f.ctx, "nowhere"); waitroom.ErrorCode(err) != waitroom.CodeRoomNotFound {
		f.t.Errorf("UpdateRoom created a room: Room error = %v", err)
	}
	bad := cfg
	bad.Capacity = -1
	_, err = f.s.UpdateRoom(f.ctx, "r", bad, 2, at(3*sec))
	wantCode(f.t, "UpdateRoom with an invalid configuration", err, waitroom.CodeInvalidConfig)
}

// testUpdateRoomRace: of many UpdateRooms racing with the same revision,
// exactly one changes the room; the others fail with
// CodePreconditionFailed. Racing PutRooms and DeleteRooms of one room
// finish (no lock is taken in two orders).
func testUpdateRoomRace(f *fixture) {
	r := f.put("r", quiet(1), at(0))
	const n = 12
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = f.s.UpdateRoom(f.ctx, "r", quiet(10+i), r.Revision, at(sec))
		}()
	}
	wg.Wait()
	won := -1
	for i, err := range errs {
		switch waitroom.ErrorCode(err) {
		case "":
			if won >= 0 {
				f.t.Errorf("UpdateRooms %d and %d with the same revision both succeeded", won, i)
			}
			won = i
		case waitroom.CodePreconditionFailed:
		default:
			f.t.Errorf("UpdateRoom %d error = %v, want none or precondition_failed", i, err)
		}
	}
	if won < 0 {
		f.t.Fatalf("no UpdateRoom succeeded")
	}
	if got := f.room("r"); got.Capacity != 10+won || got.Revision != r.Revision+1 {
		f.t.Errorf("room after the race: capacity %d, revision %d; want %d, %d", got.Capacity, got.Revision, 10+won, r.Revision+1)
	}

	done := make(chan struct{})
	go func() {
		defer close(done)
		var wg sync.WaitGroup
		for i := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for j := range 20 {
					now := at(2*sec + time.Duration(j)*msec)
					if i%2 == 0 {
						_, _, _ = f.s.PutRoom(f.ctx, "churn", quiet(1), now)
					} else {
						_ = f.s.DeleteRoom(f.ctx, "churn", true, now)
					}
				}
			}()
		}
		wg.Wait()
	}()
	select {
	case <-done:
	case <-time.After(2 * time.Minute): // a hang guard, not a timing verdict
		f.t.Fatalf("racing PutRoom and DeleteRoom of one room did not finish")
	}
}
