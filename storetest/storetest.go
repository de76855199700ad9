// Package storetest is the conformance suite every waitroom.Store backend
// runs from its conformance_test.go:
//
//	func TestConformance(t *testing.T) { storetest.Run(t, newStore) }
//	func TestModel(t *testing.T)       { storetest.RunModel(t, newStore) }
//
// Run checks each behaviour of the Store contract (written on
// waitroom.Store) in its own subtest on a fresh store; RunModel drives a
// store with random operation sequences and compares it after every step
// with a small reference model. Time is passed in explicitly, starting at a
// fixed instant; nothing here sleeps.
package storetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom"
)

// base is the instant every test starts at. It is a whole second, and every
// time the suite passes is a whole number of milliseconds after it, because
// stores may keep time at millisecond resolution (the API's).
var base = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

// at returns the time d after base.
func at(d time.Duration) time.Time { return base.Add(d) }

const (
	msec = time.Millisecond
	sec  = time.Second
)

// Run runs the conformance suite: every behaviour and invariant of the
// waitroom.Store contract, each as a subtest on a fresh store from newStore.
// newStore registers its own cleanup (closing the store) with t; that
// cleanup must tolerate a store the test already closed. The webhook
// outbox (waitroom.Hooks) is checked here; the console's ledger
// (waitroom.Ledger), also part of the contract, has its own suite, Ledger,
// which a backend runs as well.
func Run(t *testing.T, newStore func(t *testing.T) waitroom.Store) {
	for _, tc := range suite {
		t.Run(tc.name, func(t *testing.T) {
			tc.fn(&fixture{t: t, s: newStore(t), ctx: t.Context()})
		})
	}
}

// suite lists the conformance tests in the order Run runs them.
var suite = []struct {
	name string
	fn   func(*fixture)
}{
	{"PutRoomCreateReplace", testPutRoomCreateReplace},
	{"PutRoomDefaults", testPutRoomDefaults},
	{"PutRoomInvalidConfig", testPutRoomInvalidConfig},
	{"InvalidRoomName", testInvalidRoomName},
	{"RoomNotFound", testRoomNotFound},
	{"RoomsOrder", testRoomsOrder},
	{"Revisions", testRevisions},
	{"UpdateRoomCondition", testUpdateRoomCondition},
	{"UpdateRoomRace", testUpdateRoomRace},
	{"CapacityTwoFiveJoins", testCapacityTwoFiveJoins},
	{"FIFOAdmission", testFIFOAdmission},
	{"IdleExpiry", testIdleExpiry},
	{"ExpiryBeforeEveryOperation", testExpiryBeforeEveryOperation},
	{"MaxSession", testMaxSession},
	{"WaitingTimeout", testWaitingTimeout},
	{"ConfigChangeAndDeadlines", testConfigChangeAndDeadlines},
	{"HeartbeatRefreshesActivity", testHeartbeatRefreshesActivity},
	{"AwayWaiting", testAwayWaiting},
	{"AwayActive", testAwayActive},
	{"AwayGraceZero", testAwayGraceZero},
	{"AdmittedWhileAway", testAdmittedWhileAway},
	{"AwayOnEndedSession", testAwayOnEndedSession},
	{"Paused", testPaused},
	{"CapacityZero", testCapacityZero},
	{"CapacityChange", testCapacityChange},
	{"RateBurstAndRefill", testRateBurstAndRefill},
	{"RateBurstRoundsUp", testRateBurstRoundsUp},
	{"RateSlow", testRateSlow},
	{"RateResetOnReconfigure", testRateResetOnReconfigure},
	{"ManualAdvance", testManualAdvance},
	{"AdvanceInvalidN", testAdvanceInvalidN},
	{"ManualToAuto", testManualToAuto},
	{"AutoToManual", testAutoToManual},
	{"AdvanceAuto", testAdvanceAuto},
	{"Keys", testKeys},
	{"KeyRejoinAfterEnding", testKeyRejoinAfterEnding},
	{"InvalidKey", testInvalidKey},
	{"LeaveIdempotent", testLeaveIdempotent},
	{"LeaveInvalidReason", testLeaveInvalidReason},
	{"Revoke", testRevoke},
	{"EndedSessionsReadable", testEndedSessionsReadable},
	{"TicketsNeverReused", testTicketsNeverReused},
	{"DeleteRoom", testDeleteRoom},
	{"DeleteRoomForce", testDeleteRoomForce},
	{"WaitingPaging", testWaitingPaging},
	{"WaitingCursorAfterLeave", testWaitingCursorAfterLeave},
	{"HistoryPaging", testHistoryPaging},
	{"SessionsBatch", testSessionsBatch},
	{"Subscribe", testSubscribe},
	{"SessionIDs", testSessionIDs},
	{"SweepResult", testSweepResult},
	{"EarlierNow", testEarlierNow},
	{"Concurrency", testConcurrency},
	{"PingAndClose", testPingAndClose},
}

