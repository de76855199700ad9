package storetest

import (
	"fmt"
	"time"

	"github.com/waitroom/waitroom"
)

// The operator's moves: QueueAll, Front, Extend and Lookup.

func init() {
	suite = append(suite, []struct {
		name string
		fn   func(*fixture)
	}{
		{"QueueAllAndResume", testQueueAllAndResume},
		{"QueueAllUnits", testQueueAllUnits},
		{"Front", testFront},
		{"FrontPaging", testFrontPaging},
		{"Extend", testExtend},
		{"Lookup", testLookup},
	}...)
}

func testQueueAllAndResume(f *fixture) {
	cfg := quiet(3)
	f.put("r", cfg, at(0))
	s := f.joinN("r", 5, at(sec)) // #1–#3 active, #4 and #5 wait
	room, moved, err := f.s.QueueAll(f.ctx, "r", at(2*sec))
	if err != nil {
		f.t.Fatalf("QueueAll error = %v", err)
	}
	if !room.Paused || room.Active != 0 || room.Waiting != 5 {
		f.t.Fatalf("QueueAll room = paused %v, %d active, %d waiting; want paused, 0, 5", room.Paused, room.Active, room.Waiting)
	}
	wantTickets(f.t, "QueueAll moved", moved, 1, 2, 3)
	for i, m := range moved {
		wantState(f.t, fmt.Sprintf("moved %d", i), m, waitroom.StatusWaiting, int64(i+1), "")
		if m.Place >= 0 || !m.AdmittedAt.IsZero() {
			f.t.Fatalf("moved #%d: place %d, admitted %v; want a negative place, not admitted", m.Ticket, m.Place, m.AdmittedAt)
		}
	}
	wantTickets(f.t, "Waiting after QueueAll", f.waitingAll("r", 2), 1, 2, 3, 4, 5)
	f.wantPeek("r", s[3], waitroom.StatusWaiting, 4, "")
	// Pause holds: nobody comes in until the operator resumes.
	if res := f.sweep("r", at(time.Minute)); res.Admitted != 0 {
		f.t.Fatalf("Sweep after QueueAll admitted %d, want 0 (paused)", res.Admitted)
	}
	cfg.Paused = false
	f.put("r", cfg, at(2*time.Minute))
	for i := range 3 {
		got := f.wantPeek("r", s[i], waitroom.StatusActive, 0, "")
		wantTime(f.t, "re-admitted", got.AdmittedAt, at(2*time.Minute))
	}
	f.wantPeek("r", s[3], waitroom.StatusWaiting, 1, "")
	// Six admissions, and letting the moved ones in again is no inversion.
	f.wantFairness("r", 6, 0)
	// A second QueueAll moves them again, ahead of #4.
	_, moved, err = f.s.QueueAll(f.ctx, "r", at(3*time.Minute))
	if err != nil {
		f.t.Fatalf("second QueueAll error = %v", err)
	}
	wantTickets(f.t, "second QueueAll moved", moved, 1, 2, 3)
	wantTickets(f.t, "Waiting after the second QueueAll", f.waitingAll("r", 0), 1, 2, 3, 4, 5)
	// Nobody active: it only pauses.
	f.put("r", quiet(0), at(4*time.Minute))
	room, moved, err = f.s.QueueAll(f.ctx, "r", at(5*time.Minute))
	if err != nil || len(moved) != 0 || !room.Paused {
		f.t.Fatalf("QueueAll with nobody active = paused %v, moved %d, %v; want paused, 0", room.Paused, len(moved), err)
	}
	_, _, err = f.s.QueueAll(f.ctx, "nope", at(5*time.Minute))
	wantCode(f.t, "QueueAll of no room", err, waitroom.CodeRoomNotFound)
}

func testQueueAllUnits(f *fixture) {
	cfg := quiet(2)
	five := int64(5)
	cfg.Inventory = &five
	f.put("r", cfg, at(0))
	s := f.joinN("r", 3, at(0))
	f.wantStock("r", 0, 2, 3)
	if _, _, err := f.s.QueueAll(f.ctx, "r", at(sec)); err != nil {
		f.t.Fatalf("QueueAll error = %v", err)
	}
	f.wantStock("r", 0, 0, 5) // their units went back
	if got := f.peek("r", s[0].ID); got.Unit {
		f.t.Fatalf("moved #%d still holds a unit", got.Ticket)
	}
	cfg.Paused = false
	f.put("r", cfg, at(2*sec))
	f.wantStock("r", 0, 2, 3) // and came back with the re-admission
	if got := f.wantPeek("r", s[0], waitroom.StatusActive, 0, ""); !got.Unit {
		f.t.Fatalf("re-admitted #%d holds no unit", got.Ticket)
	}
}

