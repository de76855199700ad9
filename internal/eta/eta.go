// Package eta estimates how long a waiting session will wait, from the rate
// at which slots come free in its room.
//
// A line moves when a slot comes free: an active session leaves, expires or
// is ended, an invitation goes unclaimed (waiting → served in a manual
// room, where the operator's serving is the turn), or, in a room that is
// not full, at its rate_per_minute. The one-time fill of empty capacity (a
// drop's opening, a capacity raise, an operator's advance) moves the line
// once and says nothing about how fast it will move next, so admissions are
// not the rate: departures are. The estimator remembers each room's last
// 256 departures from the store's events (so it sees what every server
// process does; a departure is a fact of one session, whichever process
// made it) and the time each departed session had held its slot.
//
// The rate is the number of departures in the last ten minutes, less one,
// over the time from the oldest of them to now: it follows a room that
// speeds up within a few departures, and falls while a room stalls. The
// estimate for position p is p divided by that rate. Its range is the 90%
// interval of both uncertainties: that of the rate (a Poisson count of that
// many departures) and that of the wait itself (the time until p more
// departures), so it is wide after a handful of departures and for the
// first few in line. There is no estimate ("not known yet") while the room
// is paused, before two departures in the window, or while fewer than 30 of
// them span less than ten seconds, unless the room's own configuration and
// history give a basis:
//
//   - a room that is not full and has a rate_per_minute moves at that rate;
//   - a hold time learned from the room's earlier sessions (at least 20
//     of them) gives capacity / mean hold departures a second;
//   - rate_per_minute bounds the rate from above (the wait from below);
//   - max_session bounds the wait from above: within each max_session the
//     whole capacity turns over.
//
// active_timeout bounds nothing: a present active session refreshes it.
package eta

import (
	"math"
	"sync"
	"time"

	"github.com/waitroom/waitroom"
)

const (
	// window is how far back departures count.
	window = 10 * time.Minute
	// keep is how many recent departures a room remembers: enough for a
	// tight range, few enough that the rate follows a room that speeds
	// up or slows down.
	keep = 256
	// minDepartures is the least evidence an estimate needs.
	minDepartures = 2
	// Below fewDepartures, an estimate needs a span of at least minSpan.
	fewDepartures = 30
	minSpan       = 10 * time.Second
	// minHolds is how many held slots a learned hold time needs, and
	// priorWeight how many departures' evidence it is worth.
	minHolds    = 20
	priorWeight = 8
	// z90 is the two-sided 90% normal quantile.
	z90 = 1.645
)

// Reasons an estimate is not known yet (Fill's second result).
const (
	// ReasonPaused: the room is paused or admits nobody.
	ReasonPaused = "paused"
	// ReasonStarting: no slot has come free often enough yet to tell how
	// fast the line will move (a room's first minutes, a drop's opening).
	ReasonStarting = "starting"
	// ReasonStalled: no slot has come free for ten minutes.
	ReasonStalled = "stalled"
)

// Estimator turns a room's departures into ETAs. It is safe for concurrent
// use.
type Estimator struct {
	mu    sync.Mutex
	rooms map[string]*history
	stop  func()
}

// history is one room's most recent departures.
type history struct {
	times    [keep]int64 // unix ms of departures, a ring
	next     int         // where the next departure goes
	n        int         // departures held (≤ keep)
	holds    [keep]int64 // ms each departed active session held its slot, a ring
	holdNext int
	holdN    int
	holdSum  int64 // sum of the holds held
	paused   bool
	rate     int           // rate_per_minute, when known from a config event
	capacity int           // capacity, when known from a config event
	maxSess  time.Duration // max_session, when known
	active   int           // active sessions after the room's last event
	ever     bool          // a departure was ever seen
}

// New returns an estimator fed by store's events. Call Close to stop it.
func New(store waitroom.Store) *Estimator {
	e := &Estimator{rooms: make(map[string]*history)}
	e.stop = store.Subscribe(e.Observe)
	return e
}

// Close stops following the store.
func (e *Estimator) Close() {
	if e.stop != nil {
		e.stop()
	}
}

// departure reports whether a change frees a slot (or, in a manual room,
// is a turn): an active or invited session that ends or goes back to the
// line, or a waiting session served. A claim (invited → active) and every
// admission are not: an admission takes a slot.
func departure(c waitroom.Change) bool {
	to := c.Session.Status
	switch c.From {
	case waitroom.StatusActive:
		return to != waitroom.StatusActive
	case waitroom.StatusInvited:
		return to != waitroom.StatusInvited && to != waitroom.StatusActive
	case waitroom.StatusWaiting:
		return to == waitroom.StatusServed
	}
	return false
}

