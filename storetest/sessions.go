package storetest

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/waitroom/waitroom"
)

func testKeys(f *fixture) {
	f.put("r", quiet(1), at(0))
	f.put("other", quiet(1), at(0))
	a := f.join("r", "u1", at(0))
	if a.Key != "u1" || a.Status != waitroom.StatusActive {
		f.t.Fatalf("Join(key u1) = key %q, %s; want key u1, active", a.Key, a.Status)
	}
	b := f.join("r", "u2", at(0))
	wantState(f.t, "Join(key u2)", b, waitroom.StatusWaiting, 1, "")

	for _, tc := range []struct {
		key  string
		live waitroom.Session
		pos  int64
	}{{"u1", a, 0}, {"u2", b, 1}} {
		_, err := f.s.Join(f.ctx, "r", tc.key, at(sec))
		wantCode(f.t, "Join with key "+tc.key+" again", err, waitroom.CodeAlreadyJoined)
		var e *waitroom.Error
		errors.As(err, &e)
		if e.Session == nil {
			f.t.Fatalf("already_joined error for %s carries no Session", tc.key)
		}
		if e.Session.ID != tc.live.ID || e.Session.Ticket != tc.live.Ticket || e.Session.Key != tc.key {
			f.t.Fatalf("already_joined Session = %+v, want the live session %s (ticket %d)", *e.Session, tc.live.ID, tc.live.Ticket)
		}
		wantState(f.t, "already_joined Session", *e.Session, tc.live.Status, tc.pos, "")
		wantTotals(f.t, "already_joined Session", e.Session.Waiting, e.Session.Active, 1, 1)
	}
	if r := f.room("r"); r.LastTicket != 2 {
		f.t.Fatalf("LastTicket after refused joins = %d, want 2 (no ticket issued)", r.LastTicket)
	}
	// The key is per room; sessions without a key never conflict.
	f.join("other", "u1", at(2*sec))
	f.join("r", "", at(2*sec))
	f.join("r", "", at(2*sec))

	f.leave("r", a.ID, waitroom.ReasonLeft, at(3*sec))
	c := f.join("r", "u1", at(4*sec))
	if c.ID == a.ID || c.Ticket <= 4 {
		f.t.Fatalf("re-join of u1 after leaving = ticket %d, id %q; want a new session with a ticket above 4", c.Ticket, c.ID)
	}
	f.wantPeek("r", a, waitroom.StatusLeft, 0, waitroom.ReasonLeft)
}

func testKeyRejoinAfterEnding(f *fixture) {
	cfg := quiet(1)
	cfg.ActiveTimeout = dur(10 * sec)
	f.put("r", cfg, at(0))
	a := f.join("r", "k", at(0))
	f.sweep("r", at(10*sec))
	f.wantPeek("r", a, waitroom.StatusExpired, 0, waitroom.ReasonIdle)
	b := f.join("r", "k", at(11*sec))
	if b.Ticket <= a.Ticket || b.Status != waitroom.StatusActive {
		f.t.Fatalf("re-join after expiry = ticket %d, %s; want a new active session", b.Ticket, b.Status)
	}
	// The expiry is seen by the Join itself, without a Sweep first.
	c := f.join("r", "k", at(21*sec))
	if c.Ticket <= b.Ticket {
		f.t.Fatalf("re-join at the old session's deadline = ticket %d, want above %d", c.Ticket, b.Ticket)
	}
	f.wantPeek("r", b, waitroom.StatusExpired, 0, waitroom.ReasonIdle)

	m := quiet(1)
	m.Mode = waitroom.ModeManual
	f.put("m", m, at(0))
	d := f.join("m", "k", at(0))
	f.advance("m", 1, at(sec))
	e := f.join("m", "k", at(2*sec))
	if e.Ticket <= d.Ticket {
		f.t.Fatalf("re-join after being served = ticket %d, want above %d", e.Ticket, d.Ticket)
	}
}

