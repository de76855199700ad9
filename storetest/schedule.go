package storetest

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/waitroom/waitroom"
)

// The schedule and the draw: a room with opens_at collects a pre-queue,
// then gives every entrant a ticket in the order of a committed draw.

// scheduleSuite lists the conformance tests of scheduled rooms.
var scheduleSuite = []struct {
	name string
	fn   func(*fixture)
}{
	{"ScheduleCommitment", testScheduleCommitment},
	{"PreQueueJoin", testPreQueueJoin},
	{"DrawAtOpening", testDrawAtOpening},
	{"DrawOnJoin", testDrawOnJoin},
	{"DrawOnlyOnce", testDrawOnlyOnce},
	{"PreQueueLeave", testPreQueueLeave},
	{"PreQueueKeyNoReroll", testPreQueueKeyNoReroll},
	{"ClosesAt", testClosesAt},
	{"ScheduleInvalid", testScheduleInvalid},
	{"OpensAtInThePast", testOpensAtInThePast},
	{"ClearOpensAtDraws", testClearOpensAtDraws},
	{"PreQueueNoTimeouts", testPreQueueNoTimeouts},
	{"PreQueueDeleteRoom", testPreQueueDeleteRoom},
	{"PreQueueAdvance", testPreQueueAdvance},
	{"DrawEvents", testDrawEvents},
	{"DrawLarge", testDrawLarge},
}

func init() { suite = append(suite, scheduleSuite...) }

// scheduled is quiet(capacity) opening at opens.
func scheduled(capacity int, opens time.Time) waitroom.RoomConfig {
	c := quiet(capacity)
	c.OpensAt = opens
	return c
}

func (f *fixture) draw(room string) waitroom.DrawRecord {
	f.t.Helper()
	d, err := f.s.Draw(f.ctx, room)
	if err != nil {
		f.t.Fatalf("Draw(%q) error = %v", room, err)
	}
	return d
}

// wantEntrant checks a session waits in the pre-queue of a room opening at
// opens with entrants in it.
func wantEntrant(t T, what string, s waitroom.Session, opens time.Time, entrants int) {
	t.Helper()
	if s.Status != waitroom.StatusWaiting || s.Ticket != 0 || s.Position != 0 || !s.OpensAt.Equal(opens) || s.Entrants != entrants || s.Entry == "" {
		t.Fatalf("%s = %s ticket %d position %d opens_at %s entrants %d entry %q; want waiting in the pre-queue: ticket 0, no position, opens_at %s, entrants %d, an entry",
			what, s.Status, s.Ticket, s.Position, rel(s.OpensAt), s.Entrants, s.Entry, rel(opens), entrants)
	}
}

// wantVerified checks a drawn record verifies and lists exactly entries.
func wantVerified(t T, what string, d waitroom.DrawRecord, commitment string, entries []string) {
	t.Helper()
	if err := waitroom.VerifyDraw(d); err != nil {
		t.Fatalf("%s: VerifyDraw error = %v", what, err)
	}
	if d.Commitment != commitment {
		t.Fatalf("%s: commitment %s, want the one published before the draw, %s", what, d.Commitment, commitment)
	}
	got := make([]string, len(d.Entries))
	for i, e := range d.Entries {
		got[i] = e.Entry
	}
	slices.Sort(got)
	want := slices.Clone(entries)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("%s: entries %v, want %v", what, got, want)
	}
}

