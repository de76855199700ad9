package redisstore_test

import (
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/internal/redistest"
)

// The operator's moves (QueueAll, Front, Extend, Lookup) against a real
// redis-server: the order of the line, the units, the counts, the deadlines
// and what another process sees.

// opRoom is a store on a fresh prefix with room "r" made with cfg at base,
// and a recorder of its events.
func opRoom(t *testing.T, cfg waitroom.RoomConfig) (waitroom.Store, *recorder) {
	t.Helper()
	s := newStoreOn(standalone(t))(t)
	rec := &recorder{}
	t.Cleanup(s.Subscribe(rec.add))
	if _, _, err := s.PutRoom(t.Context(), "r", cfg, base); err != nil {
		t.Fatalf("PutRoom: %v", err)
	}
	return s, rec
}

func reset(r *recorder) {
	r.mu.Lock()
	r.events = nil
	r.mu.Unlock()
}

func mustJoin(t *testing.T, s waitroom.Store, key string, now time.Time) waitroom.Session {
	t.Helper()
	v, err := s.Join(t.Context(), "r", key, now)
	if err != nil {
		t.Fatalf("Join: %v", err)
	}
	return v
}

// read reads sessions without presence.
func read(t *testing.T, s waitroom.Store, ids ...string) []waitroom.Session {
	t.Helper()
	out, err := s.Sessions(t.Context(), "r", ids)
	if err != nil {
		t.Fatalf("Sessions: %v", err)
	}
	return out
}

// line lists the whole line, page by page of size limit, checking that
// positions count up from 1.
func line(t *testing.T, s waitroom.Store, limit int) []waitroom.Session {
	t.Helper()
	var out []waitroom.Session
	after := ""
	for range 100 {
		page, next, err := s.Waiting(t.Context(), "r", waitroom.Page{After: after, Limit: limit})
		if err != nil {
			t.Fatalf("Waiting(after %q): %v", after, err)
		}
		out = append(out, page...)
		if next == "" {
			break
		}
		after = next
	}
	for i, v := range out {
		if v.Position != int64(i+1) {
			t.Fatalf("Waiting lists #%d at position %d, want %d", v.Ticket, v.Position, i+1)
		}
	}
	return out
}

func tickets(ss []waitroom.Session) []int64 {
	out := make([]int64, len(ss))
	for i, v := range ss {
		out[i] = v.Ticket
	}
	return out
}

func wantErr(t *testing.T, what string, err error, code waitroom.Code) {
	t.Helper()
	if waitroom.ErrorCode(err) != code {
		t.Fatalf("%s: error %v, want %s", what, err, code)
	}
}

func at(ms int64) time.Time { return base.Add(time.Duration(ms) * time.Millisecond) }