func testInvalidKey(f *fixture) {
	f.put("r", quiet(1), at(0))
	for _, key := range []string{"a\x00b", "\n", "\xff", strings.Repeat("k", waitroom.MaxKeyLen+1)} {
		_, err := f.s.Join(f.ctx, "r", key, at(0))
		wantCode(f.t, fmt.Sprintf("Join(key %q)", key), err, waitroom.CodeInvalidKey)
	}
	if r := f.room("r"); r.LastTicket != 0 {
		f.t.Fatalf("LastTicket after refused keys = %d, want 0", r.LastTicket)
	}
}

func testLeaveIdempotent(f *fixture) {
	f.put("r", quiet(1), at(0))
	a := f.join("r", "k", at(0))
	first := f.leave("r", a.ID, waitroom.ReasonLeft, at(sec))
	wantState(f.t, "Leave", first, waitroom.StatusLeft, 0, waitroom.ReasonLeft)
	wantTime(f.t, "Leave ended_at", first.EndedAt, at(sec))
	if first.ID != a.ID || first.Ticket != a.Ticket || first.Key != "k" {
		f.t.Fatalf("Leave = %+v, want the session %s", first, a.ID)
	}
	for i, again := range []waitroom.Session{
		f.leave("r", a.ID, waitroom.ReasonLeft, at(2*sec)),
		f.leave("r", a.ID, waitroom.ReasonRevoked, at(3*sec)),
		f.session("r", a.ID, at(4*sec)),
		f.heartbeat("r", a.ID, at(5*sec)),
	} {
		what := fmt.Sprintf("call %d on an ended session", i+1)
		wantState(f.t, what, again, waitroom.StatusLeft, 0, waitroom.ReasonLeft)
		wantTime(f.t, what+" ended_at", again.EndedAt, at(sec))
		if again.ID != a.ID || again.Ticket != a.Ticket {
			f.t.Fatalf("%s = %+v, want the same session", what, again)
		}
	}
}

func testLeaveInvalidReason(f *fixture) {
	f.put("r", quiet(1), at(0))
	a := f.join("r", "", at(0))
	for _, r := range []waitroom.Reason{"", waitroom.ReasonIdle, waitroom.ReasonServed, "bye"} {
		_, err := f.s.Leave(f.ctx, "r", a.ID, r, at(sec))
		wantCode(f.t, fmt.Sprintf("Leave(reason %q)", r), err, waitroom.CodeInvalidRequest)
	}
	f.wantPeek("r", a, waitroom.StatusActive, 0, "")
}

func testRevoke(f *fixture) {
	f.put("r", quiet(1), at(0))
	a := f.join("r", "", at(0))
	b := f.join("r", "", at(0))
	c := f.join("r", "", at(0))
	got := f.leave("r", c.ID, waitroom.ReasonRevoked, at(sec))
	wantState(f.t, "revoke a waiting session", got, waitroom.StatusLeft, 0, waitroom.ReasonRevoked)
	got = f.leave("r", a.ID, waitroom.ReasonRevoked, at(2*sec))
	wantState(f.t, "revoke an active session", got, waitroom.StatusLeft, 0, waitroom.ReasonRevoked)
	f.wantPeek("r", b, waitroom.StatusActive, 0, "")
	f.wantPeek("r", a, waitroom.StatusLeft, 0, waitroom.ReasonRevoked)
}

