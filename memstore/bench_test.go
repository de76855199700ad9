package memstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/internal/engine"
	"github.com/waitroom/waitroom/memstore"
)

// The engine's own benchmarks (internal/engine) measure the state machine.
// These measure what the wrapper adds on top, through waitroom.Store as a
// server calls it: one more interface call per method.

var benchT0 = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

// benchStores are the engine alone and the same engine behind memstore.
func benchStores() []struct {
	name string
	s    waitroom.Store
} {
	return []struct {
		name string
		s    waitroom.Store
	}{{"engine", engine.New()}, {"memstore", memstore.New()}}
}

// fill makes room "r" with n waiting sessions (capacity 0) and returns
// their ids.
func fill(tb testing.TB, s waitroom.Store, n int) []string {
	tb.Helper()
	ctx := context.Background()
	cfg := waitroom.DefaultConfig()
	cfg.Capacity = 0
	if _, _, err := s.PutRoom(ctx, "r", cfg, benchT0); err != nil {
		tb.Fatal(err)
	}
	ids := make([]string, n)
	for i := range ids {
		x, err := s.Join(ctx, "r", "", benchT0)
		if err != nil {
			tb.Fatal(err)
		}
		ids[i] = x.ID
	}
	return ids
}

// BenchmarkWrapperPosition reads positions (Store.Session) in a line of
// 100,000, from the engine and from memstore.
func BenchmarkWrapperPosition(b *testing.B) {
	for _, c := range benchStores() {
		ids := fill(b, c.s, 100_000)
		b.Run(c.name, func(b *testing.B) {
			ctx := context.Background()
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				x, err := c.s.Session(ctx, "r", ids[i%len(ids)], benchT0)
				if err != nil || x.Position == 0 {
					b.Fatal(err, x.Position)
				}
				i += 7919 // a prime stride: reads land all over the line
			}
		})
		_ = c.s.Close()
	}
}

// BenchmarkWrapperJoin joins the back of a line, on the engine and on
// memstore.
func BenchmarkWrapperJoin(b *testing.B) {
	for _, c := range benchStores() {
		fill(b, c.s, 1)
		b.Run(c.name, func(b *testing.B) {
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if _, err := c.s.Join(ctx, "r", "", benchT0); err != nil {
					b.Fatal(err)
				}
			}
		})
		_ = c.s.Close()
	}
}

// BenchmarkWrapperPing isolates the wrapper's own cost: Ping does almost
// nothing in the engine, so the difference is the extra call.
func BenchmarkWrapperPing(b *testing.B) {
	for _, c := range benchStores() {
		b.Run(c.name, func(b *testing.B) {
			ctx := context.Background()
			for b.Loop() {
				if err := c.s.Ping(ctx); err != nil {
					b.Fatal(err)
				}
			}
		})
		_ = c.s.Close()
	}
}
