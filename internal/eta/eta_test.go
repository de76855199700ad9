package eta

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/memstore"
)

var t0 = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

// TestEstimateRange checks the estimate's shape: proportional to position,
// with a range that holds the estimate and narrows as evidence grows.
func TestEstimateRange(t *testing.T) {
	one := Estimate(10, 10, 100*time.Second, 0) // 0.1 departures/s
	if one.Seconds != 100 {
		t.Errorf("position 10 at 0.1/s: got %ds, want 100s", one.Seconds)
	}
	if !(one.Low <= one.Seconds && one.Seconds <= one.High) {
		t.Errorf("range %d..%d does not hold %d", one.Low, one.High, one.Seconds)
	}
	two := Estimate(20, 10, 100*time.Second, 0)
	if two.Seconds != 2*one.Seconds {
		t.Errorf("position 20: got %ds, want twice position 10's %ds", two.Seconds, one.Seconds)
	}
	more := Estimate(10, 1000, 10_000*time.Second, 0) // same rate, 100× the evidence
	if more.Seconds != one.Seconds {
		t.Errorf("same rate, more evidence: got %ds, want %ds", more.Seconds, one.Seconds)
	}
	if more.High-more.Low >= one.High-one.Low {
		t.Errorf("range with 1000 departures (%d..%d) is not narrower than with 10 (%d..%d)", more.Low, more.High, one.Low, one.High)
	}
	capped := Estimate(10, 600, 60*time.Second, 60) // observed 10/s, limit 1/s
	if capped.Seconds != 10 {
		t.Errorf("rate-limited room: got %ds, want 10s (the limit, not the observed burst)", capped.Seconds)
	}
	if Estimate(0, 10, time.Minute, 0) != nil || Estimate(5, 0, time.Minute, 0) != nil {
		t.Error("no position or no departures: want no estimate")
	}
}

// TestFillFromStore follows a real store: no estimate before two
// departures, one after, none while paused, none for active sessions.
func TestFillFromStore(t *testing.T) {
	ctx := context.Background()
	s := memstore.New()
	e := New(s)
	defer e.Close()
	cfg := waitroom.DefaultConfig()
	cfg.Capacity = 1
	cfg.WaitingTimeout = 0
	if _, _, err := s.PutRoom(ctx, "r", cfg, t0); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for range 6 {
		x, err := s.Join(ctx, "r", "", t0)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, x.ID)
	}
	last := func(at time.Time) waitroom.Session {
		x, err := s.Session(ctx, "r", ids[len(ids)-1], at)
		if err != nil {
			t.Fatal(err)
		}
		e.Fill(&x, at)
		return x
	}
	if x := last(t0); x.ETA != nil {
		t.Errorf("before anyone left the line: got ETA %+v, want none", *x.ETA)
	}
	// One departure every 30 seconds.
	now := t0
	for i := 0; i < 3; i++ {
		now = now.Add(30 * time.Second)
		if _, err := s.Leave(ctx, "r", ids[i], waitroom.ReasonLeft, now); err != nil {
			t.Fatal(err)
		}
	}
	x := last(now)
	if x.ETA == nil {
		t.Fatal("after three departures: no ETA, want one")
	}
	// Three departures, 30s apart: two intervals over 60s is 1/30s, so
	// position 2 waits 60s.
	if x.Position != 2 || x.ETA.Seconds != 60 {
		t.Errorf("position %d: got ETA %ds, want 60s at three departures 30s apart", x.Position, x.ETA.Seconds)
	}
	active, err := s.Session(ctx, "r", ids[3], now)
	if err != nil {
		t.Fatal(err)
	}
	e.Fill(&active, now)
	if active.ETA != nil {
		t.Error("active session got an ETA")
	}
	cfg.Paused = true
	if _, _, err := s.PutRoom(ctx, "r", cfg, now); err != nil {
		t.Fatal(err)
	}
	if x := last(now); x.ETA != nil {
		t.Errorf("paused room: got ETA %+v, want none", *x.ETA)
	}
	cfg.Paused = false
	if _, _, err := s.PutRoom(ctx, "r", cfg, now); err != nil {
		t.Fatal(err)
	}
	if x := last(now.Add(11 * time.Minute)); x.ETA != nil {
		t.Errorf("ten minutes with no departure: got ETA %+v, want none", *x.ETA)
	}
}

