package storetest

import (
	"slices"
	"time"

	"github.com/waitroom/waitroom"
)

// The model's rules for scheduled rooms: the pre-queue, the draw and
// closes_at. Entrants wait in model.entrants without tickets until the
// draw. The model cannot know the secret seed, so at the draw it reads the
// store's record, checks that it verifies, that its commitment is the one
// published when the room was scheduled and that it lists exactly the
// live entrants, and then gives each entrant the ticket the record gives
// its entry: the model follows the store's order, and checks that the
// order is the committed one.

// mSchedule is the model's view of a scheduled room's draw.
type mSchedule struct {
	opensAt    time.Time // the record's opens_at: configured, or when it was cleared
	commitment string    // read from the store when the room was scheduled
	drawn      bool
	drawnAt    time.Time
	record     waitroom.DrawRecord // the store's record, read at the draw
}

// preQueue reports whether joins enter the pre-queue.
func (m *model) preQueue() bool { return m.sch != nil && !m.sch.drawn }

// liveEntrants lists the entrants waiting for the draw, in entry order.
func (m *model) liveEntrants() []*mSession {
	var out []*mSession
	for _, s := range m.entrants {
		if s.status.Live() {
			out = append(out, s)
		}
	}
	return out
}

// liveAll lists every live session, in line or in the pre-queue.
func (m *model) liveAll() []*mSession {
	return append(m.live(), m.liveEntrants()...)
}

// closed reports whether a join at now is refused by closes_at.
func (m *model) closed(now time.Time) bool {
	return !m.cfg.ClosesAt.IsZero() && !now.Before(m.cfg.ClosesAt)
}

// refusesSchedule reports whether cfg would move the opening of a room
// whose draw took place (CodeDrawDone).
func (m *model) refusesSchedule(cfg waitroom.RoomConfig) bool {
	return m.sch != nil && m.sch.drawn && !cfg.OpensAt.IsZero() && !cfg.OpensAt.Equal(m.sch.opensAt)
}

// applySchedule follows cfg's opens_at: the first one schedules the room
// (the store publishes its commitment), later ones move the opening before
// the draw, and clearing it closes the pre-queue at now. After the draw
// nothing changes.
func (m *model) applySchedule(cfg waitroom.RoomConfig, now time.Time) {
	switch {
	case m.sch == nil && !cfg.OpensAt.IsZero():
		d := m.hooks.readDraw()
		m.sch = &mSchedule{opensAt: cfg.OpensAt, commitment: d.Commitment}
		m.scheduledNow = true
	case m.sch == nil || m.sch.drawn:
	case cfg.OpensAt.IsZero():
		if now.Before(m.sch.opensAt) {
			m.sch.opensAt = now
		}
	default:
		m.sch.opensAt = cfg.OpensAt
	}
}

// entryOf is the public entry of a session: the hash of its key, or of the
// secret its id carries.
func (m *model) entryOf(id, key string) string {
	if key != "" {
		return waitroom.EntryForKey(m.name, key)
	}
	sid, err := waitroom.ParseSessionID(id)
	if err != nil {
		return "" // the comparison with the store's answer reports it
	}
	return waitroom.EntryForSecret(sid.Secret)
}

// enter adds an entrant to the pre-queue.
func (m *model) enter(key, id string, now time.Time) *mSession {
	s := &mSession{id: id, key: key, joined: now, lastSeen: now, entry: m.entryOf(id, key)}
	m.entrants = append(m.entrants, s)
	m.change(s, waitroom.StatusWaiting)
	return s
}

// drawIfDue holds the draw once now reaches the opening. Every live entrant
// gets the ticket the store's record gives its entry and joins the back of
// the line in ticket order, present as of now.
func (m *model) drawIfDue(now time.Time) {
	if !m.preQueue() || now.Before(m.sch.opensAt) {
		return
	}
	t := m.hooks.t
	t.Helper()
	d := m.hooks.readDraw()
	if err := waitroom.VerifyDraw(d); err != nil {
		t.Fatalf("the draw at %s does not verify: %v (record %+v)", rel(now), err, d)
	}
	if d.Commitment != m.sch.commitment {
		t.Fatalf("the draw's commitment is %s, want %s, published when the room was scheduled", d.Commitment, m.sch.commitment)
	}
	if d.Room != m.name || !d.DrawnAt.Equal(now) || !d.OpensAt.Equal(m.sch.opensAt) {
		t.Fatalf("the draw record: room %q, drawn at %s, opens_at %s; want %q, drawn at the first operation at or after the opening (%s), opens_at %s",
			d.Room, rel(d.DrawnAt), rel(d.OpensAt), m.name, rel(now), rel(m.sch.opensAt))
	}
	live := m.liveEntrants()
	var want, got []string
	byEntry := map[string]*mSession{}
	for _, s := range live {
		want = append(want, s.entry)
		byEntry[s.entry] = s
	}
	for _, e := range d.Entries {
		got = append(got, e.Entry)
	}
	slices.Sort(want)
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Fatalf("the draw lists entries %q, want the live entrants' %q", got, want)
	}
	if len(d.Entries) > 0 && d.FirstTicket != m.lastTicket+1 {
		t.Fatalf("the draw's first ticket is %d, want %d, the next after the last issued", d.FirstTicket, m.lastTicket+1)
	}
	m.sch.drawn, m.sch.drawnAt, m.sch.record = true, now, d
	m.drewRecord = &d
	for _, e := range d.Entries {
		s := byEntry[e.Entry]
		s.ticket = e.Ticket
		s.lastSeen, s.away = now, false
		m.lastTicket = e.Ticket
		m.place(s)
		m.sessions = append(m.sessions, s)
		m.change(s, waitroom.StatusWaiting)
	}
	m.entrants = slices.DeleteFunc(m.entrants, func(s *mSession) bool { return s.ticket != 0 })
}

// entrantFields sets what the view of an entrant in the pre-queue adds.
func (m *model) entrantFields(v *waitroom.Session, s *mSession) {
	v.Entry = s.entry
	if s.ticket == 0 && s.status.Live() {
		v.OpensAt = m.sch.opensAt
		v.Entrants = len(m.liveEntrants())
	}
}

// scheduleDue adds the opening to nextDue while the draw is pending.
func (m *model) scheduleDue(next time.Time, ok bool) (time.Time, bool) {
	if m.preQueue() && (!ok || m.sch.opensAt.Before(next)) {
		return m.sch.opensAt, true
	}
	return next, ok
}

// recordOf is the published record of a draw state that an event carried.
func recordOf(room string, st *waitroom.DrawState) waitroom.DrawRecord {
	d := waitroom.DrawRecord{Room: room, OpensAt: st.OpensAt, Commitment: st.Seed.Commitment(), Drawn: st.Drawn}
	if st.Drawn {
		d.DrawnAt, d.Entrants, d.Seed = st.DrawnAt, len(st.Entries), st.Seed.String()
		d.FirstTicket, d.Entries, d.Digest = st.FirstTicket, st.Entries, st.Digest
	}
	return d
}
