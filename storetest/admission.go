package storetest

import (
	"fmt"
	"time"

	"github.com/waitroom/waitroom"
)

func testCapacityTwoFiveJoins(f *fixture) {
	f.put("r", quiet(2), at(0))
	s := make([]waitroom.Session, 5)
	for i := range s {
		s[i] = f.join("r", "", at(time.Duration(i)*sec))
		if s[i].Ticket != int64(i+1) {
			f.t.Fatalf("join %d: ticket %d, want %d", i+1, s[i].Ticket, i+1)
		}
	}
	for i, want := range []struct {
		status      waitroom.Status
		pos         int64
		waiting, ac int
	}{
		{waitroom.StatusActive, 0, 0, 1},
		{waitroom.StatusActive, 0, 0, 2},
		{waitroom.StatusWaiting, 1, 1, 2},
		{waitroom.StatusWaiting, 2, 2, 2},
		{waitroom.StatusWaiting, 3, 3, 2},
	} {
		what := fmt.Sprintf("join %d", i+1)
		wantState(f.t, what, s[i], want.status, want.pos, "")
		wantTotals(f.t, what, s[i].Waiting, s[i].Active, want.waiting, want.ac)
		if s[i].Capacity != 2 || s[i].Room != "r" || s[i].ID == "" {
			f.t.Fatalf("%s: capacity %d, room %q, id %q; want 2, \"r\", an id", what, s[i].Capacity, s[i].Room, s[i].ID)
		}
		wantTime(f.t, what+" joined_at", s[i].JoinedAt, at(time.Duration(i)*sec))
		if want.status == waitroom.StatusActive {
			wantTime(f.t, what+" admitted_at", s[i].AdmittedAt, at(time.Duration(i)*sec))
		} else {
			wantTime(f.t, what+" admitted_at", s[i].AdmittedAt, time.Time{})
		}
	}
	r := f.room("r")
	if r.Waiting != 3 || r.Active != 2 || r.LastTicket != 5 {
		f.t.Fatalf("Room = %+v, want waiting 3, active 2, last ticket 5", r)
	}
	f.wantPeek("r", s[2], waitroom.StatusWaiting, 1, "")
	f.wantPeek("r", s[3], waitroom.StatusWaiting, 2, "")
	f.wantPeek("r", s[4], waitroom.StatusWaiting, 3, "")

	// Leaving position 2 moves the last to 2.
	left := f.leave("r", s[3].ID, waitroom.ReasonLeft, at(10*sec))
	wantState(f.t, "Leave(position 2)", left, waitroom.StatusLeft, 0, waitroom.ReasonLeft)
	wantTime(f.t, "Leave(position 2) ended_at", left.EndedAt, at(10*sec))
	wantTotals(f.t, "Leave(position 2)", left.Waiting, left.Active, 2, 2)
	f.wantPeek("r", s[2], waitroom.StatusWaiting, 1, "")
	f.wantPeek("r", s[4], waitroom.StatusWaiting, 2, "")

	// Leaving an active session admits position 1 within the same call.
	left = f.leave("r", s[0].ID, waitroom.ReasonLeft, at(20*sec))
	wantState(f.t, "Leave(active)", left, waitroom.StatusLeft, 0, waitroom.ReasonLeft)
	wantTotals(f.t, "Leave(active) totals after the hand-on", left.Waiting, left.Active, 1, 2)
	got := f.wantPeek("r", s[2], waitroom.StatusActive, 0, "")
	wantTime(f.t, "admitted_at of the next in line", got.AdmittedAt, at(20*sec))
	f.wantPeek("r", s[4], waitroom.StatusWaiting, 1, "")
	f.wantCounts("r", 1, 2)
}

func testFIFOAdmission(f *fixture) {
	f.put("r", quiet(1), at(0))
	s := f.joinN("r", 6, at(0))
	for i := range s {
		now := at(time.Duration(i+1) * sec)
		f.wantPeek("r", s[i], waitroom.StatusActive, 0, "")
		for j := i + 1; j < len(s); j++ {
			f.wantPeek("r", s[j], waitroom.StatusWaiting, int64(j-i), "")
		}
		f.leave("r", s[i].ID, waitroom.ReasonLeft, now)
		if i+1 < len(s) {
			got := f.wantPeek("r", s[i+1], waitroom.StatusActive, 0, "")
			wantTime(f.t, fmt.Sprintf("ticket %d admitted_at", s[i+1].Ticket), got.AdmittedAt, now)
		}
	}
	f.wantCounts("r", 0, 0)
}