func testEndedSessionsReadable(f *fixture) {
	cfg := quiet(1)
	cfg.ActiveTimeout = dur(10 * sec)
	f.put("r", cfg, at(0))
	a := f.join("r", "k", at(0))
	b := f.join("r", "", at(sec))
	f.sweep("r", at(10*sec))
	for _, read := range []func() waitroom.Session{
		func() waitroom.Session { return f.session("r", a.ID, at(11*sec)) },
		func() waitroom.Session { return f.heartbeat("r", a.ID, at(12*sec)) },
		func() waitroom.Session { return f.peek("r", a.ID) },
	} {
		got := read()
		wantState(f.t, "ended session", got, waitroom.StatusExpired, 0, waitroom.ReasonIdle)
		wantTime(f.t, "joined_at", got.JoinedAt, at(0))
		wantTime(f.t, "admitted_at", got.AdmittedAt, at(0))
		wantTime(f.t, "ended_at", got.EndedAt, at(10*sec))
		if got.ID != a.ID || got.Room != "r" || got.Ticket != a.Ticket || got.Key != "k" {
			f.t.Fatalf("ended session = %+v, want id, room, ticket and key kept", got)
		}
		// Totals are the room's at the moment of reading.
		wantTotals(f.t, "ended session totals", got.Waiting, got.Active, 0, 1)
		if got.Capacity != 1 {
			f.t.Fatalf("ended session capacity = %d, want 1", got.Capacity)
		}
	}
	// A session that waited and left has no admitted_at.
	c := f.join("r", "", at(13*sec))
	got := f.leave("r", c.ID, waitroom.ReasonLeft, at(14*sec))
	wantTime(f.t, "admitted_at of a session that never got in", got.AdmittedAt, time.Time{})
	f.wantPeek("r", b, waitroom.StatusActive, 0, "")
}

func testWaitingPaging(f *fixture) {
	f.put("r", quiet(0), at(0))
	if got, next, err := f.s.Waiting(f.ctx, "r", waitroom.Page{}); err != nil || len(got) != 0 || next != "" {
		f.t.Fatalf("Waiting of an empty room = %s, %q, %v; want nothing", describe(got), next, err)
	}
	s := f.joinN("r", 7, at(0))
	after := ""
	for i, want := range [][]int64{{1, 2, 3}, {4, 5, 6}, {7}} {
		got, next, err := f.s.Waiting(f.ctx, "r", waitroom.Page{After: after, Limit: 3})
		if err != nil {
			f.t.Fatalf("Waiting page %d error = %v", i, err)
		}
		wantTickets(f.t, fmt.Sprintf("Waiting page %d", i), got, want...)
		for j, x := range got {
			wantState(f.t, "Waiting entry", x, waitroom.StatusWaiting, want[j], "")
			if x.ID != s[want[j]-1].ID || x.Room != "r" || x.Waiting != 7 {
				f.t.Fatalf("Waiting entry %+v, want id %s, room r, waiting 7", x, s[want[j]-1].ID)
			}
		}
		if (next == "") != (i == 2) {
			f.t.Fatalf("Waiting page %d next = %q; want a cursor except on the last page", i, next)
		}
		after = next
	}
	all, next, err := f.s.Waiting(f.ctx, "r", waitroom.Page{})
	if err != nil || next != "" {
		f.t.Fatalf("Waiting(default limit) = next %q, %v; want everything in one page", next, err)
	}
	wantTickets(f.t, "Waiting(default limit)", all, 1, 2, 3, 4, 5, 6, 7)
	// A page that ends exactly at the end may still hand out a cursor,
	// but following it must end the listing.
	wantTickets(f.t, "Waiting(limit 7)", f.waitingAll("r", 7), 1, 2, 3, 4, 5, 6, 7)
	wantTickets(f.t, "Waiting(limit 1)", f.waitingAll("r", 1), 1, 2, 3, 4, 5, 6, 7)
}

func testWaitingCursorAfterLeave(f *fixture) {
	f.put("r", quiet(0), at(0))
	s := f.joinN("r", 7, at(0))
	page, next, err := f.s.Waiting(f.ctx, "r", waitroom.Page{Limit: 3})
	if err != nil || next == "" {
		f.t.Fatalf("Waiting page 1 = next %q, %v", next, err)
	}
	wantTickets(f.t, "page 1", page, 1, 2, 3)
	f.leave("r", s[1].ID, waitroom.ReasonLeft, at(sec))
	page, _, err = f.s.Waiting(f.ctx, "r", waitroom.Page{After: next, Limit: 3})
	if err != nil {
		f.t.Fatalf("Waiting page 2 error = %v", err)
	}
	// The cursor continues after the last session shown; positions are
	// current, so they close up behind the one that left.
	wantTickets(f.t, "page 2 after a leave", page, 4, 5, 6)
	for i, x := range page {
		wantState(f.t, "page 2 entry", x, waitroom.StatusWaiting, int64(i+3), "")
	}
}

