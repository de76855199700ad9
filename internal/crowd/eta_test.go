package crowd

import (
	"math"
	"testing"
)

// TestSummariseETAs checks the ETA figures on people whose waits are known:
// the error is relative to the wait that remained when each ETA was shown,
// the range either holds that wait or not, and an ETA a later one put past
// its range's end is counted.
func TestSummariseETAs(t *testing.T) {
	rep := &Report{UsersDetail: []UserResult{
		// Shown at 0 "10s (8–12)", admitted at 10s: exact, covered.
		{User: 1, JoinedAt: 1, PositionSeenAt: 0, AdmittedAt: 10_000, ETAs: []ETAShown{{At: 0, Seconds: 10, Low: 8, High: 12}}},
		// Shown at 0 "2s (1–3)", then at 2s "18s (15–20)": the first grew
		// past its range; admitted at 20s, so the first is off by 90%
		// and not covered, the second exact.
		{User: 2, JoinedAt: 1, AdmittedAt: 20_000, ETAs: []ETAShown{{At: 0, Seconds: 2, Low: 1, High: 3}, {At: 2_000, Seconds: 18, Low: 15, High: 20}}},
		// Not admitted by the end (30s): one range passed, one pending.
		{User: 3, JoinedAt: 1, ETAs: []ETAShown{{At: 0, Seconds: 5, Low: 4, High: 6}}},
		{User: 4, JoinedAt: 1, ETAs: []ETAShown{{At: 0, Seconds: 50, Low: 40, High: 60}}},
		// A place in line and never an ETA.
		{User: 5, JoinedAt: 1, PositionSeenAt: 5},
	}}
	summariseETAs(rep, 0, 30_000)
	e := rep.ETA
	if e.First.RelError.N != 2 || e.First.RelError.Max != 90 || e.First.Covered != 0.5 {
		t.Errorf("first ETAs: %+v, want 2 with errors 0%% and 90%%, half covered", e.First)
	}
	if e.All.RelError.N != 3 || math.Abs(e.All.Covered-2.0/3) > 1e-9 {
		t.Errorf("all ETAs: %+v, want 3, two thirds covered", e.All)
	}
	if e.GrewPastRange != 1 || e.GrewPeople != 1 {
		t.Errorf("grew past range: %d ETAs of %d people, want 1 of 1", e.GrewPastRange, e.GrewPeople)
	}
	if e.Overdue != 1 || e.Pending != 1 || e.Never != 1 || e.Shown != 5 {
		t.Errorf("overdue %d, pending %d, never %d, shown %d; want 1, 1, 1, 5", e.Overdue, e.Pending, e.Never, e.Shown)
	}
	var u UserResult
	u.noteETA(0, 5, 4, 6)
	u.noteETA(100, 5, 4, 6)
	u.noteETA(200, 4, 3, 5)
	if len(u.ETAs) != 2 {
		t.Errorf("noted %d ETAs, want 2 (a repeat is not noted)", len(u.ETAs))
	}
}