func testIdleExpiry(f *fixture) {
	cfg := quiet(1)
	cfg.ActiveTimeout = dur(10 * sec)
	f.put("r", cfg, at(0))
	a := f.join("r", "", at(0))
	b := f.join("r", "", at(sec))
	if res := f.sweep("r", at(10*sec-msec)); res.Expired != 0 || res.Admitted != 0 {
		f.t.Fatalf("Sweep before the deadline = %+v, want nothing done", res)
	}
	f.wantPeek("r", a, waitroom.StatusActive, 0, "")
	res := f.sweep("r", at(10*sec))
	if res.Expired != 1 || res.Admitted != 1 {
		f.t.Fatalf("Sweep at the deadline = %+v, want 1 expired, 1 admitted", res)
	}
	got := f.wantPeek("r", a, waitroom.StatusExpired, 0, waitroom.ReasonIdle)
	wantTime(f.t, "ended_at", got.EndedAt, at(10*sec))
	got = f.wantPeek("r", b, waitroom.StatusActive, 0, "")
	wantTime(f.t, "admitted_at of the next", got.AdmittedAt, at(10*sec))
	// b's idle deadline is 20s: the sweeper must come back by then.
	if res.Next.IsZero() || !res.Next.After(at(10*sec)) || res.Next.After(at(20*sec)) {
		f.t.Errorf("Sweep Next = %s, want in (base+10s, base+20s]", rel(res.Next))
	}
	f.wantCounts("r", 0, 1)
}

func testExpiryBeforeEveryOperation(f *fixture) {
	// Any operation at or after a deadline sees the expiry first: a Join
	// at b's idle deadline finds the slot free and nobody waiting.
	cfg := quiet(1)
	cfg.ActiveTimeout = dur(10 * sec)
	f.put("r", cfg, at(0))
	a := f.join("r", "", at(0))
	b := f.join("r", "", at(0))
	wantState(f.t, "second join", b, waitroom.StatusWaiting, 1, "")
	c := f.join("r", "", at(10*sec))
	// a expired at 10s, b was admitted, so c waits at position 1.
	wantState(f.t, "join at a's deadline", c, waitroom.StatusWaiting, 1, "")
	f.wantPeek("r", a, waitroom.StatusExpired, 0, waitroom.ReasonIdle)
	f.wantPeek("r", b, waitroom.StatusActive, 0, "")
	d := f.join("r", "", at(30*sec))
	// At 30s, b's idle deadline (20s) has passed: b expires and c is
	// admitted with admitted_at = 30s (the operation's now), so d waits.
	wantState(f.t, "join after b's deadline", d, waitroom.StatusWaiting, 1, "")
	got := f.wantPeek("r", b, waitroom.StatusExpired, 0, waitroom.ReasonIdle)
	wantTime(f.t, "b ended_at (the operation's now)", got.EndedAt, at(30*sec))
	got = f.wantPeek("r", c, waitroom.StatusActive, 0, "")
	wantTime(f.t, "c admitted_at", got.AdmittedAt, at(30*sec))
	f.wantCounts("r", 1, 1)
}

func testMaxSession(f *fixture) {
	cfg := quiet(1)
	cfg.ActiveTimeout = dur(10 * sec)
	cfg.MaxSession = dur(25 * sec)
	f.put("r", cfg, at(0))
	a := f.join("r", "", at(0))
	b := f.join("r", "", at(sec))
	for _, t := range []time.Duration{8, 16, 24} {
		got := f.heartbeat("r", a.ID, at(t*sec))
		wantState(f.t, fmt.Sprintf("heartbeat at %ds", t), got, waitroom.StatusActive, 0, "")
		f.heartbeat("r", b.ID, at(t*sec))
	}
	if res := f.sweep("r", at(25*sec-msec)); res.Expired != 0 {
		f.t.Fatalf("Sweep before max_session = %+v, want nothing expired", res)
	}
	res := f.sweep("r", at(25*sec))
	if res.Expired != 1 || res.Admitted != 1 {
		f.t.Fatalf("Sweep at max_session = %+v, want 1 expired, 1 admitted", res)
	}
	f.wantPeek("r", a, waitroom.StatusExpired, 0, waitroom.ReasonMaxSession)
	got := f.wantPeek("r", b, waitroom.StatusActive, 0, "")
	wantTime(f.t, "b admitted_at", got.AdmittedAt, at(25*sec))
	// max_session counts from admission, not from joining (b joined at 1s).
	for _, t := range []time.Duration{33, 41, 49} {
		f.heartbeat("r", b.ID, at(t*sec))
	}
	f.sweep("r", at(50*sec-msec))
	f.wantPeek("r", b, waitroom.StatusActive, 0, "")
	f.sweep("r", at(50*sec))
	f.wantPeek("r", b, waitroom.StatusExpired, 0, waitroom.ReasonMaxSession)
}