// TestBurstIsNotARate: two departures in the same instant are no basis for
// an estimate, either way: promising position 41 a wait of seconds would be
// as wrong as the hours a floor on the span would promise position 4,000 of
// a room that has just started to move. Once they span ten seconds, they
// are one.
func TestBurstIsNotARate(t *testing.T) {
	e := &Estimator{rooms: map[string]*history{}}
	ev := waitroom.Event{Room: "r", Kind: waitroom.EventSessions, At: t0}
	for range 2 {
		ev.Changes = append(ev.Changes, waitroom.Change{From: waitroom.StatusActive,
			Session: waitroom.Session{Status: waitroom.StatusLeft, EndedAt: t0}})
	}
	e.Observe(ev)
	s := waitroom.Session{Room: "r", Status: waitroom.StatusWaiting, Position: 41}
	e.Fill(&s, t0.Add(100*time.Millisecond))
	if s.ETA != nil {
		t.Errorf("position 41 100ms after a burst of two departures: ETA %+v, want none", *s.ETA)
	}
	e.Fill(&s, t0.Add(minSpan))
	if s.ETA == nil || s.ETA.Seconds < 60 {
		t.Errorf("position 41 ten seconds after two departures: ETA %+v, want at least a minute", s.ETA)
	}
}

// TestFastRoomEstimatesAtOnce: a room freeing hundreds of slots a second
// has a basis for an estimate within a few dozen milliseconds of its first
// departure, and the estimate is near the truth.
func TestFastRoomEstimatesAtOnce(t *testing.T) {
	e := &Estimator{rooms: map[string]*history{}}
	at := t0
	for range 200 { // 500 a second
		at = at.Add(2 * time.Millisecond)
		e.Observe(waitroom.Event{Room: "r", Kind: waitroom.EventSessions, At: at, Changes: []waitroom.Change{{
			From: waitroom.StatusActive, Session: waitroom.Session{Status: waitroom.StatusLeft, EndedAt: at}}}})
	}
	s := waitroom.Session{Room: "r", Status: waitroom.StatusWaiting, Position: 4000}
	e.Fill(&s, at)
	if s.ETA == nil || s.ETA.Seconds < 6 || s.ETA.Seconds > 10 {
		t.Errorf("position 4,000 in a room admitting 500/s: ETA %+v, want about 8s", s.ETA)
	}
}

// TestInvitationsMoveTheLine: in a room that holds places, a held
// session's invitation is its turn, so invitations set the rate; an
// unclaimed invitation holds its slot for the claim window, which shows
// as a slower rate, and a claim is not counted a second time.
func TestInvitationsMoveTheLine(t *testing.T) {
	ctx := context.Background()
	s := memstore.New()
	e := New(s)
	defer e.Close()
	cfg := waitroom.DefaultConfig()
	cfg.Capacity, cfg.WaitingTimeout = 1, 0
	cfg.HoldPlaces, cfg.ClaimWindow = true, waitroom.Duration(time.Minute)
	if _, _, err := s.PutRoom(ctx, "r", cfg, t0); err != nil {
		t.Fatal(err)
	}
	var held []waitroom.Session
	for i := range 6 {
		x, err := s.JoinWith(ctx, "r", waitroom.JoinRequest{Contact: fmt.Sprintf("sms:%d", i)}, t0)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, x)
	}
	// Each invitation goes unclaimed: one turn a minute.
	now := t0
	for range 3 {
		now = now.Add(time.Minute)
		if _, err := s.Sweep(ctx, "r", now); err != nil {
			t.Fatal(err)
		}
	}
	last, err := s.Session(ctx, "r", held[5].ID, now)
	if err != nil || last.Status != waitroom.StatusWaiting {
		t.Fatalf("last held session = %+v, %v; want waiting", last, err)
	}
	e.Fill(&last, now)
	if last.ETA == nil {
		t.Fatalf("no estimate after 4 invitations over 3 minutes")
	}
	// Four invitations (t0 and three a minute apart) over three minutes:
	// 2 ahead at 4/180s is 90s for position 2.
	if got := last.ETA.Seconds; got < 60 || got > 120 {
		t.Fatalf("estimate %ds for position %d after invitations a minute apart, want about 90s", got, last.Position)
	}
	// A claim is no second turn: the rate must not change.
	inv, err := s.Session(ctx, "r", held[3].ID, now)
	if err != nil || inv.Status != waitroom.StatusInvited {
		t.Fatalf("held[3] = %+v, %v; want invited", inv, err)
	}
	before := last.ETA.Seconds
	if _, err := s.Claim(ctx, "r", held[3].ID, now); err != nil {
		t.Fatal(err)
	}
	again, _ := s.Session(ctx, "r", held[5].ID, now)
	e.Fill(&again, now)
	if again.ETA == nil || again.ETA.Seconds != before*int64(again.Position)/int64(last.Position) {
		t.Fatalf("after a claim: estimate %+v at position %d, want the same rate as %ds at position %d", again.ETA, again.Position, before, last.Position)
	}
}

