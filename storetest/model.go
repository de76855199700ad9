package storetest

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/waitroom/waitroom"
)

// model is the reference the model-based test compares a store with: one
// room, written to be obviously correct rather than fast. Every session is
// kept in a slice in ticket order and every rule is a loop over it; the
// entrants of a scheduled room's pre-queue, who have no tickets yet, are
// kept apart until the draw (model_schedule.go). A room's inventory and
// its units are in model_stock.go.
type model struct {
	name   string
	exists bool
	cfg    waitroom.RoomConfig
	latest time.Time // the latest now the room has seen
	// rev is the configuration's revision (model_revisions.go): kept
	// across deletes, so the next incarnation continues above it.
	rev int64

	lastTicket int64
	letIn      []int64     // tickets admitted or served, in the order they were; negative for moved sessions
	front      int64       // the last place an operator's move gave (0 before any)
	sessions   []*mSession // this incarnation of the room, by ticket; ended ones stay (the history)

	sch      *mSchedule  // nil while this incarnation was never given an opens_at
	entrants []*mSession // the pre-queue, in entry order; those that ended before the draw stay

	// The token bucket in exact units: one token is 60,000 units and each
	// millisecond adds rate_per_minute units (R/60 tokens a second).
	units   int64
	unitsAt time.Time

	op      int       // the number of the current operation
	changes []mChange // status changes of the current operation

	scheduledNow bool                 // the current operation scheduled the room
	drewRecord   *waitroom.DrawRecord // the draw the current operation held

	sold      int64           // units sold in this incarnation (reserved ones are the sessions' units)
	unitsOut  []int64         // the current operation's units taken from active sessions that stay active
	admitUnit map[string]bool // whether each session the current operation admitted got a unit

	// Tiers (model_tiers.go): the weighted virtual time and each tier's
	// last tag, the tier of each entry of letIn, and the token uses.
	vt      int64
	fin     []int64
	letTier []int
	uses    map[string]*mUse

	hooks modelHooks
}

// modelHooks connect the model to the run: the draw's seed is the store's
// secret, so the model reads the store's record when it draws.
type modelHooks struct {
	t        T
	readDraw func() waitroom.DrawRecord
}

// mSession is one session of the model.
type mSession struct {
	id     string
	ticket int64 // 0 for an entrant before the draw
	key    string
	entry  string // the public entry of a session that entered a pre-queue
	status waitroom.Status

	joined, admitted, ended time.Time
	lastSeen, lastActive    time.Time
	away                    bool
	awayUntil               time.Time
	unit                    bool          // active and holding a reserved unit
	place                   int64         // the line order: negative for an operator's move (QueueAll, Front), positive from a tier, 0 otherwise
	tier                    int           // the tier's index; 0 in a room without tiers
	extra                   time.Duration // how much an operator extended it (Extend)
	contact                 string        // a held session's contact (model_holds.go)
	near                    bool          // told it reached notify_at, or sent back by QueueAll

	reasons []waitroom.Reason // why it ended: more than one when deadlines tie
	endOp   int               // the operation that ended it
}

// mChange is one status change the model made.
type mChange struct {
	id       string
	ticket   int64
	from, to waitroom.Status
	near     bool // a Near change (model_holds.go): no status change
}

const tokenUnits = 60_000

func newModel(name string, hooks modelHooks) *model {
	return &model{name: name, hooks: hooks, admitUnit: map[string]bool{}}
}

// clock applies the rule that an earlier now counts as the latest.
func (m *model) clock(now time.Time) time.Time {
	if now.Before(m.latest) {
		return m.latest
	}
	m.latest = now
	return now
}

func (m *model) live() []*mSession {
	var out []*mSession
	for _, s := range m.sessions {
		if s.status.Live() {
			out = append(out, s)
		}
	}
	return out
}

func (m *model) withStatus(st waitroom.Status) []*mSession {
	var out []*mSession
	for _, s := range m.sessions {
		if s.status == st {
			out = append(out, s)
		}
	}
	return out
}

// line lists the waiting sessions in line order: by place where set (the
// moved ones first, their places being negative), by ticket otherwise.
func (m *model) line() []*mSession {
	w := m.withStatus(waitroom.StatusWaiting)
	slices.SortStableFunc(w, func(a, b *mSession) int { return cmp.Compare(lineKey(a), lineKey(b)) })
	return w
}

