package engine

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/waitroom/waitroom"
)

// Session states inside the engine. A zero state marks an empty slot of the
// waiting array (a ticket that was admitted or ended).
const (
	stNone uint8 = iota
	stWaiting
	stActive
	stInvited // a held session whose turn came: in active, holding a slot (holds.go)
)

// rec is a live session. It is kept small: a million waiting sessions live in
// one array of recs indexed by ticket, with no map and no pointer per session.
// Times are unix milliseconds; 0 means unset.
type rec struct {
	secret   [16]byte
	joined   int64
	admitted int64
	touch    int64 // last seen (waiting) or last active (active)
	away     int64 // away until; 0 when present
	sched    int64 // the time of this session's live heap entry; 0 when none
	place    int64 // Session.Place: negative once an operator moved it, positive in a tiered room, else 0
	extra    int64 // ms an operator extended max_session by (Session.Extended)
	status   uint8
	tier     uint8 // the tier's index in a room with tiers
	hasKey   bool
	unit     bool // active or invited, holding a reserved unit of the room's inventory
	held     bool // joined with a contact (room.contacts): needs no presence while waiting
	near     bool // told it reached notify_at, or sent back by QueueAll (holds.go)
}

// room is one room's state machine. Every method expects mu to be held.
type room struct {
	// mu guards the room. Presence on a live session, the most frequent
	// call, needs only the read lock when nothing is due (presenceShared);
	// the fields it writes then (touch, away, lastNow) are written with
	// atomics. Everything else takes the write lock.
	mu   sync.RWMutex
	name string
	cfg  waitroom.RoomConfig
	gone bool // deleted; every operation answers room_not_found

	lastTicket int64
	lastNow    int64

	// Waiting sessions never moved: wait.at(i) holds ticket base+i. Slots
	// of tickets that are no longer waiting are empty. head is the first
	// slot that may hold a waiting session. When none waits there the array
	// is empty and base is the next ticket.
	base  int64
	wait  chunked[rec]
	head  int
	ranks ranks
	// nWaiting counts every waiting session: nLine in the array and the
	// lane's.
	nWaiting, nLine int

	// The lane holds the waiting sessions an operator moved (QueueAll,
	// Front), ahead of the array, by place; front is the last place given.
	lane  lane
	front int64

	// A room with tiers also keeps its unmoved waiting sessions in one
	// line per tier (tiers.go), which orders them by place.
	tiers tiering

	// Token uses spent by joins, by kind and ID (tiers.go).
	uses     map[string]use
	usesKept int

	active map[int64]*rec
	keys   map[string]int64 // key → ticket of its live session
	keyOf  map[int64]string // ticket → key, for keyed live sessions

	// contacts holds the contacts of held live sessions (holds.go);
	// lineMoved says the line changed since near was last told.
	contacts  map[int64]string
	lineMoved bool

	heap deadlines

	// Token bucket for rate_per_minute, in units where one token is
	// 60,000 (ms per minute) and each millisecond adds R units: exact
	// integer arithmetic, so every backend and the model agree.
	units   int64
	unitsAt int64

	hist *history // nil when an Archive keeps the history

	sch *schedule // nil for a room never given an opens_at

	// Fairness, measured: admissions (and services) counted, and those of
	// a ticket smaller than one admitted before it (inversions of ticket
	// order; FIFO keeps them at 0).
	admissions, inversions, maxAdmitted int64

	// Stock of a room with an inventory: units sold, and units reserved
	// (the active sessions whose unit is set). Both are 0 without one.
	sold, reserved int64

	// pending waits for the journal to make this room's latest change
	// durable; readers wait on it so they never report undurable state.
	pending func() error

	// ev collects the current operation's changes when events are wanted.
	ev *waitroom.Event
	// wasSoldOut is whether the room was sold out when ev began.
	wasSoldOut bool
	// closedTold is the closes_at (unix ms) whose passing an event told,
	// so each is told once (Event.Closed).
	closedTold int64
}

