package storetest

import (
	"slices"
	"time"

	"github.com/waitroom/waitroom"
	"pgregory.net/rapid"
)

// The operator's moves in the model run: QueueAll, Front, Extend, Lookup.

func (h *modelRun) queueAll(t *rapid.T) {
	now := h.when(t)
	h.begin(t, "QueueAll")
	room, got, err := h.s.QueueAll(h.ctx, h.m.name, now)
	if !h.m.exists {
		h.noRoom(t, "QueueAll", err)
		return
	}
	if err != nil {
		t.Fatalf("QueueAll error = %v", err)
	}
	want := h.m.queueAll(now)
	if len(got) != len(want) {
		t.Fatalf("QueueAll moved %s, want %d sessions", describe(got), len(want))
	}
	for i := range got {
		h.compare(t, "QueueAll result", got[i], want[i])
	}
	if !room.Paused {
		t.Fatalf("QueueAll answered a room that is not paused")
	}
	if room.Revision != h.m.rev {
		t.Fatalf("QueueAll answered revision %d, want %d", room.Revision, h.m.rev)
	}
	h.checkEvents(t, waitroom.EventConfig)
}

func (h *modelRun) front(t *rapid.T) {
	id := h.pick(t)
	now := h.when(t)
	s, code := h.session(id)
	h.begin(t, "Front %s", h.label(id))
	got, err := h.s.Front(h.ctx, h.m.name, id, now)
	if code == "" {
		code = h.m.toFront(s, now)
	}
	if h.refused(t, "Front", err, code, now) {
		return
	}
	h.compare(t, "Front", got, s)
	h.checkEvents(t, waitroom.EventSessions)
}

func (h *modelRun) extend(t *rapid.T) {
	id := h.pick(t)
	by := rapid.SampledFrom(modelSteps).Draw(t, "by")
	now := h.when(t)
	s, code := h.session(id)
	h.begin(t, "Extend %s by %s", h.label(id), by)
	got, err := h.s.Extend(h.ctx, h.m.name, id, by, now)
	if code == "" {
		code = h.m.extend(s, by, now)
	}
	if h.refused(t, "Extend", err, code, now) {
		return
	}
	h.compare(t, "Extend", got, s)
	h.checkEvents(t, waitroom.EventSessions)
}

// lookup finds a session by ticket or by key; it changes nothing.
func (h *modelRun) lookup(t *rapid.T) {
	h.begin(t, "Lookup")
	byKey := rapid.Bool().Draw(t, "by key")
	var ticket int64
	key := ""
	if byKey {
		key = rapid.SampledFrom(modelKeys[3:]).Draw(t, "key")
	} else {
		ticket = rapid.Int64Range(1, h.m.lastTicket+1).Draw(t, "ticket")
	}
	got, err := h.s.Lookup(h.ctx, h.m.name, ticket, key)
	if !h.m.exists {
		h.noRoom(t, "Lookup", err)
		return
	}
	want := h.m.lookup(ticket, key)
	if want == nil {
		wantCode(t, "Lookup of nobody", err, waitroom.CodeSessionNotFound)
		return
	}
	if err != nil {
		t.Fatalf("Lookup(%d, %q) error = %v, want %s", ticket, key, err, want.label())
	}
	h.compare(t, "Lookup", got, want)
}

// queueAll pauses the room and sends the active sessions to the front.
func (m *model) queueAll(now time.Time) []*mSession {
	now = m.clock(now)
	m.settle(now)
	m.cfg.Paused = true
	m.rev++
	moved := m.holders() // by ticket: active and invited
	k := int64(len(moved))
	for i, s := range moved {
		m.change(s, waitroom.StatusWaiting)
		s.near = true // it had its turn: not told it is near again
		s.place = m.front - k + int64(i)
		s.admitted = time.Time{}
		s.lastSeen = now
		s.unit = false
	}
	m.front -= k
	m.settle(now)
	return moved
}

// toFront moves s to the front of the line, or says why it cannot.
func (m *model) toFront(s *mSession, now time.Time) waitroom.Code {
	now = m.clock(now)
	m.settle(now)
	if s.status != waitroom.StatusWaiting || s.ticket == 0 {
		return waitroom.CodeInvalidRequest
	}
	m.front--
	s.place = m.front
	s.lastSeen = now
	m.changes = append(m.changes, mChange{s.id, s.ticket, s.status, s.status, false})
	m.settle(now)
	return ""
}

// extend lets active session s stay by longer, or says why it cannot.
func (m *model) extend(s *mSession, by time.Duration, now time.Time) waitroom.Code {
	now = m.clock(now)
	m.settle(now)
	if s.status != waitroom.StatusActive {
		return waitroom.CodeInvalidRequest
	}
	s.extra += by
	s.lastActive = now
	s.away = false
	m.changes = append(m.changes, mChange{s.id, s.ticket, s.status, s.status, false})
	m.settle(now)
	return ""
}

// lookup returns the session Lookup should find, or nil.
func (m *model) lookup(ticket int64, key string) *mSession {
	if ticket > 0 {
		for _, s := range m.sessions {
			if s.ticket == ticket {
				return s
			}
		}
		return nil
	}
	live := slices.Concat(m.live(), m.liveEntrants())
	i := slices.IndexFunc(live, func(s *mSession) bool { return s.key == key })
	if i < 0 {
		return nil
	}
	return live[i]
}

// letInTicket is how fairness records s's admission: its ticket, negated
// for a session an operator moved.
func letInTicket(s *mSession) int64 {
	if s.place < 0 {
		return -s.ticket
	}
	return s.ticket
}
