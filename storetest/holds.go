package storetest

import (
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/waitroom/waitroom"
)

// Holding places: held joins need no presence, are invited when their turn
// comes, claim within the claim window or expire unclaimed; and sessions
// are told once when they reach notify_at.

var holdsSuite = []struct {
	name string
	fn   func(*fixture)
}{
	{"HoldsConfig", testHoldsConfig},
	{"HoldsJoinRefused", testHoldsJoinRefused},
	{"HoldsNoPresence", testHoldsNoPresence},
	{"HoldsInviteAndClaim", testHoldsInviteAndClaim},
	{"HoldsUnclaimed", testHoldsUnclaimed},
	{"HoldsClaimRefused", testHoldsClaimRefused},
	{"HoldsEvents", testHoldsEvents},
	{"HoldsNear", testHoldsNear},
	{"HoldsStock", testHoldsStock},
	{"HoldsQueueAll", testHoldsQueueAll},
	{"HoldsManual", testHoldsManual},
}

func init() { suite = append(suite, holdsSuite...) }

func holding(capacity int, window time.Duration) waitroom.RoomConfig {
	c := quiet(capacity)
	c.HoldPlaces = true
	c.ClaimWindow = dur(window)
	return c
}

func (f *fixture) joinHeld(room, contact string, now time.Time) waitroom.Session {
	f.t.Helper()
	s, err := f.s.JoinWith(f.ctx, room, waitroom.JoinRequest{Contact: contact}, now)
	if err != nil {
		f.t.Fatalf("JoinWith(%q, contact %q) error = %v", room, contact, err)
	}
	if s.Contact != contact {
		f.t.Fatalf("JoinWith(%q) contact = %q, want %q", room, s.Contact, contact)
	}
	return s
}

func (f *fixture) claimHeld(room, id string, now time.Time) waitroom.Session {
	f.t.Helper()
	s, err := f.s.Claim(f.ctx, room, id, now)
	if err != nil {
		f.t.Fatalf("Claim(%q) error = %v", room, err)
	}
	return s
}

// events collects the store's events of room until the test ends.
func (f *fixture) events(room string) func() []waitroom.Event {
	var mu sync.Mutex
	var got []waitroom.Event
	cancel := f.s.Subscribe(func(e waitroom.Event) {
		if e.Room == room && !(e.Remote && len(e.Changes) == 0) {
			mu.Lock()
			got = append(got, e)
			mu.Unlock()
		}
	})
	f.t.Cleanup(cancel)
	return func() []waitroom.Event {
		mu.Lock()
		defer mu.Unlock()
		out := got
		got = nil
		return out
	}
}

// nearTickets lists the tickets the events told they are near, in order.
func nearTickets(es []waitroom.Event) []int64 {
	var out []int64
	for _, e := range es {
		for _, c := range e.Changes {
			if c.Near {
				out = append(out, c.Session.Ticket)
			}
		}
	}
	return out
}

func testHoldsConfig(f *fixture) {
	c := quiet(1)
	c.HoldPlaces = true
	_, _, err := f.s.PutRoom(f.ctx, "h", c, at(0))
	wantCode(f.t, "PutRoom with hold_places and no claim_window", err, waitroom.CodeInvalidConfig)
	c.ClaimWindow = dur(time.Minute)
	c.NotifyAt = waitroom.MaxNotifyAt + 1
	_, _, err = f.s.PutRoom(f.ctx, "h", c, at(0))
	wantCode(f.t, "PutRoom with notify_at too large", err, waitroom.CodeInvalidConfig)
	c.NotifyAt = 5
	r := f.put("h", c, at(0))
	if !r.HoldPlaces || r.ClaimWindow != dur(time.Minute) || r.NotifyAt != 5 {
		f.t.Fatalf("Room after PutRoom = %+v, want hold_places, claim_window 1m, notify_at 5", r.RoomConfig)
	}
}