func newRoom(name string, cfg waitroom.RoomConfig, lastTicket int64, keepHistory int) *room {
	r := &room{
		name:       name,
		cfg:        cfg,
		lastTicket: lastTicket,
		base:       lastTicket + 1,
		active:     make(map[int64]*rec),
		keys:       make(map[string]int64),
		keyOf:      make(map[int64]string),
		contacts:   make(map[int64]string),
	}
	if keepHistory > 0 {
		r.hist = newHistory(keepHistory)
	}
	r.fillBucket()
	return r
}

func ms(t time.Time) int64 { return t.UnixMilli() }

func tm(v int64) time.Time {
	if v == 0 {
		return time.Time{}
	}
	return time.UnixMilli(v).UTC()
}

// clock returns now as milliseconds, never earlier than the room has seen.
func (r *room) clock(now time.Time) int64 {
	return atomicMax(&r.lastNow, ms(now))
}

// atomicMax raises *p to v if v is larger and returns the result.
func atomicMax(p *int64, v int64) int64 {
	for {
		old := atomic.LoadInt64(p)
		if v <= old {
			return old
		}
		if atomic.CompareAndSwapInt64(p, old, v) {
			return v
		}
	}
}

// presenceShared records presence of a live session under the read lock,
// which concurrent callers share. It declines (ok false) whenever the write
// path has work: something due at now (a deadline or the draw), an
// admission the rate now allows, a deadline to schedule, or an id that is
// not a live session here.
func (r *room) presenceShared(id string, activity bool, now int64) (s waitroom.Session, wait func() error, ok bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if r.gone {
		return s, nil, false
	}
	now = max(now, atomic.LoadInt64(&r.lastNow))
	if r.heap.len() > 0 && r.heap.top().at <= now {
		return s, nil, false
	}
	if r.nWaiting > 0 && r.canAdmit() && r.tokenDue(now) {
		return s, nil, false
	}
	if r.preQueue() && now >= r.sch.opensAt {
		return s, nil, false // the draw is due
	}
	if c := r.cfg.ClosesAt; !c.IsZero() && now >= ms(c) && r.closedTold != ms(c) {
		return s, nil, false // the closing is to be told
	}
	sid, err := waitroom.ParseSessionID(id)
	if err != nil || (sid.Entry != 0 && (r.sch == nil || !r.sch.drawn)) {
		return s, nil, false
	}
	r.resolve(&sid)
	p := r.lookup(sid.Ticket)
	if p == nil || !sid.Matches(p.secret) || (p.sched == 0 && r.hasTimer(p.status)) {
		return s, nil, false
	}
	atomicMax(&r.lastNow, now)
	if p.status == stWaiting || activity {
		atomicMax(&p.touch, now)
	}
	if atomic.LoadInt64(&p.away) != 0 {
		atomic.StoreInt64(&p.away, 0)
	}
	return r.viewID(id, sid.Ticket, p, true), r.barrier(), true
}

// tokenDue reports, without changing the bucket, whether the rate allows an
// admission at now.
func (r *room) tokenDue(now int64) bool {
	rate := int64(r.cfg.RatePerMinute)
	if rate == 0 {
		return true
	}
	elapsed := now - r.unitsAt
	return elapsed > 60_000 || r.units+elapsed*rate >= 60_000
}

// hasTimer reports whether a present session with status st has a deadline.
func (r *room) hasTimer(st uint8) bool {
	if st == stWaiting {
		return r.cfg.WaitingTimeout > 0
	}
	return r.cfg.ActiveTimeout > 0 || r.cfg.MaxSession > 0
}

// lookup returns the live session with ticket t, or nil.
func (r *room) lookup(t int64) *rec {
	if i := t - r.base; i >= 0 && i < int64(r.wait.len()) {
		if p := r.wait.at(int(i)); p.status == stWaiting {
			return p
		}
	}
	if p := r.active[t]; p != nil {
		return p
	}
	return r.lane.rec(t)
}

// position returns the 1-based rank of waiting session p with ticket t.
func (r *room) position(t int64, p *rec) int64 {
	if p.place < 0 {
		return r.lane.position(p.place)
	}
	if p.place > 0 {
		return r.tierPosition(p.place)
	}
	return int64(r.lane.len()) + r.ranks.rank(int(t-r.base))
}