func TestOperatorQueueAll(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	inv := int64(10)
	cfg := waitroom.RoomConfig{Mode: waitroom.ModeAuto, Capacity: 3, Inventory: &inv,
		WaitingTimeout: waitroom.Duration(time.Minute), ActiveTimeout: waitroom.Duration(time.Minute)}
	s, rec := opRoom(t, cfg)
	var all []waitroom.Session
	for i := range 5 {
		all = append(all, mustJoin(t, s, "k"+strconv.Itoa(i), at(int64(i))))
	}
	// #2 is moved ahead before the maintenance: it must stay behind the
	// sessions QueueAll moves later.
	if _, err := s.Leave(ctx, "r", all[1].ID, waitroom.ReasonLeft, at(10)); err != nil {
		t.Fatal(err)
	}
	// Now 1, 3, 4 are active (units held) and 5 waits.
	f, err := s.Front(ctx, "r", all[4].ID, at(20))
	if err != nil || f.Place != -1 || f.Position != 1 {
		t.Fatalf("Front = %+v, %v; want place -1 at position 1", f, err)
	}
	r0, _ := s.Room(ctx, "r")
	if r0.Reserved != 3 || r0.Active != 3 {
		t.Fatalf("before QueueAll: %d active, %d reserved; want 3, 3", r0.Active, r0.Reserved)
	}
	reset(rec)

	room, moved, err := s.QueueAll(ctx, "r", at(30))
	if err != nil {
		t.Fatalf("QueueAll: %v", err)
	}
	if !room.Paused || room.Active != 0 || room.Waiting != 4 || room.Reserved != 0 || *room.Remaining != 10 {
		t.Fatalf("QueueAll room = %+v; want paused, 0 active, 4 waiting, nothing reserved", room)
	}
	if got := tickets(moved); !slices.Equal(got, []int64{1, 3, 4}) {
		t.Fatalf("QueueAll moved %v, want [1 3 4]", got)
	}
	for i, m := range moved {
		if m.Status != waitroom.StatusWaiting || m.Position != int64(i+1) || m.Place != int64(i-4) ||
			!m.AdmittedAt.IsZero() || m.Unit || !m.Stocked {
			t.Fatalf("moved[%d] = %+v; want waiting at position %d, place %d, no admission, no unit", i, m, i+1, i-4)
		}
	}
	if got := tickets(line(t, s, 1)); !slices.Equal(got, []int64{1, 3, 4, 5}) {
		t.Fatalf("line after QueueAll %v, want [1 3 4 5]", got)
	}
	if r, _ := s.Room(ctx, "r"); !r.Paused {
		t.Fatalf("stored configuration not paused: %+v", r.RoomConfig)
	}
	// One config event carrying the pause and the three changes.
	es := rec.snapshot()
	if len(es) != 1 || es[0].Kind != waitroom.EventConfig || es[0].Config == nil || !es[0].Config.Paused ||
		len(es[0].Changes) != 3 {
		t.Fatalf("QueueAll events %+v; want one config event, paused, with 3 changes", es)
	}
	for i, c := range es[0].Changes {
		if c.From != waitroom.StatusActive || c.Session.Status != waitroom.StatusWaiting ||
			c.Session.Place != int64(i-4) || c.Session.Unit || c.Session.Ticket != moved[i].Ticket {
			t.Fatalf("change %d = %+v; want active → waiting at place %d without a unit", i, c, i-4)
		}
	}
	// A moved session's presence deadline runs from the move (#5's, from
	// its Front, has passed).
	later := at(30).Add(time.Minute - time.Millisecond)
	if _, err := s.Sweep(ctx, "r", later); err != nil {
		t.Fatal(err)
	}
	if v := read(t, s, all[0].ID, all[4].ID); v[0].Status != waitroom.StatusWaiting || v[1].EndReason != waitroom.ReasonNoPresence {
		t.Fatalf("at +60.029s moved #1 is %s, #5 %s; want waiting, expired", v[0].Status, v[1].Status)
	}

	// Resuming admits the moved sessions first, in their order.
	cfg.Paused = false
	room, _, err = s.PutRoom(ctx, "r", cfg, later)
	if err != nil {
		t.Fatal(err)
	}
	got := read(t, s, all[0].ID, all[2].ID, all[3].ID)
	for i, v := range got {
		if v.Status != waitroom.StatusActive || !v.Unit || v.Place != int64(i-4) || !v.AdmittedAt.Equal(later) {
			t.Fatalf("after resume #%d = %+v; want active with a unit, place kept", v.Ticket, v)
		}
	}
	// Presence (the script's fast path) in a room with an inventory.
	if v, err := s.Heartbeat(ctx, "r", all[0].ID, later); err != nil || v.Place != -4 || !v.Unit || !v.Stocked || v.Remaining != 7 {
		t.Fatalf("Heartbeat(#1) = %+v, %v; want place -4, a unit, 7 remaining", v, err)
	}
	// Admissions: 1, 2, 3 at first, 4 when 2 left, then 1, 3, 4 again;
	// the moved ones never count as inversions.
	if room.Admissions != 7 || room.Inversions != 0 || room.Reserved != 3 {
		t.Fatalf("after resume: admissions %d, inversions %d, reserved %d; want 7, 0, 3", room.Admissions, room.Inversions, room.Reserved)
	}

	// QueueAll on a room with nobody active still pauses.
	s2, _ := opRoom(t, waitroom.RoomConfig{Mode: waitroom.ModeAuto, Capacity: 1})
	room, moved, err = s2.QueueAll(ctx, "r", base)
	if err != nil || !room.Paused || len(moved) != 0 {
		t.Fatalf("QueueAll of an empty room = %+v, %v, %v; want paused, nobody moved", room, moved, err)
	}
	if _, _, err := s2.QueueAll(ctx, "nope", base); waitroom.ErrorCode(err) != waitroom.CodeRoomNotFound {
		t.Fatalf("QueueAll of no room: %v", err)
	}
}

