package storetest

import (
	"cmp"
	"slices"
	"time"

	"github.com/waitroom/waitroom"
)

// The model's rules for holding places (RoomConfig.HoldPlaces) and for
// telling sessions they are near (NotifyAt). A held session (one with a
// contact) has no deadline while it waits and ignores Away; its admission
// makes it invited, which holds a slot (and a unit) like an active session
// and is due ClaimWindow after its invitation (ReasonUnclaimed); a claim
// makes it active. After every operation each waiting session at a
// position of at most NotifyAt that was never told is told (a near
// change), in line order.

// holders lists the sessions that hold a slot, active or invited, by
// ticket.
func (m *model) holders() []*mSession {
	var out []*mSession
	for _, s := range m.sessions {
		if s.status == waitroom.StatusActive || s.status == waitroom.StatusInvited {
			out = append(out, s)
		}
	}
	slices.SortFunc(out, func(a, b *mSession) int { return cmp.Compare(a.ticket, b.ticket) })
	return out
}

// holdsWithout reports whether s keeps its place without presence: held
// and waiting, or invited.
func (m *model) holdsWithout(s *mSession) bool {
	return s.status == waitroom.StatusInvited || (s.status == waitroom.StatusWaiting && s.contact != "")
}

// claim makes invited s active, or says why it cannot.
func (m *model) claim(s *mSession, now time.Time) waitroom.Code {
	now = m.clock(now)
	m.settle(now)
	switch s.status {
	case waitroom.StatusActive:
		return ""
	case waitroom.StatusInvited:
	default:
		return waitroom.CodeNotInvited
	}
	m.change(s, waitroom.StatusActive)
	s.admitted = now
	s.lastActive = now
	s.away = false
	m.settle(now)
	return ""
}

// tellNear tells every waiting session at a position of at most NotifyAt
// that was never told, in line order. It runs after each operation.
func (m *model) tellNear() {
	if !m.exists || m.cfg.NotifyAt <= 0 {
		return
	}
	line := m.line()
	for _, s := range line[:min(len(line), m.cfg.NotifyAt)] {
		if !s.near {
			s.near = true
			m.changes = append(m.changes, mChange{s.id, s.ticket, waitroom.StatusWaiting, waitroom.StatusWaiting, true})
		}
	}
}

// holdFields sets what a view of s adds for holding places.
func (m *model) holdFields(v *waitroom.Session, s *mSession) {
	if s.status.Final() {
		return
	}
	v.Contact = s.contact
	if s.status == waitroom.StatusInvited {
		v.ClaimBy = s.admitted.Add(m.cfg.HeldWindow())
	}
}
