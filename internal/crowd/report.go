package crowd

import (
	"cmp"
	"slices"
	"time"

	"github.com/waitroom/waitroom"
)

// Report is what a run measured.
type Report struct {
	Config           Config      `json:"config"`
	Started          time.Time   `json:"started"`
	Seconds          float64     `json:"seconds"`
	Users            int         `json:"users"`
	Joined           int         `json:"joined"`
	JoinErrors       int         `json:"join_errors"`
	Admitted         int         `json:"admitted"`
	Left             int         `json:"left"`
	Abandoned        int         `json:"abandoned"`
	Lost             int         `json:"lost"`
	Reconnects       int         `json:"reconnects"`
	Updates          int         `json:"updates_received"`
	DuplicateTickets int         `json:"duplicate_tickets"`
	PositionUps      int         `json:"position_increases"`
	JoinMillis       Percentiles `json:"join_ms"`
	AdmitDelayMillis Percentiles `json:"admission_delivery_ms"`
	// SlotMillis is, for each admission from the line that a seen end of
	// an admitted session made room for, the time from that slot freeing
	// (the server's ended_at) to the admitted person seeing it; SlotServer
	// is the server's part of it (admitted_at - ended_at).
	SlotMillis       Percentiles `json:"slot_to_admission_seen_ms"`
	SlotServerMillis Percentiles `json:"slot_to_admission_ms"`
	Inversions       int64       `json:"fifo_inversions"`
	KendallTau       float64     `json:"kendall_tau_distance"`
	ETAErrorSeconds  Percentiles `json:"eta_abs_error_s"`
	ETASamples       int         `json:"eta_samples"`
	// ETA is how good the ETAs were, relative to each person's
	// remaining wait (see ETAReport).
	ETA       ETAReport `json:"eta"`
	Capacity  int       `json:"capacity"`
	MaxActive int       `json:"max_active"`
	Checks    []Check   `json:"position_checks"`
	Series    []Sample  `json:"series"`
	// Admissions counts admissions (the server's admitted_at) in each
	// second of the run: element i is second i after Started.
	Admissions []int `json:"admissions_per_second"`
	// JoinFailures counts the people whose join failed for good, by what
	// its last try met ("429 rate_limited", "connection refused").
	JoinFailures map[string]int `json:"join_failures,omitempty"`
	// RequestErrors counts the failed requests of everyone, by kind and
	// cause ("stream: connection reset"), whether a retry then succeeded
	// or not.
	RequestErrors map[string]int `json:"request_errors,omitempty"`
	// StoppedEarly says why the run stopped before its time (most joins
	// failed, or no server could be reached); empty when it played on.
	StoppedEarly string `json:"stopped_early,omitempty"`
	// CreatedRoom is set when the run created its room (Options.Create).
	CreatedRoom bool `json:"created_room,omitempty"`
	// Errors are what went wrong with the run itself (a worker, a position
	// check).
	Errors []string `json:"errors,omitempty"`
	// Drop is set for a run against a scheduled room's opening.
	Drop        *DropReport  `json:"drop,omitempty"`
	UsersDetail []UserResult `json:"people"`
}

// Check is one freeze-and-compare of every user's latest position.
type Check struct {
	At        time.Time `json:"at"`
	Compared  int       `json:"compared"`
	Wrong     int       `json:"wrong"`
	Waiting   int       `json:"waiting"`
	FirstDiff string    `json:"first_diff,omitempty"`
}

// Sample is the room's status at one moment.
type Sample struct {
	T        float64 `json:"t"`
	Waiting  int     `json:"waiting"`
	Active   int     `json:"active"`
	Joined   int     `json:"joined"`
	Entrants int     `json:"entrants,omitempty"`
	// Updates is how many stream updates the crowd had received by then
	// (as its workers last reported, once a second).
	Updates int64 `json:"updates,omitempty"`
}

// Percentiles summarise a distribution.
type Percentiles struct {
	N   int     `json:"n"`
	P50 float64 `json:"p50"`
	P90 float64 `json:"p90"`
	P99 float64 `json:"p99"`
	Max float64 `json:"max"`
}

func percentiles(v []float64) Percentiles {
	if len(v) == 0 {
		return Percentiles{}
	}
	slices.Sort(v)
	at := func(q float64) float64 { return v[min(len(v)-1, int(q*float64(len(v))))] }
	return Percentiles{N: len(v), P50: at(0.5), P90: at(0.9), P99: at(0.99), Max: v[len(v)-1]}
}

// lineAdmission is the admission of someone who waited in line (times in
// unix milliseconds; Seen by the person's clock, the rest by the server's).
type lineAdmission struct{ Ticket, Joined, Admitted, Seen int64 }