func testHoldsJoinRefused(f *fixture) {
	f.put("plain", quiet(1), at(0))
	_, err := f.s.JoinWith(f.ctx, "plain", waitroom.JoinRequest{Contact: "sms:1"}, at(sec))
	wantCode(f.t, "held join in a room without hold_places", err, waitroom.CodeInvalidRequest)
	sched := holding(1, time.Minute)
	sched.OpensAt = at(time.Hour)
	f.put("drop", sched, at(0))
	_, err = f.s.JoinWith(f.ctx, "drop", waitroom.JoinRequest{Contact: "sms:1"}, at(sec))
	wantCode(f.t, "held join before the draw", err, waitroom.CodeInvalidRequest)
	f.put("h", holding(1, time.Minute), at(0))
	for _, bad := range []string{"a\nb", "\x00", string(make([]byte, waitroom.MaxContactLen+1)), "\xff"} {
		_, err = f.s.JoinWith(f.ctx, "h", waitroom.JoinRequest{Contact: bad}, at(sec))
		wantCode(f.t, "held join with a bad contact", err, waitroom.CodeInvalidRequest)
	}
	f.wantCounts("plain", 0, 0)
	f.wantCounts("h", 0, 0)
	if e := f.room("drop").Entrants; e != 0 {
		f.t.Fatalf("refused held joins entered the pre-queue: %d entrants", e)
	}
}

func testHoldsNoPresence(f *fixture) {
	c := holding(1, time.Minute)
	c.WaitingTimeout = dur(10 * sec)
	c.Grace = dur(sec)
	f.put("h", c, at(0))
	a := f.join("h", "", at(0))
	plain := f.join("h", "", at(0))
	held := f.joinHeld("h", "mailto:x@example.com", at(0))
	wantState(f.t, "held join", held, waitroom.StatusWaiting, 2, "")
	f.away("h", held.ID, at(sec))
	f.heartbeat("h", a.ID, at(30*sec))
	f.wantPeek("h", plain, waitroom.StatusExpired, 0, waitroom.ReasonNoPresence)
	got := f.wantPeek("h", held, waitroom.StatusWaiting, 1, "")
	if got.Contact != "mailto:x@example.com" {
		f.t.Fatalf("held session's contact = %q", got.Contact)
	}
	f.sweep("h", at(time.Hour))
	f.wantPeek("h", held, waitroom.StatusWaiting, 1, "")
	f.leave("h", a.ID, waitroom.ReasonLeft, at(time.Hour+sec))
	f.wantPeek("h", held, waitroom.StatusInvited, 0, "")
}

func testHoldsInviteAndClaim(f *fixture) {
	f.put("h", holding(1, time.Minute), at(0))
	a := f.join("h", "", at(0))
	held := f.joinHeld("h", "sms:+15550100", at(sec))
	b := f.join("h", "", at(2*sec))
	f.leave("h", a.ID, waitroom.ReasonLeft, at(10*sec))
	inv := f.wantPeek("h", held, waitroom.StatusInvited, 0, "")
	wantTime(f.t, "invited admitted_at", inv.AdmittedAt, at(10*sec))
	wantTime(f.t, "claim_by", inv.ClaimBy, at(70*sec))
	if inv.Active != 1 || inv.Waiting != 1 {
		f.t.Fatalf("invited: totals waiting %d active %d, want 1 and 1 (the slot is reserved)", inv.Waiting, inv.Active)
	}
	f.wantPeek("h", b, waitroom.StatusWaiting, 1, "")
	// An invited session needs no presence, and Away does nothing.
	f.away("h", held.ID, at(20*sec))
	f.sweep("h", at(65*sec))
	f.wantPeek("h", held, waitroom.StatusInvited, 0, "")
	got := f.claimHeld("h", held.ID, at(66*sec))
	wantState(f.t, "Claim", got, waitroom.StatusActive, 0, "")
	wantTime(f.t, "claimed admitted_at", got.AdmittedAt, at(66*sec))
	if !got.ClaimBy.IsZero() || got.Contact != "sms:+15550100" {
		f.t.Fatalf("claimed: claim_by %s, contact %q; want none and the contact", rel(got.ClaimBy), got.Contact)
	}
	again := f.claimHeld("h", held.ID, at(67*sec))
	wantState(f.t, "Claim of an active session", again, waitroom.StatusActive, 0, "")
	wantTime(f.t, "claimed again admitted_at", again.AdmittedAt, at(66*sec))
	f.wantPeek("h", b, waitroom.StatusWaiting, 1, "")
	f.wantCounts("h", 1, 1)
}

