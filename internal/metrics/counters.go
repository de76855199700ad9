package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/waitroom/waitroom"
)

// counters are fed by store events.
type counters struct {
	joins      *prometheus.CounterVec
	admissions *prometheus.CounterVec
	ends       *prometheus.CounterVec
}

func newCounters() *counters {
	return &counters{
		joins: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "waitroom_joins_total",
			Help: "Sessions created by joins, by room.",
		}, []string{"room"}),
		admissions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "waitroom_admissions_total",
			Help: "Sessions that became active, by room.",
		}, []string{"room"}),
		ends: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "waitroom_ends_total",
			Help: "Sessions that ended, by room, final status and reason.",
		}, []string{"room", "status", "reason"}),
	}
}

// ending is one (status, reason) pair and how often it occurred in an event.
type ending struct {
	status waitroom.Status
	reason waitroom.Reason
	n      int
}

// record counts one event. It runs on the goroutine of the store operation
// that made the change, so it only adds to counters: no I/O, no store calls,
// and one counter update per label set rather than per change (an advance
// may carry thousands of changes).
func (c *counters) record(ev waitroom.Event) {
	if ev.Kind == waitroom.EventDeleted {
		// The room is gone, whichever process deleted it; its series would
		// otherwise be exported forever. Sessions the deletion ended are not
		// counted: their series go with the rest.
		only := prometheus.Labels{"room": ev.Room}
		c.joins.DeletePartialMatch(only)
		c.admissions.DeletePartialMatch(only)
		c.ends.DeletePartialMatch(only)
		return
	}
	if ev.Remote {
		return // the process that made the change counts it
	}
	var joins, admissions int
	var ends []ending
	for _, ch := range ev.Changes {
		st := ch.Session.Status
		if ch.From == "" {
			joins++
		}
		switch {
		case (st == waitroom.StatusActive || st == waitroom.StatusInvited) && (ch.From == "" || ch.From == waitroom.StatusWaiting):
			// An admission, or a held session's invitation (its claim,
			// invited to active, is not a second admission).
			admissions++
		case st.Final() && !ch.From.Final():
			ends = addEnding(ends, st, ch.Session.EndReason)
		}
	}
	if joins > 0 {
		c.joins.WithLabelValues(ev.Room).Add(float64(joins))
	}
	if admissions > 0 {
		c.admissions.WithLabelValues(ev.Room).Add(float64(admissions))
	}
	for _, e := range ends {
		c.ends.WithLabelValues(ev.Room, string(e.status), string(e.reason)).Add(float64(e.n))
	}
}

// addEnding counts one ending; there are only a handful of distinct pairs,
// so a linear search beats a map.
func addEnding(ends []ending, st waitroom.Status, r waitroom.Reason) []ending {
	for i := range ends {
		if ends[i].status == st && ends[i].reason == r {
			ends[i].n++
			return ends
		}
	}
	return append(ends, ending{status: st, reason: r, n: 1})
}
