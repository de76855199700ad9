package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/client"
	"github.com/waitroom/waitroom/internal/redistest"
)

// TestWebhooksThreeProcessesOneRedis: three `waitroom serve` processes on
// one Redis deliver one room's webhook while joins arrive through all
// three. The receiver takes 200ms a request; after the first hundred it
// holds every request until more are in flight than two processes may
// have (so all three have some), and then one process is killed with
// SIGKILL. Before the kill no event arrives twice (each is delivered by
// one process); the
// deliveries the killed process had in flight (their requests cut off
// mid-way) are taken over by the others once their claims lapse, and
// every acknowledged join's event arrives, signed.
func TestWebhooksThreeProcessesOneRedis(t *testing.T) {
	if testing.Short() {
		t.Skip("runs three servers on one Redis")
	}
	addr := redistest.Server(t)
	bin := buildBinary(t)
	const token = "hooks-admin-token"
	wh, err := standardwebhooks.NewWebhook(hookSecret)
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu       sync.Mutex
		got      = map[string]int{} // webhook-id → completed deliveries
		sessions = map[string]bool{}
		cut      = map[string]bool{} // requests cut off by the kill
		bad      []string
		killedAt time.Time
		before   int // repeats before the kill
	)
	// Once holding, the receiver holds every request until release (or
	// until the sender is gone), so the processes' claims pile up in
	// flight for the kill to cut, however fast the machine delivered
	// before.
	var holding atomic.Bool
	var held atomic.Int64
	release := make(chan struct{})
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		id := r.Header.Get("webhook-id")
		if holding.Load() {
			held.Add(1)
			select {
			case <-release:
				held.Add(-1)
			case <-r.Context().Done():
				held.Add(-1)
				mu.Lock()
				cut[id] = true
				mu.Unlock()
				return
			}
		}
		select {
		case <-time.After(200 * time.Millisecond):
		case <-r.Context().Done():
			mu.Lock()
			cut[id] = true
			mu.Unlock()
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if err := wh.Verify(body, r.Header); err != nil {
			bad = append(bad, err.Error())
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		var ev hookEvent
		_ = json.Unmarshal(body, &ev)
		if got[id]++; got[id] > 1 && killedAt.IsZero() {
			before++
		}
		sessions[ev.Data.Session] = true
		w.WriteHeader(http.StatusNoContent)
	}))
	defer recv.Close()

	var procs []*process
	var clients []*client.Client
	for i := range 3 {
		args := append([]string{"--store", "redis://" + addr + "/0", "--admin-token", token}, append(noJoinLimitFlags(bin), hookFlags...)...)
		p := startProcess(t, bin, filepath.Join(t.TempDir(), "data"+strconv.Itoa(i)), args...)
		procs = append(procs, p)
		clients = append(clients, newCrashClient(p.url, token))
	}
	cfg := waitroom.DefaultConfig()
	cfg.Capacity, cfg.ActiveTimeout, cfg.WaitingTimeout = 0, 0, 0
	if _, _, err := clients[0].PutRoom(ctx(t), "hooked", cfg); err != nil {
		t.Fatal(err)
	}
	if _, _, err := clients[1].PutWebhook(ctx(t), "hooked", "joins", client.WebhookRequest{URL: recv.URL, Events: []string{waitroom.HookSessionJoined}, Secret: hookSecret}); err != nil {
		t.Fatal(err)
	}
	var ids []string
	var idsMu sync.Mutex
	joins := func(workers, each int) {
		var wg sync.WaitGroup
		for w := range workers {
			wg.Go(func() {
				for range each {
					rctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
					s, err := clients[w%3].Join(rctx, "hooked", "")
					cancel()
					if err == nil {
						idsMu.Lock()
						ids = append(ids, s.ID)
						idsMu.Unlock()
					}
				}
			})
		}
		wg.Wait()
	}
	joins(6, 100)
	// Let every process get deliveries going.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		mu.Lock()
		n := len(got)
		mu.Unlock()
		if n >= 100 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("only %d deliveries within 30s", n)
		}
	}
	// Then hold what the receiver is sent, and join more, until more
	// requests are held than two processes can have in flight (PerHook,
	// 16 each): the third, whichever it is, holds some too. Kill one
	// process mid-way through its requests, and let the rest go on.
	holding.Store(true)
	joins(3, 50)
	for deadline := time.Now().Add(30 * time.Second); held.Load() <= 2*16; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("only %d requests in flight within 30s, want more than two processes' 16 each", held.Load())
		}
	}
	inFlight := held.Load()
	mu.Lock()
	killedAt = time.Now()
	mu.Unlock()
	procs[0].kill(t)
	// Release the rest once the receiver has seen the killed process's
	// connections close (the number held stops falling), so its requests
	// count as cut, not as answered to a dead process.
	for prev, deadline := held.Load(), time.Now().Add(10*time.Second); time.Now().Before(deadline); {
		time.Sleep(200 * time.Millisecond)
		now := held.Load()
		if now == prev && now < inFlight {
			break
		}
		prev = now
	}
	close(release)

	for deadline := time.Now().Add(90 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		mu.Lock()
		missing := 0
		for _, id := range ids {
			if !sessions[id] {
				missing++
			}
		}
		mu.Unlock()
		if missing == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d acknowledged joins' events never arrived after the kill", missing, len(ids))
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(bad) > 0 {
		t.Fatalf("%d requests failed the Standard Webhooks reference check: %s", len(bad), bad[0])
	}
	if before > 0 {
		t.Fatalf("%d events arrived twice before any process died: each must be delivered by one process", before)
	}
	if len(cut) == 0 {
		t.Fatalf("no delivery was in flight on the killed process: the kill came too late to test a takeover")
	}
	for id := range cut {
		if got[id] == 0 {
			t.Errorf("delivery %s, cut off by the kill, was never taken over", id)
		}
	}
	repeats := 0
	for _, n := range got {
		repeats += n - 1
	}
	hs, err := clients[1].Webhooks(ctx(t), "hooked")
	if err != nil || len(hs) != 1 {
		t.Fatalf("webhooks: %v, %v", hs, err)
	}
	t.Logf("%d joins through 3 processes; %d events delivered; %d requests in flight at the kill, %d cut off by it and taken over; %d repeated deliveries, all after the kill; stats %+v",
		len(ids), len(got), inFlight, len(cut), repeats, hs[0].Stats)
}