func testHistoryPaging(f *fixture) {
	cfg := quiet(1)
	cfg.ActiveTimeout = dur(10 * sec)
	f.put("r", cfg, at(0))
	if h := f.historyAll("r", "", 0); len(h) != 0 {
		f.t.Fatalf("History of a new room = %s, want empty", describe(h))
	}
	a := f.join("r", "", at(0))
	b := f.join("r", "", at(0))
	c := f.join("r", "", at(0))
	d := f.join("r", "", at(0))
	f.leave("r", b.ID, waitroom.ReasonLeft, at(sec))       // b left
	f.sweep("r", at(10*sec))                               // a expired (idle), c admitted
	f.leave("r", c.ID, waitroom.ReasonRevoked, at(11*sec)) // c revoked, d admitted
	m := cfg
	m.Mode = waitroom.ModeManual
	f.put("r", m, at(12*sec))
	e := f.join("r", "", at(12*sec))
	f.advance("r", 1, at(13*sec))                       // e served
	f.leave("r", d.ID, waitroom.ReasonLeft, at(14*sec)) // d left

	all := f.historyAll("r", "", 0)
	wantTickets(f.t, "History newest first", all, d.Ticket, e.Ticket, c.Ticket, a.Ticket, b.Ticket)
	want := []struct {
		status waitroom.Status
		reason waitroom.Reason
		ended  time.Duration
	}{
		{waitroom.StatusLeft, waitroom.ReasonLeft, 14 * sec},
		{waitroom.StatusServed, waitroom.ReasonServed, 13 * sec},
		{waitroom.StatusLeft, waitroom.ReasonRevoked, 11 * sec},
		{waitroom.StatusExpired, waitroom.ReasonIdle, 10 * sec},
		{waitroom.StatusLeft, waitroom.ReasonLeft, sec},
	}
	for i, w := range want {
		wantState(f.t, fmt.Sprintf("History entry %d", i), all[i], w.status, 0, w.reason)
		wantTime(f.t, fmt.Sprintf("History entry %d ended_at", i), all[i].EndedAt, at(w.ended))
		if all[i].ID == "" || all[i].Room != "r" {
			f.t.Fatalf("History entry %+v lacks id or room", all[i])
		}
	}

	after := ""
	for i, want := range [][]int64{{d.Ticket, e.Ticket}, {c.Ticket, a.Ticket}, {b.Ticket}} {
		got, next, err := f.s.History(f.ctx, "r", "", waitroom.Page{After: after, Limit: 2})
		if err != nil {
			f.t.Fatalf("History page %d error = %v", i, err)
		}
		wantTickets(f.t, fmt.Sprintf("History page %d", i), got, want...)
		if (next == "") != (i == 2) {
			f.t.Fatalf("History page %d next = %q; want a cursor except on the last page", i, next)
		}
		after = next
	}
	wantTickets(f.t, "History(left)", f.historyAll("r", waitroom.StatusLeft, 1), d.Ticket, c.Ticket, b.Ticket)
	wantTickets(f.t, "History(expired)", f.historyAll("r", waitroom.StatusExpired, 0), a.Ticket)
	wantTickets(f.t, "History(served)", f.historyAll("r", waitroom.StatusServed, 0), e.Ticket)
	for _, st := range []waitroom.Status{waitroom.StatusWaiting, waitroom.StatusActive, "bogus"} {
		_, _, err := f.s.History(f.ctx, "r", st, waitroom.Page{})
		wantCode(f.t, fmt.Sprintf("History(status %q)", st), err, waitroom.CodeInvalidRequest)
	}
}

