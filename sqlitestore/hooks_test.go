package sqlitestore

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
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
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cfg := waitroom.DefaultConfig()
	cfg.Capacity = 0
	if _, _, err := s.PutRoom(ctx, "r", cfg, time.Now()); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
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
	go func() {
		for i := range 200 {
			h := waitroom.Webhook{Room: "r", Name: fmt.Sprintf("w%d", i%waitroom.MaxWebhooks), URL: "https://example.com/", Events: []string{"*"}, Secret: waitroom.NewWebhookSecret()}
			if _, _, err := s.PutWebhook(ctx, h, time.Now()); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("put webhook: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("200 webhook puts beside joins did not finish in 20s: the writer hung")
	}
	close(stop)
	wg.Wait()
}