func testHoldsUnclaimed(f *fixture) {
	c := holding(1, 30*sec)
	c.ActiveTimeout = dur(time.Hour)
	f.put("h", c, at(0))
	held := f.joinHeld("h", "sms:1", at(0))
	wantState(f.t, "held join into a free slot", held, waitroom.StatusInvited, 0, "")
	wantTime(f.t, "claim_by", held.ClaimBy, at(30*sec))
	b := f.join("h", "", at(sec))
	f.sweep("h", at(30*sec-msec))
	f.wantPeek("h", held, waitroom.StatusInvited, 0, "")
	f.sweep("h", at(30*sec))
	f.wantPeek("h", held, waitroom.StatusExpired, 0, waitroom.ReasonUnclaimed)
	got := f.wantPeek("h", b, waitroom.StatusActive, 0, "")
	wantTime(f.t, "next admitted at the window's end", got.AdmittedAt, at(30*sec))
	_, err := f.s.Claim(f.ctx, "h", held.ID, at(31*sec))
	wantCode(f.t, "Claim after the window", err, waitroom.CodeNotInvited)
	var e *waitroom.Error
	if errors.As(err, &e); e == nil || e.Session == nil || e.Session.EndReason != waitroom.ReasonUnclaimed {
		f.t.Fatalf("Claim after the window: error %v, want the ended session with reason unclaimed", err)
	}
	hist := f.historyAll("h", waitroom.StatusExpired, 10)
	if len(hist) != 1 || hist[0].EndReason != waitroom.ReasonUnclaimed {
		f.t.Fatalf("History(expired) = %s, want the unclaimed session", describe(hist))
	}
}

func testHoldsClaimRefused(f *fixture) {
	f.put("h", holding(1, time.Minute), at(0))
	a := f.join("h", "", at(0))
	held := f.joinHeld("h", "sms:1", at(0))
	_, err := f.s.Claim(f.ctx, "h", held.ID, at(sec))
	wantCode(f.t, "Claim of a waiting session", err, waitroom.CodeNotInvited)
	_, err = f.s.Claim(f.ctx, "h", unknownID(99), at(sec))
	wantCode(f.t, "Claim of an unknown session", err, waitroom.CodeSessionNotFound)
	_, err = f.s.Claim(f.ctx, "h", "nonsense", at(sec))
	wantCode(f.t, "Claim of a malformed id", err, waitroom.CodeInvalidSessionID)
	_, err = f.s.Claim(f.ctx, "nosuch", held.ID, at(sec))
	wantCode(f.t, "Claim in a missing room", err, waitroom.CodeRoomNotFound)
	got := f.claimHeld("h", a.ID, at(2*sec))
	wantState(f.t, "Claim of an active session", got, waitroom.StatusActive, 0, "")
	wantTime(f.t, "admitted_at unchanged", got.AdmittedAt, at(0))
	f.wantPeek("h", held, waitroom.StatusWaiting, 1, "")
}

