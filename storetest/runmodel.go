package storetest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/waitroom/waitroom"
	"pgregory.net/rapid"
)

// RunModel is the model-based test: rapid generates random sequences of
// operations (joins with and without keys, leaves, revokes, away, presence,
// heartbeats, advances, stock changes, reconfigurations, deletes, sweeps and
// time passing, in rooms that are sometimes scheduled, with a pre-queue and
// a draw, sometimes close, and sometimes sell an inventory) and after every
// step the store must agree with the reference model in model.go,
// model_schedule.go and model_stock.go: every session's status, exact
// position and unit, the room's totals and stock, ended sessions' final
// status and reason, the history, the draw record, the events and the
// invariants.
//
// After each step it reads the room, its waiting line, every live session
// and every session the step touched (and, when the step ended sessions,
// the first history page); every eighth step and at the end of a sequence
// it reads every session ever issued and the whole history.
//
// It uses one store from newStore and a fresh room for each generated
// sequence. rapid's flags set the effort: -rapid.checks (sequences, default
// 100) and -rapid.steps (each sequence runs about four times this many
// steps, default 30). A failure prints the steps and a seed to replay it
// with -rapid.seed. For a deeper search: -rapid.checks=10000.
func RunModel(t *testing.T, newStore func(t *testing.T) waitroom.Store) {
	st := newStore(t)
	ctx := t.Context()
	var rooms atomic.Int64
	rapid.Check(t, func(rt *rapid.T) {
		h := &modelRun{s: st, ctx: ctx, clock: base, sessions: map[string]*mSession{}, commitments: map[string]bool{}}
		h.m = newModel(fmt.Sprintf("model-%d", rooms.Add(1)), modelHooks{t: rt, readDraw: func() waitroom.DrawRecord { return h.readDraw(rt) }})
		cancel := st.Subscribe(func(e waitroom.Event) {
			if e.Room != h.m.name {
				return
			}
			h.mu.Lock()
			h.events = append(h.events, e)
			h.mu.Unlock()
		})
		defer cancel()
		defer func() { _ = st.DeleteRoom(ctx, h.m.name, true, h.clock) }()

		h.putRoom(rt, h.withHolds(rt, h.withTiers(rt, h.withStock(rt, h.withSchedule(rt, drawConfig(rt))))), false)
		actions := map[string]func(*rapid.T){
			"join":      h.join,
			"join2":     h.join,
			"join3":     h.join,
			"leave":     h.leave,
			"session":   func(t *rapid.T) { h.presence(t, false) },
			"heartbeat": func(t *rapid.T) { h.presence(t, true) },
			"away":      h.away,
			"advance":   h.advance,
			"config": func(t *rapid.T) {
				h.putRoom(t, h.withHolds(t, h.withTiers(t, h.withStock(t, h.withSchedule(t, drawConfig(t))))), true)
			},
			"stock":     h.stock,
			"stock2":    h.stock,
			"delete":    h.deleteRoom,
			"sweep":     h.sweep,
			"sweep2":    h.sweep,
			"sweep3":    h.sweep,
			"tick":      h.tick,
			"tick2":     h.tick,
			"tick_due":  h.tickDue,
			"tick_due2": h.tickDue,
			"queue_all": h.queueAll,
			"update":    h.updateRoom,
			"update2":   h.updateRoom,
			"front":     h.front,
			"extend":    h.extend,
			"lookup":    h.lookup,
			"claim":     h.claim,
			"claim2":    h.claim,
			"":          h.check,
		}
		// Bugs hide in long histories (a deadline set many steps ago, a
		// bucket drained long before), so each sequence is several times
		// -rapid.steps long.
		for range modelRounds {
			rt.Repeat(actions)
		}
		h.full = true
		h.check(rt)
	})
}

// modelRun drives one store room and its model through one sequence.
type modelRun struct {
	s     waitroom.Store
	ctx   context.Context
	m     *model
	clock time.Time // the test's clock; operations pass it (or a little less)

	all         []string             // every id issued, in every incarnation of the room
	sessions    map[string]*mSession // every model session by id, kept across deletes
	commitments map[string]bool      // every draw commitment seen, in every incarnation

	full bool // check everything, not only what may have changed

	mu     sync.Mutex
	events []waitroom.Event
}