func testScheduleCommitment(f *fixture) {
	opens := at(time.Hour)
	_, err := f.s.Draw(f.ctx, "nope")
	wantCode(f.t, "Draw of an unknown room", err, waitroom.CodeRoomNotFound)
	f.put("plain", quiet(1), at(0))
	_, err = f.s.Draw(f.ctx, "plain")
	wantCode(f.t, "Draw of a room never scheduled", err, waitroom.CodeNotFound)

	f.put("drop", scheduled(1, opens), at(0))
	d := f.draw("drop")
	if len(d.Commitment) != 64 || strings.Trim(d.Commitment, "0123456789abcdef") != "" {
		f.t.Fatalf("commitment %q, want 64 hex digits", d.Commitment)
	}
	if d.Drawn || d.Seed != "" || len(d.Entries) != 0 || d.Entrants != 0 || !d.OpensAt.Equal(opens) || d.Room != "drop" {
		f.t.Fatalf("record before the draw = %+v, want room drop, opens_at base+1h, commitment only", d)
	}
	// Replacing the configuration, even moving the opening, keeps the seed:
	// the commitment, once published, never changes.
	f.put("drop", scheduled(2, opens.Add(time.Hour)), at(sec))
	if d2 := f.draw("drop"); d2.Commitment != d.Commitment || !d2.OpensAt.Equal(opens.Add(time.Hour)) {
		f.t.Fatalf("after moving the opening: commitment %s opens_at %s, want %s and base+2h", d2.Commitment, rel(d2.OpensAt), d.Commitment)
	}
	// Another scheduled room has its own seed.
	f.put("drop2", scheduled(1, opens), at(sec))
	if d3 := f.draw("drop2"); d3.Commitment == d.Commitment {
		f.t.Fatalf("two rooms share the commitment %s", d.Commitment)
	}
}

func testPreQueueJoin(f *fixture) {
	opens := at(time.Hour)
	f.put("drop", scheduled(5, opens), at(0))
	a := f.join("drop", "", at(sec))
	wantEntrant(f.t, "first entrant", a, opens, 1)
	b := f.join("drop", "", at(2*sec))
	wantEntrant(f.t, "second entrant", b, opens, 2)
	k := f.join("drop", "user-7", at(3*sec))
	wantEntrant(f.t, "keyed entrant", k, opens, 3)
	if want := waitroom.EntryForKey("drop", "user-7"); k.Entry != want || k.Key != "user-7" {
		f.t.Fatalf("keyed entrant: entry %q key %q, want entry %q key user-7", k.Entry, k.Key, want)
	}
	if !strings.HasPrefix(a.Entry, "s:") || a.Entry == b.Entry {
		f.t.Fatalf("keyless entries %q and %q, want two different s: entries", a.Entry, b.Entry)
	}
	if sid, err := waitroom.ParseSessionID(a.ID); err != nil || sid.Entry == 0 || sid.Ticket != 0 {
		f.t.Fatalf("entrant id parses to %+v, %v; want an entry id without a ticket", sid, err)
	}
	// Nobody is admitted before the opening, whatever the capacity.
	r := f.room("drop")
	if r.Waiting != 0 || r.Active != 0 || r.Entrants != 3 || r.LastTicket != 0 {
		f.t.Fatalf("room before the opening: waiting %d active %d entrants %d last ticket %d; want 0, 0, 3, 0", r.Waiting, r.Active, r.Entrants, r.LastTicket)
	}
	if w := f.waitingAll("drop", 10); len(w) != 0 {
		f.t.Fatalf("Waiting before the opening lists %s, want nobody: entrants have no place yet", describe(w))
	}
	got := f.session("drop", a.ID, at(4*sec))
	wantEntrant(f.t, "Session of the first entrant", got, opens, 3)
	got = f.heartbeat("drop", b.ID, at(4*sec))
	wantEntrant(f.t, "Heartbeat of the second entrant", got, opens, 3)
	f.away("drop", b.ID, at(5*sec))
	if p := f.peek("drop", b.ID); p.ID != b.ID {
		f.t.Fatalf("peek of an entrant = %+v", p)
	} else {
		wantEntrant(f.t, "peek of an entrant away", p, opens, 3)
	}
	_, err := f.s.Session(f.ctx, "drop", otherSecret(a.ID), at(5*sec))
	wantCode(f.t, "an entrant id with another secret", err, waitroom.CodeSessionNotFound)
	if d := f.draw("drop"); d.Entrants != 3 || d.Drawn {
		f.t.Fatalf("record: entrants %d drawn %v, want 3, false", d.Entrants, d.Drawn)
	}
	if res := f.sweep("drop", at(10*sec)); !res.Next.Equal(opens) {
		f.t.Fatalf("Sweep.Next before the opening = %s, want the opening %s", rel(res.Next), rel(opens))
	}
}