// fixture is one subtest's store with must-helpers that fail the test on an
// unexpected error. Every helper reports the operation that failed.
type fixture struct {
	t   *testing.T
	s   waitroom.Store
	ctx context.Context
}

// quiet is a configuration without timeouts, limits or pause, so a test
// switches on only what it is about.
func quiet(capacity int) waitroom.RoomConfig {
	return waitroom.RoomConfig{
		Mode:     waitroom.ModeAuto,
		Capacity: capacity,
		Grace:    waitroom.Duration(30 * sec),
	}
}

func dur(d time.Duration) waitroom.Duration { return waitroom.Duration(d) }

func (f *fixture) put(name string, cfg waitroom.RoomConfig, now time.Time) waitroom.Room {
	f.t.Helper()
	r, _, err := f.s.PutRoom(f.ctx, name, cfg, now)
	if err != nil {
		f.t.Fatalf("PutRoom(%q, %+v) error = %v", name, cfg, err)
	}
	return r
}

func (f *fixture) room(name string) waitroom.Room {
	f.t.Helper()
	r, err := f.s.Room(f.ctx, name)
	if err != nil {
		f.t.Fatalf("Room(%q) error = %v", name, err)
	}
	return r
}

func (f *fixture) join(room, key string, now time.Time) waitroom.Session {
	f.t.Helper()
	s, err := f.s.Join(f.ctx, room, key, now)
	if err != nil {
		f.t.Fatalf("Join(%q, key %q, %s) error = %v", room, key, rel(now), err)
	}
	return s
}

// joinN joins n sessions without keys, one millisecond apart from now.
func (f *fixture) joinN(room string, n int, now time.Time) []waitroom.Session {
	f.t.Helper()
	out := make([]waitroom.Session, n)
	for i := range out {
		out[i] = f.join(room, "", now.Add(time.Duration(i)*msec))
	}
	return out
}

func (f *fixture) session(room, id string, now time.Time) waitroom.Session {
	f.t.Helper()
	s, err := f.s.Session(f.ctx, room, id, now)
	if err != nil {
		f.t.Fatalf("Session(%q, %s) error = %v", room, rel(now), err)
	}
	return s
}

func (f *fixture) heartbeat(room, id string, now time.Time) waitroom.Session {
	f.t.Helper()
	s, err := f.s.Heartbeat(f.ctx, room, id, now)
	if err != nil {
		f.t.Fatalf("Heartbeat(%q, %s) error = %v", room, rel(now), err)
	}
	return s
}

func (f *fixture) away(room, id string, now time.Time) {
	f.t.Helper()
	if err := f.s.Away(f.ctx, room, id, now); err != nil {
		f.t.Fatalf("Away(%q, %s) error = %v", room, rel(now), err)
	}
}

func (f *fixture) leave(room, id string, reason waitroom.Reason, now time.Time) waitroom.Session {
	f.t.Helper()
	s, err := f.s.Leave(f.ctx, room, id, reason, now)
	if err != nil {
		f.t.Fatalf("Leave(%q, %s, %s) error = %v", room, reason, rel(now), err)
	}
	return s
}

func (f *fixture) advance(room string, n int, now time.Time) []waitroom.Session {
	f.t.Helper()
	s, err := f.s.Advance(f.ctx, room, n, now)
	if err != nil {
		f.t.Fatalf("Advance(%q, %d, %s) error = %v", room, n, rel(now), err)
	}
	return s
}

func (f *fixture) sweep(room string, now time.Time) waitroom.SweepResult {
	f.t.Helper()
	r, err := f.s.Sweep(f.ctx, room, now)
	if err != nil {
		f.t.Fatalf("Sweep(%q, %s) error = %v", room, rel(now), err)
	}
	return r
}

// peek reads a session without counting as presence.
func (f *fixture) peek(room, id string) waitroom.Session {
	f.t.Helper()
	out, err := f.s.Sessions(f.ctx, room, []string{id})
	if err != nil {
		f.t.Fatalf("Sessions(%q) error = %v", room, err)
	}
	if len(out) != 1 {
		f.t.Fatalf("Sessions(%q, 1 id) returned %d sessions, want 1", room, len(out))
	}
	return out[0]
}

// waitingAll follows Waiting's cursors with pages of limit and returns
// every waiting session.
func (f *fixture) waitingAll(room string, limit int) []waitroom.Session {
	f.t.Helper()
	return collectPages(f.t, fmt.Sprintf("Waiting(%q)", room), func(after string) ([]waitroom.Session, string, error) {
		return f.s.Waiting(f.ctx, room, waitroom.Page{After: after, Limit: limit})
	}, limit)
}

// historyAll follows History's cursors with pages of limit.
func (f *fixture) historyAll(room string, status waitroom.Status, limit int) []waitroom.Session {
	f.t.Helper()
	return collectPages(f.t, fmt.Sprintf("History(%q, %q)", room, status), func(after string) ([]waitroom.Session, string, error) {
		return f.s.History(f.ctx, room, status, waitroom.Page{After: after, Limit: limit})
	}, limit)
}