// modelRounds is how many times -rapid.steps steps each sequence runs.
const modelRounds = 4

// fullCheckEvery is how often (in operations) the check reads every
// session and the whole history, not only what may have changed.
const fullCheckEvery = 8

var (
	modelKeys  = []string{"", "", "", "k1", "k2", "k3"}
	modelSteps = []time.Duration{msec, 499 * msec, 500 * msec, sec, sec, 2 * sec, 5 * sec, 10 * sec, 30 * sec,
		60*sec - msec, time.Minute, 5 * time.Minute, time.Hour}
)

func drawConfig(t *rapid.T) waitroom.RoomConfig {
	d := func(label string, ds ...time.Duration) waitroom.Duration {
		return waitroom.Duration(rapid.SampledFrom(ds).Draw(t, label))
	}
	return waitroom.RoomConfig{
		Mode:           rapid.SampledFrom([]waitroom.Mode{waitroom.ModeAuto, waitroom.ModeAuto, waitroom.ModeManual}).Draw(t, "mode"),
		Capacity:       rapid.IntRange(0, 4).Draw(t, "capacity"),
		RatePerMinute:  rapid.SampledFrom([]int{0, 0, 0, 1, 6, 60, 90, 120, 600}).Draw(t, "rate"),
		ActiveTimeout:  d("active_timeout", 0, sec, 5*sec, 10*sec, time.Minute),
		MaxSession:     d("max_session", 0, 0, 5*sec, 30*sec),
		WaitingTimeout: d("waiting_timeout", 0, 2*sec, 10*sec, time.Minute),
		Grace:          d("grace", 0, sec, 5*sec, 30*sec),
		Paused:         rapid.IntRange(0, 4).Draw(t, "paused") == 0,
	}
}

// when returns the time an operation passes: usually the clock, sometimes
// a little earlier, which the store must treat as its latest time.
func (h *modelRun) when(t *rapid.T) time.Time {
	if rapid.IntRange(0, 7).Draw(t, "skew") == 0 {
		return h.clock.Add(-rapid.SampledFrom([]time.Duration{msec, sec, time.Minute}).Draw(t, "skew_by"))
	}
	return h.clock
}

// begin starts an operation on the model and forgets earlier events.
func (h *modelRun) begin(t *rapid.T, format string, args ...any) {
	h.m.begin()
	h.mu.Lock()
	h.events = nil
	h.mu.Unlock()
	t.Logf("op %d at %s: %s", h.m.op, rel(h.clock), fmt.Sprintf(format, args...))
}

// recover brings a room that answered an operation with an error to a state
// every backend agrees on: whether or not the refused operation kept its
// expiries and admissions, a Sweep at the same time does them.
func (h *modelRun) recover(t *rapid.T, now time.Time) {
	if _, err := h.s.Sweep(h.ctx, h.m.name, now); err != nil {
		t.Fatalf("Sweep after a refused operation: error = %v", err)
	}
	h.m.sweep(now)
}

func (h *modelRun) noRoom(t *rapid.T, what string, err error) {
	t.Helper()
	wantCode(t, what+" on a deleted room", err, waitroom.CodeRoomNotFound)
}

func (h *modelRun) pick(t *rapid.T) string {
	if len(h.all) == 0 {
		t.Skip("no sessions yet")
	}
	return h.all[rapid.IntRange(0, len(h.all)-1).Draw(t, "session")]
}

// tickDue moves the clock to the model's next deadline or token, or just
// before it, where off-by-one bugs live.
func (h *modelRun) tickDue(t *rapid.T) {
	due, ok := h.m.nextDue()
	if !h.m.exists || !ok || !due.After(h.clock) {
		h.tick(t)
		return
	}
	if rapid.IntRange(0, 2).Draw(t, "just_before") == 0 && due.Sub(h.clock) > msec {
		due = due.Add(-msec)
	}
	h.clock = due
	t.Logf("time passes to the next due time, now %s", rel(h.clock))
}

