package push

import (
	"context"
	"testing"
	"time"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/memstore"
)

// TestTierJoinsReachWatchers: joins to a higher tier move everyone in the
// lower tier back; watchers far from the front are read again once those
// joins are a tenth of their position, as departures would be, without
// waiting for the refresh.
func TestTierJoinsReachWatchers(t *testing.T) {
	ctx := context.Background()
	s := &countingStore{Store: memstore.New()}
	cfg := waitroom.DefaultConfig()
	cfg.Capacity = 0
	cfg.Tiers = []waitroom.Tier{{Name: "vip"}, {Name: "general"}}
	if _, _, err := s.PutRoom(ctx, "r", cfg, t0); err != nil {
		t.Fatal(err)
	}
	const n = 300
	var all []waitroom.Session
	for range n {
		x, err := s.Join(ctx, "r", "", t0)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, x)
	}
	h := New(s, Options{Interval: 20 * time.Millisecond, Refresh: time.Hour, Front: 10, Step: 0.1})
	t.Cleanup(h.Close)
	var ws []*Watch
	for _, x := range all {
		cur, err := s.Session(ctx, "r", x.ID, t0)
		if err != nil {
			t.Fatal(err)
		}
		ws = append(ws, h.Watch(cur))
	}
	waitFor(t, "the first read of every watcher", func() bool { return s.ids.Load() >= int32(n) })
	time.Sleep(1100 * time.Millisecond) // past the one-second floor between reads
	for range 20 {
		if _, err := s.JoinWith(ctx, "r", waitroom.JoinRequest{Tier: "vip"}, t0); err != nil {
			t.Fatal(err)
		}
	}
	// Twenty joins ahead are a tenth of positions up to 200.
	deadline := time.Now().Add(10 * time.Second)
	for i := range 200 {
		for got, _ := ws[i].Latest(); got.Position != int64(i+21); got, _ = ws[i].Latest() {
			if time.Now().After(deadline) {
				t.Fatalf("watcher #%d: position %d, want %d after twenty vip joins", i+1, got.Position, i+21)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}