// deadline returns when p is due and why; 0 when it has no deadline.
func (r *room) deadline(p *rec) (int64, waitroom.Reason) {
	var at int64
	var why waitroom.Reason
	consider := func(d int64, reason waitroom.Reason) {
		if d != 0 && (at == 0 || d < at) {
			at, why = d, reason
		}
	}
	switch {
	case p.status == stInvited:
		return p.admitted + r.cfg.HeldWindow().Milliseconds(), waitroom.ReasonUnclaimed
	case p.status == stWaiting && p.held:
		return 0, "" // held: no presence needed
	case p.status == stWaiting:
		if wt := r.cfg.WaitingTimeout.D().Milliseconds(); wt > 0 {
			consider(p.touch+wt, waitroom.ReasonNoPresence)
		}
	default:
		if ms := r.cfg.MaxSession.D().Milliseconds(); ms > 0 {
			consider(p.admitted+ms+p.extra, waitroom.ReasonMaxSession)
		}
		if it := r.cfg.ActiveTimeout.D().Milliseconds(); it > 0 {
			consider(p.touch+it, waitroom.ReasonIdle)
		}
	}
	consider(p.away, waitroom.ReasonGone)
	return at, why
}

// schedule makes sure p's heap entry is no later than its deadline. Later
// deadlines are left to the lazy check when the entry comes due.
func (r *room) schedule(t int64, p *rec) {
	d, _ := r.deadline(p)
	if d == 0 {
		return
	}
	if p.sched == 0 || d < p.sched {
		p.sched = d
		r.heap.push(deadline{at: d, ticket: t})
	}
}

// settle holds a draw that is due, expires everything due at now, then
// admits into free slots.
func (r *room) settle(now int64) (expired, admitted int) {
	r.drawIfDue(now)
	for r.heap.len() > 0 && r.heap.top().at <= now {
		e := r.heap.pop()
		p := r.lookup(e.ticket)
		if p == nil || p.sched != e.at {
			continue // stale entry
		}
		d, why := r.deadline(p)
		switch {
		case d == 0:
			p.sched = 0
		case d > now:
			p.sched = d
			r.heap.push(deadline{at: d, ticket: e.ticket})
		default:
			r.end(e.ticket, p, why, now)
			expired++
		}
	}
	admitted = r.admit(now)
	return expired + r.endSoldOut(now), admitted
}

// refill brings the token bucket up to now.
func (r *room) refill(now int64) {
	rate := int64(r.cfg.RatePerMinute)
	if rate == 0 {
		return
	}
	full := burst(rate) * 60_000
	if elapsed := now - r.unitsAt; elapsed > 0 {
		if elapsed >= full/rate+1 {
			r.units = full
		} else {
			r.units = min(full, r.units+elapsed*rate)
		}
	}
	r.unitsAt = now
}

// burst is the bucket size in tokens: one second's worth, at least one.
func burst(rate int64) int64 { return max(1, (rate+59)/60) }

func (r *room) fillBucket() {
	r.units = burst(int64(r.cfg.RatePerMinute)) * 60_000
	r.unitsAt = r.lastNow
}

// takeToken reports whether the rate allows one admission now, taking it.
func (r *room) takeToken(now int64) bool {
	if r.cfg.RatePerMinute == 0 {
		return true
	}
	r.refill(now)
	if r.units < 60_000 {
		return false
	}
	r.units -= 60_000
	return true
}

// canAdmit reports whether automatic admission is open at all.
func (r *room) canAdmit() bool {
	return r.cfg.Mode == waitroom.ModeAuto && !r.cfg.Paused && len(r.active) < r.cfg.Capacity &&
		(r.cfg.Inventory == nil || r.remaining() > 0)
}

// admit moves the head of the line into free slots.
func (r *room) admit(now int64) int {
	n := 0
	for r.nWaiting > 0 && r.canAdmit() && r.takeToken(now) {
		t, p := r.first()
		r.activate(t, p, now)
		n++
	}
	return n
}