func (h *modelRun) tick(t *rapid.T) {
	d := rapid.SampledFrom(modelSteps).Draw(t, "step")
	h.clock = h.clock.Add(d)
	t.Logf("time passes: %s, now %s", d, rel(h.clock))
}

func (h *modelRun) putRoom(t *rapid.T, cfg waitroom.RoomConfig, skew bool) {
	now := h.clock
	if skew && h.m.exists {
		now = h.when(t)
	}
	h.begin(t, "PutRoom %+v inventory %s", cfg, fmtPtr(cfg.Inventory))
	r, created, err := h.s.PutRoom(h.ctx, h.m.name, cfg, now)
	wantCreated, refused := h.m.putRoom(cfg, now)
	if refused != "" {
		wantCode(t, "PutRoom "+refusal[refused], err, refused)
		h.recover(t, now)
		h.checkEvents(t, "")
		return
	}
	if err != nil {
		t.Fatalf("PutRoom error = %v", err)
	}
	if created != wantCreated {
		t.Fatalf("PutRoom created = %v, want %v", created, wantCreated)
	}
	if want := h.roomInfo(); !sameRoom(r, want) {
		t.Fatalf("PutRoom = %s, want %s", fmtRoom(r), fmtRoom(want))
	}
	h.checkEvents(t, waitroom.EventConfig)
}

func (h *modelRun) deleteRoom(t *rapid.T) {
	force := rapid.IntRange(0, 3).Draw(t, "force") == 0
	now := h.when(t)
	h.begin(t, "DeleteRoom force=%v", force)
	err := h.s.DeleteRoom(h.ctx, h.m.name, force, now)
	if !h.m.exists {
		h.noRoom(t, "DeleteRoom", err)
		return
	}
	if h.m.deleteRoom(force, now) {
		wantCode(t, "DeleteRoom with live sessions", err, waitroom.CodeRoomNotEmpty)
		h.recover(t, now)
		h.checkEvents(t, "")
		return
	}
	if err != nil {
		t.Fatalf("DeleteRoom error = %v", err)
	}
	h.checkEvents(t, waitroom.EventDeleted)
}

func (h *modelRun) join(t *rapid.T) {
	req := h.joinRequest(t)
	now := h.when(t)
	h.begin(t, "Join %s", fmtJoin(req))
	var got waitroom.Session
	var err error
	if req.Tier == "" && req.Uses == nil && req.Contact == "" {
		got, err = h.s.Join(h.ctx, h.m.name, req.Key, now)
	} else {
		got, err = h.s.JoinWith(h.ctx, h.m.name, req, now)
	}
	if expiredUse(req, now) {
		wantCode(t, "Join with an expired token", err, waitroom.CodeInvalidRequest)
		h.checkEvents(t, "")
		return
	}
	if !h.m.exists {
		h.noRoom(t, "Join", err)
		return
	}
	s, already, refused := h.m.join(req, got.ID, now)
	if refused != "" {
		wantCode(t, "Join "+refusal[refused], err, refused)
		// A refused join names nobody's session: the key's live session
		// is for a join that could have been made (already_joined).
		if e := (*waitroom.Error)(nil); errors.As(err, &e) && e.Session != nil {
			t.Fatalf("Join %s: the refusal carries session %s (ticket %d)", refusal[refused], e.Session.ID, e.Session.Ticket)
		}
		h.recover(t, now)
		h.checkEvents(t, "")
		return
	}
	if already {
		wantCode(t, "Join with a key that holds a live session", err, waitroom.CodeAlreadyJoined)
		var e *waitroom.Error
		errors.As(err, &e)
		if e.Session == nil {
			t.Fatalf("already_joined error without the live Session")
		}
		h.compare(t, "already_joined Session", *e.Session, s)
		h.recover(t, now)
		h.checkEvents(t, "")
		return
	}
	if err != nil {
		t.Fatalf("Join error = %v", err)
	}
	if sid, err := waitroom.ParseSessionID(got.ID); err != nil || (sid.Entry != 0) != (s.ticket == 0) {
		t.Fatalf("Join id %q parses to %+v, %v; want an entry id for an entrant of a pre-queue, a ticket id otherwise", got.ID, sid, err)
	}
	h.all = append(h.all, got.ID)
	h.sessions[got.ID] = s
	h.compare(t, "Join", got, s)
	h.checkEvents(t, waitroom.EventSessions)
}