func testFront(f *fixture) {
	f.put("r", quiet(1), at(0))
	s := f.joinN("r", 4, at(0)) // #1 active, #2–#4 wait
	got, err := f.s.Front(f.ctx, "r", s[3].ID, at(sec))
	if err != nil {
		f.t.Fatalf("Front error = %v", err)
	}
	wantState(f.t, "Front #4", got, waitroom.StatusWaiting, 1, "")
	if got.Place >= 0 {
		f.t.Fatalf("Front #4: place %d, want negative", got.Place)
	}
	got, err = f.s.Front(f.ctx, "r", s[2].ID, at(2*sec))
	if err != nil {
		f.t.Fatalf("Front error = %v", err)
	}
	wantState(f.t, "Front #3", got, waitroom.StatusWaiting, 1, "")
	f.wantPeek("r", s[3], waitroom.StatusWaiting, 2, "")
	f.wantPeek("r", s[1], waitroom.StatusWaiting, 3, "")
	// Moving the first again changes nothing but its place.
	got, err = f.s.Front(f.ctx, "r", s[2].ID, at(3*sec))
	if err != nil || got.Position != 1 {
		f.t.Fatalf("Front of the first = pos %d, %v; want 1", got.Position, err)
	}
	// The slot #1 frees goes to the front: #3.
	f.leave("r", s[0].ID, waitroom.ReasonLeft, at(4*sec))
	f.wantPeek("r", s[2], waitroom.StatusActive, 0, "")
	f.wantPeek("r", s[3], waitroom.StatusWaiting, 1, "")

	_, err = f.s.Front(f.ctx, "r", s[2].ID, at(5*sec))
	wantCode(f.t, "Front of an active session", err, waitroom.CodeInvalidRequest)
	_, err = f.s.Front(f.ctx, "r", s[0].ID, at(5*sec))
	wantCode(f.t, "Front of an ended session", err, waitroom.CodeInvalidRequest)
	_, err = f.s.Front(f.ctx, "r", waitroom.NewSessionID(99).String(), at(5*sec))
	wantCode(f.t, "Front of an unknown session", err, waitroom.CodeSessionNotFound)
	_, err = f.s.Front(f.ctx, "r", "not-an-id", at(5*sec))
	wantCode(f.t, "Front of a malformed id", err, waitroom.CodeInvalidSessionID)
	// Fairness: #3 came in out of ticket order, on purpose; no inversion.
	f.wantFairness("r", 2, 0)
}

func testFrontPaging(f *fixture) {
	f.put("r", quiet(0), at(0))
	s := f.joinN("r", 6, at(0))
	for _, i := range []int{4, 1, 5} { // #5, then #2, then #6 to the front
		if _, err := f.s.Front(f.ctx, "r", s[i].ID, at(sec)); err != nil {
			f.t.Fatalf("Front error = %v", err)
		}
	}
	for limit := 1; limit <= 7; limit++ {
		got := f.waitingAll("r", limit)
		wantTickets(f.t, fmt.Sprintf("Waiting by %d", limit), got, 6, 2, 5, 1, 3, 4)
		for i, w := range got {
			if w.Position != int64(i+1) {
				f.t.Fatalf("Waiting by %d: #%d at position %d, want %d", limit, w.Ticket, w.Position, i+1)
			}
		}
	}
	// A moved session that leaves takes its place with it.
	f.leave("r", s[1].ID, waitroom.ReasonLeft, at(2*sec))
	wantTickets(f.t, "Waiting after #2 left", f.waitingAll("r", 2), 6, 5, 1, 3, 4)
	f.wantPeek("r", s[4], waitroom.StatusWaiting, 2, "")
	// Advance takes the line's order.
	f.put("r", waitroom.RoomConfig{Mode: waitroom.ModeManual}, at(3*sec))
	wantTickets(f.t, "Advance 3", f.advance("r", 3, at(4*sec)), 6, 5, 1)
}

