package push

import (
	"math/rand/v2"
	"time"

	"github.com/waitroom/waitroom"
)

// The cadence decides, at each flush of a room, which watchers are read.
// Positions are exact whenever they are sent; what the cadence sets is how
// often a watcher is re-read, by what a change means to that person:
//
//   - a session whose status changed is told straight from the event
//     (Hub.observe), never through a read;
//   - the front of the line (positions 1 to Options.Front) is read at
//     every flush, so it gets every change, up to four a second;
//   - further back, a watcher is read once enough people may have left the
//     line ahead of it to move its position by Options.Step (a tenth), or
//     when the room's waiting total moved by a tenth since its last read,
//     at most once a second;
//   - every watcher is read at least once per Options.Refresh (5s), at a
//     point spread over the last quarter of it so that a crowd that was
//     read at once does not come due at once again;
//   - everyone is read at the next flush after a change every page shows:
//     a draw, a change of the room's configuration that moves what every
//     page shows (capacity, schedule, inventory), a deletion,
//     or another process's hint to resynchronise (and the first
//     configuration event the hub sees of a room, as it cannot tell what
//     changed); active sessions, when
//     units were sold or released.
//
// So reads per second grow like watchers ÷ Refresh, plus the front's
// changes, plus a term that grows with the logarithm of the line (a tenth
// of a position is crossed ten times per halving), not like watchers ×
// changes. And after a read, a watcher away from the front is sent its
// new state only when a person would notice: its status, position,
// ticket, ETA or stock flag changed, or a room total moved by a tenth.

// roomClock is what the hub learns of a room from its events alone.
type roomClock struct {
	departed  int64 // waiting sessions that left the line, and joins that may have landed ahead of others (tiers)
	waiting   int   // the room's waiting total after the latest session event
	epoch     int64 // bumped by changes that every watcher must be read for
	unitEpoch int64 // bumped when active sessions' units were sold or released
	cfg       *waitroom.RoomConfig
}

// apply records ev.
func (c *roomClock) apply(ev waitroom.Event) {
	moved := false
	switch ev.Kind {
	case waitroom.EventDeleted:
		c.epoch++
		return
	case waitroom.EventConfig:
		if ev.Config != nil {
			if c.cfg == nil || visible(*c.cfg, *ev.Config) {
				c.epoch++
			}
			cfg := *ev.Config
			c.cfg = &cfg
		}
	}
	if ev.Remote && len(ev.Changes) == 0 && ev.Kind != waitroom.EventConfig {
		c.epoch++ // a resynchronisation hint: something may have changed unseen
	}
	if ev.Draw != nil && ev.Draw.Drawn {
		c.epoch++
	}
	if ev.Kind == waitroom.EventSessions {
		c.waiting = ev.Waiting
	}
	if len(ev.Units) > 0 {
		c.unitEpoch++
	}
	for _, ch := range ev.Changes {
		if ch.From == waitroom.StatusWaiting && ch.Session.Status != waitroom.StatusWaiting {
			c.departed++
		}
		if ch.Session.Status == waitroom.StatusWaiting && ch.Session.Place < 0 && ch.From != "" && !ch.Near {
			moved = true
		}
		if ch.From == "" && c.joinsAhead(ch.Session) {
			// A join that lands ahead of others moves their positions by
			// one, as a departure does the other way: it counts the same
			// towards the tenth that has a watcher read again.
			c.departed++
		}
	}
	if moved {
		// An operator moved sessions to the front (queue-all, front): the
		// positions of everyone behind them grew, which no count of
		// departures tells. Everyone is read again.
		c.epoch++
	}
}

// joinsAhead reports whether new session s may wait ahead of someone who
// was in line before it: a join to a tier other than the lowest, or any
// join under the weighted policy.
func (c *roomClock) joinsAhead(s waitroom.Session) bool {
	if s.Status != waitroom.StatusWaiting || s.Place <= 0 {
		return false
	}
	if c.cfg == nil || len(c.cfg.Tiers) == 0 {
		return s.Tier != "" // a room whose configuration the hub has not seen: count it
	}
	return c.cfg.TierPolicy == waitroom.TierWeighted || s.Tier != c.cfg.Tiers[len(c.cfg.Tiers)-1].Name
}