func testConfigChangeAndDeadlines(f *fixture) {
	// A PutRoom first expires what is due under the old configuration...
	cfg := quiet(0)
	cfg.WaitingTimeout = dur(10 * sec)
	f.put("r", cfg, at(0))
	a := f.join("r", "", at(0))
	off := cfg
	off.WaitingTimeout = 0
	r := f.put("r", off, at(20*sec))
	if r.Waiting != 0 {
		f.t.Fatalf("PutRoom after a's deadline = %+v, want a expired first", r)
	}
	got := f.wantPeek("r", a, waitroom.StatusExpired, 0, waitroom.ReasonNoPresence)
	wantTime(f.t, "ended_at", got.EndedAt, at(20*sec))

	// ...and then deadlines follow the new timeouts, earlier or later.
	long := quiet(1)
	long.WaitingTimeout = dur(time.Minute)
	long.ActiveTimeout = dur(time.Minute)
	f.put("q", long, at(0))
	b := f.join("q", "", at(0))
	c := f.join("q", "", at(0))
	short := long
	short.WaitingTimeout = dur(10 * sec)
	short.ActiveTimeout = dur(20 * sec)
	f.put("q", short, at(5*sec))
	f.sweep("q", at(10*sec-msec))
	f.wantPeek("q", c, waitroom.StatusWaiting, 1, "")
	f.sweep("q", at(10*sec))
	f.wantPeek("q", c, waitroom.StatusExpired, 0, waitroom.ReasonNoPresence)
	f.sweep("q", at(20*sec))
	f.wantPeek("q", b, waitroom.StatusExpired, 0, waitroom.ReasonIdle)

	d := f.join("q", "", at(30*sec))
	f.put("q", long, at(40*sec))
	f.sweep("q", at(89*sec))
	f.wantPeek("q", d, waitroom.StatusActive, 0, "")
	f.sweep("q", at(90*sec))
	f.wantPeek("q", d, waitroom.StatusExpired, 0, waitroom.ReasonIdle)
}

func testWaitingTimeout(f *fixture) {
	cfg := quiet(0)
	cfg.WaitingTimeout = dur(10 * sec)
	f.put("r", cfg, at(0))
	a := f.join("r", "", at(0))
	b := f.join("r", "", at(0))
	got := f.session("r", a.ID, at(6*sec))
	wantState(f.t, "Session at 6s", got, waitroom.StatusWaiting, 1, "")
	res := f.sweep("r", at(10*sec))
	if res.Expired != 1 {
		f.t.Fatalf("Sweep at b's deadline = %+v, want 1 expired", res)
	}
	got = f.wantPeek("r", b, waitroom.StatusExpired, 0, waitroom.ReasonNoPresence)
	wantTime(f.t, "b ended_at", got.EndedAt, at(10*sec))
	f.wantPeek("r", a, waitroom.StatusWaiting, 1, "")
	got = f.heartbeat("r", a.ID, at(15*sec))
	wantState(f.t, "Heartbeat at 15s", got, waitroom.StatusWaiting, 1, "")
	if res := f.sweep("r", at(25*sec-msec)); res.Expired != 0 {
		f.t.Fatalf("Sweep before a's refreshed deadline = %+v, want nothing expired", res)
	}
	f.sweep("r", at(25*sec))
	f.wantPeek("r", a, waitroom.StatusExpired, 0, waitroom.ReasonNoPresence)
	f.wantCounts("r", 0, 0)

	// Active sessions have no presence deadline.
	cfg.Capacity = 1
	f.put("r", cfg, at(30*sec))
	c := f.join("r", "", at(30*sec))
	f.sweep("r", at(time.Hour))
	f.wantPeek("r", c, waitroom.StatusActive, 0, "")
}

func testHeartbeatRefreshesActivity(f *fixture) {
	cfg := quiet(2)
	cfg.ActiveTimeout = dur(10 * sec)
	f.put("r", cfg, at(0))
	a := f.join("r", "", at(0))
	b := f.join("r", "", at(0))
	got := f.session("r", a.ID, at(8*sec))
	wantState(f.t, "Session of an active session", got, waitroom.StatusActive, 0, "")
	f.heartbeat("r", b.ID, at(8*sec))
	res := f.sweep("r", at(10*sec))
	if res.Expired != 1 {
		f.t.Fatalf("Sweep at 10s = %+v, want 1 expired (Session does not refresh activity)", res)
	}
	f.wantPeek("r", a, waitroom.StatusExpired, 0, waitroom.ReasonIdle)
	f.wantPeek("r", b, waitroom.StatusActive, 0, "")
	f.sweep("r", at(18*sec-msec))
	f.wantPeek("r", b, waitroom.StatusActive, 0, "")
	f.sweep("r", at(18*sec))
	got = f.wantPeek("r", b, waitroom.StatusExpired, 0, waitroom.ReasonIdle)
	wantTime(f.t, "b ended_at", got.EndedAt, at(18*sec))
}

