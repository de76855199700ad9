package crowd

import (
	"slices"
	"testing"
)

// TestSlotDelays checks how freed slots pair with admissions from the
// line: in order, never with a slot freed before the person joined, and
// never with one freed after the admission.
func TestSlotDelays(t *testing.T) {
	cases := []struct {
		name         string
		frees        []int64
		adms         []lineAdmission
		seen, server []float64
	}{
		{
			name:  "each slot fills the next in line",
			frees: []int64{200, 100},
			adms: []lineAdmission{
				{Ticket: 2, Joined: 60, Admitted: 200, Seen: 260},
				{Ticket: 1, Joined: 50, Admitted: 100, Seen: 130},
			},
			seen: []float64{30, 60}, server: []float64{0, 0},
		},
		{
			name:  "a slot freed before the person joined went to a walk-in",
			frees: []int64{10, 300},
			adms:  []lineAdmission{{Ticket: 7, Joined: 20, Admitted: 305, Seen: 340}},
			seen:  []float64{40}, server: []float64{5},
		},
		{
			name:  "an admission with no seen slot before it is left out",
			frees: []int64{500},
			adms: []lineAdmission{
				{Ticket: 3, Joined: 20, Admitted: 400, Seen: 410}, // an abandoned slot timed out
				{Ticket: 4, Joined: 30, Admitted: 500, Seen: 520},
			},
			seen: []float64{20}, server: []float64{0},
		},
		{
			name:  "a person's clock behind the server's counts as no delay",
			frees: []int64{100},
			adms:  []lineAdmission{{Ticket: 1, Joined: 50, Admitted: 100, Seen: 90}},
			seen:  []float64{0}, server: []float64{0},
		},
		{name: "nothing freed", adms: []lineAdmission{{Ticket: 1, Joined: 1, Admitted: 2, Seen: 3}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			seen, server := slotDelays(c.frees, c.adms)
			if !slices.Equal(seen, c.seen) || !slices.Equal(server, c.server) {
				t.Errorf("got seen %v server %v, want seen %v server %v", seen, server, c.seen, c.server)
			}
		})
	}
}