// session resolves id for an operation: the model session, or nil with the
// error the store must give (the room or the session is gone).
func (h *modelRun) session(id string) (*mSession, waitroom.Code) {
	if !h.m.exists {
		return nil, waitroom.CodeRoomNotFound
	}
	if s := h.m.find(id); s != nil {
		return s, ""
	}
	return nil, waitroom.CodeSessionNotFound
}

func (h *modelRun) leave(t *rapid.T) {
	id := h.pick(t)
	reason := rapid.SampledFrom([]waitroom.Reason{waitroom.ReasonLeft, waitroom.ReasonRevoked}).Draw(t, "reason")
	now := h.when(t)
	s, code := h.session(id)
	h.begin(t, "Leave %s reason=%s", h.label(id), reason)
	got, err := h.s.Leave(h.ctx, h.m.name, id, reason, now)
	if h.refused(t, "Leave", err, code, now) {
		return
	}
	h.m.leave(s, reason, now)
	h.compare(t, "Leave", got, s)
	h.checkEvents(t, waitroom.EventSessions)
}

func (h *modelRun) presence(t *rapid.T, activity bool) {
	id := h.pick(t)
	now := h.when(t)
	s, code := h.session(id)
	name := "Session"
	call := h.s.Session
	if activity {
		name, call = "Heartbeat", h.s.Heartbeat
	}
	h.begin(t, "%s %s", name, h.label(id))
	got, err := call(h.ctx, h.m.name, id, now)
	if h.refused(t, name, err, code, now) {
		return
	}
	h.m.presence(s, activity, now)
	h.compare(t, name, got, s)
	h.checkEvents(t, waitroom.EventSessions)
}

func (h *modelRun) away(t *rapid.T) {
	id := h.pick(t)
	now := h.when(t)
	s, code := h.session(id)
	h.begin(t, "Away %s", h.label(id))
	err := h.s.Away(h.ctx, h.m.name, id, now)
	if h.refused(t, "Away", err, code, now) {
		return
	}
	h.m.goAway(s, now)
	h.checkEvents(t, waitroom.EventSessions)
}

// refused checks an operation on a session the model says cannot succeed,
// and reports whether it was one.
func (h *modelRun) refused(t *rapid.T, what string, err error, code waitroom.Code, now time.Time) bool {
	t.Helper()
	if code == "" {
		if err != nil {
			t.Fatalf("%s error = %v, want success", what, err)
		}
		return false
	}
	wantCode(t, what, err, code)
	if code != waitroom.CodeRoomNotFound {
		h.recover(t, now)
		h.checkEvents(t, "")
	}
	return true
}

func (h *modelRun) advance(t *rapid.T) {
	n := rapid.IntRange(1, 4).Draw(t, "n")
	now := h.when(t)
	h.begin(t, "Advance %d", n)
	got, err := h.s.Advance(h.ctx, h.m.name, n, now)
	if !h.m.exists {
		h.noRoom(t, "Advance", err)
		return
	}
	want := h.m.advance(n, now)
	if want == nil {
		wantCode(t, "Advance with nobody waiting", err, waitroom.CodeQueueEmpty)
		h.recover(t, now)
		h.checkEvents(t, "")
		return
	}
	if err != nil {
		t.Fatalf("Advance error = %v", err)
	}
	if len(got) != len(want) {
		t.Fatalf("Advance returned %s, want %d sessions", describe(got), len(want))
	}
	for i := range got {
		h.compare(t, fmt.Sprintf("Advance result %d", i), got[i], want[i])
	}
	h.checkEvents(t, waitroom.EventSessions)
}