func testAwayWaiting(f *fixture) {
	cfg := quiet(0)
	cfg.Grace = dur(5 * sec)
	f.put("r", cfg, at(0))
	s := f.joinN("r", 3, at(0))
	f.away("r", s[1].ID, at(sec))
	f.wantPeek("r", s[1], waitroom.StatusWaiting, 2, "")
	got := f.session("r", s[1].ID, at(6*sec-msec))
	wantState(f.t, "back within grace", got, waitroom.StatusWaiting, 2, "")
	f.sweep("r", at(time.Hour))
	f.wantPeek("r", s[1], waitroom.StatusWaiting, 2, "")

	f.away("r", s[1].ID, at(time.Hour+10*sec))
	if res := f.sweep("r", at(time.Hour+15*sec-msec)); res.Expired != 0 {
		f.t.Fatalf("Sweep within grace = %+v, want nothing expired", res)
	}
	f.wantPeek("r", s[1], waitroom.StatusWaiting, 2, "")
	res := f.sweep("r", at(time.Hour+15*sec))
	if res.Expired != 1 {
		f.t.Fatalf("Sweep at the end of grace = %+v, want 1 expired", res)
	}
	got = f.wantPeek("r", s[1], waitroom.StatusExpired, 0, waitroom.ReasonGone)
	wantTime(f.t, "ended_at", got.EndedAt, at(time.Hour+15*sec))
	f.wantPeek("r", s[0], waitroom.StatusWaiting, 1, "")
	f.wantPeek("r", s[2], waitroom.StatusWaiting, 2, "")
}

func testAwayActive(f *fixture) {
	cfg := quiet(1)
	cfg.Grace = dur(5 * sec)
	f.put("r", cfg, at(0))
	a := f.join("r", "", at(0))
	b := f.join("r", "", at(0))
	f.away("r", a.ID, at(sec))
	f.heartbeat("r", a.ID, at(3*sec))
	f.sweep("r", at(6*sec))
	f.wantPeek("r", a, waitroom.StatusActive, 0, "")

	// Session (a GET) also ends an away period of an active session.
	f.away("r", a.ID, at(7*sec))
	f.session("r", a.ID, at(11*sec))
	f.sweep("r", at(13*sec))
	f.wantPeek("r", a, waitroom.StatusActive, 0, "")

	f.away("r", a.ID, at(20*sec))
	res := f.sweep("r", at(25*sec))
	if res.Expired != 1 || res.Admitted != 1 {
		f.t.Fatalf("Sweep at the end of grace = %+v, want 1 expired, 1 admitted", res)
	}
	f.wantPeek("r", a, waitroom.StatusExpired, 0, waitroom.ReasonGone)
	got := f.wantPeek("r", b, waitroom.StatusActive, 0, "")
	wantTime(f.t, "b admitted_at", got.AdmittedAt, at(25*sec))
}

func testAwayGraceZero(f *fixture) {
	cfg := quiet(1)
	cfg.Grace = 0
	f.put("r", cfg, at(0))
	a := f.join("r", "", at(0))
	b := f.join("r", "", at(0))
	c := f.join("r", "", at(0))
	f.away("r", c.ID, at(sec))
	got := f.wantPeek("r", c, waitroom.StatusExpired, 0, waitroom.ReasonGone)
	wantTime(f.t, "waiting session ended_at", got.EndedAt, at(sec))
	f.wantCounts("r", 1, 1)
	f.away("r", a.ID, at(2*sec))
	f.wantPeek("r", a, waitroom.StatusExpired, 0, waitroom.ReasonGone)
	got = f.wantPeek("r", b, waitroom.StatusActive, 0, "")
	wantTime(f.t, "slot handed on in the same call: admitted_at", got.AdmittedAt, at(2*sec))
	f.wantCounts("r", 0, 1)
}