// visible reports whether a new configuration changes what every waiting
// page shows: its capacity, its schedule or its stock. A change that only
// moves ETAs (a pause, the mode, the rate) reaches each page at its turn.
func visible(a, b waitroom.RoomConfig) bool {
	return a.Capacity != b.Capacity || !a.OpensAt.Equal(b.OpensAt) || !a.ClosesAt.Equal(b.ClosesAt) ||
		(a.Inventory == nil) != (b.Inventory == nil) || (a.Inventory != nil && *a.Inventory != *b.Inventory)
}

// turn is one watcher's place in the cadence: when and at what state of
// the room it was last read, and what it last saw.
type turn struct {
	fresh     bool // read at the next flush, whatever else holds
	readAt    time.Time
	next      time.Time // read by then at the latest
	departed  int64
	waiting   int
	epoch     int64
	unitEpoch int64
	pos       int64
	status    waitroom.Status
}

// newTurn starts the turn of a watcher that holds cur.
func newTurn(cur waitroom.Session, c *roomClock, now time.Time, refresh time.Duration) turn {
	t := turn{}
	t.read(*c, now, refresh)
	t.saw(cur)
	t.fresh = true
	return t
}

// due reports whether the watcher is read at a flush at now, given the
// room's clock then, and whether it is at the front of the line (where a
// person is told every change, exactly).
func (t *turn) due(c roomClock, now time.Time, opt Options) (due, front bool) {
	front = t.status == waitroom.StatusWaiting && t.pos >= 1 && t.pos <= opt.Front
	switch {
	case t.fresh || front || t.epoch != c.epoch || !now.Before(t.next):
		return true, front
	case t.status == waitroom.StatusActive && t.unitEpoch != c.unitEpoch:
		return true, front
	case now.Sub(t.readAt) < min(time.Second, opt.Refresh):
		return false, front
	case t.status == waitroom.StatusWaiting && t.pos > 0 && float64(c.departed-t.departed) >= opt.Step*float64(t.pos):
		return true, front
	}
	return moved(t.waiting, c.waiting), front
}

// read records that the watcher is read now, at the room's state c, and
// sets its next turn within the last quarter of refresh from now.
func (t *turn) read(c roomClock, now time.Time, refresh time.Duration) {
	t.fresh = false
	t.readAt = now
	t.next = now.Add(refresh - time.Duration(rand.Int64N(int64(refresh)/4+1)))
	t.departed, t.epoch, t.unitEpoch = c.departed, c.epoch, c.unitEpoch
}

// retry makes the watcher read again at the next flush (its read failed).
func (t *turn) retry() { t.fresh = true }

// saw records what the read found.
func (t *turn) saw(s waitroom.Session) { t.pos, t.status, t.waiting = s.Position, s.Status, s.Waiting }

// same reports whether a client would see no difference between a and b:
// none at all when exact, else none a person would notice (the room's
// totals and a pre-queue's size may move by less than a tenth).
func same(a, b waitroom.Session, exact bool) bool {
	if a.Status != b.Status || a.Position != b.Position || a.Capacity != b.Capacity ||
		(a.ETA == nil) != (b.ETA == nil) || a.Ticket != b.Ticket || !a.OpensAt.Equal(b.OpensAt) ||
		a.Stocked != b.Stocked || a.Unit != b.Unit || (a.ETA != nil && *a.ETA != *b.ETA) ||
		moved(a.Entrants, b.Entrants) || (a.Remaining != b.Remaining && (exact || a.Remaining == 0 || b.Remaining == 0 || moved(int(a.Remaining), int(b.Remaining)))) {
		return false
	}
	if exact {
		return a.Waiting == b.Waiting && a.Active == b.Active
	}
	return !moved(a.Waiting, b.Waiting) && !moved(a.Active, b.Active)
}

// moved reports whether a count went from a to b by enough for a person
// to notice: every step while under ten, then a tenth. A pre-queue filling
// at hundreds a second so wakes each watcher a few dozen times in all, not
// at every flush.
func moved(a, b int) bool {
	d := a - b
	if d < 0 {
		d = -d
	}
	return d >= max(1, a/10)
}
