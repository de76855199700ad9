package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"regexp"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/client"
)

// hookReceiver is a real local endpoint that is down half the time: in
// alternate 300ms windows it answers 503 or drops the connection. Every
// request it takes is checked with the Standard Webhooks reference
// library; it records each event once by webhook-id and counts repeats.
type hookReceiver struct {
	srv     *httptest.Server
	wh      *standardwebhooks.Webhook
	start   time.Time
	flaky   atomic.Bool
	mu      sync.Mutex
	events  map[string]hookEvent // by webhook-id
	repeats int
	refused int
	bad     []string
}

type hookEvent struct {
	Type string               `json:"type"`
	Data waitroom.HookSession `json:"data"`
}

func newHookReceiver(t *testing.T, secret string) *hookReceiver {
	t.Helper()
	wh, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		t.Fatal(err)
	}
	r := &hookReceiver{wh: wh, start: time.Now(), events: map[string]hookEvent{}}
	r.flaky.Store(true)
	r.srv = httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *hookReceiver) down() bool {
	return r.flaky.Load() && (time.Since(r.start)/(300*time.Millisecond))%2 == 1
}

func (r *hookReceiver) serve(w http.ResponseWriter, req *http.Request) {
	body, err := io.ReadAll(req.Body)
	if r.down() || err != nil {
		r.mu.Lock()
		r.refused++
		r.mu.Unlock()
		if rand.N(2) == 0 {
			if hj, ok := w.(http.Hijacker); ok {
				if c, _, err := hj.Hijack(); err == nil {
					c.Close()
					return
				}
			}
		}
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.wh.Verify(body, req.Header); err != nil {
		r.bad = append(r.bad, fmt.Sprintf("%s: %v", req.Header.Get("webhook-id"), err))
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	var ev hookEvent
	if err := json.Unmarshal(body, &ev); err != nil {
		r.bad = append(r.bad, "body "+string(body))
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	id := req.Header.Get("webhook-id")
	if _, dup := r.events[id]; dup {
		r.repeats++
	} else {
		r.events[id] = ev
	}
	w.WriteHeader(http.StatusNoContent)
}

// received returns, per session id, the event types received, and the
// counts.
func (r *hookReceiver) received() (by map[string]map[string]int, n, repeats, refused int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	by = map[string]map[string]int{}
	for _, ev := range r.events {
		m := by[ev.Data.Session]
		if m == nil {
			m = map[string]int{}
			by[ev.Data.Session] = m
		}
		m[ev.Type]++
	}
	return by, len(r.events), r.repeats, r.refused
}

// failedChecks lists the requests that failed the reference check.
func (r *hookReceiver) failedChecks() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.bad...)
}

const hookSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

// hookFlags are the serve flags of the webhook tests: the local receiver
// is on loopback, claims lapse fast, retries stay close.
var hookFlags = []string{"--webhook-allow-private", "--webhook-lease", "3s", "--webhook-backoff-max", "500ms"}

// TestWebhooksSurviveKill kills the embedded-store server with SIGKILL
// three times while joins and leaves run and the receiver is down half the
// time, and checks that every event a committed change caused arrives:
// for every session the store holds at the end, its session.joined, its
// session.admitted if it was admitted and its session.ended if it ended;
// no event of a session the store does not hold; every signature verifies.
func TestWebhooksSurviveKill(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and kills a real server; skipped with -short")
	}
	bin := buildBinary(t)
	data := t.TempDir()
	flags := append(noJoinLimitFlags(bin), hookFlags...)
	p, token := startCrashServer(t, bin, data, flags)
	c := newCrashClient(p.url, token)
	rc := newHookReceiver(t, hookSecret)
	cfg := waitroom.DefaultConfig()
	cfg.Capacity, cfg.ActiveTimeout, cfg.WaitingTimeout = 5, waitroom.Duration(time.Second), 0
	if _, _, err := c.PutRoom(ctx(t), "hooked", cfg); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.PutWebhook(ctx(t), "hooked", "all", client.WebhookRequest{URL: rc.srv.URL + "/in", Events: []string{"*"}, Secret: hookSecret}); err != nil {
		t.Fatal(err)
	}

	var cur atomic.Pointer[client.Client]
	cur.Store(c)
	var mu sync.Mutex
	var ids []string
	acked := 0
	load := func(until time.Time) {
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				for time.Now().Before(until) {
					rctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
					s, err := cur.Load().Join(rctx, "hooked", "")
					if err == nil {
						mu.Lock()
						ids = append(ids, s.ID)
						acked++
						mu.Unlock()
						if rand.N(2) == 0 {
							_, _ = cur.Load().Leave(rctx, "hooked", s.ID)
						}
					}
					cancel()
				}
			})
		}
		wg.Wait()
	}
	p = killUnderLoad(t, 3, p, bin, data, flags, token, &cur, load)
	c = cur.Load()
	// Let the last sessions end (idle after 1s) so their events are due
	// too, then bring the receiver up for good and wait for the outbox to
	// empty.
	time.Sleep(1500 * time.Millisecond)
	states, stats := readAfterDrain(t, c, rc, "hooked", ids)
	by, n, repeats, refused := rc.received()
	if stats.Dead != 0 {
		t.Fatalf("%d dead letters, want none within the 24h retry window", stats.Dead)
	}
	// Every session the store holds, read back: its events must all have
	// arrived, once each by webhook-id.
	missing := 0
	for _, id := range ids {
		s := states[id]
		want := map[string]bool{waitroom.HookSessionJoined: true, waitroom.HookSessionAdmitted: !s.AdmittedAt.IsZero(), waitroom.HookSessionEnded: s.Status.Final()}
		for typ, w := range want {
			if got := by[id][typ]; w && got != 1 {
				missing++
				if missing < 5 {
					t.Errorf("session %s (%s): %s arrived %d times, want once", id, s.Status, typ, got)
				}
			}
		}
	}
	if missing > 0 {
		t.Fatalf("%d events of committed changes never arrived", missing)
	}
	phantom := 0
	for id := range by {
		if _, err := c.Session(ctx(t), "hooked", id); err != nil {
			phantom++
		}
	}
	if phantom > 0 {
		t.Fatalf("events of %d sessions the store does not hold", phantom)
	}
	// The last process's own deliveries show in its metrics.
	req, _ := http.NewRequest("GET", p.url+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+token) // the metrics are the admin's
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	metricsText, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if m := regexp.MustCompile(`(?m)^waitroom_webhook_delivered_total ([0-9.e+]+)$`).FindSubmatch(metricsText); m == nil || string(m[1]) == "0" {
		t.Fatalf("metrics lack deliveries: %s", regexp.MustCompile(`(?m)^waitroom_webhook.*$`).FindAll(metricsText, -1))
	}
	t.Logf("%d acknowledged joins; %d events delivered (%d sessions), %d repeated deliveries (same webhook-id, after a kill), %d tries refused by the flaky receiver; endpoint stats %+v",
		acked, n, len(by), repeats, refused, stats)
}

