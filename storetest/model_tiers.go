package storetest

import (
	"time"

	"github.com/waitroom/waitroom"
)

// The model's rules for tiers and token uses. A session's place in a
// tiered room comes from its tier when it gets a ticket (at its join, or at
// the draw); the line is ordered by place where set, by ticket otherwise.
// Token uses are counted per kind and ID until they expire.

// mUse is the count of one token's uses.
type mUse struct {
	n       int
	expires time.Time
}

func useKey(u waitroom.TokenUse) string { return string(u.Kind) + ":" + u.ID }

// lineKey is what the line is ordered by.
func lineKey(s *mSession) int64 {
	if s.place != 0 {
		return s.place
	}
	return s.ticket
}

// tierName is the name of s's tier, "" in a room without tiers.
func (m *model) tierName(s *mSession) string {
	if len(m.cfg.Tiers) == 0 || s.tier >= len(m.cfg.Tiers) {
		return ""
	}
	return m.cfg.Tiers[s.tier].Name
}

// place gives s, which just got its ticket, its tiered place.
func (m *model) place(s *mSession) {
	switch {
	case len(m.cfg.Tiers) == 0:
	case m.cfg.TierPolicy == waitroom.TierWeighted:
		steps := m.cfg.TierSteps()
		for len(m.fin) < len(steps) {
			m.fin = append(m.fin, 0)
		}
		tag := max(m.vt, m.fin[s.tier]) + steps[s.tier]
		m.fin[s.tier] = tag
		s.place = waitroom.WeightedPlace(s.tier, tag)
	default:
		s.place = waitroom.StrictPlace(s.tier, s.ticket)
	}
}

// letInSession records the admission (or service) of s for fairness and
// moves the weighted virtual time on.
func (m *model) letInSession(s *mSession) {
	m.letIn = append(m.letIn, letInTicket(s))
	m.letTier = append(m.letTier, s.tier)
	if s.place > 0 && m.cfg.TierPolicy == waitroom.TierWeighted {
		m.vt = max(m.vt, waitroom.PlaceTag(s.place))
	}
}

// refusesTiers reports whether cfg changes the tiers of a room with live
// sessions (CodeRoomNotEmpty).
func (m *model) refusesTiers(cfg waitroom.RoomConfig) bool {
	return !waitroom.TiersEqual(m.cfg, cfg) && len(m.liveAll()) > 0
}

// retier follows a change of tiers: every tier's last tag starts again.
func (m *model) retier(old waitroom.RoomConfig) {
	if !waitroom.TiersEqual(old, m.cfg) {
		m.fin = nil
	}
}

// spendable reports the code of the first use in uses that has none left
// at now, or "".
func (m *model) spendable(uses []waitroom.TokenUse, now time.Time) waitroom.Code {
	for _, u := range uses {
		c := m.uses[useKey(u)]
		n := 0
		if c != nil && c.expires.After(now) {
			n = c.n
		}
		if n+1 > u.Max {
			return waitroom.UsedError(u).Code
		}
	}
	return ""
}

// spend counts one use of each token.
func (m *model) spend(uses []waitroom.TokenUse, now time.Time) {
	if m.uses == nil {
		m.uses = map[string]*mUse{}
	}
	for _, u := range uses {
		c := m.uses[useKey(u)]
		if c == nil || !c.expires.After(now) {
			c = &mUse{}
			m.uses[useKey(u)] = c
		}
		c.n++
		if exp := u.Expires.Truncate(time.Millisecond); exp.After(c.expires) {
			c.expires = exp // stores keep it to the millisecond
		}
	}
}
