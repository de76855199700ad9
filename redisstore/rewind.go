package redisstore

import (
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/waitroom/waitroom"
)

// Rewound rooms. Redis replicates asynchronously: after a failover the new
// primary has what its replica had, which may be some writes behind what
// the old primary acknowledged; a primary that Sentinel replaced but that
// went on taking writes for a moment loses those when it becomes a replica
// again. Either way a room's ticket counter (seq) and pre-queue entry
// counter (eseq) can end up below numbers already handed out, and the next
// joins would get those numbers again.
//
// So each process keeps, per room, the highest ticket and entry number it
// has seen: from its joins' answers, and from every event of the room,
// its own and, over pub/sub, other processes' (an event's head carries the
// room's last ticket, an entrant's change its entry number). Every write
// script gets these marks (ARGV 10, args); a script that finds a counter
// below its mark moves the counter up to it before doing anything else,
// counts the rewind in the room (rw) and answers 'rewound' (room.lua); the
// operation then runs again on the repaired room. The next ticket follows
// every ticket the process saw, so none of those goes to a second person.
//
// What this cannot cover: a number no live process saw (its process died
// with the write, and no other process had its event), and, during a split
// brain, numbers the replaced primary hands out at the same time as the new
// one hands out the same ones to others. Only waiting for replicas (WAIT)
// prevents those. Session ids carry a random secret besides the ticket, so
// an id is never the same twice even then.

// roomMarks are one room's high-water marks.
type roomMarks struct{ ticket, entry atomic.Int64 }

// rewinds is the Store's rewind bookkeeping.
type rewinds struct {
	marks sync.Map // room name → *roomMarks
	count atomic.Int64
}

// raise sets a to v if v is larger.
func raise(a *atomic.Int64, v int64) {
	for {
		o := a.Load()
		if v <= o || a.CompareAndSwap(o, v) {
			return
		}
	}
}

// marksOf returns room's marks, made on first use.
func (r *rewinds) marksOf(room string) *roomMarks {
	if m, ok := r.marks.Load(room); ok {
		return m.(*roomMarks)
	}
	m, _ := r.marks.LoadOrStore(room, new(roomMarks))
	return m.(*roomMarks)
}

// see raises room's marks to ticket and entry.
func (r *rewinds) see(room string, ticket, entry int64) {
	if ticket <= 0 && entry <= 0 {
		return
	}
	m := r.marksOf(room)
	raise(&m.ticket, ticket)
	raise(&m.entry, entry)
}

// batchArg is ARGV 10 of a script run on room: the expiry batch, and the
// room's marks once there are any.
func (s *Store) batchArg(room string) string {
	v, ok := s.rw.marks.Load(room)
	if !ok || s.cfg.noMarks {
		return s.batch
	}
	m := v.(*roomMarks)
	t, e := m.ticket.Load(), m.entry.Load()
	if t == 0 && e == 0 {
		return s.batch
	}
	return s.batch + " " + strconv.FormatInt(t, 10) + " " + strconv.FormatInt(e, 10)
}

// seeEvent raises the marks of the event's room: its last ticket, and the
// entry number of every entrant it names.
func (s *Store) seeEvent(e waitroom.Event) {
	if e.Room == "" {
		return
	}
	var entry int64
	for i := range e.Changes {
		c := &e.Changes[i].Session
		if c.Entry == "" {
			continue
		}
		if id, err := waitroom.ParseSessionID(c.ID); err == nil && id.Entry > entry {
			entry = id.Entry
		}
	}
	s.rw.see(e.Room, e.LastTicket, entry)
}

// seeReply raises room's marks from the reply of op: a join's session (its
// ticket, or its entry number in a pre-queue, at 12). Events carry the rest.
func (s *Store) seeReply(op, room string, r result) {
	if op != "join" || (r.status != "ok" && r.status != "already_joined") {
		return
	}
	v, _ := first(r.rest).([]any)
	if len(v) == 0 {
		return
	}
	s.rw.see(room, num(v, 0), num(v, 12))
}

// rewound logs and counts a rewind a script repaired in room (its reply:
// status 'rewound', no event, then the ticket counter and its mark, the
// entry counter and its mark, and the room's rewinds). The calls of a
// batch join that did not get the reply have nothing to add: the batch's
// first call did.
func (s *Store) rewound(room string, v []any) {
	if len(v) < 7 {
		return
	}
	s.rw.count.Add(1)
	s.log().Warn("redisstore: the room was rewound (a failover lost writes Redis had acknowledged); its counters were moved past every number this process saw, so none is handed out again",
		"room", room, "ticket_counter", num(v, 2), "tickets_seen", num(v, 3),
		"entry_counter", num(v, 4), "entries_seen", num(v, 5), "room_rewinds", num(v, 6))
}

func (s *Store) log() *slog.Logger {
	if s.cfg.logger != nil {
		return s.cfg.logger
	}
	return slog.Default()
}

// Rewinds returns how many times this Store found a room rewound (its
// ticket or entry counter below a number this process had seen, after
// Redis lost acknowledged writes) and moved the counter past it, so that
// no ticket or entry number went to a second person. Metrics export it
// as waitroom_redis_rewinds_total.
func (s *Store) Rewinds() int64 { return s.rw.count.Load() }

// WithLogger sets the logger the Store reports rewound rooms to (Rewinds);
// the default is slog.Default().
func WithLogger(l *slog.Logger) Option {
	return func(c *config) error {
		c.logger = l
		return nil
	}
}