// counts returns the room's totals: active counts invited sessions, whose
// slots are reserved.
func (m *model) counts() (waiting, active int) {
	return len(m.withStatus(waitroom.StatusWaiting)), len(m.holders())
}

// position is the 1-based rank of s among waiting sessions, 0 if not waiting.
func (m *model) position(s *mSession) int64 {
	if s.status != waitroom.StatusWaiting || s.ticket == 0 {
		return 0
	}
	return int64(slices.Index(m.line(), s) + 1)
}

func (m *model) find(id string) *mSession {
	for _, s := range slices.Concat(m.sessions, m.entrants) {
		if s.id == id {
			return s
		}
	}
	return nil
}

// ended lists every ended session with status st ("" for any), in line or
// in the pre-queue.
func (m *model) ended(st waitroom.Status) []*mSession {
	var out []*mSession
	for _, s := range slices.Concat(m.sessions, m.entrants) {
		if s.status.Final() && (st == "" || s.status == st) {
			out = append(out, s)
		}
	}
	return out
}

// deadline returns when s is due and every reason tied at that time; ok is
// false when s has no deadline.
func (m *model) deadline(s *mSession) (at time.Time, reasons []waitroom.Reason, ok bool) {
	consider := func(t time.Time, r waitroom.Reason) {
		switch {
		case !ok || t.Before(at):
			at, reasons, ok = t, []waitroom.Reason{r}, true
		case t.Equal(at):
			reasons = append(reasons, r)
		}
	}
	switch {
	case s.status == waitroom.StatusInvited:
		return s.admitted.Add(m.cfg.HeldWindow()), []waitroom.Reason{waitroom.ReasonUnclaimed}, true
	case s.status == waitroom.StatusWaiting && s.contact != "":
		return time.Time{}, nil, false // held: no presence needed
	case s.status == waitroom.StatusWaiting:
		if m.cfg.WaitingTimeout > 0 {
			consider(s.lastSeen.Add(m.cfg.WaitingTimeout.D()), waitroom.ReasonNoPresence)
		}
	case s.status == waitroom.StatusActive:
		if m.cfg.ActiveTimeout > 0 {
			consider(s.lastActive.Add(m.cfg.ActiveTimeout.D()), waitroom.ReasonIdle)
		}
		if m.cfg.MaxSession > 0 {
			consider(s.admitted.Add(m.cfg.MaxSession.D()+s.extra), waitroom.ReasonMaxSession)
		}
	default:
		return time.Time{}, nil, false
	}
	if s.away {
		consider(s.awayUntil, waitroom.ReasonGone)
	}
	return at, reasons, ok
}

func (m *model) change(s *mSession, to waitroom.Status) {
	m.changes = append(m.changes, mChange{s.id, s.ticket, s.status, to, false})
	s.status = to
}

func (m *model) end(s *mSession, reasons []waitroom.Reason, now time.Time) {
	m.change(s, reasons[0].Status())
	s.unit = false // an unsold unit goes back to the room
	s.reasons = reasons
	s.ended = now
	s.endOp = m.op
}

// activate admits s: active, or invited when it is held.
func (m *model) activate(s *mSession, now time.Time) {
	to := waitroom.StatusActive
	if s.contact != "" {
		to = waitroom.StatusInvited
	}
	m.change(s, to)
	s.admitted = now
	s.lastActive = now
	m.letInSession(s)
	s.unit = m.reserve()
	m.admitUnit[s.id] = s.unit
}

// fairness counts the admissions and services of this incarnation of the
// room, and those of a ticket smaller than one of its tier let in before it.
func (m *model) fairness() (admissions, inversions int64) {
	most := map[int]int64{}
	for i, t := range m.letIn {
		if t < 0 {
			continue // moved by an operator: no inversion
		}
		if t < most[m.letTier[i]] {
			inversions++
		}
		most[m.letTier[i]] = max(most[m.letTier[i]], t)
	}
	return int64(len(m.letIn)), inversions
}

// settle holds a draw that is due, expires what is due at now, admits
// while the rules allow, then ends the line if everything is sold.
func (m *model) settle(now time.Time) (expired, admitted int) {
	m.drawIfDue(now)
	for _, s := range m.live() {
		if at, reasons, ok := m.deadline(s); ok && !at.After(now) {
			m.end(s, reasons, now)
			expired++
		}
	}
	for {
		w := m.line()
		if len(w) == 0 || !m.canAdmit() || !m.takeToken(now) {
			return expired + m.endSoldOut(now), admitted
		}
		m.activate(w[0], now)
		admitted++
	}
}