// slotDelays pairs freed slots with the admissions from the line that
// filled them: slots fill in the order they free, so the admissions, in
// the order they happened, take the earliest slot freed no later than
// themselves. A slot that freed before the person joined went to someone
// who walked straight in, and is passed over; an admission with no slot
// freed before it came from a slot the crowd never saw end (an abandoned
// session timing out, a capacity raise) and is left out. It returns, per
// pair, the time until the person saw the admission and the server's part
// of it, in milliseconds.
func slotDelays(frees []int64, adms []lineAdmission) (seen, server []float64) {
	frees = slices.Clone(frees)
	slices.Sort(frees)
	adms = slices.Clone(adms)
	slices.SortFunc(adms, func(a, b lineAdmission) int {
		if a.Admitted != b.Admitted {
			return cmp.Compare(a.Admitted, b.Admitted)
		}
		return cmp.Compare(a.Ticket, b.Ticket)
	})
	i := 0
	for _, a := range adms {
		for i < len(frees) && frees[i] < a.Joined {
			i++
		}
		if i == len(frees) || frees[i] > a.Admitted {
			continue
		}
		seen = append(seen, float64(max(0, a.Seen-frees[i])))
		server = append(server, float64(a.Admitted-frees[i]))
		i++
	}
	return seen, server
}

// summarise fills the report's totals from the users' results.
func summarise(rep *Report) {
	var joins, delays, etaErr []float64
	tickets := map[int64]int{}
	type adm struct{ ticket, at int64 }
	var admitted []adm
	var frees []int64
	var fromLine []lineAdmission
	for _, u := range rep.UsersDetail {
		if u.FreedAt != 0 {
			frees = append(frees, u.FreedAt)
		}
		if u.AdmittedAt > u.JoinedAt && u.JoinedAt != 0 && u.AdmitSeenAt != 0 {
			fromLine = append(fromLine, lineAdmission{Ticket: u.Ticket, Joined: u.JoinedAt, Admitted: u.AdmittedAt, Seen: u.AdmitSeenAt})
		}
		// An entrant of a pre-queue joined without a ticket; it has one
		// once the draw reached it.
		for c, n := range u.Causes {
			if rep.RequestErrors == nil {
				rep.RequestErrors = make(map[string]int)
			}
			rep.RequestErrors[c] += n
		}
		if u.JoinError != "" || u.JoinedAt == 0 {
			rep.JoinErrors++
			if c := cmp.Or(u.JoinCause, u.JoinError); c != "" {
				if rep.JoinFailures == nil {
					rep.JoinFailures = make(map[string]int)
				}
				rep.JoinFailures[c]++
			}
			continue
		}
		rep.Joined++
		if u.Ticket != 0 {
			tickets[u.Ticket]++
		}
		joins = append(joins, float64(u.JoinMicros)/1000)
		if u.AdmittedAt != 0 {
			rep.Admitted++
			admitted = append(admitted, adm{u.Ticket, u.AdmittedAt})
			if u.AdmitSeenAt != 0 {
				delays = append(delays, float64(max(0, u.AdmitSeenAt-u.AdmittedAt)))
			}
			if u.FirstETAAt != 0 {
				predicted := u.FirstETAAt + u.FirstETA*1000
				d := float64(u.AdmittedAt-predicted) / 1000
				etaErr = append(etaErr, max(d, -d))
			}
		}
		// A leave's answer can be cut off when the person's own stream
		// reports the end first (that ends the person's requests); the
		// status the stream saw still says the person left.
		if u.Left || (u.Final == string(waitroom.StatusLeft) && !u.Abandoned) {
			rep.Left++
		}
		if u.Abandoned {
			rep.Abandoned++
		}
		if u.Lost {
			rep.Lost++
		}
		rep.Reconnects += u.Reconnects
		rep.Updates += u.Updates
		rep.PositionUps += u.PosUps
	}
	for _, n := range tickets {
		if n > 1 {
			rep.DuplicateTickets += n - 1
		}
	}
	rep.JoinMillis = percentiles(joins)
	rep.AdmitDelayMillis = percentiles(delays)
	seen, server := slotDelays(frees, fromLine)
	rep.SlotMillis, rep.SlotServerMillis = percentiles(seen), percentiles(server)
	rep.ETAErrorSeconds = percentiles(etaErr)
	rep.ETASamples = len(etaErr)
	// Fairness: order admissions by time (ties by ticket, so equal times
	// never count) and count pairs whose tickets are out of order.
	slices.SortFunc(admitted, func(a, b adm) int {
		if a.at != b.at {
			return int(a.at - b.at)
		}
		return int(a.ticket - b.ticket)
	})
	seq := make([]int64, len(admitted))
	for i, a := range admitted {
		seq[i] = a.ticket
	}
	rep.Inversions = inversions(seq)
	at := make([]int64, len(admitted))
	for i, a := range admitted {
		at[i] = a.at
	}
	rep.Admissions = perSecond(rep.Started, rep.Seconds, at)
	if n := int64(len(seq)); n > 1 {
		rep.KendallTau = float64(rep.Inversions) / float64(n*(n-1)/2)
	}
}

// inversions counts pairs i < j with v[i] > v[j], in O(n log n).
func inversions(v []int64) int64 {
	if len(v) < 2 {
		return 0
	}
	mid := len(v) / 2
	left, right := slices.Clone(v[:mid]), slices.Clone(v[mid:])
	n := inversions(left) + inversions(right)
	i, j, k := 0, 0, 0
	for i < len(left) && j < len(right) {
		if left[i] <= right[j] {
			v[k] = left[i]
			i++
		} else {
			v[k] = right[j]
			j++
			n += int64(len(left) - i)
		}
		k++
	}
	for ; i < len(left); i++ {
		v[k] = left[i]
		k++
	}
	for ; j < len(right); j++ {
		v[k] = right[j]
		k++
	}
	return n
}
