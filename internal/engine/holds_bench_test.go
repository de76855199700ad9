package engine

import (
	"context"
	"fmt"
	"testing"

	"github.com/waitroom/waitroom"
)

// BenchmarkNear measures what telling sessions they are near costs: joins
// at the back of a line of 100,000 and admissions from its front (a leave
// of the one active session admits the next), with notify_at 0 (off), 10
// and 1000 (the most). Compare the rows of one run: the machine is shared.
func BenchmarkNear(b *testing.B) {
	ctx := context.Background()
	for _, n := range []int{0, 10, waitroom.MaxNotifyAt} {
		setup := func(b *testing.B) (*Store, []string) {
			s := New()
			cfg := waitroom.DefaultConfig()
			cfg.Capacity, cfg.WaitingTimeout, cfg.NotifyAt = 1, 0, n
			if _, _, err := s.PutRoom(ctx, "r", cfg, benchT0); err != nil {
				b.Fatal(err)
			}
			s.Subscribe(func(waitroom.Event) {}) // events are made, as a server makes them
			ids := make([]string, 100_000)
			for i := range ids {
				x, err := s.Join(ctx, "r", "", benchT0)
				if err != nil {
					b.Fatal(err)
				}
				ids[i] = x.ID
			}
			return s, ids
		}
		b.Run(fmt.Sprintf("join/notify_at=%d", n), func(b *testing.B) {
			s, _ := setup(b)
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if _, err := s.Join(ctx, "r", "", benchT0); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("admit/notify_at=%d", n), func(b *testing.B) {
			s, ids := setup(b)
			b.ReportAllocs()
			b.ResetTimer()
			i := 0
			for b.Loop() {
				if i == len(ids) {
					b.StopTimer()
					s, ids = setup(b)
					i = 0
					b.StartTimer()
				}
				// ids[i] is the active one: its leave admits ids[i+1].
				if _, err := s.Leave(ctx, "r", ids[i], waitroom.ReasonLeft, benchT0); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}