func (m *model) canAdmit() bool {
	_, active := m.counts()
	return m.cfg.Mode == waitroom.ModeAuto && !m.cfg.Paused && active < m.cfg.Capacity &&
		(m.cfg.Inventory == nil || m.remaining() > 0)
}

func (m *model) burst() int64 {
	return max(1, (int64(m.cfg.RatePerMinute)+59)/60)
}

func (m *model) fill(now time.Time) {
	m.units = m.burst() * tokenUnits
	m.unitsAt = now
}

func (m *model) refill(now time.Time) {
	rate := int64(m.cfg.RatePerMinute)
	elapsed := now.Sub(m.unitsAt).Milliseconds()
	full := m.burst() * tokenUnits
	if elapsed > full { // elapsed*rate would be more than full anyway
		m.units = full
	} else {
		m.units = min(full, m.units+elapsed*rate)
	}
	m.unitsAt = now
}

func (m *model) takeToken(now time.Time) bool {
	if m.cfg.RatePerMinute == 0 {
		return true
	}
	m.refill(now)
	if m.units < tokenUnits {
		return false
	}
	m.units -= tokenUnits
	return true
}

// begin starts operation number op.
func (m *model) begin() {
	m.op++
	m.changes = nil
	m.scheduledNow, m.drewRecord = false, nil
	m.unitsOut, m.admitUnit = nil, map[string]bool{}
}

// putRoom creates or reconfigures the room; refused is the code of a
// change the room does not allow (moving the opening of a room whose draw
// took place, an inventory below what is sold and reserved), which then
// changes nothing.
func (m *model) putRoom(cfg waitroom.RoomConfig, now time.Time) (created bool, refused waitroom.Code) {
	now = m.clock(now)
	if !m.exists {
		m.exists = true
		m.cfg = cfg
		m.rev++
		m.sessions, m.entrants, m.sch, m.letIn, m.sold, m.front = nil, nil, nil, nil, 0, 0
		m.letTier, m.vt, m.fin, m.uses = nil, 0, nil, nil
		m.fill(now)
		m.applySchedule(cfg, now)
		m.settle(now)
		return true, ""
	}
	m.settle(now)
	if m.refusesSchedule(cfg) {
		return false, waitroom.CodeDrawDone
	}
	if m.refusesStock(cfg) {
		return false, waitroom.CodeStockConflict
	}
	if m.refusesTiers(cfg) {
		return false, waitroom.CodeRoomNotEmpty
	}
	old := m.cfg
	m.cfg = cfg
	m.rev++
	m.fill(now)
	m.retier(old)
	m.restock(old.Inventory)
	m.applySchedule(cfg, now)
	m.settle(now)
	return false, ""
}

// deleteRoom reports whether the delete is refused for live sessions.
func (m *model) deleteRoom(force bool, now time.Time) (notEmpty bool) {
	now = m.clock(now)
	m.settle(now)
	live := m.liveAll()
	if len(live) > 0 && !force {
		return true
	}
	for _, s := range live {
		m.end(s, []waitroom.Reason{waitroom.ReasonRoomDeleted}, now)
	}
	m.exists = false
	m.sessions, m.entrants, m.sch = nil, nil, nil
	return false
}

// join returns the new session, or the key's live session when the key is
// taken; refused is the code of a join the room refuses (closes_at
// passed, everything sold).
func (m *model) join(req waitroom.JoinRequest, id string, now time.Time) (s *mSession, already bool, refused waitroom.Code) {
	key := req.Key
	if expiredUse(req, now) {
		return nil, false, waitroom.CodeInvalidRequest // checked before anything, at the now given
	}
	now = m.clock(now)
	m.settle(now)
	if m.closed(now) {
		return nil, false, waitroom.CodeRoomClosed
	}
	if m.soldOut() {
		return nil, false, waitroom.CodeSoldOut
	}
	// Uses before the key: a spent token (a forwarded invite link) must not
	// reach the already_joined answer, which carries the key's session.
	if code := m.spendable(req.Uses, now); code != "" {
		return nil, false, code
	}
	if key != "" {
		for _, o := range m.liveAll() {
			if o.key == key {
				return o, true, ""
			}
		}
	}
	if req.Contact != "" && (!m.cfg.HoldPlaces || m.preQueue()) {
		return nil, false, waitroom.CodeInvalidRequest
	}
	tier := m.cfg.TierIndex(req.Tier)
	if tier < 0 {
		return nil, false, waitroom.CodeInvalidRequest
	}
	m.spend(req.Uses, now)
	if m.preQueue() {
		s = m.enter(key, id, now)
		s.tier = tier
		return s, false, ""
	}
	m.lastTicket++
	s = &mSession{id: id, ticket: m.lastTicket, key: key, status: "", joined: now, lastSeen: now, tier: tier, contact: req.Contact}
	m.place(s)
	m.sessions = append(m.sessions, s)
	if len(m.withStatus(waitroom.StatusWaiting)) == 0 && m.canAdmit() && m.takeToken(now) {
		m.activate(s, now)
	} else {
		m.change(s, waitroom.StatusWaiting)
	}
	m.settle(now)
	return s, false, ""
}