func (h *modelRun) sweep(t *rapid.T) {
	now := h.when(t)
	h.begin(t, "Sweep")
	got, err := h.s.Sweep(h.ctx, h.m.name, now)
	if !h.m.exists {
		h.noRoom(t, "Sweep", err)
		return
	}
	if err != nil {
		t.Fatalf("Sweep error = %v", err)
	}
	expired, admitted := h.m.sweep(now)
	if got.Expired != expired || got.Admitted != admitted {
		t.Fatalf("Sweep = %d expired, %d admitted; want %d, %d", got.Expired, got.Admitted, expired, admitted)
	}
	// Next may be early (a lazy schedule), never late, never now or before.
	if !got.Next.IsZero() && !got.Next.After(h.m.latest) {
		t.Fatalf("Sweep Next = %s, not after now %s", rel(got.Next), rel(h.m.latest))
	}
	if due, ok := h.m.nextDue(); ok && (got.Next.IsZero() || got.Next.After(due)) {
		t.Fatalf("Sweep Next = %s, want at or before %s, when something is due", rel(got.Next), rel(due))
	}
	h.checkEvents(t, waitroom.EventSessions)
}

// label names a session in the log.
func (h *modelRun) label(id string) string {
	if s := h.m.find(id); s != nil {
		return s.label()
	}
	if sid, err := waitroom.ParseSessionID(id); err == nil && sid.Entry != 0 {
		return fmt.Sprintf("entry %d", sid.Entry)
	} else if err == nil {
		return fmt.Sprintf("#%d", sid.Ticket)
	}
	return fmt.Sprintf("%q", id)
}

func (h *modelRun) roomInfo() waitroom.Room {
	w, a := h.m.counts()
	adm, inv := h.m.fairness()
	return h.m.stockInfo(waitroom.Room{Name: h.m.name, RoomConfig: h.m.cfg, Waiting: w, Active: a, LastTicket: h.m.lastTicket, Entrants: len(h.m.liveEntrants()),
		Admissions: adm, Inversions: inv, Revision: h.m.rev})
}

// compare checks a session the store returned against the model's view.
func (h *modelRun) compare(t T, what string, got waitroom.Session, s *mSession) {
	t.Helper()
	want := h.m.view(s)
	if s.status.Final() && s.allowedReason(got.EndReason) {
		want.EndReason = got.EndReason // deadlines tied: any of their reasons
	}
	if d := sessionDiff(got, want); d != "" {
		t.Fatalf("%s of %s: %s", what, s.label(), d)
	}
}