func testAdmittedWhileAway(f *fixture) {
	cfg := quiet(1)
	cfg.Grace = dur(10 * sec)
	f.put("r", cfg, at(0))
	a := f.join("r", "", at(0))
	b := f.join("r", "", at(0))
	c := f.join("r", "", at(0))
	f.away("r", b.ID, at(sec))
	f.leave("r", a.ID, waitroom.ReasonLeft, at(2*sec))
	f.wantPeek("r", b, waitroom.StatusActive, 0, "")
	f.sweep("r", at(11*sec-msec))
	f.wantPeek("r", b, waitroom.StatusActive, 0, "")
	res := f.sweep("r", at(11*sec))
	if res.Expired != 1 || res.Admitted != 1 {
		f.t.Fatalf("Sweep at the end of b's grace = %+v, want b expired and c admitted", res)
	}
	f.wantPeek("r", b, waitroom.StatusExpired, 0, waitroom.ReasonGone)
	f.wantPeek("r", c, waitroom.StatusActive, 0, "")
}

func testAwayOnEndedSession(f *fixture) {
	cfg := quiet(1)
	cfg.Grace = 0
	f.put("r", cfg, at(0))
	a := f.join("r", "", at(0))
	left := f.leave("r", a.ID, waitroom.ReasonLeft, at(sec))
	f.away("r", a.ID, at(2*sec))
	got := f.wantPeek("r", a, waitroom.StatusLeft, 0, waitroom.ReasonLeft)
	wantTime(f.t, "ended_at after Away", got.EndedAt, left.EndedAt)
	err := f.s.Away(f.ctx, "r", unknownID(5), at(3*sec))
	wantCode(f.t, "Away with an unknown id", err, waitroom.CodeSessionNotFound)
}

func testPaused(f *fixture) {
	cfg := quiet(2)
	cfg.Paused = true
	f.put("r", cfg, at(0))
	s := f.joinN("r", 3, at(0))
	for i, x := range s {
		wantState(f.t, fmt.Sprintf("join %d in a paused room", i+1), x, waitroom.StatusWaiting, int64(i+1), "")
	}
	if res := f.sweep("r", at(time.Hour)); res.Admitted != 0 {
		f.t.Fatalf("Sweep in a paused room = %+v, want nobody admitted", res)
	}
	cfg.Paused = false
	r := f.put("r", cfg, at(time.Hour+sec))
	if r.Active != 2 || r.Waiting != 1 {
		f.t.Fatalf("PutRoom(unpause) = %+v, want 2 admitted at once, 1 waiting", r)
	}
	got := f.wantPeek("r", s[0], waitroom.StatusActive, 0, "")
	wantTime(f.t, "admitted_at", got.AdmittedAt, at(time.Hour+sec))
	f.wantPeek("r", s[2], waitroom.StatusWaiting, 1, "")

	// Pausing keeps active sessions; a freed slot stays free.
	cfg.Paused = true
	f.put("r", cfg, at(2*time.Hour))
	f.wantCounts("r", 1, 2)
	f.leave("r", s[0].ID, waitroom.ReasonLeft, at(2*time.Hour+sec))
	f.wantPeek("r", s[2], waitroom.StatusWaiting, 1, "")
	d := f.join("r", "", at(2*time.Hour+2*sec))
	wantState(f.t, "join in a paused room with a free slot", d, waitroom.StatusWaiting, 2, "")
}

func testCapacityZero(f *fixture) {
	f.put("r", quiet(0), at(0))
	a := f.join("r", "", at(0))
	wantState(f.t, "join with capacity 0", a, waitroom.StatusWaiting, 1, "")
	if res := f.sweep("r", at(time.Hour)); res.Admitted != 0 {
		f.t.Fatalf("Sweep with capacity 0 = %+v, want nobody admitted", res)
	}
	f.wantPeek("r", a, waitroom.StatusWaiting, 1, "")
}

func testCapacityChange(f *fixture) {
	f.put("r", quiet(1), at(0))
	s := f.joinN("r", 4, at(0))
	r := f.put("r", quiet(3), at(5*sec))
	if r.Active != 3 || r.Waiting != 1 {
		f.t.Fatalf("PutRoom(capacity 3) = %+v, want 3 active, 1 waiting at once", r)
	}
	for _, x := range s[1:3] {
		got := f.wantPeek("r", x, waitroom.StatusActive, 0, "")
		wantTime(f.t, fmt.Sprintf("ticket %d admitted_at", x.Ticket), got.AdmittedAt, at(5*sec))
	}
	f.wantPeek("r", s[3], waitroom.StatusWaiting, 1, "")

	// A decrease evicts nobody; slots free up only below the new capacity.
	r = f.put("r", quiet(1), at(6*sec))
	if r.Active != 3 {
		f.t.Fatalf("PutRoom(capacity 1) = %+v, want the 3 active kept", r)
	}
	f.leave("r", s[1].ID, waitroom.ReasonLeft, at(7*sec))
	f.leave("r", s[0].ID, waitroom.ReasonLeft, at(8*sec))
	f.wantPeek("r", s[3], waitroom.StatusWaiting, 1, "")
	f.leave("r", s[2].ID, waitroom.ReasonLeft, at(9*sec))
	got := f.wantPeek("r", s[3], waitroom.StatusActive, 0, "")
	wantTime(f.t, "admitted_at", got.AdmittedAt, at(9*sec))
}

