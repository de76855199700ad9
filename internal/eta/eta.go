// Package eta estimates how long a waiting session will wait, from the rate
// at which slots come free in its room.
//
// A line moves when a slot comes free: an active session leaves, expires or
// is ended, an invitation goes unclaimed (waiting → served in a manual
// room, where the operator's serving is the turn), or, in a room that is
// not full, at its rate_per_minute. The one-time fill of empty capacity (a
// drop's opening, a capacity raise, an operator's advance) moves the line
// once and says nothing about how fast it will move next, so admissions are
// not the rate: departures are. The estimator counts each room's departures
// of the last ten minutes, second by second, from the store's events (so
// it sees what every server process does; a departure is a fact of one
// session, whichever process made it), and remembers the time the last
// 256 departed sessions had held their slot.
//
// The rate is the number of recent departures, less one, over the time
// from the oldest of them to now, where recent means the last minute, or
// further back until there are 256 of them, at most ten minutes, less the
// oldest quarter of those (the departures of a room's first visitors, who
// came in over a second or two, start as a ramp): it follows a room that
// speeds up, and falls while a room stalls. The
// estimate for position p is p divided by that rate. Its range is the 90%
// interval of both uncertainties: that of the rate (a count of that many
// departures) and that of the wait itself (the time until p more
// departures), so it is wide after a handful of departures and for the
// first few in line. Departures come in waves (a drop's first visitors all
// leave about one hold time after the opening, then those they made room
// for): the counts of the seconds measured say how much more than a
// Poisson process's they vary, and the range widens by that much (four
// times the variance until ten seconds of departures show it). There is no estimate ("not known yet") while the room
// is paused, before two departures in the window, or while fewer than 150
// of them span less than a minute, unless the room's own configuration and
// history give a basis:
//
//   - a room that is not full and has a rate_per_minute moves at that rate;
//   - a hold time learned from the room's earlier sessions (at least 20
//     of them, before its current run of departures, whose first are
//     its shortest holds) gives capacity / mean hold departures a second;
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
	// secs is the window in seconds: a room's departures are counted in
	// a ring of that many one-second buckets.
	secs = int64(window / time.Second)
	// keep is how many departures the rate wants, and how many held slots
	// a room remembers; recent is how far back, in seconds, the rate looks
	// at least.
	keep   = 256
	recent = 60
	// refresh is how long a room's measure serves Fill unless a departure
	// came since.
	refresh = 100 * time.Millisecond
	// minDepartures is the least evidence an estimate needs.
	minDepartures = 2
	// Below fewDepartures, an estimate needs a span of at least minSpan:
	// the first ETA a whole line sees rests on the same few departures,
	// so it must not rest on a handful (30 departures put the rate
	// within ±30% at 90%; 150, the oldest quarter left out, within ±16%).
	fewDepartures = 150
	minSpan       = time.Minute
	// minHolds is how many held slots a learned hold time needs, and
	// priorWeight how many departures' evidence it is worth.
	minHolds    = 20
	priorWeight = 8
	// unmeasured is the dispersion taken before ten seconds of
	// departures show it: a drop's first departures come in a wave (its
	// first visitors leave about one hold time after the opening, at
	// once), so the rate of its first seconds is not the rate that
	// follows.
	unmeasured = 4
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
	ring     *seconds // nil before the room's first departure
	cached   measure  // the last measure, taken at cachedAt (unix ms)
	cachedAt int64
	dirty    bool        // a departure came since the measure
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
	lastDep  int64         // unix ms of the latest departure
	// prior is the mean hold learned before the room's current run of
	// departures (0 when unknown): the holds of a run's first departures
	// are its shortest, so they are no prior for it.
	prior time.Duration
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
		if ms := at.UnixMilli(); ms-h.lastDep > window.Milliseconds() {
			// A new run of departures after a quiet window.
			h.prior = h.meanHold()
		}
		h.add(at.UnixMilli())
		h.lastDep = max(h.lastDep, at.UnixMilli())
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

// seconds counts a room's departures of the window, a ring of one-second
// buckets by unix second.
type seconds struct {
	count [secs]int32  // departures in the bucket's second
	sec   [secs]int64  // the unix second the bucket holds
	first [secs]uint16 // the millisecond of the earliest departure in it
}

// meanHold is the mean of the holds learned, 0 for fewer than minHolds.
func (h *history) meanHold() time.Duration {
	if h.holdN < minHolds || h.holdSum <= 0 {
		return 0
	}
	return time.Duration(h.holdSum/int64(h.holdN)) * time.Millisecond
}

