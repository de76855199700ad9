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
	one := Estimate(10, 10, 100*time.Second, 0) // 0.1 admissions/s
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
		t.Errorf("range with 1000 admissions (%d..%d) is not narrower than with 10 (%d..%d)", more.Low, more.High, one.Low, one.High)
	}
	capped := Estimate(10, 600, 60*time.Second, 60) // observed 10/s, limit 1/s
	if capped.Seconds != 10 {
		t.Errorf("rate-limited room: got %ds, want 10s (the limit, not the observed burst)", capped.Seconds)
	}
	if Estimate(0, 10, time.Minute, 0) != nil || Estimate(5, 0, time.Minute, 0) != nil {
		t.Error("no position or no admissions: want no estimate")
	}
}

// TestFillFromStore follows a real store: no estimate before two
// admissions, one after, none while paused, none for active sessions.
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
	// One admission every 10 seconds.
	now := t0
	for i := 0; i < 3; i++ {
		now = now.Add(10 * time.Second)
		if _, err := s.Leave(ctx, "r", ids[i], waitroom.ReasonLeft, now); err != nil {
			t.Fatal(err)
		}
	}
	x := last(now)
	if x.ETA == nil {
		t.Fatal("after three admissions from the line: no ETA, want one")
	}
	// Three admissions from the line (ticket 1 never waited) in the 30s
	// since the room was created: 0.1/s, so position 2 waits 20s.
	if x.Position != 2 || x.ETA.Seconds != 20 {
		t.Errorf("position %d: got ETA %ds, want 20s at three admissions in 30s", x.Position, x.ETA.Seconds)
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
		t.Errorf("ten minutes with no admission: got ETA %+v, want none", *x.ETA)
	}
}

// TestBurstIsNotARate: two admissions in the same instant are no basis for
// an estimate, either way: promising position 41 a wait of seconds would be
// as wrong as the hours a floor on the span would promise position 4,000 of
// a room that has just started to move. Once they span ten seconds, they
// are one.
func TestBurstIsNotARate(t *testing.T) {
	e := &Estimator{rooms: map[string]*history{}}
	ev := waitroom.Event{Room: "r", Kind: waitroom.EventSessions, At: t0}
	for range 2 {
		ev.Changes = append(ev.Changes, waitroom.Change{From: waitroom.StatusWaiting,
			Session: waitroom.Session{Status: waitroom.StatusActive, AdmittedAt: t0}})
	}
	e.Observe(ev)
	s := waitroom.Session{Room: "r", Status: waitroom.StatusWaiting, Position: 41}
	e.Fill(&s, t0.Add(100*time.Millisecond))
	if s.ETA != nil {
		t.Errorf("position 41 100ms after a burst of two admissions: ETA %+v, want none", *s.ETA)
	}
	e.Fill(&s, t0.Add(minSpan))
	if s.ETA == nil || s.ETA.Seconds < 60 {
		t.Errorf("position 41 ten seconds after two admissions: ETA %+v, want at least a minute", s.ETA)
	}
}

// TestFastRoomEstimatesAtOnce: a room admitting hundreds a second has a
// basis for an estimate within a few dozen milliseconds of its first
// admission from the line, and the estimate is near the truth.
func TestFastRoomEstimatesAtOnce(t *testing.T) {
	e := &Estimator{rooms: map[string]*history{}}
	at := t0
	for range 40 { // 500 a second
		at = at.Add(2 * time.Millisecond)
		e.Observe(waitroom.Event{Room: "r", Kind: waitroom.EventSessions, At: at, Changes: []waitroom.Change{{
			From: waitroom.StatusWaiting, Session: waitroom.Session{Status: waitroom.StatusActive, AdmittedAt: at}}}})
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
