package roomstats

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/waitroom/waitroom"
)

// Summary is the answer of GET /v1/rooms/{room}/stats: the last hour of a
// room in 10-second points, and the waits and estimate errors of its last
// 15 minutes.
type Summary struct {
	Room string    `json:"room"`
	At   time.Time `json:"at"`
	// StepSeconds is the width of a point: 10.
	StepSeconds int `json:"step_seconds"`
	// Series holds SeriesPoints points, oldest first; the last is the
	// current, partial, bucket.
	Series   []Point  `json:"series"`
	Waits    Waits    `json:"waits"`
	Estimate Estimate `json:"estimate"`
}

// Point is one bucket of a room: the room's totals when last sampled
// (carried from the point before when the bucket has no sample) and the
// counts of the bucket.
type Point struct {
	T          time.Time `json:"t"`
	Waiting    int       `json:"waiting"`
	Active     int       `json:"active"`
	Joins      int64     `json:"joins"`
	Admissions int64     `json:"admissions"`
	Abandons   int64     `json:"abandons"`
}

// Waits sums up the waits of the admissions of the last WindowSeconds.
// The percentiles are within 5.2% of the exact ones (see
// WaitPercentile), and 0 when Count is.
type Waits struct {
	WindowSeconds int   `json:"window_seconds"`
	Count         int64 `json:"count"`
	P50Ms         int64 `json:"p50_ms"`
	P90Ms         int64 `json:"p90_ms"`
	P99Ms         int64 `json:"p99_ms"`
}

// Estimate says how good the room's estimates were: the estimate shown to
// the last person in line now (nil when nobody waits or there is none),
// and, over the last 15 minutes, the mean error and mean absolute error
// of the estimates of admitted sessions (actual wait − estimate; positive:
// people waited longer than told) over Count admissions, and the mean
// absolute error relative to each actual wait (in percent; see
// RelErrorBp).
type Estimate struct {
	LastETASeconds      *float64 `json:"last_eta_seconds"`
	Count               int64    `json:"count"`
	MeanErrorSeconds    float64  `json:"mean_error_seconds"`
	MeanAbsErrorSeconds float64  `json:"mean_abs_error_seconds"`
	MeanRelErrorPct     float64  `json:"mean_rel_error_pct"`
}

// The summary's shape.
const (
	// SeriesPoints is an hour of StatsStep points.
	SeriesPoints = int(time.Hour / waitroom.StatsStep)
	// Window is what the waits and the estimate errors sum up.
	Window = 15 * time.Minute
)

// Summary reads room's last hour from the ledger and sums it up as of
// now. The newest counts may be up to a second (Options.Sample) old: they
// are written once a second. Asking for a room makes the Recorder sample
// it from then on. It does not check that the room exists: a room without
// buckets has a flat series.
func (r *Recorder) Summary(ctx context.Context, room string, now time.Time) (Summary, error) {
	if err := waitroom.CheckRoomName(room); err != nil {
		return Summary{}, err
	}
	r.watch(room, now)
	last := waitroom.StatsBucketMs(now)
	first := last - int64(SeriesPoints-1)*step
	// One bucket more, before the window, gives the first point's gauges.
	buckets, err := r.ledger.Stats(ctx, room, time.UnixMilli(first-step))
	if err != nil {
		return Summary{}, fmt.Errorf("roomstats: summary of room %q: %w", room, err)
	}
	return summarize(room, now, buckets), nil
}

// summarize builds the Summary as of now from buckets, oldest first.
func summarize(room string, now time.Time, buckets []waitroom.StatsBucket) Summary {
	last := waitroom.StatsBucketMs(now)
	first := last - int64(SeriesPoints-1)*step
	windowFrom := last - (Window.Milliseconds()/step-1)*step
	s := Summary{
		Room: room, At: now.UTC(), StepSeconds: int(waitroom.StatsStep / time.Second),
		Series: make([]Point, SeriesPoints),
		Waits:  Waits{WindowSeconds: int(Window / time.Second)},
	}
	var hist [waitroom.WaitBins]int64
	var errMs, errAbsMs, relBp int64
	var waiting, active int
	eta := int64(-1)
	j := 0
	for i := range s.Series {
		t := first + int64(i)*step
		p := &s.Series[i]
		p.T = time.UnixMilli(t).UTC()
		for ; j < len(buckets) && waitroom.StatsBucketMs(buckets[j].At) <= t; j++ {
			b := &buckets[j]
			if b.HasGauges {
				waiting, active, eta = b.Waiting, b.Active, b.ETALastMs
			}
			if waitroom.StatsBucketMs(b.At) < t {
				continue // before the window: its gauges only
			}
			p.Joins += b.Joins
			p.Admissions += b.Admissions
			p.Abandons += b.Abandons
			if t >= windowFrom {
				for k, n := range b.Waits {
					hist[k] += n
				}
				s.Estimate.Count += b.EstN
				errMs += b.EstErrMs
				errAbsMs += b.EstErrAbsMs
				relBp += b.EstRelErrBp
			}
		}
		p.Waiting, p.Active = waiting, active
	}
	for _, n := range hist {
		s.Waits.Count += n
	}
	for _, q := range []struct {
		q   float64
		out *int64
	}{{0.5, &s.Waits.P50Ms}, {0.9, &s.Waits.P90Ms}, {0.99, &s.Waits.P99Ms}} {
		if d, ok := WaitPercentile(&hist, q.q); ok {
			*q.out = d.Milliseconds()
		}
	}
	if eta >= 0 {
		v := float64(eta) / 1000
		s.Estimate.LastETASeconds = &v
	}
	if n := s.Estimate.Count; n > 0 {
		s.Estimate.MeanErrorSeconds = roundMs(float64(errMs) / float64(n) / 1000)
		s.Estimate.MeanAbsErrorSeconds = roundMs(float64(errAbsMs) / float64(n) / 1000)
		s.Estimate.MeanRelErrorPct = math.Round(float64(relBp)/float64(n)) / 100
	}
	return s
}

// roundMs rounds seconds to milliseconds.
func roundMs(sec float64) float64 { return math.Round(sec*1000) / 1000 }

// Latest returns s with only its newest (partial) point: the data of the
// console's live "stats" event.
func (s Summary) Latest() Summary {
	if len(s.Series) > 0 {
		s.Series = s.Series[len(s.Series)-1:]
	}
	return s
}

// Rates are a room's joins and admissions per minute: the counts of the
// last six complete buckets (the last minute), for GET /v1/stats.
type Rates struct {
	JoinsPerMinute      int64 `json:"joins_per_minute"`
	AdmissionsPerMinute int64 `json:"admissions_per_minute"`
}

// Overview returns room's Rates as of now. Unlike Summary it does not
// make the Recorder sample the room: rates are counts, and a list of every
// room would otherwise have every room sampled each second.
func (r *Recorder) Overview(ctx context.Context, room string, now time.Time) (Rates, error) {
	if err := waitroom.CheckRoomName(room); err != nil {
		return Rates{}, err
	}
	cur := waitroom.StatsBucketMs(now)
	from := cur - time.Minute.Milliseconds()
	buckets, err := r.ledger.Stats(ctx, room, time.UnixMilli(from))
	if err != nil {
		return Rates{}, fmt.Errorf("roomstats: rates of room %q: %w", room, err)
	}
	var out Rates
	for _, b := range buckets {
		if t := waitroom.StatsBucketMs(b.At); t >= from && t < cur {
			out.JoinsPerMinute += b.Joins
			out.AdmissionsPerMinute += b.Admissions
		}
	}
	return out, nil
}
