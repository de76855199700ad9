package storetest

import (
	"slices"
	"time"

	"github.com/waitroom/waitroom"
)

// model is the reference the model-based test compares a store with: one
// room, written to be obviously correct rather than fast. Every session is
// kept in a slice in ticket order and every rule is a loop over it.
type model struct {
	name   string
	exists bool
	cfg    waitroom.RoomConfig
	latest time.Time // the latest now the room has seen

	lastTicket int64
	sessions   []*mSession // this incarnation of the room, by ticket; ended ones stay (the history)

	// The token bucket in exact units: one token is 60,000 units and each
	// millisecond adds rate_per_minute units (R/60 tokens a second).
	units   int64
	unitsAt time.Time

	op      int       // the number of the current operation
	changes []mChange // status changes of the current operation
}

// mSession is one session of the model.
type mSession struct {
	id     string
	ticket int64
	key    string
	status waitroom.Status

	joined, admitted, ended time.Time
	lastSeen, lastActive    time.Time
	away                    bool
	awayUntil               time.Time

	reasons []waitroom.Reason // why it ended: more than one when deadlines tie
	endOp   int               // the operation that ended it
}

// mChange is one status change the model made.
type mChange struct {
	ticket   int64
	from, to waitroom.Status
}

const tokenUnits = 60_000

func newModel(name string) *model { return &model{name: name} }

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

func (m *model) counts() (waiting, active int) {
	return len(m.withStatus(waitroom.StatusWaiting)), len(m.withStatus(waitroom.StatusActive))
}

// position is the 1-based rank of s among waiting sessions, 0 if not waiting.
func (m *model) position(s *mSession) int64 {
	if s.status != waitroom.StatusWaiting {
		return 0
	}
	var n int64
	for _, o := range m.sessions {
		if o.status == waitroom.StatusWaiting && o.ticket <= s.ticket {
			n++
		}
	}
	return n
}

func (m *model) find(id string) *mSession {
	for _, s := range m.sessions {
		if s.id == id {
			return s
		}
	}
	return nil
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
	switch s.status {
	case waitroom.StatusWaiting:
		if m.cfg.WaitingTimeout > 0 {
			consider(s.lastSeen.Add(m.cfg.WaitingTimeout.D()), waitroom.ReasonNoPresence)
		}
	case waitroom.StatusActive:
		if m.cfg.ActiveTimeout > 0 {
			consider(s.lastActive.Add(m.cfg.ActiveTimeout.D()), waitroom.ReasonIdle)
		}
		if m.cfg.MaxSession > 0 {
			consider(s.admitted.Add(m.cfg.MaxSession.D()), waitroom.ReasonMaxSession)
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
	m.changes = append(m.changes, mChange{s.ticket, s.status, to})
	s.status = to
}

func (m *model) end(s *mSession, reasons []waitroom.Reason, now time.Time) {
	m.change(s, reasons[0].Status())
	s.reasons = reasons
	s.ended = now
	s.endOp = m.op
}

func (m *model) activate(s *mSession, now time.Time) {
	m.change(s, waitroom.StatusActive)
	s.admitted = now
	s.lastActive = now
}

// settle expires what is due at now, then admits while the rules allow.
func (m *model) settle(now time.Time) (expired, admitted int) {
	for _, s := range m.live() {
		if at, reasons, ok := m.deadline(s); ok && !at.After(now) {
			m.end(s, reasons, now)
			expired++
		}
	}
	for {
		w := m.withStatus(waitroom.StatusWaiting)
		if len(w) == 0 || !m.canAdmit() || !m.takeToken(now) {
			return expired, admitted
		}
		m.activate(w[0], now)
		admitted++
	}
}

func (m *model) canAdmit() bool {
	_, active := m.counts()
	return m.cfg.Mode == waitroom.ModeAuto && !m.cfg.Paused && active < m.cfg.Capacity
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
}

// putRoom creates or reconfigures the room.
func (m *model) putRoom(cfg waitroom.RoomConfig, now time.Time) (created bool) {
	now = m.clock(now)
	if !m.exists {
		m.exists = true
		m.cfg = cfg
		m.sessions = nil
		m.fill(now)
		return true
	}
	m.settle(now)
	m.cfg = cfg
	m.fill(now)
	m.settle(now)
	return false
}

// deleteRoom reports whether the delete is refused for live sessions.
func (m *model) deleteRoom(force bool, now time.Time) (notEmpty bool) {
	now = m.clock(now)
	m.settle(now)
	live := m.live()
	if len(live) > 0 && !force {
		return true
	}
	for _, s := range live {
		m.end(s, []waitroom.Reason{waitroom.ReasonRoomDeleted}, now)
	}
	m.exists = false
	m.sessions = nil
	return false
}

// join returns the new session, or the key's live session when the key is taken.
func (m *model) join(key, id string, now time.Time) (s *mSession, already bool) {
	now = m.clock(now)
	m.settle(now)
	if key != "" {
		for _, o := range m.live() {
			if o.key == key {
				return o, true
			}
		}
	}
	m.lastTicket++
	s = &mSession{id: id, ticket: m.lastTicket, key: key, status: "", joined: now, lastSeen: now}
	m.sessions = append(m.sessions, s)
	if len(m.withStatus(waitroom.StatusWaiting)) == 0 && m.canAdmit() && m.takeToken(now) {
		m.activate(s, now)
	} else {
		m.change(s, waitroom.StatusWaiting)
	}
	m.settle(now)
	return s, false
}

// presence is Session (activity false) or Heartbeat (activity true).
func (m *model) presence(s *mSession, activity bool, now time.Time) {
	now = m.clock(now)
	m.settle(now)
	switch s.status {
	case waitroom.StatusWaiting:
		s.lastSeen = now
		s.away = false
	case waitroom.StatusActive:
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
	if s.status.Live() {
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
	w := m.withStatus(waitroom.StatusWaiting)
	if len(w) == 0 {
		return nil
	}
	w = w[:min(n, len(w))]
	for _, s := range w {
		if m.cfg.Mode == waitroom.ModeManual {
			m.end(s, []waitroom.Reason{waitroom.ReasonServed}, now)
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
// back. ok is false when nothing is.
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
	return next, ok
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
	}
	return v
}

// collapse reduces changes to one per ticket, first from and last to, so
// that stores may report an intermediate step or not.
func collapse(cs []changeKey) map[int64]changeKey {
	out := map[int64]changeKey{}
	for _, c := range cs {
		if prev, ok := out[c.ticket]; ok {
			c.from = prev.from
		}
		out[c.ticket] = c
	}
	for t, c := range out {
		if c.from == c.to {
			delete(out, t)
		}
	}
	return out
}

func (m *model) changeKeys() []changeKey {
	out := make([]changeKey, len(m.changes))
	for i, c := range m.changes {
		out[i] = changeKey{c.ticket, c.from, c.to}
	}
	return out
}

// allowedReason reports whether r is one of the reasons s may have ended with.
func (s *mSession) allowedReason(r waitroom.Reason) bool {
	return slices.Contains(s.reasons, r)
}
