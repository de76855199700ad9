package engine

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/waitroom/waitroom"
)

// schedule is a scheduled room's pre-queue and draw. Before the draw,
// entrants wait in pre without tickets, named by their entry numbers; the
// draw gives each live entrant a ticket in the order of its draw value and
// moves it to the waiting line. The room keeps the mapping both ways so
// that an entrant's id, which carries its entry number, keeps working.
type schedule struct {
	seed    waitroom.DrawSeed
	opensAt int64 // when the pre-queue closes: the configured opens_at, or the time it was cleared
	drawn   bool
	drawnAt int64

	// Before the draw: entrant n is pre[n-1], status stWaiting while live
	// and stNone once it ended. preKey and keys hold the keyed ones.
	pre       []rec
	preKey    map[int64]string
	keys      map[string]int64
	nPre      int
	lastEntry int64

	// After the draw.
	first int64
	// The drawn tickets are first, first+1, …: ticket t is entries[t-first]
	// with entry number numbers[t-first].
	ticketOf map[int64]int64 // entry number → ticket
	entries  []waitroom.DrawEntry
	numbers  []int64
	digest   string
}

func newSchedule(seed waitroom.DrawSeed, opensAt int64) *schedule {
	return &schedule{
		seed:     seed,
		opensAt:  opensAt,
		preKey:   make(map[int64]string),
		keys:     make(map[string]int64),
		ticketOf: make(map[int64]int64),
	}
}

// state returns the draw as durable stores keep it.
func (s *schedule) state() *waitroom.DrawState {
	return &waitroom.DrawState{
		Seed: s.seed, OpensAt: tm(s.opensAt), Drawn: s.drawn, DrawnAt: tm(s.drawnAt),
		FirstTicket: s.first, Entries: s.entries, EntryNumbers: s.numbers, Digest: s.digest,
	}
}

// checkSchedule refuses a configuration that would move the opening of a
// room whose draw took place.
func (r *room) checkSchedule(cfg waitroom.RoomConfig) error {
	if r.sch == nil || !r.sch.drawn || cfg.OpensAt.IsZero() || ms(cfg.OpensAt) == r.sch.opensAt {
		return nil
	}
	return waitroom.Errorf(waitroom.CodeDrawDone, "Room %q held its draw at %s; its opens_at cannot move now. Keep opens_at at %s, remove it, or create a new room for a new drop.",
		r.name, tm(r.sch.drawnAt).Format(time.RFC3339), tm(r.sch.opensAt).Format(time.RFC3339))
}

// applySchedule follows cfg's opens_at: a room that gets one for the first
// time gets its secret seed; before the draw the opening may move, and
// clearing it closes the pre-queue at now. The draw itself happens in
// settle.
func (r *room) applySchedule(cfg waitroom.RoomConfig, now int64) {
	switch {
	case r.sch == nil && !cfg.OpensAt.IsZero():
		r.sch = newSchedule(waitroom.NewDrawSeed(), ms(cfg.OpensAt))
	case r.sch == nil || r.sch.drawn:
		return
	case cfg.OpensAt.IsZero():
		r.sch.opensAt = min(r.sch.opensAt, now)
	default:
		r.sch.opensAt = ms(cfg.OpensAt)
	}
	if r.ev != nil {
		r.ev.Draw = r.sch.state()
	}
}

// preQueue reports whether joins enter the pre-queue.
func (r *room) preQueue() bool { return r.sch != nil && !r.sch.drawn }

// closing reports whether the room's closes_at has passed (as of the
// room's clock) and no event told it yet.
func (r *room) closing() bool {
	c := r.cfg.ClosesAt
	return !c.IsZero() && atomic.LoadInt64(&r.lastNow) >= ms(c) && r.closedTold != ms(c)
}

// ClosedTold sets which closes_at of room name an event already told (for
// a durable store restoring its state).
func (s *Store) ClosedTold(name string, closesAt int64) {
	if r, err := s.get(name); err == nil {
		r.closedTold = closesAt
		r.mu.Unlock()
	}
}

// closedError is the error of a join at or after closes_at.
func (r *room) closedError(now int64) error {
	if r.cfg.ClosesAt.IsZero() || now < ms(r.cfg.ClosesAt) {
		return nil
	}
	return waitroom.Errorf(waitroom.CodeRoomClosed, "Room %q closed to new arrivals at %s.", r.name, r.cfg.ClosesAt.UTC().Format(time.RFC3339))
}