// activate makes waiting session t (at p, a slot of the array) active, or
// invited when it is held.
func (r *room) activate(t int64, p *rec, now int64) {
	a := new(rec)
	*a = *p
	a.status = stActive
	if a.held {
		a.status = stInvited
	}
	a.admitted = now
	a.touch = now
	a.sched = 0
	a.unit = r.reserve()
	r.unwait(t, p)
	r.active[t] = a
	r.schedule(t, a)
	r.record(t, a, waitroom.StatusWaiting)
	r.count(t, a)
}

// first returns the first session in line; someone must wait.
func (r *room) first() (int64, *rec) {
	if t, p := r.lane.first(); p != nil {
		return t, p
	}
	if r.tiered() {
		return r.tierFirst()
	}
	return r.base + int64(r.head), r.wait.at(r.head)
}

// count records the admission (or service) of ticket t, whose record is p.
// A session an operator moved is counted but is no inversion: it was placed
// on purpose. In a tiered room order is kept inside each tier.
func (r *room) count(t int64, p *rec) {
	r.admissions++
	if p.place < 0 {
		return
	}
	if p.place > 0 {
		r.letInTier(t, int(p.tier), p.place)
		return
	}
	if t < r.maxAdmitted {
		r.inversions++
	}
	r.maxAdmitted = max(r.maxAdmitted, t)
}

// unwait empties waiting slot p of ticket t and keeps head, counts and the
// array tidy.
func (r *room) unwait(t int64, p *rec) {
	r.nearMoves(t, p)
	r.nWaiting--
	if p.place < 0 {
		r.lane.remove(t, p.place)
		return
	}
	if p.place > 0 {
		r.line(int(p.tier)).remove(t)
	}
	r.unslot(t, p)
}

// unslot empties the array slot p of ticket t, without counting.
func (r *room) unslot(t int64, p *rec) {
	i := int(t - r.base)
	*p = rec{}
	r.ranks.set(i, false)
	r.nLine--
	if r.nLine == 0 {
		r.resetWaiting()
		return
	}
	for r.wait.at(r.head).status != stWaiting {
		r.head++
	}
	// Drop the chunks of the empty prefix once it is a quarter of the
	// array, so memory follows the line and not every ticket ever issued.
	// Nothing is copied but the chunk list and the rank tree (a 64th of
	// the slots), and a quarter keeps even that O(1) per session.
	if k := r.head >> chunkBits; k > 0 && r.head*4 >= r.wait.len() {
		r.compact(k)
	}
}

func (r *room) resetWaiting() {
	r.wait.reset()
	if cap(r.ranks.words) > chunkLen/64 {
		r.ranks = ranks{}
	} else {
		r.ranks = ranks{words: r.ranks.words[:0], tree: r.ranks.tree[:0]}
	}
	r.head = 0
	r.base = r.lastTicket + 1
}

// compact drops the first k chunks of the waiting array, all empty.
func (r *room) compact(k int) {
	n := k * chunkLen
	r.wait.dropChunks(k)
	r.ranks.dropPrefix(n)
	r.base += int64(n)
	r.head -= n
}

// end finishes live session t for reason and returns its final Session. It
// hands nothing on by itself: callers settle afterwards.
func (r *room) end(t int64, p *rec, why waitroom.Reason, now int64) waitroom.Session {
	from := waitroom.StatusWaiting
	ended := *p
	if p.status != stWaiting {
		from = waitroom.StatusActive
		if p.status == stInvited {
			from = waitroom.StatusInvited
		}
		delete(r.active, t)
		if p.unit {
			r.reserved--
		}
	} else {
		r.unwait(t, p)
	}
	var key string
	if ended.hasKey {
		key = r.keyOf[t]
		delete(r.keyOf, t)
		delete(r.keys, key)
	}
	s := r.final(t, &ended, key, why, now)
	if r.hist != nil {
		r.hist.add(s)
	}
	if r.ev != nil {
		c := waitroom.Change{Session: s, From: from}
		if ended.held {
			c.Session.Contact = r.contacts[t] // the webhooks tell the contact why it ended
		}
		r.ev.Changes = append(r.ev.Changes, c)
	}
	if ended.held {
		delete(r.contacts, t)
	}
	return s
}