// presence is Session (activity false) or Heartbeat (activity true).
func (m *model) presence(s *mSession, activity bool, now time.Time) {
	now = m.clock(now)
	m.settle(now)
	switch {
	case s.ticket == 0: // an entrant needs no presence before the draw
	case s.status == waitroom.StatusWaiting:
		s.lastSeen = now
		s.away = false
	case s.status == waitroom.StatusActive:
		if activity {
			s.lastActive = now
		}
		s.away = false
	}
	m.settle(now)
}

func (m *model) goAway(s *mSession, now time.Time) {
	now = m.clock(now)
	m.settle(now)
	// Away changes nothing for an entrant, a held waiting session or an
	// invited one: none of them needs presence.
	if s.status.Live() && s.ticket != 0 && !m.holdsWithout(s) {
		s.away = true
		s.awayUntil = now.Add(m.cfg.Grace.D())
	}
	m.settle(now)
}

func (m *model) leave(s *mSession, reason waitroom.Reason, now time.Time) {
	now = m.clock(now)
	m.settle(now)
	if s.status.Live() {
		m.end(s, []waitroom.Reason{reason}, now)
	}
	m.settle(now)
}

// advance returns the sessions advanced, or nil when nobody waits.
func (m *model) advance(n int, now time.Time) []*mSession {
	now = m.clock(now)
	m.settle(now)
	w := m.line()
	if len(w) == 0 {
		return nil
	}
	w = w[:min(n, len(w))]
	for _, s := range w {
		if m.cfg.Mode == waitroom.ModeManual {
			m.end(s, []waitroom.Reason{waitroom.ReasonServed}, now)
			m.letInSession(s)
		} else {
			m.activate(s, now)
		}
	}
	m.settle(now)
	return w
}

func (m *model) sweep(now time.Time) (expired, admitted int) {
	return m.settle(m.clock(now))
}

// nextDue is the earliest time after the latest now at which something is
// due: a deadline, or the next token when only the rate holds admission
// back, or the opening of a pending draw. ok is false when nothing is.
func (m *model) nextDue() (next time.Time, ok bool) {
	for _, s := range m.live() {
		if at, _, has := m.deadline(s); has && (!ok || at.Before(next)) {
			next, ok = at, true
		}
	}
	if rate := int64(m.cfg.RatePerMinute); rate > 0 && len(m.withStatus(waitroom.StatusWaiting)) > 0 && m.canAdmit() {
		// The bucket was refilled at the latest now while admitting.
		need := (tokenUnits - m.units + rate - 1) / rate
		t := m.unitsAt.Add(time.Duration(need) * time.Millisecond)
		if !ok || t.Before(next) {
			next, ok = t, true
		}
	}
	return m.scheduleDue(next, ok)
}

// view is the Session a store should report for s now, without ETA.
func (m *model) view(s *mSession) waitroom.Session {
	waiting, active := m.counts()
	v := waitroom.Session{
		ID:         s.id,
		Room:       m.name,
		Status:     s.status,
		Ticket:     s.ticket,
		Key:        s.key,
		Position:   m.position(s),
		Waiting:    waiting,
		Active:     active,
		Capacity:   m.cfg.Capacity,
		JoinedAt:   s.joined,
		AdmittedAt: s.admitted,
		EndedAt:    s.ended,
	}
	if s.status.Final() {
		v.EndReason = s.reasons[0]
	} else {
		v.Place, v.Extended, v.Tier = s.place, s.extra, m.tierName(s)
	}
	m.holdFields(&v, s)
	m.entrantFields(&v, s)
	m.stockFields(&v, s)
	return v
}