func testRateBurstAndRefill(f *fixture) {
	// 120 a minute: bursts of 2, then one every 500ms.
	cfg := quiet(100)
	cfg.RatePerMinute = 120
	f.put("r", cfg, at(0))
	s := f.joinN("r", 5, at(0))
	// joinN spaces joins 1ms apart; each millisecond refills 1/500 of a token.
	for i, x := range s {
		want := waitroom.StatusWaiting
		var pos int64
		if i < 2 {
			want = waitroom.StatusActive
		} else {
			pos = int64(i - 1)
		}
		wantState(f.t, fmt.Sprintf("join %d", i+1), x, want, pos, "")
	}
	// Two tokens were taken by base+1ms; at 2 tokens a second the third
	// is whole at base+500ms.
	res := f.sweep("r", at(500*msec-msec))
	if res.Admitted != 0 {
		f.t.Fatalf("Sweep before a token refilled = %+v, want nobody admitted", res)
	}
	if res.Next.IsZero() || res.Next.After(at(500*msec)) {
		f.t.Errorf("Sweep Next = %s, want at or before base+500ms (the next token)", rel(res.Next))
	}
	if res := f.sweep("r", at(500*msec)); res.Admitted != 1 {
		f.t.Fatalf("Sweep when one token refilled = %+v, want 1 admitted", res)
	}
	f.wantPeek("r", s[2], waitroom.StatusActive, 0, "")
	if res := f.sweep("r", at(10*sec)); res.Admitted != 2 {
		f.t.Fatalf("Sweep after a long pause = %+v, want 2 admitted (the burst)", res)
	}
	// The bucket is empty again, so a join waits although a slot is free
	// and nobody waits.
	x := f.join("r", "", at(10*sec))
	wantState(f.t, "join with an empty bucket", x, waitroom.StatusWaiting, 1, "")
	if res := f.sweep("r", at(10*sec+500*msec)); res.Admitted != 1 {
		f.t.Fatalf("Sweep 500ms later = %+v, want 1 admitted", res)
	}
	// Advance ignores the rate.
	y := f.join("r", "", at(10*sec+500*msec))
	z := f.join("r", "", at(10*sec+500*msec))
	out := f.advance("r", 2, at(10*sec+500*msec))
	wantTickets(f.t, "Advance with an empty bucket", out, y.Ticket, z.Ticket)
	f.wantPeek("r", z, waitroom.StatusActive, 0, "")
}

func testRateBurstRoundsUp(f *fixture) {
	// 90 a minute is 1.5 a second: bursts of 2, a token every 666.67ms.
	cfg := quiet(100)
	cfg.RatePerMinute = 90
	f.put("r", cfg, at(0))
	s := []waitroom.Session{f.join("r", "", at(0)), f.join("r", "", at(0)), f.join("r", "", at(0))}
	wantState(f.t, "second join (burst of 2)", s[1], waitroom.StatusActive, 0, "")
	wantState(f.t, "third join", s[2], waitroom.StatusWaiting, 1, "")
	if res := f.sweep("r", at(666*msec)); res.Admitted != 0 {
		f.t.Fatalf("Sweep at 666ms = %+v, want nobody admitted", res)
	}
	if res := f.sweep("r", at(667*msec)); res.Admitted != 1 {
		f.t.Fatalf("Sweep at 667ms = %+v, want 1 admitted", res)
	}
}

func testRateSlow(f *fixture) {
	// One a minute: a burst of one, then one every 60s.
	cfg := quiet(100)
	cfg.RatePerMinute = 1
	f.put("r", cfg, at(0))
	a := f.join("r", "", at(0))
	b := f.join("r", "", at(0))
	wantState(f.t, "first join", a, waitroom.StatusActive, 0, "")
	wantState(f.t, "second join", b, waitroom.StatusWaiting, 1, "")
	if res := f.sweep("r", at(60*sec-msec)); res.Admitted != 0 {
		f.t.Fatalf("Sweep at 59.999s = %+v, want nobody admitted", res)
	}
	if res := f.sweep("r", at(60*sec)); res.Admitted != 1 {
		f.t.Fatalf("Sweep at 60s = %+v, want 1 admitted", res)
	}
}