// TestDropFillIsNotARate reproduces a drop's opening: a room of capacity
// 200 fills from its line in one instant, then a slot comes free every 2.5
// seconds (two departures every 5 s, each handing its slot to the next in
// line at once). The fill says nothing about how fast the line moves: the
// line moves at the departures' 0.4 a second, so position 100 waits about
// 250 s. An estimate of a few seconds (the fill taken for a rate of
// hundreds a second) is off by two orders of magnitude.
func TestDropFillIsNotARate(t *testing.T) {
	e := &Estimator{rooms: map[string]*history{}}
	cfg := waitroom.DefaultConfig()
	cfg.Capacity = 200
	e.Observe(waitroom.Event{Room: "r", Kind: waitroom.EventConfig, At: t0, Config: &cfg})
	fill := waitroom.Event{Room: "r", Kind: waitroom.EventSessions, At: t0, Active: 200, Waiting: 1000}
	for i := range 200 {
		fill.Changes = append(fill.Changes, waitroom.Change{From: waitroom.StatusWaiting,
			Session: waitroom.Session{ID: fmt.Sprint("a", i), Status: waitroom.StatusActive, AdmittedAt: t0}})
	}
	e.Observe(fill)
	s := waitroom.Session{Room: "r", Status: waitroom.StatusWaiting, Position: 100, Capacity: 200, Active: 200, Waiting: 1000}
	check := func(at time.Time, what string) {
		t.Helper()
		e.Fill(&s, at)
		if s.ETA == nil {
			return // not known yet is honest
		}
		if s.ETA.Seconds < 200 || s.ETA.Seconds > 320 {
			t.Errorf("%s: position 100 at 0.4 departures a second: ETA %ds (range %d..%d), want about 250s or none", what, s.ETA.Seconds, s.ETA.Low, s.ETA.High)
		}
		if s.ETA.High < 250 {
			t.Errorf("%s: ETA range %d..%d promises sooner than the room can deliver (250s)", what, s.ETA.Low, s.ETA.High)
		}
	}
	check(t0.Add(100*time.Millisecond), "100ms after the fill")
	check(t0.Add(11*time.Second), "11s after the fill, before any departure")
	at := t0
	for i := range 40 {
		at = at.Add(2500 * time.Millisecond)
		gone := waitroom.Session{ID: fmt.Sprint("a", i), Status: waitroom.StatusLeft, AdmittedAt: t0, EndedAt: at}
		in := waitroom.Session{ID: fmt.Sprint("b", i), Status: waitroom.StatusActive, AdmittedAt: at}
		e.Observe(waitroom.Event{Room: "r", Kind: waitroom.EventSessions, At: at, Active: 200, Waiting: 1000 - i - 1,
			Changes: []waitroom.Change{{From: waitroom.StatusActive, Session: gone}, {From: waitroom.StatusWaiting, Session: in}}})
		check(at.Add(time.Second), fmt.Sprintf("after %d departures", i+1))
	}
	e.Fill(&s, at.Add(time.Second))
	if s.ETA == nil {
		t.Fatal("after 40 departures over 100s: no ETA, want one")
	}
}