// collapse reduces changes to one per session (by id), first from, last to
// and last ticket, so that stores may report an intermediate step or not.
// A change from waiting to waiting is a draw giving an entrant its ticket:
// it stays even when nothing else changed.
func collapse(cs []mChange) map[string]mChange {
	out := map[string]mChange{}
	drawn := map[string]bool{}
	for _, c := range cs {
		if c.near {
			out[c.id+"/near"] = c // kept apart: each session is told once
			continue
		}
		if c.from == waitroom.StatusWaiting && c.to == waitroom.StatusWaiting {
			drawn[c.id] = true
		}
		if prev, ok := out[c.id]; ok {
			c.from = prev.from
		}
		out[c.id] = c
	}
	for id, c := range out {
		if c.from == c.to && !drawn[id] && !c.near {
			delete(out, id)
		}
	}
	return out
}

// String names a change in a failure message.
func (c mChange) String() string {
	id := fmt.Sprintf("%.8s…", c.id)
	if sid, err := waitroom.ParseSessionID(c.id); err == nil && sid.Entry != 0 {
		id = fmt.Sprintf("entry %d", sid.Entry)
	}
	if c.near {
		return fmt.Sprintf("#%d (%s) near", c.ticket, id)
	}
	return fmt.Sprintf("#%d (%s) %s→%s", c.ticket, id, c.from, c.to)
}

// eventChanges lists the changes of events as the model records its own.
func eventChanges(es []waitroom.Event) []mChange {
	var out []mChange
	for _, e := range es {
		for _, c := range e.Changes {
			out = append(out, mChange{c.Session.ID, c.Session.Ticket, c.From, c.Session.Status, c.Near})
		}
	}
	return out
}

func sortedChanges(m map[string]mChange) []mChange {
	keys := slices.Sorted(maps.Keys(m))
	out := make([]mChange, len(keys))
	for i, k := range keys {
		out[i] = m[k]
	}
	return out
}

// sessionDiff describes how got differs from want, ignoring the ETA.
func sessionDiff(got, want waitroom.Session) string {
	got.ETA, want.ETA = nil, nil
	sameTimes := got.JoinedAt.Equal(want.JoinedAt) && got.AdmittedAt.Equal(want.AdmittedAt) && got.EndedAt.Equal(want.EndedAt) &&
		got.OpensAt.Equal(want.OpensAt) && got.ClaimBy.Equal(want.ClaimBy)
	g, w := got, want
	g.JoinedAt, g.AdmittedAt, g.EndedAt, g.OpensAt, g.ClaimBy = time.Time{}, time.Time{}, time.Time{}, time.Time{}, time.Time{}
	w.JoinedAt, w.AdmittedAt, w.EndedAt, w.OpensAt, w.ClaimBy = time.Time{}, time.Time{}, time.Time{}, time.Time{}, time.Time{}
	if sameTimes && g == w {
		return ""
	}
	return fmt.Sprintf("\n got %s\nwant %s", fmtSession(got), fmtSession(want))
}

func fmtSession(s waitroom.Session) string {
	return fmt.Sprintf("{#%d %s pos %d key %q totals w%d a%d c%d joined %s admitted %s ended %s reason %q id %.8s… room %q entry %q opens %s entrants %d stocked %v remaining %d unit %v place %d tier %q extended %s contact %q claim_by %s}",
		s.Ticket, s.Status, s.Position, s.Key, s.Waiting, s.Active, s.Capacity,
		rel(s.JoinedAt), rel(s.AdmittedAt), rel(s.EndedAt), s.EndReason, s.ID, s.Room, s.Entry, rel(s.OpensAt), s.Entrants,
		s.Stocked, s.Remaining, s.Unit, s.Place, s.Tier, s.Extended, s.Contact, rel(s.ClaimBy))
}

// label names s in failure messages.
func (s *mSession) label() string {
	if s.ticket != 0 {
		return fmt.Sprintf("#%d", s.ticket)
	}
	return fmt.Sprintf("entrant %.10s…", s.entry)
}

// allowedReason reports whether r is one of the reasons s may have ended with.
func (s *mSession) allowedReason(r waitroom.Reason) bool {
	return slices.Contains(s.reasons, r)
}
