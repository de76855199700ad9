// Package eta estimates how long a waiting session will wait, from the rate
// at which its room has been letting people in.
//
// The estimator remembers each room's last 256 admissions (waiting → active,
// waiting → served in manual rooms, and waiting → invited for a held place,
// whose turn it is: a claim is no second admission, and an invitation left
// unclaimed holds its slot a claim window, which the rate then shows) from
// the store's events, so it sees what every server process does. The rate is the number of admissions in
// the last ten minutes over the time from the oldest of them to now: it
// follows a room that speeds up within a few admissions, and falls while a
// room stalls. The estimate for position p is p divided by that rate; its
// range is the 90% interval of a Poisson count of that many admissions, so it
// is wide after a handful and narrows as they accumulate. There is no
// estimate before two admissions in the window, while a room is paused, or
// while it admits nobody; and none while fewer than 30 admissions span less
// than ten seconds: so little evidence over so short a time is a burst (a
// capacity raise, an operator's advance, a room's first moves), not a rate,
// and an estimate from it is off by orders of magnitude either way.
package eta

import (
	"math"
	"sync"
	"time"

	"github.com/waitroom/waitroom"
)

const (
	// window is how far back admissions count.
	window = 10 * time.Minute
	// keep is how many recent admissions a room remembers: enough for a
	// tight range, few enough that the rate follows a room that speeds up
	// or slows down.
	keep = 256
	// minAdmissions is the least evidence an estimate needs.
	minAdmissions = 2
	// Below fewAdmissions, an estimate needs a span of at least minSpan.
	fewAdmissions = 30
	minSpan       = 10 * time.Second
	// z90 is the two-sided 90% normal quantile.
	z90 = 1.645
)

// Estimator turns a room's admission history into ETAs. It is safe for
// concurrent use.
type Estimator struct {
	mu    sync.Mutex
	rooms map[string]*history
	stop  func()
}

// history is one room's most recent admissions.
type history struct {
	times  [keep]int64 // unix ms, a ring
	next   int         // where the next admission goes
	n      int         // admissions held (≤ keep)
	paused bool
	rate   int // rate_per_minute, when known from a config event
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

// Observe records an event's admissions. It is cheap and never blocks.
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
	}
	for _, c := range ev.Changes {
		if c.From != waitroom.StatusWaiting {
			continue
		}
		// A held session's invitation is its turn: the line moves then,
		// so the rate counts invitations and an unclaimed one's slot,
		// which frees a claim window later, slows the rate it measures.
		if to := c.Session.Status; to != waitroom.StatusActive && to != waitroom.StatusServed && to != waitroom.StatusInvited {
			continue
		}
		at := c.Session.AdmittedAt
		if at.IsZero() {
			at = c.Session.EndedAt
		}
		if at.IsZero() {
			at = ev.At
		}
		h.times[h.next] = at.UnixMilli()
		h.next = (h.next + 1) % keep
		h.n = min(h.n+1, keep)
	}
}

// recent returns how many admissions happened in the window before now and
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
	s.ETA = nil
	if s.Status != waitroom.StatusWaiting || s.Position < 1 {
		return
	}
	e.mu.Lock()
	h := e.rooms[s.Room]
	var k int
	var span time.Duration
	var paused bool
	var limit int
	if h != nil {
		k, span = h.recent(now)
		paused, limit = h.paused, h.rate
	}
	e.mu.Unlock()
	if h == nil || paused || k < minAdmissions || (k < fewAdmissions && span < minSpan) {
		return
	}
	// k admissions mark k-1 intervals up to the last; measuring to now
	// instead makes the rate fall while a room stalls.
	s.ETA = Estimate(s.Position, k-1, max(span, time.Millisecond), limit)
}

// Estimate returns the wait for position p when n admissions happened over
// span, in a room whose rate_per_minute is limit (0 for none).
func Estimate(p int64, n int, span time.Duration, limit int) *waitroom.ETA {
	if p < 1 || n < 1 || span <= 0 {
		return nil
	}
	rate := float64(n) / span.Seconds() // admissions per second
	if limit > 0 {
		rate = math.Min(rate, float64(limit)/60)
	}
	rel := z90 / math.Sqrt(float64(n))
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