// add counts a departure at ms (unix milliseconds).
func (h *history) add(ms int64) {
	if h.ring == nil {
		h.ring = new(seconds)
	}
	r := h.ring
	sec := floorDiv(ms, 1000)
	off := uint16(ms - sec*1000)
	i := bucket(sec)
	if r.sec[i] != sec {
		if r.sec[i] > sec {
			return // older than the window
		}
		r.sec[i], r.count[i], r.first[i] = sec, 0, off
	}
	r.count[i]++
	r.first[i] = min(r.first[i], off)
	h.dirty = true
}

// bucket is the ring index of unix second sec.
func bucket(sec int64) int64 {
	i := sec % secs
	if i < 0 {
		i += secs
	}
	return i
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b < 0 {
		q--
	}
	return q
}

// measure is what a room's recent departures say: k departures, the time
// from the oldest of them to now, and how many times more their counts per
// second vary than a Poisson process's (at least 1).
type measure struct {
	k    int
	span time.Duration
	disp float64
	// all counts the departures before the oldest quarter was left out:
	// the evidence an estimate needs.
	all int
}

// recent measures the departures before now, from a measure at most
// refresh old when no departure came since.
func (h *history) recent(now time.Time) measure {
	ms := now.UnixMilli()
	if !h.dirty && ms >= h.cachedAt && ms-h.cachedAt < refresh.Milliseconds() {
		return h.cached
	}
	h.cached, h.cachedAt, h.dirty = h.measure(ms), ms, false
	return h.cached
}

func (h *history) measure(ms int64) measure {
	r := h.ring
	if r == nil {
		return measure{disp: 1}
	}
	ns := floorDiv(ms, 1000)
	k, oldest, oldestSec := 0, int64(0), int64(0)
	// From two seconds ahead: another process's clock may run a little
	// fast.
	for sec := ns + 2; sec > ns-secs; sec-- {
		if ns-sec >= recent && k >= keep {
			break
		}
		i := bucket(sec)
		if r.sec[i] != sec || r.count[i] == 0 {
			continue
		}
		k += int(r.count[i])
		oldest, oldestSec = sec*1000+int64(r.first[i]), sec
	}
	all := k
	// Leave out the oldest quarter: a room that has just filled lets its
	// first visitors in over a second or two, so their departures start
	// as a ramp, slower than the rate that follows.
	if k >= 8 {
		skipped := 0
		for sec := oldestSec; sec <= ns+2; sec++ {
			i := bucket(sec)
			if r.sec[i] != sec || r.count[i] == 0 {
				continue
			}
			if skipped+int(r.count[i]) > k/4 {
				k, oldest, oldestSec = k-skipped, sec*1000+int64(r.first[i]), sec
				break
			}
			skipped += int(r.count[i])
		}
	}
	m := measure{k: k, all: all, span: time.Duration(ms-oldest) * time.Millisecond, disp: 1}
	// The dispersion, over the whole seconds after the oldest one's;
	// until there are ten of them it is not known, and taken as large.
	n := ns - oldestSec - 1
	if n < 10 {
		m.disp = unmeasured
		return m
	}
	var sum, sq float64
	for sec := oldestSec + 1; sec < ns; sec++ {
		c := 0.0
		if i := bucket(sec); r.sec[i] == sec {
			c = float64(r.count[i])
		}
		sum += c
		sq += c * c
	}
	if mean := sum / float64(n); mean > 0 {
		v := sq/float64(n) - mean*mean
		m.disp = min(max(v/mean, 1), 25)
	}
	return m
}

// Fill sets s.ETA for a waiting session when there is a basis for one, and
// clears it otherwise, saying why in s.ETAUnknown.
func (e *Estimator) Fill(s *waitroom.Session, now time.Time) {
	s.ETA, s.ETAUnknown = e.Estimate(s, now)
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
	m := h.recent(now)
	k, span := m.all, m.span
	b := basis{limit: h.rate, capacity: h.capacity, maxSession: h.maxSess}
	b.hold = h.prior
	if k == 0 {
		// Every hold learned is from an earlier run.
		b.hold = h.meanHold()
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
		b.n, b.span, b.disp = m.k-1, max(span, time.Millisecond), m.disp
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
	disp       float64       // dispersion of departures (≥ 1; 0 counts as 1)
}

func (b basis) estimate(p int64) *waitroom.ETA {
	x := estimate(p, b.n, b.span, b.limit, max(b.disp, 1))
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
	return estimate(p, n, span, limit, 1)
}

// estimate is Estimate for departures whose counts vary disp times as much
// as a Poisson process's.
func estimate(p int64, n int, span time.Duration, limit int, disp float64) *waitroom.ETA {
	if p < 1 || n < 1 || span <= 0 {
		return nil
	}
	rate := float64(n) / span.Seconds() // departures per second
	if limit > 0 {
		rate = math.Min(rate, float64(limit)/60)
	}
	rel := z90 * math.Sqrt(disp*(1/float64(n)+1/float64(p)))
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