func testDrawAtOpening(f *fixture) {
	opens := at(time.Hour)
	f.put("drop", scheduled(5, opens), at(0))
	commitment := f.draw("drop").Commitment
	var ss []waitroom.Session
	var entries []string
	for i := range 20 {
		key := ""
		if i%4 == 0 {
			key = fmt.Sprintf("user-%d", i)
		}
		s := f.join("drop", key, at(time.Duration(i+1)*sec))
		ss = append(ss, s)
		entries = append(entries, s.Entry)
	}
	// Just before the opening nothing happens.
	f.sweep("drop", opens.Add(-msec))
	wantEntrant(f.t, "entrant 1 a millisecond before the opening", f.peek("drop", ss[0].ID), opens, 20)

	f.sweep("drop", opens)
	d := f.draw("drop")
	wantVerified(f.t, "the draw", d, commitment, entries)
	if !d.Drawn || !d.DrawnAt.Equal(opens) || d.Entrants != 20 || d.FirstTicket != 1 {
		f.t.Fatalf("record: drawn %v at %s, entrants %d, first ticket %d; want drawn at the opening, 20, 1", d.Drawn, rel(d.DrawnAt), d.Entrants, d.FirstTicket)
	}
	ticketOf := map[string]int64{}
	for _, e := range d.Entries {
		ticketOf[e.Entry] = e.Ticket
	}
	for i, s := range ss {
		got := f.peek("drop", s.ID)
		want := ticketOf[s.Entry]
		if got.ID != s.ID || got.Ticket != want || got.Entry != s.Entry || !got.OpensAt.IsZero() {
			f.t.Fatalf("entrant %d after the draw: id kept %v, ticket %d, entry %q, opens_at %s; want the same id, ticket %d from the record, the same entry, no opens_at",
				i, got.ID == s.ID, got.Ticket, got.Entry, rel(got.OpensAt), want)
		}
		// Tickets 1-5 fill the capacity; the rest wait in ticket order.
		if want <= 5 {
			wantState(f.t, fmt.Sprintf("entrant %d (ticket %d)", i, want), got, waitroom.StatusActive, 0, "")
			wantTime(f.t, "admitted_at", got.AdmittedAt, opens)
		} else {
			wantState(f.t, fmt.Sprintf("entrant %d (ticket %d)", i, want), got, waitroom.StatusWaiting, want-5, "")
		}
		if !got.JoinedAt.Equal(s.JoinedAt) {
			f.t.Fatalf("entrant %d joined_at %s after the draw, want %s", i, rel(got.JoinedAt), rel(s.JoinedAt))
		}
	}
	w := f.waitingAll("drop", 4)
	wantTickets(f.t, "Waiting after the draw", w, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20)
	f.wantCounts("drop", 15, 5)
	if r := f.room("drop"); r.Entrants != 0 || r.LastTicket != 20 {
		f.t.Fatalf("room after the draw: entrants %d last ticket %d, want 0, 20", r.Entrants, r.LastTicket)
	}
	// A later arrival queues first come, first served behind the draw.
	late := f.join("drop", "", opens.Add(sec))
	wantState(f.t, "a join after the opening", late, waitroom.StatusWaiting, 16, "")
	if late.Ticket != 21 || late.Entry != "" || !late.OpensAt.IsZero() {
		f.t.Fatalf("late join: ticket %d entry %q opens_at %s, want 21, none, none", late.Ticket, late.Entry, rel(late.OpensAt))
	}
	// A drawn keyed session still holds its key.
	_, err := f.s.Join(f.ctx, "drop", "user-0", opens.Add(2*sec))
	wantCode(f.t, "join with a drawn key", err, waitroom.CodeAlreadyJoined)
	// Leaving a drawn session by its entry id works and hands its slot on.
	active := f.peek("drop", ss[slices.IndexFunc(ss, func(s waitroom.Session) bool { return ticketOf[s.Entry] == 1 })].ID)
	left := f.leave("drop", active.ID, waitroom.ReasonLeft, opens.Add(3*sec))
	if left.ID != active.ID || left.Ticket != 1 || left.Status != waitroom.StatusLeft || left.Entry != active.Entry {
		f.t.Fatalf("leave of drawn ticket 1 = %+v, want it left with its id, ticket and entry", left)
	}
	if h := f.historyAll("drop", "", 10); len(h) != 1 || h[0].ID != active.ID {
		f.t.Fatalf("history = %s, want the drawn session that left, by its id", describe(h))
	}
	if got := f.session("drop", active.ID, opens.Add(4*sec)); got.Status != waitroom.StatusLeft || got.Ticket != 1 {
		f.t.Fatalf("Session of the drawn session that left = %+v, want left, ticket 1", got)
	}
}

