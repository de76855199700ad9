package storetest

import (
	"time"

	"github.com/waitroom/waitroom"
)

func init() {
	suite = append(suite, struct {
		name string
		fn   func(*fixture)
	}{"FairnessCounts", testFairnessCounts})
}

// wantFairness checks a room's fairness counts.
func (f *fixture) wantFairness(room string, admissions, inversions int64) {
	f.t.Helper()
	if r := f.room(room); r.Admissions != admissions || r.Inversions != inversions {
		f.t.Fatalf("Room(%q): admissions %d, inversions %d; want %d, %d", room, r.Admissions, r.Inversions, admissions, inversions)
	}
}

// testFairnessCounts checks that every admission and service is counted,
// with no inversion of ticket order, in auto, manual and drawn rooms, and
// that a room made again starts from zero.
func testFairnessCounts(f *fixture) {
	f.put("shop", quiet(2), at(0))
	f.wantFairness("shop", 0, 0)
	ss := f.joinN("shop", 5, at(sec)) // tickets 1 and 2 are admitted at once
	f.wantFairness("shop", 2, 0)
	f.leave("shop", ss[0].ID, waitroom.ReasonLeft, at(2*sec)) // admits 3
	f.leave("shop", ss[3].ID, waitroom.ReasonLeft, at(2*sec)) // a waiting one: no admission
	f.advance("shop", 1, at(3*sec))                           // 5, past capacity
	f.wantFairness("shop", 4, 0)

	desk := quiet(0)
	desk.Mode = waitroom.ModeManual
	f.put("desk", desk, at(0))
	f.joinN("desk", 3, at(sec))
	f.advance("desk", 2, at(2*sec))
	f.wantFairness("desk", 2, 0)

	f.put("drop", scheduled(3, at(time.Hour)), at(0))
	f.joinN("drop", 5, at(sec))
	f.wantFairness("drop", 0, 0)
	f.sweep("drop", at(time.Hour))
	f.wantFairness("drop", 3, 0)

	if err := f.s.DeleteRoom(f.ctx, "shop", true, at(4*sec)); err != nil {
		f.t.Fatalf("DeleteRoom error = %v", err)
	}
	f.put("shop", quiet(2), at(5*sec))
	f.wantFairness("shop", 0, 0)
}