func testExtend(f *fixture) {
	cfg := quiet(1)
	cfg.MaxSession = waitroom.Duration(time.Minute)
	f.put("r", cfg, at(0))
	s := f.joinN("r", 2, at(0))
	got, err := f.s.Extend(f.ctx, "r", s[0].ID, 30*sec, at(10*sec))
	if err != nil {
		f.t.Fatalf("Extend error = %v", err)
	}
	if got.Status != waitroom.StatusActive || got.Extended != 30*sec {
		f.t.Fatalf("Extend = %s extended %s, want active extended 30s", got.Status, got.Extended)
	}
	got, err = f.s.Extend(f.ctx, "r", s[0].ID, 15*sec, at(20*sec))
	if err != nil || got.Extended != 45*sec {
		f.t.Fatalf("second Extend = extended %s, %v; want 45s", got.Extended, err)
	}
	// max_session 1m + 45s from admission at 0: due at 1m45s, not before.
	f.sweep("r", at(time.Minute+45*sec-msec))
	f.wantPeek("r", s[0], waitroom.StatusActive, 0, "")
	f.sweep("r", at(time.Minute+45*sec))
	f.wantPeek("r", s[0], waitroom.StatusExpired, 0, waitroom.ReasonMaxSession)
	f.wantPeek("r", s[1], waitroom.StatusActive, 0, "")

	_, err = f.s.Extend(f.ctx, "r", s[0].ID, sec, at(2*time.Minute))
	wantCode(f.t, "Extend of an ended session", err, waitroom.CodeInvalidRequest)
	w := f.join("r", "", at(2*time.Minute))
	_, err = f.s.Extend(f.ctx, "r", w.ID, sec, at(2*time.Minute))
	wantCode(f.t, "Extend of a waiting session", err, waitroom.CodeInvalidRequest)
	for _, by := range []time.Duration{0, -sec, time.Microsecond, time.Millisecond + time.Microsecond, waitroom.MaxDuration.D() + sec} {
		_, err = f.s.Extend(f.ctx, "r", s[1].ID, by, at(2*time.Minute))
		wantCode(f.t, fmt.Sprintf("Extend by %s", by), err, waitroom.CodeInvalidRequest)
	}

	// Extend restarts the idle timer too.
	cfg = quiet(1)
	cfg.ActiveTimeout = waitroom.Duration(time.Minute)
	f.put("i", cfg, at(0))
	a := f.join("i", "", at(0))
	if _, err := f.s.Extend(f.ctx, "i", a.ID, sec, at(50*sec)); err != nil {
		f.t.Fatalf("Extend error = %v", err)
	}
	f.sweep("i", at(time.Minute+49*sec))
	f.wantPeek("i", a, waitroom.StatusActive, 0, "")
	f.sweep("i", at(time.Minute+50*sec))
	f.wantPeek("i", a, waitroom.StatusExpired, 0, waitroom.ReasonIdle)
}

func testLookup(f *fixture) {
	f.put("r", quiet(1), at(0))
	a := f.join("r", "alice", at(0))
	b := f.join("r", "bob", at(0))
	c := f.join("r", "", at(0))
	for _, tc := range []struct {
		ticket int64
		key    string
		want   waitroom.Session
		pos    int64
	}{{1, "", a, 0}, {0, "alice", a, 0}, {2, "", b, 1}, {0, "bob", b, 1}, {3, "", c, 2}} {
		got, err := f.s.Lookup(f.ctx, "r", tc.ticket, tc.key)
		if err != nil || got.ID != tc.want.ID || got.Position != tc.pos {
			f.t.Fatalf("Lookup(%d, %q) = #%d pos %d, %v; want #%d pos %d", tc.ticket, tc.key, got.Ticket, got.Position, err, tc.want.Ticket, tc.pos)
		}
	}
	f.leave("r", a.ID, waitroom.ReasonRevoked, at(sec))
	got, err := f.s.Lookup(f.ctx, "r", 1, "")
	if err != nil || got.ID != a.ID || got.Status != waitroom.StatusLeft || got.Key != "alice" {
		f.t.Fatalf("Lookup of an ended session = %+v, %v; want it, left", got, err)
	}
	_, err = f.s.Lookup(f.ctx, "r", 0, "alice")
	wantCode(f.t, "Lookup of a key with no live session", err, waitroom.CodeSessionNotFound)
	_, err = f.s.Lookup(f.ctx, "r", 99, "")
	wantCode(f.t, "Lookup of an unissued ticket", err, waitroom.CodeSessionNotFound)
	_, err = f.s.Lookup(f.ctx, "nope", 1, "")
	wantCode(f.t, "Lookup in no room", err, waitroom.CodeRoomNotFound)
	// Lookup is no presence: a waiting session's timeout still runs.
	cfg := quiet(0)
	cfg.WaitingTimeout = waitroom.Duration(time.Minute)
	f.put("w", cfg, at(0))
	w := f.join("w", "", at(0))
	if _, err := f.s.Lookup(f.ctx, "w", w.Ticket, ""); err != nil {
		f.t.Fatalf("Lookup error = %v", err)
	}
	f.sweep("w", at(time.Minute))
	f.wantPeek("w", w, waitroom.StatusExpired, 0, waitroom.ReasonNoPresence)
}
