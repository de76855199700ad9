package sqlitestore

import (
	"context"
	"fmt"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/waitroom/waitroom"
)

// TestPutWebhookDuringJoins puts webhooks while joins stream into the same
// room: a put rides the group commit, and must never wait on a change of
// its own batch (which would hang the writer, and with it the store).
func TestPutWebhookDuringJoins(t *testing.T) {
	s, err := Open(context.Background(), filepath.Join(t.TempDir(), "waitroom.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cfg := waitroom.DefaultConfig()
	cfg.Capacity = 0
	if _, _, err := s.PutRoom(ctx, "r", cfg, time.Now()); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	defer func() { close(stop); wg.Wait() }() // before the store closes
	for range 8 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				if _, err := s.Join(ctx, "r", "", time.Now()); err != nil {
					t.Errorf("join: %v", err)
					return
				}
			}
		})
	}
	done := make(chan error, 1)
	var puts atomic.Int64
	go func() {
		for i := range 200 {
			h := waitroom.Webhook{Room: "r", Name: fmt.Sprintf("w%d", i%waitroom.MaxWebhooks), URL: "https://example.com/", Events: []string{"*"}, Secret: waitroom.NewWebhookSecret()}
			if _, _, err := s.PutWebhook(ctx, h, time.Now()); err != nil {
				done <- err
				return
			}
			puts.Add(1)
		}
		done <- nil
	}()
	// A hang is no put for 10 s; a machine whose CPUs are saturated may
	// take long for all 200 (one did take over 20 s), which is no hang.
	for last, since := int64(-1), time.Now(); ; {
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("put webhook: %v", err)
			}
			return
		case <-time.After(100 * time.Millisecond):
		}
		if n := puts.Load(); n != last {
			last, since = n, time.Now()
		} else if time.Since(since) > 10*time.Second {
			buf := make([]byte, 1<<20)
			t.Fatalf("no webhook put finished in 10 s (after %d of 200): the writer hung\n%s", n, buf[:runtime.Stack(buf, true)])
		}
	}
}

// TestRestartKeepsClosingTold: a room.closed told before a restart is not
// told again after it; a closes_at moved later is told when it passes.
func TestRestartKeepsClosingTold(t *testing.T) {
	path := filepath.Join(t.TempDir(), "waitroom.db")
	ctx := context.Background()
	s := open(t, path, t0)
	cfg := waitroom.DefaultConfig()
	cfg.ClosesAt = t0.Add(10 * time.Second)
	if _, _, err := s.PutRoom(ctx, "c", cfg, t0); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.PutWebhook(ctx, waitroom.Webhook{Room: "c", Name: "w", URL: "https://example.com/", Events: []string{waitroom.HookRoomClosed}, Secret: waitroom.NewWebhookSecret()}, t0); err != nil {
		t.Fatal(err)
	}
	claimAll := func(s *Store, at time.Time) []waitroom.Delivery {
		t.Helper()
		ds, err := s.ClaimDeliveries(ctx, "c", "w", at, time.Minute, 100)
		if err != nil {
			t.Fatal(err)
		}
		var outs []waitroom.DeliveryOutcome
		for _, d := range ds {
			outs = append(outs, waitroom.DeliveryOutcome{Hook: d.Hook, ID: d.Message.ID, OK: true})
		}
		if err := s.SettleDeliveries(ctx, "c", outs, at); err != nil {
			t.Fatal(err)
		}
		return ds
	}
	if _, err := s.Sweep(ctx, "c", t0.Add(11*time.Second)); err != nil {
		t.Fatal(err)
	}
	if ds := claimAll(s, t0.Add(12*time.Second)); len(ds) != 1 {
		t.Fatalf("before the restart: %d room.closed, want 1", len(ds))
	}
	s.Close()
	s = open(t, path, t0.Add(13*time.Second))
	defer s.Close()
	if _, err := s.Sweep(ctx, "c", t0.Add(14*time.Second)); err != nil {
		t.Fatal(err)
	}
	if ds := claimAll(s, t0.Add(15*time.Second)); len(ds) != 0 {
		t.Fatalf("after the restart: %d room.closed more, want none", len(ds))
	}
	cfg.ClosesAt = t0.Add(20 * time.Second)
	if _, _, err := s.PutRoom(ctx, "c", cfg, t0.Add(16*time.Second)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Sweep(ctx, "c", t0.Add(21*time.Second)); err != nil {
		t.Fatal(err)
	}
	if ds := claimAll(s, t0.Add(22*time.Second)); len(ds) != 1 {
		t.Fatalf("the new closes_at: %d room.closed, want 1", len(ds))
	}
}
