// Package eta estimates how long a waiting session will wait, from the rate
// at which its room has been letting people in.
//
// The estimator counts admissions (waiting → active, and waiting → served in
// manual rooms) per room in ten-second buckets over the last ten minutes,
// from the store's events, so it sees what every server process does. The
// estimate for position p is p divided by the observed rate; its range is the
// 90% interval of a Poisson count of that many admissions, so it is wide
// after a handful of admissions and narrows as they accumulate. There is no
// estimate before two admissions in the window, while a room is paused, or
// while it admits nobody.
package eta

import (
	"math"
	"sync"
	"time"

	"github.com/waitroom/waitroom"
)

const (
	bucket  = 10 * time.Second
	buckets = 60 // ten minutes
	// minAdmissions is the least evidence an estimate needs.
	minAdmissions = 2
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

// history is one room's admissions, bucketed by time.
type history struct {
	counts [buckets]int
	starts [buckets]int64 // bucket start (unix ns) each count belongs to
	since  time.Time      // first event seen: the window is never longer than what was watched
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
		h = &history{since: ev.At}
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
		if to := c.Session.Status; to != waitroom.StatusActive && to != waitroom.StatusServed {
			continue
		}
		at := c.Session.AdmittedAt
		if at.IsZero() {
			at = c.Session.EndedAt
		}
		if at.IsZero() {
			at = ev.At
		}
		h.add(at)
	}
}

func (h *history) add(at time.Time) {
	start := at.Truncate(bucket).UnixNano()
	i := int((start / int64(bucket)) % buckets)
	if h.starts[i] != start {
		h.starts[i], h.counts[i] = start, 0
	}
	h.counts[i]++
	if at.Before(h.since) {
		h.since = at
	}
}

// window returns the admissions in the ten minutes before now and the
// length of time they were counted over.
func (h *history) window(now time.Time) (n int, span time.Duration) {
	oldest := now.Add(-buckets * bucket).UnixNano()
	for i := range h.counts {
		if h.starts[i] > oldest && h.starts[i] <= now.UnixNano() {
			n += h.counts[i]
		}
	}
	span = buckets * bucket
	if watched := now.Sub(h.since); watched < span {
		span = max(watched, bucket)
	}
	return n, span
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
	var n int
	var span time.Duration
	var paused bool
	var limit int
	if h != nil {
		n, span = h.window(now)
		paused, limit = h.paused, h.rate
	}
	e.mu.Unlock()
	if h == nil || paused || n < minAdmissions {
		return
	}
	s.ETA = Estimate(s.Position, n, span, limit)
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
