package push

import (
	"testing"
	"time"

	"github.com/waitroom/waitroom"
)

// TestSameForPreQueue checks which changes of a pre-queue entrant wake its
// watcher: the draw (a ticket and a position), a moved opening, and a
// change of the pre-queue's size that a person would notice.
func TestSameForPreQueue(t *testing.T) {
	opens := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	e := waitroom.Session{Status: waitroom.StatusWaiting, OpensAt: opens, Entrants: 10}
	for _, tc := range []struct {
		name string
		b    func(waitroom.Session) waitroom.Session
		same bool
	}{
		{"nothing", func(s waitroom.Session) waitroom.Session { return s }, true},
		{"one more of 10", func(s waitroom.Session) waitroom.Session { s.Entrants = 11; return s }, false},
		{"the draw", func(s waitroom.Session) waitroom.Session {
			s.Ticket, s.Position, s.OpensAt, s.Entrants = 7, 7, time.Time{}, 0
			return s
		}, false},
		{"a moved opening", func(s waitroom.Session) waitroom.Session { s.OpensAt = opens.Add(time.Minute); return s }, false},
		{"stock appears", func(s waitroom.Session) waitroom.Session { s.Stocked, s.Remaining = true, 0; return s }, false},
		{"stock moves", func(s waitroom.Session) waitroom.Session { s.Stocked, s.Remaining = true, 4; return s }, false},
	} {
		if got := same(e, tc.b(e), true); got != tc.same {
			t.Errorf("%s: same = %v, want %v", tc.name, got, tc.same)
		}
	}
	big := waitroom.Session{Status: waitroom.StatusWaiting, OpensAt: opens, Entrants: 10_000}
	for _, tc := range []struct {
		entrants int
		same     bool
	}{{10_001, true}, {10_999, true}, {11_000, false}, {9_000, false}, {9_001, true}} {
		b := big
		b.Entrants = tc.entrants
		if got := same(big, b, true); got != tc.same {
			t.Errorf("10,000 entrants then %d: same = %v, want %v (a move of a tenth wakes the watcher)", tc.entrants, got, tc.same)
		}
	}
}