func testSessionsBatch(f *fixture) {
	cfg := quiet(1)
	cfg.WaitingTimeout = dur(10 * sec)
	f.put("r", cfg, at(0))
	f.put("o", quiet(1), at(0))
	a := f.join("r", "", at(0))
	b := f.join("r", "", at(0))
	c := f.join("r", "", at(0))
	o := f.join("o", "", at(0))
	f.leave("r", c.ID, waitroom.ReasonLeft, at(sec))

	if got, err := f.s.Sessions(f.ctx, "r", nil); err != nil || len(got) != 0 {
		f.t.Fatalf("Sessions(no ids) = %v, %v; want empty", got, err)
	}
	in := []string{b.ID, unknownID(99), "malformed", a.ID, c.ID, otherSecret(a.ID), o.ID, "", otherSecret(c.ID)}
	for i := 0; i < 3; i++ { // repeated reads must not count as presence
		got, err := f.s.Sessions(f.ctx, "r", in)
		if err != nil {
			f.t.Fatalf("Sessions error = %v", err)
		}
		if len(got) != len(in) {
			f.t.Fatalf("Sessions returned %d sessions for %d ids", len(got), len(in))
		}
		wantState(f.t, "Sessions[0]", got[0], waitroom.StatusWaiting, 1, "")
		wantState(f.t, "Sessions[3]", got[3], waitroom.StatusActive, 0, "")
		wantState(f.t, "Sessions[4]", got[4], waitroom.StatusLeft, 0, waitroom.ReasonLeft)
		for j, x := range []waitroom.Session{got[0], got[3], got[4]} {
			if want := []string{b.ID, a.ID, c.ID}[j]; x.ID != want {
				f.t.Fatalf("Sessions entry %d id = %q, want %q (aligned with ids)", j, x.ID, want)
			}
			wantTotals(f.t, "Sessions totals", x.Waiting, x.Active, 1, 1)
		}
		for _, j := range []int{1, 2, 5, 6, 7, 8} {
			if got[j].ID != "" || got[j].Status != "" {
				f.t.Fatalf("Sessions[%d] for %q = %+v, want the zero Session", j, in[j], got[j])
			}
		}
	}
	f.sweep("r", at(10*sec))
	f.wantPeek("r", b, waitroom.StatusExpired, 0, waitroom.ReasonNoPresence)
}

// recorder collects the events a store publishes.
type recorder struct {
	mu     sync.Mutex
	events []waitroom.Event
	cancel func()
}

func record(f *fixture) *recorder {
	r := &recorder{}
	r.cancel = f.s.Subscribe(func(e waitroom.Event) {
		r.mu.Lock()
		r.events = append(r.events, e)
		r.mu.Unlock()
	})
	f.t.Cleanup(r.cancel)
	return r
}

// take returns and forgets the events recorded so far for room.
func (r *recorder) take(room string) []waitroom.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []waitroom.Event
	for _, e := range r.events {
		if e.Room == room {
			out = append(out, e)
		}
	}
	r.events = nil
	return out
}

func describeEvents(es []waitroom.Event) string {
	var b strings.Builder
	b.WriteString("[")
	for i, e := range es {
		if i > 0 {
			b.WriteString("; ")
		}
		fmt.Fprintf(&b, "%s %s at %s w%d a%d t%d", e.Room, e.Kind, rel(e.At), e.Waiting, e.Active, e.LastTicket)
		for _, c := range e.Changes {
			fmt.Fprintf(&b, " #%d %s→%s", c.Session.Ticket, c.From, c.Session.Status)
		}
	}
	return b.String() + "]"
}

// changeKey is one change reduced to what the tests compare.
type changeKey struct {
	ticket int64
	from   waitroom.Status
	to     waitroom.Status
}