// checkEvents compares the events of the operation with the model's
// changes. kind, when set, is the kind the operation's event must have if
// there is one (config and deleted events are always expected).
func (h *modelRun) checkEvents(t *rapid.T, kind waitroom.EventKind) {
	t.Helper()
	h.m.tellNear()
	h.mu.Lock()
	var events []waitroom.Event
	for _, e := range h.events {
		// A remote event without changes is a resynchronisation hint
		// (a shared store reconnected): it records no operation.
		if !(e.Remote && len(e.Changes) == 0) {
			events = append(events, e)
		}
	}
	h.events = nil
	h.mu.Unlock()

	got := collapse(eventChanges(events))
	want := collapse(h.m.changes)
	if !maps.Equal(got, want) {
		t.Fatalf("events %s: changes %v, want %v", describeEvents(events), sortedChanges(got), sortedChanges(want))
	}
	if (kind == waitroom.EventConfig || kind == waitroom.EventDeleted) && !slices.ContainsFunc(events, func(e waitroom.Event) bool { return e.Kind == kind }) {
		t.Fatalf("events %s, want one of kind %q", describeEvents(events), kind)
	}
	for _, e := range events {
		if e.Kind == waitroom.EventConfig && !e.Remote && (e.Config == nil || !e.Config.Equal(h.m.cfg)) {
			t.Fatalf("config event carries %+v, want %+v", e.Config, h.m.cfg)
		}
		if e.Kind == waitroom.EventConfig && e.Revision != h.m.rev {
			t.Fatalf("config event carries revision %d, want %d", e.Revision, h.m.rev)
		}
		if !e.At.Equal(h.m.latest) {
			t.Fatalf("event at %s, want the operation's time %s", rel(e.At), rel(h.m.latest))
		}
		for _, c := range e.Changes {
			s := h.sessions[c.Session.ID]
			if s == nil || c.Session.Ticket != s.ticket || c.Session.Entry != s.entry || c.Session.Room != h.m.name {
				t.Fatalf("event change for #%d: id %.8s…, entry %q, room %q; not a session of this room", c.Session.Ticket, c.Session.ID, c.Session.Entry, c.Session.Room)
			}
			if c.Session.Status.Final() && (!s.allowedReason(c.Session.EndReason) || !c.Session.EndedAt.Equal(s.ended)) {
				t.Fatalf("event change for #%d: reason %q, ended %s; want one of %v at %s",
					c.Session.Ticket, c.Session.EndReason, rel(c.Session.EndedAt), s.reasons, rel(s.ended))
			}
		}
	}
	if len(events) > 0 && h.m.exists {
		last := events[len(events)-1]
		w, a := h.m.counts()
		if last.Waiting != w || last.Active != a || last.LastTicket != h.m.lastTicket {
			t.Fatalf("last event totals: waiting %d, active %d, last ticket %d; want %d, %d, %d",
				last.Waiting, last.Active, last.LastTicket, w, a, h.m.lastTicket)
		}
	}
	h.checkDrawEvents(t, events)
	h.checkStockEvents(t, events)
	h.checkNearEvents(t, events)
}