func TestOperatorFront(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s, rec := opRoom(t, waitroom.RoomConfig{Mode: waitroom.ModeAuto, Capacity: 1})
	var all []waitroom.Session
	for i := range 6 {
		all = append(all, mustJoin(t, s, "", at(int64(i))))
	}
	// #1 active, 2..6 waiting.
	reset(rec)
	v, err := s.Front(ctx, "r", all[4].ID, at(10))
	if err != nil || v.Position != 1 || v.Place != -1 || v.Status != waitroom.StatusWaiting {
		t.Fatalf("Front(#5) = %+v, %v", v, err)
	}
	es := rec.snapshot()
	if len(es) != 1 || es[0].Kind != waitroom.EventSessions || len(es[0].Changes) != 1 ||
		es[0].Changes[0].From != waitroom.StatusWaiting || es[0].Changes[0].Session.Place != -1 {
		t.Fatalf("Front events %+v; want one change waiting → waiting at place -1", es)
	}
	v, err = s.Front(ctx, "r", all[2].ID, at(11))
	if err != nil || v.Position != 1 || v.Place != -2 {
		t.Fatalf("Front(#3) = %+v, %v", v, err)
	}
	if v := read(t, s, all[4].ID)[0]; v.Position != 2 || v.Place != -1 {
		t.Fatalf("#5 after #3 moved = %+v; want position 2, place -1", v)
	}
	// Presence (the script's fast path) reports the place too.
	if v, err := s.Session(ctx, "r", all[4].ID, at(12)); err != nil || v.Position != 2 || v.Place != -1 {
		t.Fatalf("Session(#5) = %+v, %v; want position 2, place -1", v, err)
	}
	for _, limit := range []int{1, 2, 4, 100} {
		if got := tickets(line(t, s, limit)); !slices.Equal(got, []int64{3, 5, 2, 4, 6}) {
			t.Fatalf("line (pages of %d) = %v, want [3 5 2 4 6]", limit, got)
		}
	}
	// Cursors are the place or ticket of the last one listed.
	page, next, err := s.Waiting(ctx, "r", waitroom.Page{Limit: 2})
	if err != nil || next != "-1" || len(page) != 2 {
		t.Fatalf("first page of 2: %v next %q, %v; want cursor -1", tickets(page), next, err)
	}
	page, next, err = s.Waiting(ctx, "r", waitroom.Page{After: next, Limit: 2})
	if err != nil || next != "4" || !slices.Equal(tickets(page), []int64{2, 4}) || page[0].Position != 3 {
		t.Fatalf("second page: %v next %q, %v", tickets(page), next, err)
	}

	// Moved sessions are admitted first; not as inversions, and they do not
	// raise the largest ticket let in, so #2 after #5 is none either.
	if _, err := s.Leave(ctx, "r", all[0].ID, waitroom.ReasonLeft, at(20)); err != nil {
		t.Fatal(err)
	}
	if v := read(t, s, all[2].ID)[0]; v.Status != waitroom.StatusActive || v.Place != -2 {
		t.Fatalf("after a leave #3 = %+v; want active, place kept", v)
	}
	for _, i := range []int{2, 4} {
		if _, err := s.Leave(ctx, "r", all[i].ID, waitroom.ReasonLeft, at(21)); err != nil {
			t.Fatal(err)
		}
	}
	r, _ := s.Room(ctx, "r")
	if v := read(t, s, all[1].ID)[0]; v.Status != waitroom.StatusActive {
		t.Fatalf("#2 = %s, want active", v.Status)
	}
	if r.Admissions != 4 || r.Inversions != 0 {
		t.Fatalf("admissions %d, inversions %d; want 4, 0", r.Admissions, r.Inversions)
	}
	es = rec.snapshot()
	if last := es[len(es)-1]; last.MaxAdmitted != 2 {
		t.Fatalf("max admitted %d after #1, #3, #5, #2; want 2", last.MaxAdmitted)
	}

	// Only a waiting session moves.
	_, err = s.Front(ctx, "r", all[1].ID, at(30))
	wantErr(t, "Front of an active session", err, waitroom.CodeInvalidRequest)
	_, err = s.Front(ctx, "r", all[0].ID, at(30))
	wantErr(t, "Front of an ended session", err, waitroom.CodeInvalidRequest)
	_, err = s.Front(ctx, "r", waitroom.NewSessionID(99).String(), at(30))
	wantErr(t, "Front of an unknown session", err, waitroom.CodeSessionNotFound)
	_, err = s.Front(ctx, "r", "junk", at(30))
	wantErr(t, "Front of a malformed id", err, waitroom.CodeInvalidSessionID)

	// Nor does an entrant of a pre-queue.
	opensAt := base.Add(time.Hour)
	if _, _, err := s.PutRoom(ctx, "pre", waitroom.RoomConfig{Mode: waitroom.ModeAuto, Capacity: 1, OpensAt: opensAt}, base); err != nil {
		t.Fatal(err)
	}
	e, err := s.Join(ctx, "pre", "", base)
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.Front(ctx, "pre", e.ID, base)
	wantErr(t, "Front of an entrant", err, waitroom.CodeInvalidRequest)
}