// enter adds an entrant to the pre-queue.
func (r *room) enter(key string, tier int, now int64) waitroom.Session {
	s := r.sch
	s.lastEntry++
	n := s.lastEntry
	id := waitroom.NewEntryID(n)
	for int64(len(s.pre)) < n-1 {
		s.pre = append(s.pre, rec{}) // entry numbers of a restored pre-queue that left
	}
	s.pre = append(s.pre, rec{secret: id.Secret, joined: now, touch: now, status: stWaiting, hasKey: key != "", tier: uint8(tier)})
	if key != "" {
		s.keys[key] = n
		s.preKey[n] = key
	}
	s.nPre++
	out := r.entrantView(id.String(), n, &s.pre[n-1])
	if r.ev != nil {
		r.ev.Changes = append(r.ev.Changes, waitroom.Change{Session: out, From: ""})
	}
	return out
}

// entrant returns live entrant n before the draw, or nil.
func (r *room) entrant(n int64) *rec {
	if !r.preQueue() || n < 1 || n > int64(len(r.sch.pre)) {
		return nil
	}
	if p := &r.sch.pre[n-1]; p.status == stWaiting {
		return p
	}
	return nil
}

// entryName is the public entry of entrant n, whose record is p.
func (r *room) entryName(p *rec, key string) string {
	return waitroom.EntryFor(r.name, key, p.secret)
}

// entrantView builds the Session of live entrant n.
func (r *room) entrantView(id string, n int64, p *rec) waitroom.Session {
	key := r.sch.preKey[n]
	s := waitroom.Session{
		ID:       id,
		Room:     r.name,
		Status:   waitroom.StatusWaiting,
		Key:      key,
		JoinedAt: tm(p.joined),
		OpensAt:  tm(r.sch.opensAt),
		Entrants: r.sch.nPre,
		Entry:    r.entryName(p, key),
		Tier:     r.tierName(p),
	}
	r.totals(&s)
	return s
}

// endEntrant ends entrant n before the draw.
func (r *room) endEntrant(n int64, p *rec, why waitroom.Reason, now int64) waitroom.Session {
	key := r.sch.preKey[n]
	out := waitroom.Session{
		ID:        waitroom.SessionID{Entry: n, Secret: p.secret}.String(),
		Room:      r.name,
		Status:    why.Status(),
		Key:       key,
		JoinedAt:  tm(p.joined),
		EndedAt:   tm(now),
		EndReason: why,
		Entry:     r.entryName(p, key),
	}
	*p = rec{}
	if key != "" {
		delete(r.sch.keys, key)
		delete(r.sch.preKey, n)
	}
	r.sch.nPre--
	if r.hist != nil {
		r.hist.add(out)
	}
	if r.ev != nil {
		r.ev.Changes = append(r.ev.Changes, waitroom.Change{Session: out, From: waitroom.StatusWaiting})
	}
	r.totals(&out)
	return out
}

// drawIfDue holds the draw once now reaches the opening: every live
// entrant, in the order of its draw value, gets the next ticket and joins
// the back of the line, present as of now. It runs once per room.
func (r *room) drawIfDue(now int64) {
	s := r.sch
	if s == nil || s.drawn || now < s.opensAt {
		return
	}
	names := make([]string, 0, s.nPre)
	byName := make(map[string]int64, s.nPre)
	for i := range s.pre {
		if p := &s.pre[i]; p.status == stWaiting {
			n := int64(i + 1)
			name := r.entryName(p, s.preKey[n])
			names = append(names, name)
			byName[name] = n
		}
	}
	s.entries = waitroom.DrawOrder(s.seed, names, r.lastTicket+1)
	s.numbers = make([]int64, len(s.entries))
	s.first = r.lastTicket + 1
	s.drawn, s.drawnAt = true, now // before the loop: views of drawn tickets name their entries
	for i, e := range s.entries {
		n := byName[e.Entry]
		s.numbers[i] = n
		p := s.pre[n-1]
		key := s.preKey[n]
		r.lastTicket++
		t := r.lastTicket
		s.ticketOf[n] = t
		var place int64
		if r.tiered() {
			place = r.placeFor(int(p.tier), t)
		}
		q := r.enqueue(t, rec{secret: p.secret, joined: p.joined, touch: now, status: stWaiting, place: place, tier: p.tier})
		r.addKey(t, q, key)
		r.schedule(t, q)
		r.record(t, q, waitroom.StatusWaiting)
	}
	s.digest = waitroom.DrawDigest(s.entries)
	s.pre, s.preKey, s.keys, s.nPre = nil, nil, nil, 0
	if r.ev != nil {
		r.ev.Draw = s.state()
		r.ev.DrawDone = true
	}
}