// check compares everything the store reports about the room with the model.
func (h *modelRun) check(t *rapid.T) {
	t.Helper()
	m := h.m
	if !m.exists {
		_, err := h.s.Room(h.ctx, m.name)
		wantCode(t, "Room after delete", err, waitroom.CodeRoomNotFound)
		return
	}
	r, err := h.s.Room(h.ctx, m.name)
	if err != nil {
		t.Fatalf("Room error = %v", err)
	}
	if want := h.roomInfo(); !sameRoom(r, want) {
		t.Fatalf("Room = %s, want %s", fmtRoom(r), fmtRoom(want))
	}
	rooms, err := h.s.Rooms(h.ctx)
	if err != nil {
		t.Fatalf("Rooms error = %v", err)
	}
	if i := slices.IndexFunc(rooms, func(x waitroom.Room) bool { return x.Name == m.name }); i < 0 || !sameRoom(rooms[i], r) {
		t.Fatalf("Rooms lacks the room or differs from Room: %+v", rooms)
	}
	h.checkDraw(t)

	// The waiting line, paged with a size that varies from step to step.
	limit := m.op % 5
	waiting := collectPages(t, "Waiting", func(after string) ([]waitroom.Session, string, error) {
		return h.s.Waiting(h.ctx, m.name, waitroom.Page{After: after, Limit: limit})
	}, limit)
	wantWaiting := m.line()
	if len(waiting) != len(wantWaiting) {
		t.Fatalf("Waiting lists %s, want %d sessions", describe(waiting), len(wantWaiting))
	}
	for i, s := range waiting {
		h.compare(t, fmt.Sprintf("Waiting entry %d", i), s, wantWaiting[i])
	}

	// Sessions, read without presence: every live one and every one this
	// operation touched after each step; on a full check also every
	// session ever issued, ended or from a deleted incarnation. (Ended
	// sessions never change, and reading them may cost a backend a query
	// each.)
	full := h.full || m.op%fullCheckEvery == 0
	var read []string
	for _, id := range h.all {
		if s := m.find(id); full || (s != nil && (s.status.Live() || s.endOp == m.op)) {
			read = append(read, id)
		}
	}
	got, err := h.s.Sessions(h.ctx, m.name, read)
	if err != nil {
		t.Fatalf("Sessions error = %v", err)
	}
	if len(got) != len(read) {
		t.Fatalf("Sessions returned %d for %d ids", len(got), len(read))
	}
	liveKeys := map[string]string{}
	maxAdmitted := map[int]int64{} // by tier
	for i, id := range read {
		s := m.find(id)
		if s == nil {
			if got[i].ID != "" {
				t.Fatalf("Sessions of %s from a deleted incarnation = %s, want the zero Session", h.label(id), fmtSession(got[i]))
			}
			continue
		}
		h.compare(t, "Sessions", got[i], s)
		if got[i].Status.Live() && got[i].Key != "" {
			if other, dup := liveKeys[got[i].Key]; dup {
				t.Fatalf("key %q has two live sessions, %s and %s", got[i].Key, h.label(other), h.label(id))
			}
			liveKeys[got[i].Key] = id
		}
		if !got[i].AdmittedAt.IsZero() && s.place >= 0 {
			maxAdmitted[s.tier] = max(maxAdmitted[s.tier], got[i].Ticket)
		}
	}
	// FIFO inside each tier among the sessions no operator moved.
	for _, w := range waiting {
		if s := m.find(w.ID); s != nil && w.Place >= 0 && w.Ticket < maxAdmitted[s.tier] {
			t.Fatalf("FIFO broken in tier %d: #%d was admitted while #%d waits", s.tier, maxAdmitted[s.tier], w.Ticket)
		}
	}
	checkStockCounts(t, r, got)

	// The history, newest first, optionally filtered: the first page after
	// a step that ended sessions, every page on a full check.
	endedNow := slices.ContainsFunc(m.ended(""), func(s *mSession) bool { return s.endOp == m.op })
	if !full && !endedNow {
		return
	}
	status := []waitroom.Status{"", waitroom.StatusServed, waitroom.StatusLeft, waitroom.StatusExpired}[m.op%4]
	wantHist := m.ended(status)
	limit = 1 + m.op%4
	var hist []waitroom.Session
	if full {
		hist = collectPages(t, "History", func(after string) ([]waitroom.Session, string, error) {
			return h.s.History(h.ctx, m.name, status, waitroom.Page{After: after, Limit: limit})
		}, limit)
		if len(hist) != len(wantHist) {
			t.Fatalf("History(%q) = %s, want %d sessions", status, describe(hist), len(wantHist))
		}
	} else {
		hist, _, err = h.s.History(h.ctx, m.name, status, waitroom.Page{Limit: limit})
		if err != nil {
			t.Fatalf("History(%q) error = %v", status, err)
		}
		if len(hist) != min(limit, len(wantHist)) {
			t.Fatalf("History(%q, limit %d) = %s, want %d sessions", status, limit, describe(hist), min(limit, len(wantHist)))
		}
	}
	lastOp := int(^uint(0) >> 1)
	shown := map[string]bool{}
	for i, e := range hist {
		s := m.find(e.ID)
		if s == nil || !s.status.Final() || (status != "" && s.status != status) || shown[s.id] {
			t.Fatalf("History(%q) entry %d is %s, not an ended session of the model (or shown twice)", status, i, fmtSession(e))
		}
		shown[s.id] = true
		if s.endOp > lastOp {
			t.Fatalf("History(%q) is not newest first: %s (ended in op %d) after one ended in op %d", status, s.label(), s.endOp, lastOp)
		}
		lastOp = s.endOp
		want := m.view(s)
		if s.allowedReason(e.EndReason) {
			want.EndReason = e.EndReason
		}
		want.Waiting, want.Active, want.Capacity = e.Waiting, e.Active, e.Capacity // totals of the past
		if d := sessionDiff(e, want); d != "" {
			t.Fatalf("History entry %d: %s", i, d)
		}
	}
	// Nothing left out ended later than what was shown.
	for _, s := range wantHist {
		if !shown[s.id] && s.endOp > lastOp {
			t.Fatalf("History(%q) = %s leaves out %s, which ended later (op %d)", status, describe(hist), s.label(), s.endOp)
		}
	}
}