func testRateResetOnReconfigure(f *fixture) {
	cfg := quiet(100)
	cfg.RatePerMinute = 60
	f.put("r", cfg, at(0))
	f.join("r", "", at(0))
	b := f.join("r", "", at(0))
	wantState(f.t, "second join", b, waitroom.StatusWaiting, 1, "")
	r := f.put("r", cfg, at(100*msec))
	if r.Active != 2 || r.Waiting != 0 {
		f.t.Fatalf("PutRoom(same config) = %+v, want the bucket refilled and b admitted", r)
	}
}

func testManualAdvance(f *fixture) {
	cfg := quiet(100)
	cfg.Mode = waitroom.ModeManual
	f.put("r", cfg, at(0))
	s := make([]waitroom.Session, 4)
	for i := range s {
		s[i] = f.join("r", "", at(time.Duration(i)*sec))
		wantState(f.t, fmt.Sprintf("join %d in a manual room", i+1), s[i], waitroom.StatusWaiting, int64(i+1), "")
	}
	if res := f.sweep("r", at(time.Hour)); res.Admitted != 0 {
		f.t.Fatalf("Sweep in a manual room = %+v, want nobody admitted", res)
	}
	now := at(time.Hour + sec)
	out := f.advance("r", 2, now)
	wantTickets(f.t, "Advance(2)", out, s[0].Ticket, s[1].Ticket)
	for _, x := range out {
		wantState(f.t, "Advance(2) result", x, waitroom.StatusServed, 0, waitroom.ReasonServed)
		wantTime(f.t, "served ended_at", x.EndedAt, now)
		if x.ID == "" || x.Room != "r" {
			f.t.Fatalf("Advance result %+v lacks id or room", x)
		}
	}
	f.wantPeek("r", s[0], waitroom.StatusServed, 0, waitroom.ReasonServed)
	f.wantPeek("r", s[2], waitroom.StatusWaiting, 1, "")
	f.wantPeek("r", s[3], waitroom.StatusWaiting, 2, "")
	f.wantCounts("r", 2, 0)

	out = f.advance("r", 10, now.Add(sec))
	wantTickets(f.t, "Advance(10) with 2 waiting", out, s[2].Ticket, s[3].Ticket)
	f.wantCounts("r", 0, 0)
	_, err := f.s.Advance(f.ctx, "r", 1, now.Add(2*sec))
	wantCode(f.t, "Advance with nobody waiting", err, waitroom.CodeQueueEmpty)
}

func testAdvanceInvalidN(f *fixture) {
	cfg := quiet(100)
	cfg.Mode = waitroom.ModeManual
	f.put("r", cfg, at(0))
	a := f.join("r", "", at(0))
	for _, n := range []int{0, -1, waitroom.MaxAdvance + 1} {
		_, err := f.s.Advance(f.ctx, "r", n, at(sec))
		wantCode(f.t, fmt.Sprintf("Advance(%d)", n), err, waitroom.CodeInvalidRequest)
	}
	f.wantPeek("r", a, waitroom.StatusWaiting, 1, "")
	out := f.advance("r", waitroom.MaxAdvance, at(2*sec))
	wantTickets(f.t, "Advance(MaxAdvance)", out, a.Ticket)
}

func testManualToAuto(f *fixture) {
	cfg := quiet(2)
	cfg.Mode = waitroom.ModeManual
	f.put("r", cfg, at(0))
	s := f.joinN("r", 3, at(0))
	cfg.Mode = waitroom.ModeAuto
	r := f.put("r", cfg, at(5*sec))
	if r.Active != 2 || r.Waiting != 1 {
		f.t.Fatalf("PutRoom(manual→auto) = %+v, want 2 admitted at once", r)
	}
	got := f.wantPeek("r", s[1], waitroom.StatusActive, 0, "")
	wantTime(f.t, "admitted_at", got.AdmittedAt, at(5*sec))
	f.wantPeek("r", s[2], waitroom.StatusWaiting, 1, "")
}

func testAutoToManual(f *fixture) {
	f.put("r", quiet(1), at(0))
	s := f.joinN("r", 2, at(0))
	cfg := quiet(1)
	cfg.Mode = waitroom.ModeManual
	f.put("r", cfg, at(sec))
	f.wantPeek("r", s[0], waitroom.StatusActive, 0, "")
	f.leave("r", s[0].ID, waitroom.ReasonLeft, at(2*sec))
	f.wantPeek("r", s[1], waitroom.StatusWaiting, 1, "")
	c := f.join("r", "", at(3*sec))
	wantState(f.t, "join in a manual room with a free slot", c, waitroom.StatusWaiting, 2, "")
}