func testDrawOnJoin(f *fixture) {
	opens := at(time.Hour)
	f.put("drop", scheduled(0, opens), at(0))
	a := f.join("drop", "", at(sec))
	b := f.join("drop", "", at(2*sec))
	// No Sweep: the first operation at or after the opening draws first.
	late := f.join("drop", "", opens.Add(sec))
	if late.Ticket != 3 || late.Position != 3 {
		f.t.Fatalf("first join after the opening: ticket %d position %d, want 3, 3: behind both entrants", late.Ticket, late.Position)
	}
	d := f.draw("drop")
	if !d.Drawn || !d.DrawnAt.Equal(opens.Add(sec)) || d.Entrants != 2 {
		f.t.Fatalf("record: drawn %v at %s with %d entrants, want drawn at base+1h1s with 2", d.Drawn, rel(d.DrawnAt), d.Entrants)
	}
	pa, pb := f.peek("drop", a.ID), f.peek("drop", b.ID)
	if pa.Ticket+pb.Ticket != 3 || pa.Position+pb.Position != 3 {
		f.t.Fatalf("entrants after the draw: tickets %d, %d positions %d, %d; want tickets 1 and 2 at positions 1 and 2", pa.Ticket, pb.Ticket, pa.Position, pb.Position)
	}
}

func testDrawOnlyOnce(f *fixture) {
	opens := at(time.Hour)
	f.put("drop", scheduled(1, opens), at(0))
	f.joinN("drop", 5, at(sec))
	f.sweep("drop", opens)
	d1 := f.draw("drop")
	f.sweep("drop", opens.Add(sec))
	f.join("drop", "", opens.Add(2*sec))
	d2 := f.draw("drop")
	if d1.Digest != d2.Digest || d1.Seed != d2.Seed || !d1.DrawnAt.Equal(d2.DrawnAt) || len(d2.Entries) != 5 {
		f.t.Fatalf("the draw changed: digest %s → %s, seed %s → %s, %d entries", d1.Digest, d2.Digest, d1.Seed, d2.Seed, len(d2.Entries))
	}
	// Keeping the opening is fine; moving it after the draw is refused.
	f.put("drop", scheduled(2, opens), opens.Add(3*sec))
	_, _, err := f.s.PutRoom(f.ctx, "drop", scheduled(2, opens.Add(time.Hour)), opens.Add(4*sec))
	wantCode(f.t, "moving opens_at after the draw", err, waitroom.CodeDrawDone)
	// Clearing it keeps the record.
	f.put("drop", quiet(2), opens.Add(5*sec))
	if d3 := f.draw("drop"); d3.Digest != d1.Digest || !d3.OpensAt.Equal(opens) {
		f.t.Fatalf("record after clearing opens_at: digest %s opens_at %s, want %s and base+1h", d3.Digest, rel(d3.OpensAt), d1.Digest)
	}
}