// collectPages follows cursors until "" and checks that no page is larger
// than asked and that the listing ends.
func collectPages(t T, what string, page func(after string) ([]waitroom.Session, string, error), limit int) []waitroom.Session {
	t.Helper()
	size := waitroom.Page{Limit: limit}.Size()
	var all []waitroom.Session
	after := ""
	seen := map[string]bool{}
	for i := 0; ; i++ {
		got, next, err := page(after)
		if err != nil {
			t.Fatalf("%s page %d (after %q) error = %v", what, i, after, err)
		}
		if len(got) > size {
			t.Fatalf("%s page %d has %d sessions, want at most %d", what, i, len(got), size)
		}
		all = append(all, got...)
		if next == "" {
			return all
		}
		if seen[next] {
			t.Fatalf("%s returned cursor %q twice", what, next)
		}
		seen[next] = true
		if i > 10_000 {
			t.Fatalf("%s does not end", what)
		}
		after = next
	}
}

// wantCode fails the test unless err has code.
func wantCode(t T, what string, err error, code waitroom.Code) {
	t.Helper()
	if got := waitroom.ErrorCode(err); got != code {
		t.Fatalf("%s: error = %v (code %q), want code %q", what, err, got, code)
	}
	var e *waitroom.Error
	if !errors.As(err, &e) {
		t.Fatalf("%s: error %v (%T) is not a *waitroom.Error", what, err, err)
	}
}

// wantState checks a session's status, position and end reason.
func wantState(t T, what string, s waitroom.Session, status waitroom.Status, pos int64, reason waitroom.Reason) {
	t.Helper()
	if s.Status != status || s.Position != pos || s.EndReason != reason {
		t.Fatalf("%s: ticket %d is %s at position %d, reason %q; want %s at position %d, reason %q",
			what, s.Ticket, s.Status, s.Position, s.EndReason, status, pos, reason)
	}
}

// wantTotals checks the room totals a session or room reports.
func wantTotals(t T, what string, waiting, active, wantWaiting, wantActive int) {
	t.Helper()
	if waiting != wantWaiting || active != wantActive {
		t.Fatalf("%s: waiting %d, active %d; want waiting %d, active %d", what, waiting, active, wantWaiting, wantActive)
	}
}

// wantTime checks a time field.
func wantTime(t T, what string, got, want time.Time) {
	t.Helper()
	if !got.Equal(want) {
		t.Fatalf("%s = %s, want %s", what, rel(got), rel(want))
	}
}

// wantCounts checks a room's counts.
func (f *fixture) wantCounts(room string, waiting, active int) {
	f.t.Helper()
	r := f.room(room)
	wantTotals(f.t, fmt.Sprintf("Room(%q)", room), r.Waiting, r.Active, waiting, active)
}

// wantPeek checks a session's state without counting as presence.
func (f *fixture) wantPeek(room string, s waitroom.Session, status waitroom.Status, pos int64, reason waitroom.Reason) waitroom.Session {
	f.t.Helper()
	got := f.peek(room, s.ID)
	if got.ID != s.ID {
		f.t.Fatalf("Sessions(%q, ticket %d) = %+v, want the session", room, s.Ticket, got)
	}
	wantState(f.t, fmt.Sprintf("ticket %d", s.Ticket), got, status, pos, reason)
	return got
}

// wantTickets checks the tickets of sessions in order.
func wantTickets(t T, what string, got []waitroom.Session, want ...int64) {
	t.Helper()
	ts := tickets(got)
	if !slices.Equal(ts, want) {
		t.Fatalf("%s: tickets %v, want %v", what, ts, want)
	}
}

func tickets(ss []waitroom.Session) []int64 {
	ts := make([]int64, len(ss))
	for i, s := range ss {
		ts[i] = s.Ticket
	}
	return ts
}

// rel formats t relative to base, which reads better in failures.
func rel(t time.Time) string {
	if t.IsZero() {
		return "zero time"
	}
	return "base+" + t.Sub(base).String()
}

// otherSecret returns id with a different secret: well formed, never issued.
func otherSecret(id string) string {
	sid, err := waitroom.ParseSessionID(id)
	if err != nil {
		panic(err)
	}
	sid.Secret[0] ^= 0xff
	return sid.String()
}

// unknownID returns a well-formed id for ticket that no store issued.
func unknownID(ticket int64) string {
	return waitroom.NewSessionID(ticket).String()
}

func ids(ss ...waitroom.Session) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = s.ID
	}
	return out
}

// describe lists sessions compactly for failure messages.
func describe(ss []waitroom.Session) string {
	var b strings.Builder
	for i, s := range ss {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "#%d %s", s.Ticket, s.Status)
		if s.Position > 0 {
			fmt.Fprintf(&b, "@%d", s.Position)
		}
		if s.EndReason != "" {
			fmt.Fprintf(&b, "(%s)", s.EndReason)
		}
	}
	return "[" + b.String() + "]"
}