func testAdvanceAuto(f *fixture) {
	f.put("r", quiet(1), at(0))
	s := f.joinN("r", 5, at(0))
	now := at(5 * sec)
	out := f.advance("r", 2, now)
	wantTickets(f.t, "Advance(2) in an auto room", out, s[1].Ticket, s[2].Ticket)
	for _, x := range out {
		wantState(f.t, "Advance result", x, waitroom.StatusActive, 0, "")
		wantTime(f.t, "admitted_at", x.AdmittedAt, now)
	}
	f.wantCounts("r", 2, 3)
	f.wantPeek("r", s[3], waitroom.StatusWaiting, 1, "")

	// Advance ignores pause too.
	cfg := quiet(1)
	cfg.Paused = true
	f.put("r", cfg, at(6*sec))
	out = f.advance("r", 1, at(7*sec))
	wantTickets(f.t, "Advance in a paused room", out, s[3].Ticket)
	f.wantCounts("r", 1, 4)
}

func testSweepResult(f *fixture) {
	cfg := quiet(2)
	cfg.ActiveTimeout = dur(10 * sec)
	cfg.WaitingTimeout = dur(20 * sec)
	f.put("r", cfg, at(0))
	if res := f.sweep("r", at(0)); res != (waitroom.SweepResult{}) {
		f.t.Fatalf("Sweep of an empty room = %+v, want the zero result", res)
	}
	s := f.joinN("r", 5, at(0))
	res := f.sweep("r", at(10*sec+msec))
	if res.Expired != 2 || res.Admitted != 2 {
		f.t.Fatalf("Sweep at the idle deadlines = %+v, want 2 expired, 2 admitted", res)
	}
	// Next: c's and d's idle deadlines (admitted at 10.001s) come first.
	if res.Next.IsZero() || !res.Next.After(at(10*sec+msec)) || res.Next.After(at(20*sec+msec)) {
		f.t.Errorf("Sweep Next = %s, want in (base+10.001s, base+20.001s]", rel(res.Next))
	}
	f.wantPeek("r", s[4], waitroom.StatusWaiting, 1, "")
	res = f.sweep("r", at(time.Hour))
	if res.Expired != 3 || res.Admitted != 0 {
		f.t.Fatalf("Sweep after every deadline = %+v, want 3 expired, 0 admitted", res)
	}
	if !res.Next.IsZero() && !res.Next.After(at(time.Hour)) {
		f.t.Errorf("Sweep Next = %s, want zero or later than now", rel(res.Next))
	}
	if res := f.sweep("r", at(time.Hour)); res.Expired != 0 || res.Admitted != 0 {
		f.t.Fatalf("second Sweep at the same time = %+v, want nothing done", res)
	}

	// Nothing scheduled: no timeouts, nobody waiting.
	f.put("q", quiet(1), at(0))
	f.join("q", "", at(0))
	if res := f.sweep("q", at(sec)); !res.Next.IsZero() {
		f.t.Errorf("Sweep with nothing scheduled: Next = %s, want zero", rel(res.Next))
	}
}

func testEarlierNow(f *fixture) {
	f.put("r", quiet(1), at(0))
	a := f.join("r", "", at(10*sec))
	b := f.join("r", "", at(5*sec))
	wantTime(f.t, "joined_at of a join with an earlier now", b.JoinedAt, at(10*sec))
	left := f.leave("r", a.ID, waitroom.ReasonLeft, at(sec))
	wantTime(f.t, "ended_at of a leave with an earlier now", left.EndedAt, at(10*sec))
	got := f.wantPeek("r", b, waitroom.StatusActive, 0, "")
	wantTime(f.t, "admitted_at with an earlier now", got.AdmittedAt, at(10*sec))

	// Deadlines count from the latest time too.
	cfg := quiet(1)
	cfg.ActiveTimeout = dur(10 * sec)
	f.put("q", cfg, at(100*sec))
	c := f.join("q", "", at(0))
	wantTime(f.t, "joined_at", c.JoinedAt, at(100*sec))
	f.sweep("q", at(109*sec))
	f.wantPeek("q", c, waitroom.StatusActive, 0, "")
	f.sweep("q", at(110*sec))
	f.wantPeek("q", c, waitroom.StatusExpired, 0, waitroom.ReasonIdle)
}