// resolve maps an entry id of a drawn session to its ticket.
func (r *room) resolve(sid *waitroom.SessionID) {
	if sid.Entry != 0 && r.sch != nil && r.sch.drawn {
		sid.Ticket = r.sch.ticketOf[sid.Entry]
	}
}

// drawnEntry returns the entry number and public entry of drawn ticket t;
// 0 and "" for a ticket the draw did not give.
func (r *room) drawnEntry(t int64) (int64, string) {
	if r.sch == nil || !r.sch.drawn {
		return 0, ""
	}
	i := t - r.sch.first
	if i < 0 || i >= int64(len(r.sch.numbers)) {
		return 0, ""
	}
	return r.sch.numbers[i], r.sch.entries[i].Entry
}

// drawRecord is the room's published draw.
func (r *room) drawRecord() (waitroom.DrawRecord, error) {
	s := r.sch
	if s == nil {
		return waitroom.DrawRecord{}, waitroom.Errorf(waitroom.CodeNotFound, "Room %q has no draw: it was never given an opens_at.", r.name)
	}
	d := waitroom.DrawRecord{
		Room:       r.name,
		OpensAt:    tm(s.opensAt),
		Commitment: s.seed.Commitment(),
		Drawn:      s.drawn,
		Entrants:   s.nPre,
	}
	if s.drawn {
		d.DrawnAt = tm(s.drawnAt)
		d.Entrants = len(s.entries)
		d.Seed = s.seed.String()
		d.FirstTicket = s.first
		d.Entries = s.entries
		d.Digest = s.digest
	}
	return d, nil
}

// Draw implements waitroom.Store.
func (s *Store) Draw(ctx context.Context, name string) (waitroom.DrawRecord, error) {
	r, err := s.get(name)
	if err != nil {
		return waitroom.DrawRecord{}, err
	}
	d, derr := r.drawRecord()
	wait := r.barrier()
	r.mu.Unlock()
	return d, firstErr(wait(), derr)
}

// RestoreDraw loads a scheduled room's draw and pre-queue into a room that
// Restore loaded, for a durable backend recovering on start. entrants are
// the live pre-queue (before the draw), with entry ids; after the draw,
// st's Entries and EntryNumbers map every entrant to its ticket. Entrants
// need no presence before the draw, so nothing is scheduled for them.
func (s *Store) RestoreDraw(name string, st waitroom.DrawState, entrants []waitroom.Session, lastEntry int64) error {
	s.mu.Lock()
	r := s.rooms[name]
	s.mu.Unlock()
	if r == nil {
		return fmt.Errorf("restore draw of room %q: the room is not loaded", name)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	sch := newSchedule(st.Seed, ms(st.OpensAt))
	sch.lastEntry = lastEntry
	if st.Drawn {
		if len(st.EntryNumbers) != len(st.Entries) {
			return fmt.Errorf("restore draw of room %q: %d entry numbers for %d entries", name, len(st.EntryNumbers), len(st.Entries))
		}
		sch.drawn, sch.drawnAt, sch.first = true, ms(st.DrawnAt), st.FirstTicket
		sch.entries, sch.numbers, sch.digest = st.Entries, st.EntryNumbers, st.Digest
		for i, e := range st.Entries {
			sch.ticketOf[st.EntryNumbers[i]] = e.Ticket
		}
		sch.pre, sch.preKey, sch.keys = nil, nil, nil
		r.sch = sch
		return nil
	}
	for _, x := range entrants {
		id, err := waitroom.ParseSessionID(x.ID)
		if err != nil || id.Entry == 0 || x.Status != waitroom.StatusWaiting {
			return fmt.Errorf("restore draw of room %q: entrant %q is not a waiting entry id", name, x.Entry)
		}
		tier := r.cfg.TierIndex(x.Tier)
		if tier < 0 {
			return fmt.Errorf("restore draw of room %q: entrant %d has tier %q, which the room lacks", name, id.Entry, x.Tier)
		}
		n := id.Entry
		sch.lastEntry = max(sch.lastEntry, n)
		for int64(len(sch.pre)) < n {
			sch.pre = append(sch.pre, rec{})
		}
		sch.pre[n-1] = rec{secret: id.Secret, joined: ms(x.JoinedAt), touch: r.lastNow, status: stWaiting, hasKey: x.Key != "", tier: uint8(tier)}
		if x.Key != "" {
			sch.keys[x.Key] = n
			sch.preKey[n] = x.Key
		}
		sch.nPre++
	}
	r.sch = sch
	return nil
}