// final builds the Session of a session that ended.
func (r *room) final(t int64, p *rec, key string, why waitroom.Reason, now int64) waitroom.Session {
	n, entry := r.drawnEntry(t)
	return waitroom.Session{
		Entry:      entry,
		ID:         waitroom.SessionID{Ticket: t, Entry: n, Secret: p.secret}.String(),
		Room:       r.name,
		Status:     why.Status(),
		Ticket:     t,
		Key:        key,
		JoinedAt:   tm(p.joined),
		AdmittedAt: tm(p.admitted),
		EndedAt:    tm(now),
		EndReason:  why,
	}
}

// record adds a change to the current event, if events are wanted.
func (r *room) record(t int64, p *rec, from waitroom.Status) {
	if r.ev == nil {
		return
	}
	r.ev.Changes = append(r.ev.Changes, waitroom.Change{Session: r.view(t, p, false), From: from})
}

// view builds the Session of live session t; with pos, its position too.
func (r *room) view(t int64, p *rec, pos bool) waitroom.Session {
	n, _ := r.drawnEntry(t)
	return r.viewID(waitroom.SessionID{Ticket: t, Entry: n, Secret: p.secret}.String(), t, p, pos)
}

// viewID is view for a caller that already holds the id's string form.
func (r *room) viewID(id string, t int64, p *rec, pos bool) waitroom.Session {
	s := waitroom.Session{
		ID:         id,
		Room:       r.name,
		Ticket:     t,
		JoinedAt:   tm(p.joined),
		AdmittedAt: tm(p.admitted),
		Place:      p.place,
		Extended:   time.Duration(p.extra) * time.Millisecond,
		Tier:       r.tierName(p),
	}
	if p.hasKey {
		s.Key = r.keyOf[t]
	}
	_, s.Entry = r.drawnEntry(t)
	s.Unit = p.unit && p.status != stWaiting
	switch p.status {
	case stWaiting:
		s.Status = waitroom.StatusWaiting
		if pos {
			s.Position = r.position(t, p)
		}
	case stInvited:
		s.Status = waitroom.StatusInvited
		s.ClaimBy = tm(p.admitted + r.cfg.HeldWindow().Milliseconds())
	default:
		s.Status = waitroom.StatusActive
	}
	if p.held {
		s.Contact = r.contacts[t]
	}
	r.totals(&s)
	return s
}

func (r *room) totals(s *waitroom.Session) {
	s.Waiting = r.nWaiting
	s.Active = len(r.active)
	s.Capacity = r.cfg.Capacity
	if r.cfg.Inventory != nil {
		s.Stocked, s.Remaining = true, r.remaining()
	}
}

// join issues the next ticket, in tier (0 in a room without tiers); a
// contact makes it held.
func (r *room) join(key string, tier int, contact string, now int64) (int64, *rec) {
	r.lastTicket++
	t := r.lastTicket
	id := waitroom.NewSessionID(t)
	var place int64
	if r.tiered() {
		place = r.placeFor(tier, t)
	}
	if r.nWaiting == 0 && r.canAdmit() && r.takeToken(now) {
		a := &rec{secret: id.Secret, joined: now, admitted: now, touch: now, status: stActive, unit: r.reserve(),
			place: place, tier: uint8(tier)}
		r.active[t] = a
		r.base = t + 1 // nobody waits: the array stays empty
		r.addKey(t, a, key)
		r.addContact(t, a, contact)
		if a.held {
			a.status = stInvited
		}
		r.schedule(t, a)
		r.record(t, a, "")
		r.count(t, a)
		return t, a
	}
	p := r.enqueue(t, rec{secret: id.Secret, joined: now, touch: now, status: stWaiting, place: place, tier: uint8(tier)})
	r.addKey(t, p, key)
	r.addContact(t, p, contact)
	r.schedule(t, p)
	r.record(t, p, "")
	return t, p
}