func testPreQueueLeave(f *fixture) {
	opens := at(time.Hour)
	f.put("drop", scheduled(5, opens), at(0))
	commitment := f.draw("drop").Commitment
	ss := f.joinN("drop", 3, at(sec))
	left := f.leave("drop", ss[1].ID, waitroom.ReasonLeft, at(10*sec))
	if left.Status != waitroom.StatusLeft || left.Ticket != 0 || left.EndReason != waitroom.ReasonLeft || left.ID != ss[1].ID || !left.EndedAt.Equal(at(10*sec)) {
		f.t.Fatalf("leave in the pre-queue = %+v, want left, ticket 0, its id, ended base+10s", left)
	}
	again := f.leave("drop", ss[1].ID, waitroom.ReasonLeft, at(11*sec))
	if again.Status != waitroom.StatusLeft || !again.EndedAt.Equal(at(10*sec)) {
		f.t.Fatalf("second leave = %+v, want the same ended session", again)
	}
	if got := f.session("drop", ss[1].ID, at(12*sec)); got.Status != waitroom.StatusLeft {
		f.t.Fatalf("Session of an entrant that left = %s, want left", got.Status)
	}
	if r := f.room("drop"); r.Entrants != 2 {
		f.t.Fatalf("entrants after one left = %d, want 2", r.Entrants)
	}
	wantEntrant(f.t, "entrant 0 after entrant 1 left", f.peek("drop", ss[0].ID), opens, 2)
	f.sweep("drop", opens)
	wantVerified(f.t, "the draw", f.draw("drop"), commitment, []string{ss[0].Entry, ss[2].Entry})
	if got := f.peek("drop", ss[1].ID); got.Status != waitroom.StatusLeft || got.Ticket != 0 {
		f.t.Fatalf("the entrant that left, after the draw = %+v, want still left without a ticket", got)
	}
}

func testPreQueueKeyNoReroll(f *fixture) {
	opens := at(time.Hour)
	f.put("drop", scheduled(5, opens), at(0))
	a := f.join("drop", "alice", at(sec))
	_, err := f.s.Join(f.ctx, "drop", "alice", at(2*sec))
	wantCode(f.t, "second join with a key in the pre-queue", err, waitroom.CodeAlreadyJoined)
	var we *waitroom.Error
	if errors.As(err, &we); we == nil || we.Session == nil || we.Session.ID != a.ID {
		f.t.Fatalf("already_joined error carries %+v, want the live entrant", we)
	}
	f.leave("drop", a.ID, waitroom.ReasonLeft, at(3*sec))
	b := f.join("drop", "alice", at(4*sec))
	if b.ID == a.ID || b.Entry != a.Entry {
		f.t.Fatalf("rejoin with the same key: entry %q (was %q), id changed %v; want a new session with the same entry, so the same draw value", b.Entry, a.Entry, b.ID != a.ID)
	}
	f.sweep("drop", opens)
	d := f.draw("drop")
	if len(d.Entries) != 1 || d.Entries[0].Entry != a.Entry {
		f.t.Fatalf("draw entries = %+v, want alice's one entry", d.Entries)
	}
}

func testClosesAt(f *fixture) {
	closes := at(time.Hour)
	cfg := quiet(1)
	cfg.ClosesAt = closes
	f.put("sale", cfg, at(0))
	a := f.join("sale", "", at(sec))
	b := f.join("sale", "", closes.Add(-msec))
	_, err := f.s.Join(f.ctx, "sale", "", closes)
	wantCode(f.t, "join at closes_at", err, waitroom.CodeRoomClosed)
	if msg := waitroom.ErrorMessage(err); !strings.Contains(msg, closes.Format(time.RFC3339)) {
		f.t.Fatalf("room_closed message %q does not give the time %s", msg, closes.Format(time.RFC3339))
	}
	_, err = f.s.Join(f.ctx, "sale", "k", closes.Add(time.Hour))
	wantCode(f.t, "keyed join after closes_at", err, waitroom.CodeRoomClosed)
	// Those already in line still get their turn.
	f.leave("sale", a.ID, waitroom.ReasonLeft, closes.Add(sec))
	f.wantPeek("sale", b, waitroom.StatusActive, 0, "")
	// Opening it again by clearing closes_at lets joins in.
	f.put("sale", quiet(1), closes.Add(2*sec))
	f.join("sale", "", closes.Add(3*sec))

	// With a schedule, the pre-queue takes joins until the opening and
	// the line until closes_at.
	sch := scheduled(1, at(2*time.Hour))
	sch.ClosesAt = at(3 * time.Hour)
	f.put("drop", sch, at(0))
	f.join("drop", "", at(sec))
	f.join("drop", "", at(2*time.Hour+sec))
	_, err = f.s.Join(f.ctx, "drop", "", at(3*time.Hour))
	wantCode(f.t, "join at a scheduled room's closes_at", err, waitroom.CodeRoomClosed)
}