// readAfterDrain brings the receiver up for good, waits for room's outbox
// to empty, reads every session of ids (a read ends what is due, so the
// states read are final for the check, and their events are due now),
// waits for those events too, and fails the test if any request failed
// the Standard Webhooks reference check.
func readAfterDrain(t *testing.T, c *client.Client, rc *hookReceiver, room string, ids []string) (map[string]waitroom.Session, waitroom.HookStats) {
	t.Helper()
	rc.flaky.Store(false)
	drainHooks(t, c, room)
	states := make(map[string]waitroom.Session, len(ids))
	for _, id := range ids {
		s, err := c.Session(ctx(t), room, id)
		if err != nil {
			t.Fatalf("acknowledged session %s: %v", id, err)
		}
		states[id] = s
	}
	stats := drainHooks(t, c, room)
	if bad := rc.failedChecks(); len(bad) > 0 {
		t.Fatalf("%d requests failed the Standard Webhooks reference check, e.g. %s", len(bad), bad[0])
	}
	return states, stats
}

// drainHooks waits (up to 60s) until room's one webhook has nothing
// pending, and returns its stats.
func drainHooks(t *testing.T, c *client.Client, room string) waitroom.HookStats {
	t.Helper()
	var stats waitroom.HookStats
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		hs, err := c.Webhooks(ctx(t), room)
		if err == nil && len(hs) == 1 {
			stats = hs[0].Stats
			if stats.Pending == 0 {
				return stats
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("outbox not empty 60s after the last kill: %+v, %v", stats, err)
		}
	}
}

// killUnderLoad runs load for 1.6s and kills the server with SIGKILL at a
// random moment in its last half second, cycles times, restarting it each
// time and pointing cur at the new process; it returns the last process.
func killUnderLoad(t *testing.T, cycles int, p *process, bin, data string, flags []string, token string,
	cur *atomic.Pointer[client.Client], load func(until time.Time)) *process {
	t.Helper()
	for cycle := range cycles {
		stop := time.Now().Add(1500 * time.Millisecond)
		done := make(chan struct{})
		go func() { load(stop.Add(100 * time.Millisecond)); close(done) }()
		time.Sleep(time.Until(stop.Add(-time.Duration(rand.N(500)) * time.Millisecond)))
		p.kill(t)
		p = startProcess(t, bin, data, flags...)
		nc := newCrashClient(p.url, token)
		waitReady(t, nc, 30*time.Second)
		cur.Store(nc)
		<-done
		t.Logf("cycle %d: killed under load and restarted", cycle+1)
	}
	return p
}