// enqueue puts waiting session p with ticket t (the largest yet) at the
// back of the array and, in a tiered room, of its tier's line.
func (r *room) enqueue(t int64, p rec) *rec {
	for r.base+int64(r.wait.len()) < t {
		// Tickets that never waited here (restored state) keep their slots.
		r.wait.push(rec{})
		r.ranks.push(false)
	}
	q := r.wait.push(p)
	r.ranks.push(true)
	r.nWaiting++
	r.nLine++
	if p.place > 0 {
		r.line(int(p.tier)).add(t, p.place)
	}
	r.nearMoves(t, q)
	return q
}

func (r *room) addKey(t int64, p *rec, key string) {
	if key == "" {
		return
	}
	p.hasKey = true
	r.keys[key] = t
	r.keyOf[t] = key
}

// touch records presence (and, with activity, activity) for p.
func (r *room) touch(t int64, p *rec, activity bool, now int64) {
	if p.status == stWaiting || activity {
		p.touch = now
	}
	p.away = 0
	if p.sched == 0 {
		r.schedule(t, p)
	}
}

// goAway starts p's grace period; a session that needs no presence (held
// and waiting, or invited) ignores it.
func (r *room) goAway(t int64, p *rec, now int64) {
	if p.status == stInvited || (p.status == stWaiting && p.held) {
		return
	}
	p.away = now + r.cfg.Grace.D().Milliseconds()
	if p.away == 0 {
		p.away = 1 // now is the epoch: keep "away" distinguishable from unset
	}
	r.schedule(t, p)
}

// advance moves up to n of the line on; it returns their Sessions.
func (r *room) advance(n int, now int64) []waitroom.Session {
	out := make([]waitroom.Session, 0, min(n, r.nWaiting))
	for len(out) < n && r.nWaiting > 0 {
		t, p := r.first()
		if r.cfg.Mode == waitroom.ModeManual {
			was := *p
			out = append(out, r.end(t, p, waitroom.ReasonServed, now))
			r.count(t, &was)
			continue
		}
		r.activate(t, p, now)
		out = append(out, r.view(t, r.active[t], false))
	}
	return out
}

// reconfigure replaces the configuration and re-plans deadlines.
func (r *room) reconfigure(cfg waitroom.RoomConfig) {
	old := r.cfg
	r.cfg = cfg
	r.fillBucket()
	r.retier(old)
	r.lineMoved = true // notify_at or the tiers may have changed
	if old.ActiveTimeout == cfg.ActiveTimeout && old.MaxSession == cfg.MaxSession &&
		old.WaitingTimeout == cfg.WaitingTimeout && old.Grace == cfg.Grace && old.ClaimWindow == cfg.ClaimWindow {
		return
	}
	// Timeouts changed: deadlines may now be earlier than scheduled. This
	// is O(n log n), and configuration changes are rare.
	for i := r.head; i < r.wait.len(); i++ {
		if p := r.wait.at(i); p.status == stWaiting {
			p.sched = 0
			r.schedule(r.base+int64(i), p)
		}
	}
	for t, p := range r.active {
		p.sched = 0
		r.schedule(t, p)
	}
	for _, e := range r.lane.items {
		e.rec.sched = 0
		r.schedule(e.ticket, e.rec)
	}
}

// next returns the earliest time something may be due, 0 for none.
func (r *room) next() int64 {
	var at int64
	if r.heap.len() > 0 {
		at = r.heap.top().at
	}
	if r.preQueue() && (at == 0 || r.sch.opensAt < at) {
		at = r.sch.opensAt
	}
	if rate := int64(r.cfg.RatePerMinute); rate > 0 && r.nWaiting > 0 && r.canAdmit() && r.units < 60_000 {
		t := r.unitsAt + (60_000-r.units+rate-1)/rate
		if at == 0 || t < at {
			at = t
		}
	}
	return at
}

func (r *room) info() waitroom.Room {
	info := waitroom.Room{Name: r.name, RoomConfig: r.cfg, Waiting: r.nWaiting, Active: len(r.active), LastTicket: r.lastTicket,
		Admissions: r.admissions, Inversions: r.inversions}
	if r.preQueue() {
		info.Entrants = r.sch.nPre
	}
	if r.cfg.Inventory != nil {
		left := r.remaining()
		info.Sold, info.Reserved, info.Remaining = r.sold, r.reserved, &left
	}
	return info
}