func testHoldsEvents(f *fixture) {
	f.put("h", holding(1, time.Minute), at(0))
	events := f.events("h")
	a := f.join("h", "", at(0))
	held := f.joinHeld("h", "sms:+15550100", at(0))
	events()
	f.leave("h", a.ID, waitroom.ReasonLeft, at(sec))
	es := events()
	msgs := hookTypes(es)
	if !slices.Equal(msgs, []string{waitroom.HookSessionEnded, waitroom.HookSessionInvited}) {
		f.t.Fatalf("leave that invites: webhook events %v, want ended then invited", msgs)
	}
	inv := findHook(es, waitroom.HookSessionInvited)
	if inv == nil || inv.Contact != "sms:+15550100" || inv.ClaimBy == nil || !inv.ClaimBy.Equal(at(61*sec)) ||
		inv.ClaimPath != waitroom.ClaimPath("h", held.ID) || inv.From != waitroom.StatusWaiting {
		f.t.Fatalf("session.invited data = %+v, want the contact, claim_by +61s and the claim path", inv)
	}
	f.claimHeld("h", held.ID, at(2*sec))
	es = events()
	if msgs := hookTypes(es); !slices.Equal(msgs, []string{waitroom.HookSessionClaimed}) {
		f.t.Fatalf("claim: webhook events %v, want session.claimed", msgs)
	}
	f.leave("h", held.ID, waitroom.ReasonLeft, at(3*sec))
	if ended := findHook(events(), waitroom.HookSessionEnded); ended == nil || ended.Contact != "sms:+15550100" || ended.From != waitroom.StatusActive {
		f.t.Fatalf("leave of a claimed session: session.ended data = %+v, want it with the contact", ended)
	}
	b := f.joinHeld("h", "sms:2", at(4*sec)) // invited at once
	f.sweep("h", at(4*sec+time.Minute))
	es = events()
	ended := findHook(es, waitroom.HookSessionEnded)
	if ended == nil || ended.Session != b.ID || ended.Reason != waitroom.ReasonUnclaimed || ended.Contact != "sms:2" {
		f.t.Fatalf("unclaimed: session.ended data = %+v, want reason unclaimed with the contact", ended)
	}
}

// hookTypes lists the session webhook events of es, in order.
func hookTypes(es []waitroom.Event) []string {
	var out []string
	for _, e := range es {
		for _, h := range waitroom.HookEvents(e) {
			if h.Session != nil {
				out = append(out, h.Type)
			}
		}
	}
	return out
}

func findHook(es []waitroom.Event, typ string) *waitroom.HookSession {
	for _, e := range es {
		for _, h := range waitroom.HookEvents(e) {
			if h.Type == typ {
				return h.Session
			}
		}
	}
	return nil
}

func testHoldsNear(f *fixture) {
	c := quiet(1)
	c.NotifyAt = 2
	f.put("n", c, at(0))
	events := f.events("n")
	ss := f.joinN("n", 5, at(0)) // #1 active, #2..#5 waiting
	if got := nearTickets(events()); !slices.Equal(got, []int64{2, 3}) {
		f.t.Fatalf("joins told %v they are near, want [2 3]", got)
	}
	f.leave("n", ss[0].ID, waitroom.ReasonLeft, at(sec)) // #2 in; #4 now second
	es := events()
	if got := nearTickets(es); !slices.Equal(got, []int64{4}) {
		f.t.Fatalf("an admission told %v, want [4]", got)
	}
	for _, e := range es {
		for _, ch := range e.Changes {
			if ch.Near && (ch.Session.Position != 2 || ch.Session.Status != waitroom.StatusWaiting) {
				f.t.Fatalf("near change %+v, want waiting at position 2", ch.Session)
			}
		}
	}
	if h := findHook(es, waitroom.HookSessionNear); h == nil || h.Position != 2 || h.Ticket != 4 {
		f.t.Fatalf("session.near data = %+v, want #4 at position 2", h)
	}
	f.heartbeat("n", ss[1].ID, at(2*sec))
	if got := nearTickets(events()); len(got) != 0 {
		f.t.Fatalf("a heartbeat told %v, want nobody", got)
	}
	front, err := f.s.Front(f.ctx, "n", ss[4].ID, at(3*sec))
	if err != nil || front.Position != 1 {
		f.t.Fatalf("Front = %+v, %v", front, err)
	}
	if got := nearTickets(events()); !slices.Equal(got, []int64{5}) {
		f.t.Fatalf("a move to the front told %v, want [5]", got)
	}
	c.NotifyAt = 10
	f.put("n", c, at(4*sec))
	if got := nearTickets(events()); len(got) != 0 {
		f.t.Fatalf("raising notify_at told %v, want nobody (all were told)", got)
	}
	more := f.joinN("n", 2, at(5*sec))
	if got := nearTickets(events()); !slices.Equal(got, []int64{more[0].Ticket, more[1].Ticket}) {
		f.t.Fatalf("joins within notify_at told %v, want %v", got, tickets(more))
	}
	c.NotifyAt = 0
	f.put("n", c, at(6*sec))
	f.join("n", "", at(7*sec))
	if got := nearTickets(events()); len(got) != 0 {
		f.t.Fatalf("notify_at 0 told %v, want nobody", got)
	}
}