func TestOperatorExtend(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s, rec := opRoom(t, waitroom.RoomConfig{Mode: waitroom.ModeAuto, Capacity: 2,
		MaxSession: waitroom.Duration(10 * time.Second), ActiveTimeout: waitroom.Duration(4 * time.Second),
		Grace: waitroom.Duration(time.Second)})
	a := mustJoin(t, s, "", base)
	b := mustJoin(t, s, "", base)
	w := mustJoin(t, s, "", base)

	// a: extended 5s at +3s (and away since +2.5s: the extension ends it).
	if err := s.Away(ctx, "r", a.ID, at(2500)); err != nil {
		t.Fatal(err)
	}
	reset(rec)
	v, err := s.Extend(ctx, "r", a.ID, 5*time.Second, at(3000))
	if err != nil || v.Extended != 5*time.Second || v.Status != waitroom.StatusActive {
		t.Fatalf("Extend = %+v, %v", v, err)
	}
	es := rec.snapshot()
	if len(es) != 1 || len(es[0].Changes) != 1 || es[0].Changes[0].From != waitroom.StatusActive ||
		es[0].Changes[0].Session.Extended != 5*time.Second {
		t.Fatalf("Extend events %+v; want one change active → active, extended 5s", es)
	}
	if _, err := s.Heartbeat(ctx, "r", b.ID, at(3000)); err != nil {
		t.Fatal(err)
	}
	// The idle timer restarted at +3s: kept alive by heartbeats from +6s.
	// b, never extended, ends at its max session, +10s.
	// w, admitted then, is kept alive too.
	for ms := int64(6000); ms <= 14000; ms += 2000 {
		beat := []waitroom.Session{a, w}
		if ms <= 8000 {
			beat = []waitroom.Session{a, b}
		}
		for _, v := range beat {
			if _, err := s.Heartbeat(ctx, "r", v.ID, at(ms)); err != nil {
				t.Fatal(err)
			}
		}
	}
	got := read(t, s, a.ID, b.ID)
	if got[0].Status != waitroom.StatusActive || got[1].EndReason != waitroom.ReasonMaxSession || !got[1].EndedAt.Equal(at(10000)) {
		t.Fatalf("at +14s a is %s, b %s (%s at %s); want a active, b ended at its max session at +10s",
			got[0].Status, got[1].Status, got[1].EndReason, got[1].EndedAt)
	}
	// a's max session ends at +15s exactly.
	if _, err := s.Sweep(ctx, "r", at(14999)); err != nil {
		t.Fatal(err)
	}
	if v := read(t, s, a.ID)[0]; v.Status != waitroom.StatusActive {
		t.Fatalf("a at +14.999s is %s", v.Status)
	}
	res, err := s.Sweep(ctx, "r", at(15000))
	if err != nil || res.Expired != 1 {
		t.Fatalf("Sweep at +15s = %+v, %v", res, err)
	}
	if v := read(t, s, a.ID)[0]; v.EndReason != waitroom.ReasonMaxSession || !v.EndedAt.Equal(at(15000)) {
		t.Fatalf("a = %+v; want ended at its max session at +15s", v)
	}

	// w (admitted at +10s): an extension finer than a millisecond is
	// refused (deadlines are kept to the millisecond in every store), and
	// two whole ones add up.
	if _, err := s.Extend(ctx, "r", w.ID, 1500*time.Microsecond, at(15000)); waitroom.ErrorCode(err) != waitroom.CodeInvalidRequest {
		t.Fatalf("Extend(1.5ms) = %v, want invalid_request", err)
	}
	v, err = s.Extend(ctx, "r", w.ID, time.Millisecond, at(15000))
	if err != nil || v.Extended != time.Millisecond {
		t.Fatalf("Extend(1ms) = %v, %v", v.Extended, err)
	}
	v, err = s.Extend(ctx, "r", w.ID, 3*time.Millisecond, at(15000))
	if err != nil || v.Extended != 4*time.Millisecond {
		t.Fatalf("Extend(3ms) = %v, %v; want 4ms", v.Extended, err)
	}
	for _, ms := range []int64{17000, 19000} {
		if _, err := s.Heartbeat(ctx, "r", w.ID, at(ms)); err != nil {
			t.Fatal(err)
		}
	}
	s.Sweep(ctx, "r", at(20003))
	if v := read(t, s, w.ID)[0]; v.Status != waitroom.StatusActive || v.Extended != 4*time.Millisecond {
		t.Fatalf("w at +20.003s = %+v; want active (due at +20.004s)", v)
	}
	s.Sweep(ctx, "r", at(20004))
	if v := read(t, s, w.ID)[0]; v.EndReason != waitroom.ReasonMaxSession {
		t.Fatalf("w at +20.004s = %+v; want ended at its max session", v)
	}

	// Only an active session is extended, by 1ms to MaxDuration.
	x := mustJoin(t, s, "", at(21000))
	y := mustJoin(t, s, "", at(21000))
	z := mustJoin(t, s, "", at(21000))
	_, err = s.Extend(ctx, "r", z.ID, time.Second, at(21000))
	wantErr(t, "Extend of a waiting session", err, waitroom.CodeInvalidRequest)
	_, err = s.Extend(ctx, "r", a.ID, time.Second, at(21000))
	wantErr(t, "Extend of an ended session", err, waitroom.CodeInvalidRequest)
	_, err = s.Extend(ctx, "r", x.ID, time.Millisecond-1, at(21000))
	wantErr(t, "Extend by less than 1ms", err, waitroom.CodeInvalidRequest)
	_, err = s.Extend(ctx, "r", x.ID, waitroom.MaxDuration.D()+1, at(21000))
	wantErr(t, "Extend by more than MaxDuration", err, waitroom.CodeInvalidRequest)
	_, err = s.Extend(ctx, "r", waitroom.NewSessionID(99).String(), time.Second, at(21000))
	wantErr(t, "Extend of an unknown session", err, waitroom.CodeSessionNotFound)

	// An extended session sent back to the line keeps its extension, and
	// its max session counts from its new admission.
	if _, err := s.Extend(ctx, "r", y.ID, time.Second, at(21000)); err != nil {
		t.Fatal(err)
	}
	if _, moved, err := s.QueueAll(ctx, "r", at(22000)); err != nil || len(moved) != 2 || moved[1].Extended != time.Second {
		t.Fatalf("QueueAll = %+v, %v", moved, err)
	}
	if _, _, err := s.PutRoom(ctx, "r", waitroom.RoomConfig{Mode: waitroom.ModeAuto, Capacity: 2,
		MaxSession: waitroom.Duration(10 * time.Second)}, at(23000)); err != nil {
		t.Fatal(err)
	}
	s.Sweep(ctx, "r", at(33999))
	got = read(t, s, x.ID, y.ID)
	if got[0].EndReason != waitroom.ReasonMaxSession || got[1].Status != waitroom.StatusActive {
		t.Fatalf("at +33.999s x %s, y %s; want x ended, y active", got[0].Status, got[1].Status)
	}
	s.Sweep(ctx, "r", at(34000))
	if v := read(t, s, y.ID)[0]; v.EndReason != waitroom.ReasonMaxSession {
		t.Fatalf("y at +34s = %s; want ended", v.Status)
	}
}

