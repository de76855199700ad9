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
	// rev is the configuration's revision (waitroom.Room.Revision):
	// revisions.go.
	rev int64

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
		rev:        1,
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
