package storetest

import (
	"slices"
	"time"

	"github.com/waitroom/waitroom"
	"pgregory.net/rapid"
)

// The model run's side of scheduled rooms: configurations with opens_at and
// closes_at, the store's draw record, and the draw state events carry.

var (
	// modelOpens are the openings a configuration gets, from the run's clock:
	// sometimes past (the draw happens at once), mostly a little ahead.
	modelOpens = []time.Duration{-time.Minute, 0, sec, 10 * sec, 30 * sec, time.Minute, 2 * time.Minute, 2 * time.Minute}
	// modelCloses are closes_at after opens_at (or, alone, after the clock).
	modelCloses = []time.Duration{sec, 30 * sec, 2 * time.Minute, 5 * time.Minute}
)

// withSchedule gives cfg an opens_at and a closes_at, sometimes. A room
// never scheduled is scheduled one time in three; a scheduled one keeps
// its opening, moves it (refused with CodeDrawDone after the draw) or
// clears it (which, before the draw, draws at once).
func (h *modelRun) withSchedule(t *rapid.T, cfg waitroom.RoomConfig) waitroom.RoomConfig {
	var sch *mSchedule
	if h.m.exists {
		sch = h.m.sch
	}
	fresh := func() time.Time { return h.clock.Add(rapid.SampledFrom(modelOpens).Draw(t, "opens_in")) }
	if sch == nil {
		if rapid.IntRange(0, 2).Draw(t, "scheduled") == 0 {
			cfg.OpensAt = fresh()
		}
	} else {
		switch rapid.IntRange(0, 3).Draw(t, "opens_change") {
		case 0: // clear
		case 1:
			cfg.OpensAt = fresh()
		default:
			cfg.OpensAt = sch.opensAt
		}
	}
	switch {
	case !cfg.OpensAt.IsZero():
		if rapid.IntRange(0, 1).Draw(t, "closes") == 0 {
			cfg.ClosesAt = cfg.OpensAt.Add(rapid.SampledFrom(modelCloses).Draw(t, "closes_after"))
		}
	case rapid.IntRange(0, 7).Draw(t, "closes") == 0:
		cfg.ClosesAt = h.clock.Add(rapid.SampledFrom(append([]time.Duration{-sec}, modelCloses...)).Draw(t, "closes_in"))
	}
	return cfg
}

// readDraw is the store's draw record for the model. When a forced delete
// held a due draw and then deleted the room, the record is gone with the
// room: the draw's event carries it.
func (h *modelRun) readDraw(t *rapid.T) waitroom.DrawRecord {
	t.Helper()
	d, err := h.s.Draw(h.ctx, h.m.name)
	if err == nil {
		return d
	}
	if waitroom.ErrorCode(err) == waitroom.CodeRoomNotFound {
		h.mu.Lock()
		defer h.mu.Unlock()
		for i := len(h.events) - 1; i >= 0; i-- {
			if e := h.events[i]; e.Draw != nil && e.Draw.Drawn && !e.Remote {
				return recordOf(h.m.name, e.Draw)
			}
		}
	}
	t.Fatalf("Draw error = %v (the model holds a draw now)", err)
	return d
}

// checkDraw compares the store's draw record with the model.
func (h *modelRun) checkDraw(t *rapid.T) {
	t.Helper()
	m := h.m
	d, err := h.s.Draw(h.ctx, m.name)
	if m.sch == nil {
		wantCode(t, "Draw of a room never scheduled", err, waitroom.CodeNotFound)
		return
	}
	if err != nil {
		t.Fatalf("Draw error = %v", err)
	}
	sch := m.sch
	if d.Room != m.name || d.Commitment != sch.commitment || !d.OpensAt.Equal(sch.opensAt) || d.Drawn != sch.drawn {
		t.Fatalf("Draw = room %q commitment %s opens_at %s drawn %v; want %q, %s, %s, %v",
			d.Room, d.Commitment, rel(d.OpensAt), d.Drawn, m.name, sch.commitment, rel(sch.opensAt), sch.drawn)
	}
	if !sch.drawn {
		if n := len(m.liveEntrants()); d.Entrants != n || d.Seed != "" || len(d.Entries) != 0 || d.Digest != "" {
			t.Fatalf("Draw before the draw = %+v; want %d entrants, the commitment and nothing else", d, n)
		}
		return
	}
	r := sch.record
	if !d.DrawnAt.Equal(sch.drawnAt) || d.Seed != r.Seed || d.Digest != r.Digest || d.Entrants != r.Entrants || !slices.Equal(d.Entries, r.Entries) {
		t.Fatalf("Draw = %+v; want the record of the draw, unchanged: %+v", d, r)
	}
}

// checkDrawEvents checks the draw state the operation's events carry: the
// event that scheduled the room carries its seed, the event of the draw
// carries the draw, and every seed is one the store committed to. A new
// schedule (of a room created again) has a new commitment.
func (h *modelRun) checkDrawEvents(t *rapid.T, events []waitroom.Event) {
	t.Helper()
	m := h.m
	var local bool
	var states []*waitroom.DrawState
	for _, e := range events {
		if !e.Remote { // a shared store publishes no seed
			local = true
			if e.Draw != nil {
				states = append(states, e.Draw)
			}
		}
	}
	if m.scheduledNow {
		if h.commitments[m.sch.commitment] {
			t.Fatalf("the room was scheduled with commitment %s, which an earlier schedule had", m.sch.commitment)
		}
		h.commitments[m.sch.commitment] = true
		if local && !slices.ContainsFunc(states, func(s *waitroom.DrawState) bool { return s.Seed.Commitment() == m.sch.commitment }) {
			t.Fatalf("the events of the operation that scheduled the room carry no draw state with its seed (commitment %s)", m.sch.commitment)
		}
	}
	drew := m.drewRecord
	if drew == nil && m.sch != nil && m.sch.drawn {
		drew = &m.sch.record
	}
	if m.drewRecord != nil && len(events) == 0 {
		t.Fatalf("the operation held the draw, but it sent no event")
	}
	if m.drewRecord != nil && local && !slices.ContainsFunc(states, func(s *waitroom.DrawState) bool { return s.Drawn }) {
		t.Fatalf("the events of the draw carry no drawn state")
	}
	for _, s := range states {
		if c := s.Seed.Commitment(); !h.commitments[c] || (m.sch != nil && c != m.sch.commitment) {
			t.Fatalf("an event carries a seed with commitment %s, not the room's", c)
		}
		if s.Drawn && (drew == nil || s.Seed.String() != drew.Seed || s.Digest != drew.Digest || !s.DrawnAt.Equal(drew.DrawnAt) ||
			!slices.Equal(s.Entries, drew.Entries) || len(s.EntryNumbers) != len(s.Entries)) {
			t.Fatalf("an event carries the draw %+v, want the record %+v", recordOf(m.name, s), drew)
		}
	}
}
