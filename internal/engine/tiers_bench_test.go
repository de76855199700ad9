package engine

import (
	"context"
	"testing"

	"github.com/waitroom/waitroom"
)

// tieredFilled is filled with three weighted tiers: a million waiting,
// spread over the tiers in turn.
func tieredFilled(tb testing.TB, n int) (*Store, []string) {
	tb.Helper()
	ctx := context.Background()
	s := New()
	cfg := waitroom.DefaultConfig()
	cfg.Capacity = 0
	cfg.Tiers = []waitroom.Tier{{Name: "a", Share: 0.5}, {Name: "b", Share: 0.3}, {Name: "c"}}
	cfg.TierPolicy = waitroom.TierWeighted
	if _, _, err := s.PutRoom(ctx, "r", cfg, benchT0); err != nil {
		tb.Fatal(err)
	}
	ids := make([]string, n)
	for i := range ids {
		x, err := s.JoinWith(ctx, "r", waitroom.JoinRequest{Tier: cfg.Tiers[i%3].Name}, benchT0)
		if err != nil {
			tb.Fatal(err)
		}
		ids[i] = x.ID
	}
	return s, ids
}

// BenchmarkPositionTiered is BenchmarkPosition in a room of three weighted
// tiers: a position counts the places ahead in every tier's line (a binary
// search and a Fenwick rank each), so it costs a few times the untiered.
func BenchmarkPositionTiered(b *testing.B) {
	s, ids := tieredFilled(b, million)
	benchPositions(b, s, ids)
}

// BenchmarkJoinTiered is BenchmarkJoin into the middle tier of a tiered
// million.
func BenchmarkJoinTiered(b *testing.B) {
	s, _ := tieredFilled(b, million)
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, err := s.JoinWith(ctx, "r", waitroom.JoinRequest{Tier: "b"}, benchT0); err != nil {
			b.Fatal(err)
		}
	}
}
