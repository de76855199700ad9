package sqlitestore

import (
	"context"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/memstore"
)

// parallel64 runs join from 64 goroutines in all, whatever GOMAXPROCS is.
func parallel64(b *testing.B, st waitroom.Store) {
	b.SetParallelism(max(1, 64/runtime.GOMAXPROCS(0)))
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := st.Join(ctx, "r", "", t0); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

func benchRoom(b *testing.B, st waitroom.Store) {
	cfg := waitroom.DefaultConfig()
	cfg.Capacity = 0
	if _, _, err := st.PutRoom(context.Background(), "r", cfg, t0); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkDurableJoin measures joins committed to SQLite (WAL,
// synchronous=FULL) from 64 concurrent callers.
func BenchmarkDurableJoin(b *testing.B) {
	for _, mode := range []string{"FULL", "NORMAL"} {
		b.Run("sync="+mode, func(b *testing.B) {
			s, err := Open(context.Background(), filepath.Join(b.TempDir(), "waitroom.db"), WithSynchronous(mode))
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			benchRoom(b, s)
			parallel64(b, s)
		})
	}
}

// BenchmarkMemoryJoin is the baseline for BenchmarkDurableJoin: the same
// joins from 64 callers on the in-memory engine alone.
func BenchmarkMemoryJoin(b *testing.B) {
	s := memstore.New()
	benchRoom(b, s)
	parallel64(b, s)
}

// BenchmarkDurableJoinWebhook is BenchmarkDurableJoin (FULL) with a
// webhook on the room, so every join also writes its session.joined
// delivery to the outbox in the same transaction; compare the two.
func BenchmarkDurableJoinWebhook(b *testing.B) {
	for _, hooked := range []bool{false, true} {
		b.Run(map[bool]string{false: "none", true: "webhook"}[hooked], func(b *testing.B) {
			s, err := Open(context.Background(), filepath.Join(b.TempDir(), "waitroom.db"))
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			benchRoom(b, s)
			if hooked {
				if _, _, err := s.PutWebhook(context.Background(), waitroom.Webhook{Room: "r", Name: "w", URL: "https://example.com/",
					Events: []string{"*"}, Secret: waitroom.NewWebhookSecret()}, t0); err != nil {
					b.Fatal(err)
				}
			}
			parallel64(b, s)
		})
	}
}