func testScheduleInvalid(f *fixture) {
	for _, tc := range []struct {
		name string
		cfg  func(*waitroom.RoomConfig)
	}{
		{"closes before opens", func(c *waitroom.RoomConfig) { c.OpensAt, c.ClosesAt = at(time.Hour), at(time.Minute) }},
		{"closes at opens", func(c *waitroom.RoomConfig) { c.OpensAt, c.ClosesAt = at(time.Hour), at(time.Hour) }},
		{"opens before 2000", func(c *waitroom.RoomConfig) { c.OpensAt = time.Date(1999, 12, 31, 0, 0, 0, 0, time.UTC) }},
		{"closes in year 9999", func(c *waitroom.RoomConfig) { c.ClosesAt = time.Date(9999, 6, 1, 0, 0, 0, 0, time.UTC) }},
	} {
		cfg := quiet(1)
		tc.cfg(&cfg)
		_, _, err := f.s.PutRoom(f.ctx, "bad", cfg, at(0))
		wantCode(f.t, tc.name, err, waitroom.CodeInvalidConfig)
	}
	if _, err := f.s.Room(f.ctx, "bad"); waitroom.ErrorCode(err) != waitroom.CodeRoomNotFound {
		f.t.Fatalf("a refused configuration created the room: Room error = %v", err)
	}
}

func testOpensAtInThePast(f *fixture) {
	f.put("late", scheduled(1, at(0)), at(time.Minute))
	d := f.draw("late")
	if !d.Drawn || d.Entrants != 0 || len(d.Entries) != 0 {
		f.t.Fatalf("record of a room created after its opening = %+v, want drawn with no entrants", d)
	}
	if err := waitroom.VerifyDraw(d); err != nil {
		f.t.Fatalf("VerifyDraw of an empty draw: %v", err)
	}
	a := f.join("late", "", at(time.Minute+sec))
	if a.Ticket != 1 || a.Status != waitroom.StatusActive || !a.OpensAt.IsZero() {
		f.t.Fatalf("join after the opening = %+v, want ticket 1 active", a)
	}
}

func testClearOpensAtDraws(f *fixture) {
	f.put("drop", scheduled(1, at(time.Hour)), at(0))
	commitment := f.draw("drop").Commitment
	ss := f.joinN("drop", 4, at(sec))
	f.put("drop", quiet(1), at(time.Minute))
	d := f.draw("drop")
	wantVerified(f.t, "draw on clearing opens_at", d, commitment, []string{ss[0].Entry, ss[1].Entry, ss[2].Entry, ss[3].Entry})
	if !d.DrawnAt.Equal(at(time.Minute)) {
		f.t.Fatalf("drawn at %s, want base+1m, when opens_at was cleared", rel(d.DrawnAt))
	}
	f.wantCounts("drop", 3, 1)
}

func testPreQueueNoTimeouts(f *fixture) {
	opens := at(time.Hour)
	cfg := scheduled(0, opens)
	cfg.WaitingTimeout = dur(10 * sec)
	f.put("drop", cfg, at(0))
	a := f.join("drop", "", at(sec))
	f.away("drop", a.ID, at(2*sec))
	// An entrant needs no presence before the opening...
	f.sweep("drop", opens.Add(-sec))
	wantEntrant(f.t, "an absent entrant before the opening", f.peek("drop", a.ID), opens, 1)
	// ...and gets a full waiting_timeout from the draw to show up.
	f.sweep("drop", opens)
	f.sweep("drop", opens.Add(9*sec))
	f.wantPeek("drop", f.peek("drop", a.ID), waitroom.StatusWaiting, 1, "")
	f.sweep("drop", opens.Add(10*sec))
	if got := f.peek("drop", a.ID); got.Status != waitroom.StatusExpired || got.EndReason != waitroom.ReasonNoPresence || got.Ticket != 1 {
		f.t.Fatalf("an entrant absent for waiting_timeout after the draw = %+v, want expired no_presence with ticket 1", got)
	}
}