// TestPriorsFromTheRoom: before its line has moved, a room's own
// configuration and history give a basis, and say why when they do not.
func TestPriorsFromTheRoom(t *testing.T) {
	e := &Estimator{rooms: map[string]*history{}}
	cfg := waitroom.DefaultConfig()
	cfg.Capacity = 100
	e.Observe(waitroom.Event{Room: "r", Kind: waitroom.EventConfig, At: t0, Config: &cfg})
	s := waitroom.Session{Room: "r", Status: waitroom.StatusWaiting, Position: 50}
	if x, why := e.Estimate(&s, t0); x != nil || why != ReasonStarting {
		t.Errorf("new room: got %+v, %q; want none, %q", x, why, ReasonStarting)
	}
	// Earlier sessions held their slot 20s each: 100 slots free 5 a
	// second, so position 50 waits about 10s, and the range holds it.
	ev := waitroom.Event{Room: "r", Kind: waitroom.EventSessions, At: t0, Active: 100}
	for range minHolds {
		ev.Changes = append(ev.Changes, waitroom.Change{From: waitroom.StatusActive, Session: waitroom.Session{
			Status: waitroom.StatusLeft, AdmittedAt: t0.Add(-20 * time.Second), EndedAt: t0}})
	}
	e.Observe(ev)
	later := t0.Add(20 * time.Minute) // the departures are out of the window
	x, why := e.Estimate(&s, later)
	if x == nil || x.Seconds < 9 || x.Seconds > 11 || x.Low > 10 || x.High < 10 {
		t.Errorf("learned hold 20s, capacity 100, position 50: got %+v (%q), want about 10s", x, why)
	}
	// max_session bounds the wait: 100 slots turn over within 5s.
	cfg.MaxSession = waitroom.Duration(5 * time.Second)
	e.Observe(waitroom.Event{Room: "r", Kind: waitroom.EventConfig, At: later, Config: &cfg, Active: 100})
	if x, _ := e.Estimate(&s, later); x == nil || x.High > 5 || x.Seconds > 5 {
		t.Errorf("max_session 5s, capacity 100, position 50: got %+v, want at most 5s", x)
	}
	// A room that is not full moves at its rate limit.
	cfg.MaxSession, cfg.RatePerMinute = 0, 60
	e.Observe(waitroom.Event{Room: "r", Kind: waitroom.EventConfig, At: later, Config: &cfg, Active: 10})
	if x, _ := e.Estimate(&s, later); x == nil || x.Seconds != 50 {
		t.Errorf("rate 60/min, room not full, position 50: got %+v, want 50s", x)
	}
	cfg.Paused = true
	e.Observe(waitroom.Event{Room: "r", Kind: waitroom.EventConfig, At: later, Config: &cfg, Active: 10})
	if x, why := e.Estimate(&s, later); x != nil || why != ReasonPaused {
		t.Errorf("paused: got %+v, %q; want none, %q", x, why, ReasonPaused)
	}
}

// TestWavesWidenTheRange: departures that come in waves (80 in one
// second, none in the next) give the same rate as a steady 40 a second,
// and a range that says how much less sure it is.
func TestWavesWidenTheRange(t *testing.T) {
	eta := func(perSecond func(i int) int) *waitroom.ETA {
		e := &Estimator{rooms: map[string]*history{}}
		for i := range 30 {
			at := t0.Add(time.Duration(i) * time.Second)
			ev := waitroom.Event{Room: "r", Kind: waitroom.EventSessions, At: at, Active: 200}
			for range perSecond(i) {
				ev.Changes = append(ev.Changes, waitroom.Change{From: waitroom.StatusActive,
					Session: waitroom.Session{Status: waitroom.StatusLeft, EndedAt: at}})
			}
			e.Observe(ev)
		}
		s := waitroom.Session{Room: "r", Status: waitroom.StatusWaiting, Position: 2000}
		e.Fill(&s, t0.Add(30*time.Second))
		return s.ETA
	}
	steady := eta(func(int) int { return 40 })
	waves := eta(func(i int) int { return 80 * (i % 2) })
	if steady == nil || waves == nil {
		t.Fatalf("no estimate: steady %+v, waves %+v", steady, waves)
	}
	if d := steady.Seconds - waves.Seconds; d < -3 || d > 3 {
		t.Errorf("same rate: steady %ds, waves %ds", steady.Seconds, waves.Seconds)
	}
	if waves.High-waves.Low < 2*(steady.High-steady.Low) {
		t.Errorf("waves: range %d..%d, want at least twice as wide as steady's %d..%d", waves.Low, waves.High, steady.Low, steady.High)
	}
}

// TestRampIsNotTheRate: a room's first visitors come in over a second or
// ten, so their departures start as a ramp (1, 2, … 9, then 10 a second);
// the rate that follows, 10 a second, is the line's.
func TestRampIsNotTheRate(t *testing.T) {
	e := &Estimator{rooms: map[string]*history{}}
	perSecond := []int{1, 2, 3, 4, 5, 6, 7, 8, 9}
	for range 11 {
		perSecond = append(perSecond, 10)
	}
	for i, n := range perSecond {
		at := t0.Add(time.Duration(i) * time.Second)
		ev := waitroom.Event{Room: "r", Kind: waitroom.EventSessions, At: at, Active: 100}
		for j := range n {
			end := at.Add(time.Duration(j) * time.Second / time.Duration(n))
			ev.Changes = append(ev.Changes, waitroom.Change{From: waitroom.StatusActive,
				Session: waitroom.Session{Status: waitroom.StatusLeft, EndedAt: end}})
		}
		e.Observe(ev)
	}
	s := waitroom.Session{Room: "r", Status: waitroom.StatusWaiting, Position: 100}
	e.Fill(&s, t0.Add(20*time.Second))
	if s.ETA == nil || s.ETA.Seconds < 9 || s.ETA.Seconds > 12 {
		t.Errorf("position 100 after a ramp up to 10 departures a second: ETA %+v, want about 10s", s.ETA)
	}
}
