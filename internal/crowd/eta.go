package crowd

import (
	"time"
)

// How good the ETAs were. Each person keeps every distinct ETA their page
// showed (when, the estimate and its range); once the person is admitted,
// each is compared with the wait that really remained from the moment it
// was shown. The error of one ETA is relative to that remaining wait:
// |estimate − remaining| / remaining, with the remaining wait floored at one
// second (the resolution of the figures shown). The range covers the wait
// when low ≤ remaining ≤ high. An ETA "grew past its range" when a later
// ETA of the same person put the admission after the end of its range: a
// promise the room could not keep.

// maxETAs caps the ETAs a person keeps.
const maxETAs = 256

// ETAShown is one ETA a person's page showed: when (unix milliseconds, the
// person's clock), the estimate and its range in seconds.
type ETAShown struct {
	At      int64 `json:"t"`
	Seconds int64 `json:"s"`
	Low     int64 `json:"lo"`
	High    int64 `json:"hi"`
}

// ETAFigures summarise a set of ETAs against the real remaining waits.
type ETAFigures struct {
	// RelError is the relative error in percent.
	RelError Percentiles `json:"rel_error_pct"`
	// Covered is the share (0–1) of the ETAs whose range held the wait.
	Covered float64 `json:"range_coverage"`
}

// ETAReport is what a run measured about ETAs.
type ETAReport struct {
	// First is each admitted person's first ETA; All every ETA shown to
	// an admitted person.
	First ETAFigures `json:"first"`
	All   ETAFigures `json:"all"`
	// GrewPastRange counts the ETAs that a later ETA of the same person
	// put past their range's end; GrewPeople the people it happened to.
	GrewPastRange int `json:"grew_past_range"`
	GrewPeople    int `json:"grew_past_range_people"`
	Shown         int `json:"shown"`
	// Unknown is, per person who saw one, the time from the start
	// (the opening of a drop, else the person's first place in line) to
	// the first ETA: how long the page said "not known yet".
	UnknownMillis Percentiles `json:"not_known_ms"`
	// Never counts the people who had a place in line and no ETA all run.
	Never int `json:"never_shown"`
	// Overdue counts the people not admitted by the end of the run whose
	// first ETA's range had already ended (a known miss, left out of the
	// figures above, which need the real wait).
	Overdue int `json:"not_admitted_range_passed"`
	// Pending counts the people not admitted by the end of the run who
	// saw an ETA whose range had not ended.
	Pending int `json:"not_admitted_pending"`
}

// noteETA records an ETA the person's page showed, unless it is the one
// shown last.
func (r *UserResult) noteETA(at, s, lo, hi int64) {
	if n := len(r.ETAs); n > 0 {
		last := r.ETAs[n-1]
		if last.Seconds == s && last.Low == lo && last.High == hi {
			return
		}
		if n >= maxETAs {
			return
		}
	}
	r.ETAs = append(r.ETAs, ETAShown{At: at, Seconds: s, Low: lo, High: hi})
}

// etaScore returns an ETA's relative error (percent) and whether its range
// held the wait, for a person admitted at admitted (unix ms).
func etaScore(e ETAShown, admitted int64) (float64, bool) {
	remaining := admitted - e.At
	d := float64(e.Seconds*1000 - remaining)
	if d < 0 {
		d = -d
	}
	rel := 100 * d / float64(max(remaining, 1000))
	return rel, e.Low*1000 <= remaining && remaining <= e.High*1000
}

// summariseETAs fills rep.ETA from the people's ETAs; start, when not
// zero, is the drop's opening (unix ms), from which "not known yet" counts.
func summariseETAs(rep *Report, start int64, end int64) {
	var first, all []float64
	var firstIn, allIn int
	r := &rep.ETA
	var unknown []float64
	for _, u := range rep.UsersDetail {
		if len(u.ETAs) == 0 {
			if u.PositionSeenAt != 0 && (u.AdmittedAt == 0 || u.AdmittedAt > u.PositionSeenAt+1000) {
				r.Never++
			}
			continue
		}
		r.Shown += len(u.ETAs)
		from := u.PositionSeenAt
		if start != 0 {
			from = start
		}
		if from != 0 {
			unknown = append(unknown, float64(max(0, u.ETAs[0].At-from)))
		}
		// Grew past range: scan from the last, keeping the latest
		// admission any later ETA promised.
		grew := false
		latest := int64(-1 << 62)
		for i := len(u.ETAs) - 1; i >= 0; i-- {
			e := u.ETAs[i]
			if latest > e.At+e.High*1000 {
				r.GrewPastRange++
				grew = true
			}
			latest = max(latest, e.At+e.Seconds*1000)
		}
		if grew {
			r.GrewPeople++
		}
		if u.AdmittedAt == 0 {
			if e := u.ETAs[0]; e.At+e.High*1000 < end {
				r.Overdue++
			} else {
				r.Pending++
			}
			continue
		}
		for i, e := range u.ETAs {
			rel, in := etaScore(e, u.AdmittedAt)
			all = append(all, rel)
			if in {
				allIn++
			}
			if i == 0 {
				first = append(first, rel)
				if in {
					firstIn++
				}
			}
		}
	}
	r.First = ETAFigures{RelError: percentiles(first), Covered: share(firstIn, len(first))}
	r.All = ETAFigures{RelError: percentiles(all), Covered: share(allIn, len(all))}
	r.UnknownMillis = percentiles(unknown)
}

func share(k, n int) float64 {
	if n == 0 {
		return 0
	}
	return float64(k) / float64(n)
}

// unixMs is t in unix milliseconds, 0 for the zero time.
func unixMs(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}