// Observe records an event's departures. It is cheap and never blocks.
func (e *Estimator) Observe(ev waitroom.Event) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if ev.Kind == waitroom.EventDeleted {
		delete(e.rooms, ev.Room)
		return
	}
	h := e.rooms[ev.Room]
	if h == nil {
		h = &history{}
		e.rooms[ev.Room] = h
	}
	if ev.Config != nil {
		h.paused = ev.Config.Paused || (ev.Config.Mode == waitroom.ModeAuto && ev.Config.Capacity == 0)
		h.rate = ev.Config.RatePerMinute
		h.capacity = ev.Config.Capacity
		if ev.Config.Mode != waitroom.ModeAuto {
			h.capacity = 0
		}
		h.maxSess = time.Duration(ev.Config.MaxSession)
	}
	if ev.Kind == waitroom.EventSessions || len(ev.Changes) > 0 {
		h.active = ev.Active
	}
	for _, c := range ev.Changes {
		if !departure(c) {
			continue
		}
		at := c.Session.EndedAt
		if at.IsZero() {
			at = ev.At
		}
		h.times[h.next] = at.UnixMilli()
		h.next = (h.next + 1) % keep
		h.n = min(h.n+1, keep)
		h.ever = true
		if c.From == waitroom.StatusActive && !c.Session.AdmittedAt.IsZero() && at.After(c.Session.AdmittedAt) {
			held := at.Sub(c.Session.AdmittedAt).Milliseconds()
			if h.holdN == keep {
				h.holdSum -= h.holds[h.holdNext]
			}
			h.holds[h.holdNext] = held
			h.holdSum += held
			h.holdNext = (h.holdNext + 1) % keep
			h.holdN = min(h.holdN+1, keep)
		}
	}
}

// recent returns how many departures happened in the window before now and
// the time since the oldest of them.
func (h *history) recent(now time.Time) (k int, span time.Duration) {
	from := now.Add(-window).UnixMilli()
	oldest := int64(0)
	for i := 0; i < h.n; i++ {
		t := h.times[(h.next-1-i+keep)%keep]
		if t <= from {
			break
		}
		k++
		oldest = t
	}
	return k, now.Sub(time.UnixMilli(oldest))
}

// Fill sets s.ETA for a waiting session when there is a basis for one, and
// clears it otherwise.
func (e *Estimator) Fill(s *waitroom.Session, now time.Time) {
	s.ETA, _ = e.Estimate(s, now)
}

// Estimate returns the ETA for a waiting session, or nil and why it is not
// known yet ("" for a session that is not waiting in line).
func (e *Estimator) Estimate(s *waitroom.Session, now time.Time) (*waitroom.ETA, string) {
	if s.Status != waitroom.StatusWaiting || s.Position < 1 {
		return nil, ""
	}
	e.mu.Lock()
	h := e.rooms[s.Room]
	if h == nil {
		e.mu.Unlock()
		return nil, ReasonStarting
	}
	k, span := h.recent(now)
	b := basis{limit: h.rate, capacity: h.capacity, maxSession: h.maxSess}
	if h.holdN >= minHolds && h.holdSum > 0 {
		b.hold = time.Duration(h.holdSum/int64(h.holdN)) * time.Millisecond
	}
	paused, ever := h.paused, h.ever
	notFull := h.capacity > 0 && h.active < h.capacity
	e.mu.Unlock()
	switch {
	case paused:
		return nil, ReasonPaused
	case notFull && b.limit > 0:
		// The line moves at the room's rate limit while it is not full.
		b.n, b.span = b.limit*10, 10*time.Minute
	case k >= minDepartures && (k >= fewDepartures || span >= minSpan):
		// k departures mark k-1 intervals up to the last; measuring to
		// now instead makes the rate fall while a room stalls.
		b.n, b.span = k-1, max(span, time.Millisecond)
	case b.hold > 0 && b.capacity > 0:
		b.n, b.span = priorWeight, time.Duration(float64(b.hold)*priorWeight/float64(b.capacity))
	case ever && k == 0:
		return nil, ReasonStalled
	default:
		return nil, ReasonStarting
	}
	return b.estimate(s.Position), ""
}

// basis is what an estimate rests on: n departures over span, and the
// room's bounds.
type basis struct {
	n          int
	span       time.Duration
	limit      int           // rate_per_minute, 0 for none
	capacity   int           // 0 when unknown or manual
	maxSession time.Duration // 0 for none
	hold       time.Duration // learned mean hold, 0 when unknown
}

func (b basis) estimate(p int64) *waitroom.ETA {
	x := Estimate(p, b.n, b.span, b.limit)
	if x == nil || b.maxSession <= 0 || b.capacity <= 0 {
		return x
	}
	// Every active session is gone within max_session, so the whole
	// capacity turns over in that time: position p is in by then.
	most := int64(math.Ceil(float64((p+int64(b.capacity)-1)/int64(b.capacity)) * b.maxSession.Seconds()))
	x.High = min(x.High, most)
	x.Seconds = min(x.Seconds, most)
	x.Low = min(x.Low, x.Seconds)
	return x
}

// Estimate returns the wait for position p when n slots came free over
// span, in a room whose rate_per_minute is limit (0 for none). The range
// holds both the rate's uncertainty (n) and the wait's own (p turns).
func Estimate(p int64, n int, span time.Duration, limit int) *waitroom.ETA {
	if p < 1 || n < 1 || span <= 0 {
		return nil
	}
	rate := float64(n) / span.Seconds() // departures per second
	if limit > 0 {
		rate = math.Min(rate, float64(limit)/60)
	}
	rel := z90 * math.Sqrt(1/float64(n)+1/float64(p))
	mid := float64(p) / rate
	low := float64(p) / (rate * (1 + rel))
	high := float64(p) / (rate * math.Max(1-rel, 0.2))
	const most = float64(366 * 24 * 3600)
	return &waitroom.ETA{
		Seconds: int64(math.Ceil(math.Min(mid, most))),
		Low:     int64(math.Floor(math.Min(low, most))),
		High:    int64(math.Ceil(math.Min(high, most))),
	}
}