func changesOf(es []waitroom.Event) []changeKey {
	var out []changeKey
	for _, e := range es {
		for _, c := range e.Changes {
			out = append(out, changeKey{c.Session.Ticket, c.From, c.Session.Status})
		}
	}
	return out
}

func testSubscribe(f *fixture) {
	ev := record(f)
	second := record(f)
	cfg := quiet(1)
	f.put("ev", cfg, at(0))
	es := ev.take("ev")
	if len(es) != 1 || es[0].Kind != waitroom.EventConfig || es[0].Config == nil || !es[0].Config.Equal(cfg) || !es[0].At.Equal(at(0)) {
		f.t.Fatalf("events of PutRoom(create) = %s, want one config event with the config", describeEvents(es))
	}
	if got := second.take("ev"); len(got) != 1 {
		f.t.Fatalf("second subscriber got %d events of PutRoom, want 1", len(got))
	}

	a := f.join("ev", "", at(sec))
	es = ev.take("ev")
	if len(es) != 1 || es[0].Kind != waitroom.EventSessions || es[0].Active != 1 || es[0].Waiting != 0 || es[0].LastTicket != 1 || !es[0].At.Equal(at(sec)) {
		f.t.Fatalf("events of Join = %s, want one sessions event at base+1s with active 1, waiting 0, last ticket 1", describeEvents(es))
	}
	if got := changesOf(es); len(got) != 1 || got[0] != (changeKey{a.Ticket, "", waitroom.StatusActive}) {
		f.t.Fatalf("changes of Join = %v, want [ticket %d: \"\" → active]", got, a.Ticket)
	}
	if c := es[0].Changes[0].Session; c.ID != a.ID || c.Room != "ev" {
		f.t.Fatalf("change session = %+v, want id and room of the joined session", c)
	}

	b := f.join("ev", "", at(sec))
	es = ev.take("ev")
	if got := changesOf(es); len(got) != 1 || got[0] != (changeKey{b.Ticket, "", waitroom.StatusWaiting}) || es[0].Waiting != 1 {
		f.t.Fatalf("events of a waiting Join = %s, want ticket %d: \"\" → waiting, waiting 1", describeEvents(es), b.Ticket)
	}

	f.leave("ev", a.ID, waitroom.ReasonLeft, at(2*sec))
	es = ev.take("ev")
	want := []changeKey{{a.Ticket, waitroom.StatusActive, waitroom.StatusLeft}, {b.Ticket, waitroom.StatusWaiting, waitroom.StatusActive}}
	if got := changesOf(es); fmt.Sprint(got) != fmt.Sprint(want) {
		f.t.Fatalf("changes of Leave = %v, want %v in that order", got, want)
	}
	if last := es[len(es)-1]; last.Active != 1 || last.Waiting != 0 {
		f.t.Fatalf("totals after Leave = waiting %d, active %d; want 0, 1", last.Waiting, last.Active)
	}
	for _, e := range es {
		for _, c := range e.Changes {
			if c.Session.Ticket == a.Ticket && (c.Session.EndReason != waitroom.ReasonLeft || !c.Session.EndedAt.Equal(at(2*sec))) {
				f.t.Fatalf("change of the leaver = %+v, want reason left, ended at base+2s", c.Session)
			}
		}
	}

	cfg.Capacity = 2
	f.put("ev", cfg, at(3*sec))
	es = ev.take("ev")
	if len(es) == 0 || es[0].Kind != waitroom.EventConfig || es[0].Config == nil || es[0].Config.Capacity != 2 {
		f.t.Fatalf("events of PutRoom(replace) = %s, want a config event with capacity 2", describeEvents(es))
	}

	if err := f.s.DeleteRoom(f.ctx, "ev", true, at(4*sec)); err != nil {
		f.t.Fatalf("DeleteRoom error = %v", err)
	}
	es = ev.take("ev")
	if len(es) == 0 || es[len(es)-1].Kind != waitroom.EventDeleted {
		f.t.Fatalf("events of DeleteRoom = %s, want a deleted event", describeEvents(es))
	}
	if got := changesOf(es); len(got) != 1 || got[0] != (changeKey{b.Ticket, waitroom.StatusActive, waitroom.StatusExpired}) {
		f.t.Fatalf("changes of DeleteRoom = %v, want ticket %d: active → expired", got, b.Ticket)
	}

	ev.cancel()
	ev.cancel() // cancel twice is harmless
	f.put("ev2", cfg, at(5*sec))
	f.join("ev2", "", at(5*sec))
	if got := ev.take("ev2"); len(got) != 0 {
		f.t.Fatalf("events after cancel = %s, want none", describeEvents(got))
	}
	if got := second.take("ev2"); len(got) < 2 {
		f.t.Fatalf("the other subscriber got %s, want its events to continue", describeEvents(got))
	}
}