func TestOperatorLookup(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s, rec := opRoom(t, waitroom.RoomConfig{Mode: waitroom.ModeAuto, Capacity: 1,
		WaitingTimeout: waitroom.Duration(5 * time.Second)})
	a := mustJoin(t, s, "ka", base)
	b := mustJoin(t, s, "kb", base)
	c := mustJoin(t, s, "", base)
	if _, err := s.Front(ctx, "r", c.ID, base); err != nil {
		t.Fatal(err)
	}
	reset(rec)
	for _, q := range []struct {
		ticket int64
		key    string
		want   waitroom.Session
	}{{1, "", a}, {0, "kb", b}, {-1, "ka", a}, {3, "kb", c}} {
		v, err := s.Lookup(ctx, "r", q.ticket, q.key)
		if err != nil || v.ID != q.want.ID || v.Ticket != q.want.Ticket {
			t.Fatalf("Lookup(%d, %q) = %+v, %v; want #%d", q.ticket, q.key, v, err, q.want.Ticket)
		}
	}
	v, _ := s.Lookup(ctx, "r", 3, "")
	if v.Position != 1 || v.Place != -1 || v.Status != waitroom.StatusWaiting {
		t.Fatalf("Lookup(#3) = %+v; want waiting first, place -1", v)
	}
	v, _ = s.Lookup(ctx, "r", 0, "kb")
	if v.Position != 2 {
		t.Fatalf("Lookup(kb) position %d, want 2", v.Position)
	}
	for _, q := range []struct {
		ticket int64
		key    string
	}{{4, ""}, {0, "nobody"}, {0, ""}} {
		_, err := s.Lookup(ctx, "r", q.ticket, q.key)
		wantErr(t, "Lookup of nobody", err, waitroom.CodeSessionNotFound)
	}
	_, err := s.Lookup(ctx, "nope", 1, "")
	wantErr(t, "Lookup in no room", err, waitroom.CodeRoomNotFound)
	if es := rec.snapshot(); len(es) != 0 {
		t.Fatalf("Lookup made events %+v", es)
	}

	// Lookup is no presence: b's presence deadline stays at +5s.
	for range 3 {
		if _, err := s.Lookup(ctx, "r", 2, ""); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Heartbeat(ctx, "r", c.ID, at(4000)); err != nil {
		t.Fatal(err)
	}
	s.Sweep(ctx, "r", at(5000))
	// Ended: by ticket still (from the history), not by key.
	v, err = s.Lookup(ctx, "r", 2, "")
	if err != nil || v.Status != waitroom.StatusExpired || v.EndReason != waitroom.ReasonNoPresence || v.ID != b.ID {
		t.Fatalf("Lookup of ended #2 = %+v, %v", v, err)
	}
	_, err = s.Lookup(ctx, "r", 0, "kb")
	wantErr(t, "Lookup of an ended key", err, waitroom.CodeSessionNotFound)

	// An entrant of a pre-queue is found by its key.
	if _, _, err := s.PutRoom(ctx, "pre", waitroom.RoomConfig{Mode: waitroom.ModeAuto, Capacity: 1, OpensAt: base.Add(time.Hour)}, base); err != nil {
		t.Fatal(err)
	}
	e, err := s.Join(ctx, "pre", "ke", base)
	if err != nil {
		t.Fatal(err)
	}
	v, err = s.Lookup(ctx, "pre", 0, "ke")
	if err != nil || v.ID != e.ID || v.Entry == "" || v.Ticket != 0 {
		t.Fatalf("Lookup of an entrant = %+v, %v; want %+v", v, err, e)
	}
}

// TestOperatorTwoProcesses: one process moves, the other reads the same
// line and hears the moves as remote events.
func TestOperatorTwoProcesses(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	addr := redistest.Server(t)
	newClient := func() redis.UniversalClient { return redis.NewClient(&redis.Options{Addr: addr}) }
	prefix := freshPrefix()
	a := newProcess(t, "a", newClient, prefix)
	b := newProcess(t, "b", newClient, prefix)
	cfg := waitroom.RoomConfig{Mode: waitroom.ModeAuto, Capacity: 2, MaxSession: waitroom.Duration(time.Minute)}
	if _, _, err := a.store.PutRoom(ctx, "r", cfg, base); err != nil {
		t.Fatal(err)
	}
	var all []waitroom.Session
	for range 6 {
		all = append(all, mustJoin(t, b.store, "", base))
	}
	ids := make([]string, len(all))
	for i, v := range all {
		ids[i] = v.ID
	}
	if _, err := a.store.Front(ctx, "r", all[5].ID, at(1)); err != nil {
		t.Fatal(err)
	}
	if _, err := a.store.Extend(ctx, "r", all[1].ID, time.Second, at(2)); err != nil {
		t.Fatal(err)
	}
	if _, _, err := a.store.QueueAll(ctx, "r", at(3)); err != nil {
		t.Fatal(err)
	}
	want := map[int64]struct{ pos, place int64 }{1: {1, -3}, 2: {2, -2}, 6: {3, -1}, 3: {4, 0}, 4: {5, 0}, 5: {6, 0}}
	for _, p := range []*process{a, b} {
		got, err := p.store.Sessions(ctx, "r", ids)
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range got {
			if w := want[v.Ticket]; v.Position != w.pos || v.Place != w.place {
				t.Fatalf("%s reads #%d at position %d, place %d; want %d, %d", p.name, v.Ticket, v.Position, v.Place, w.pos, w.place)
			}
		}
		if got[1].Extended != time.Second {
			t.Fatalf("%s reads #2 extended %s, want 1s", p.name, got[1].Extended)
		}
		if l := tickets(line(t, p.store, 2)); !slices.Equal(l, []int64{1, 2, 6, 3, 4, 5}) {
			t.Fatalf("%s lists %v", p.name, l)
		}
	}
	// b hears a's three moves, remote, with their places and extension.
	deadline := time.Now().Add(5 * time.Second)
	for {
		var front, extend, queue *waitroom.Event
		for _, e := range b.events.snapshot() {
			if !e.Remote || len(e.Changes) == 0 {
				continue
			}
			switch c := e.Changes[0]; {
			case e.Kind == waitroom.EventConfig:
				queue = &e
			case c.From == waitroom.StatusWaiting && c.Session.Place == -1:
				front = &e
			case c.From == waitroom.StatusActive && c.Session.Extended == time.Second:
				extend = &e
			}
		}
		if front != nil && extend != nil && queue != nil {
			if !queue.Config.Paused || len(queue.Changes) != 2 || queue.Changes[1].Session.Extended != time.Second ||
				queue.Changes[0].Session.Place != -3 || queue.Changes[1].Session.Place != -2 {
				t.Fatalf("remote QueueAll event %+v", *queue)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("b heard front %v, extend %v, queue-all %v", front != nil, extend != nil, queue != nil)
		}
		time.Sleep(10 * time.Millisecond)
	}
	// Resumed by b, the moved sessions come back first.
	cfg.Paused = false
	if _, _, err := b.store.PutRoom(ctx, "r", cfg, at(4)); err != nil {
		t.Fatal(err)
	}
	got, _ := a.store.Sessions(ctx, "r", ids[:2])
	if got[0].Status != waitroom.StatusActive || got[1].Status != waitroom.StatusActive {
		t.Fatalf("after resume #1 %s, #2 %s; want both active", got[0].Status, got[1].Status)
	}
}