func testHoldsStock(f *fixture) {
	c := holding(1, 10*sec)
	inv := int64(2)
	c.Inventory = &inv
	f.put("h", c, at(0))
	held := f.joinHeld("h", "sms:1", at(0))
	if !held.Unit || held.Status != waitroom.StatusInvited {
		f.t.Fatalf("held join into a free slot: %s, unit %v; want invited holding a unit", held.Status, held.Unit)
	}
	f.wantStock("h", 0, 1, 1)
	b := f.join("h", "", at(sec))
	f.sweep("h", at(10*sec))
	f.wantPeek("h", held, waitroom.StatusExpired, 0, waitroom.ReasonUnclaimed)
	if got := f.wantPeek("h", b, waitroom.StatusActive, 0, ""); !got.Unit {
		f.t.Fatalf("the next in line got no unit after an unclaimed invitation")
	}
	f.wantStock("h", 0, 1, 1)
}

func testHoldsQueueAll(f *fixture) {
	c := holding(1, time.Minute)
	c.NotifyAt = 3
	f.put("h", c, at(0))
	events := f.events("h")
	held := f.joinHeld("h", "sms:1", at(0))
	w := f.join("h", "", at(sec))
	if got := nearTickets(events()); !slices.Equal(got, []int64{w.Ticket}) {
		f.t.Fatalf("near told %v, want [%d]", got, w.Ticket)
	}
	_, moved, err := f.s.QueueAll(f.ctx, "h", at(2*sec))
	if err != nil || len(moved) != 1 || moved[0].ID != held.ID {
		f.t.Fatalf("QueueAll = %s, %v; want the invited session moved", describe(moved), err)
	}
	if got := nearTickets(events()); len(got) != 0 {
		f.t.Fatalf("QueueAll told %v they are near, want nobody (they had their turn)", got)
	}
	back := f.wantPeek("h", held, waitroom.StatusWaiting, 1, "")
	if back.Contact != "sms:1" {
		f.t.Fatalf("a held session sent back lost its contact: %q", back.Contact)
	}
	f.sweep("h", at(time.Hour)) // paused: held waiting needs no presence
	f.wantPeek("h", held, waitroom.StatusWaiting, 1, "")
	c.Paused = false
	f.put("h", c, at(time.Hour+sec))
	f.wantPeek("h", held, waitroom.StatusInvited, 0, "")
}

func testHoldsManual(f *fixture) {
	c := holding(0, time.Minute)
	c.Mode = waitroom.ModeManual
	f.put("desk", c, at(0))
	held := f.joinHeld("desk", "sms:1", at(0))
	wantState(f.t, "held join in a manual room", held, waitroom.StatusWaiting, 1, "")
	got := f.advance("desk", 1, at(sec))
	if len(got) != 1 || got[0].ID != held.ID || got[0].Status != waitroom.StatusServed {
		f.t.Fatalf("Advance = %s, want the held session served", describe(got))
	}
}