func testPreQueueDeleteRoom(f *fixture) {
	f.put("drop", scheduled(1, at(time.Hour)), at(0))
	a := f.join("drop", "", at(sec))
	err := f.s.DeleteRoom(f.ctx, "drop", false, at(2*sec))
	wantCode(f.t, "delete with an entrant", err, waitroom.CodeRoomNotEmpty)
	if err := f.s.DeleteRoom(f.ctx, "drop", true, at(3*sec)); err != nil {
		f.t.Fatalf("DeleteRoom(force) error = %v", err)
	}
	f.put("drop", scheduled(1, at(time.Hour)), at(4*sec))
	if _, err := f.s.Session(f.ctx, "drop", a.ID, at(5*sec)); waitroom.ErrorCode(err) != waitroom.CodeSessionNotFound {
		f.t.Fatalf("entrant of a deleted room: error %v, want session_not_found", err)
	}
	if d := f.draw("drop"); d.Entrants != 0 {
		f.t.Fatalf("a room created again has %d entrants, want 0", d.Entrants)
	}
}

func testPreQueueAdvance(f *fixture) {
	cfg := scheduled(0, at(time.Hour))
	cfg.Mode = waitroom.ModeManual
	f.put("desk", cfg, at(0))
	f.joinN("desk", 2, at(sec))
	_, err := f.s.Advance(f.ctx, "desk", 1, at(2*sec))
	wantCode(f.t, "advance with only entrants", err, waitroom.CodeQueueEmpty)
	got := f.advance("desk", 2, at(time.Hour))
	wantTickets(f.t, "advance at the opening", got, 1, 2)
}

func testDrawEvents(f *fixture) {
	ev := record(f)
	f.put("drop", scheduled(1, at(time.Hour)), at(0))
	ev.take("drop")
	a := f.join("drop", "", at(sec))
	es := ev.take("drop")
	if len(es) != 1 || len(es[0].Changes) != 1 {
		f.t.Fatalf("events of a pre-queue join = %s, want one change", describeEvents(es))
	}
	if c := es[0].Changes[0]; c.From != "" || c.Session.Status != waitroom.StatusWaiting || c.Session.ID != a.ID || c.Session.Ticket != 0 {
		f.t.Fatalf("change of a pre-queue join = %+v from %q, want the entrant, waiting, ticket 0, from \"\"", c.Session, c.From)
	}
	b := f.join("drop", "", at(2*sec))
	ev.take("drop")
	f.sweep("drop", at(time.Hour))
	es = ev.take("drop")
	got := map[string]waitroom.Change{}
	for _, e := range es {
		for _, c := range e.Changes {
			got[c.Session.ID] = c
		}
	}
	for _, s := range []waitroom.Session{a, b} {
		c, ok := got[s.ID]
		if !ok || c.Session.Ticket == 0 || c.From != waitroom.StatusWaiting {
			f.t.Fatalf("events of the draw = %s; want a change for entrant %s with its ticket, from waiting", describeEvents(es), s.Entry)
		}
	}
	if last := es[len(es)-1]; last.LastTicket != 2 || last.Waiting+last.Active != 2 {
		f.t.Fatalf("totals after the draw: last ticket %d, waiting %d, active %d; want 2 and 2 live", last.LastTicket, last.Waiting, last.Active)
	}
}

func testDrawLarge(f *fixture) {
	const n = 2000
	f.put("big", scheduled(100, at(time.Hour)), at(0))
	commitment := f.draw("big").Commitment
	entries := make([]string, 0, n)
	var first waitroom.Session
	for i := range n {
		s := f.join("big", "", at(time.Duration(i)*msec))
		if i == 0 {
			first = s
		}
		entries = append(entries, s.Entry)
	}
	f.sweep("big", at(time.Hour))
	d := f.draw("big")
	wantVerified(f.t, "a draw of 2,000", d, commitment, entries)
	f.wantCounts("big", n-100, 100)
	got := f.peek("big", first.ID)
	i := slices.IndexFunc(d.Entries, func(e waitroom.DrawEntry) bool { return e.Entry == first.Entry })
	if i < 0 || got.Ticket != d.Entries[i].Ticket {
		f.t.Fatalf("first arrival has ticket %d, the record says %+v", got.Ticket, d.Entries[max(i, 0)])
	}
}