func testSessionIDs(f *fixture) {
	f.put("r", quiet(1), at(0))
	f.put("o", quiet(1), at(0))
	a := f.join("r", "", at(0))
	ended := f.join("r", "", at(0))
	f.leave("r", ended.ID, waitroom.ReasonLeft, at(0))
	o1 := f.join("o", "", at(0))
	f.join("o", "", at(0))
	o3 := f.join("o", "", at(0))
	now := at(sec)

	calls := func(id string) map[string]func() error {
		return map[string]func() error{
			"Session":   func() error { _, err := f.s.Session(f.ctx, "r", id, now); return err },
			"Heartbeat": func() error { _, err := f.s.Heartbeat(f.ctx, "r", id, now); return err },
			"Away":      func() error { return f.s.Away(f.ctx, "r", id, now) },
			"Leave":     func() error { _, err := f.s.Leave(f.ctx, "r", id, waitroom.ReasonLeft, now); return err },
		}
	}
	valid := a.ID
	for _, bad := range []string{"", "x", valid[:len(valid)-1], valid + "A", strings.Repeat("!", 32), "+" + valid[1:], rawTicketID(0)} {
		for name, call := range calls(bad) {
			wantCode(f.t, fmt.Sprintf("%s(malformed %q)", name, bad), call(), waitroom.CodeInvalidSessionID)
		}
	}
	for what, id := range map[string]string{
		"another room's id (same ticket)":        o1.ID,
		"another room's id (ticket not in room)": o3.ID,
		"wrong secret of a live session":         otherSecret(a.ID),
		"wrong secret of an ended session":       otherSecret(ended.ID),
		"unknown ticket":                         unknownID(1000),
	} {
		for name, call := range calls(id) {
			wantCode(f.t, fmt.Sprintf("%s(%s)", name, what), call(), waitroom.CodeSessionNotFound)
		}
	}
	// None of that touched the live session.
	f.wantPeek("r", a, waitroom.StatusActive, 0, "")
	f.wantPeek("r", ended, waitroom.StatusLeft, 0, waitroom.ReasonLeft)
}

// rawTicketID returns an id string for ticket with a zero secret, without
// the range checks of SessionID (ticket 0 can never be issued).
func rawTicketID(ticket int64) string {
	return waitroom.SessionID{Ticket: ticket}.String()
}

func testPingAndClose(f *fixture) {
	if err := f.s.Ping(f.ctx); err != nil {
		f.t.Fatalf("Ping of an open store = %v, want nil", err)
	}
	f.put("r", quiet(1), at(0))
	if err := f.s.Close(); err != nil {
		f.t.Fatalf("Close = %v, want nil", err)
	}
	if err := f.s.Ping(f.ctx); err == nil {
		f.t.Errorf("Ping after Close = nil, want an error")
	}
	if _, err := f.s.Join(f.ctx, "r", "", at(sec)); err == nil {
		f.t.Errorf("Join after Close = nil error, want one")
	}
	if _, err := f.s.Room(f.ctx, "r"); err == nil {
		f.t.Errorf("Room after Close = nil error, want one")
	}
}
