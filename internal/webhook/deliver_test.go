package webhook_test

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/internal/webhook"
	"github.com/waitroom/waitroom/memstore"
)

const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

// receiver is a real local HTTP endpoint that checks every request with
// the Standard Webhooks reference library and records what it got.
type receiver struct {
	srv    *httptest.Server
	mu     sync.Mutex
	got    map[string]int // webhook-id -> requests
	types  []string
	bodies [][]byte // the bodies accepted, in order
	bad    []string
	status func() int
	delay  time.Duration
}

func newReceiver(t *testing.T) *receiver {
	r := &receiver{got: map[string]int{}, status: func() int { return 204 }}
	wh, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		t.Fatal(err)
	}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		if r.delay > 0 {
			time.Sleep(r.delay)
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		if err := wh.Verify(body, req.Header); err != nil {
			r.bad = append(r.bad, err.Error())
		}
		var m struct {
			Type string          `json:"type"`
			At   string          `json:"timestamp"`
			Data json.RawMessage `json:"data"`
		}
		if err := json.Unmarshal(body, &m); err != nil || m.Type == "" || m.At == "" || len(m.Data) == 0 {
			r.bad = append(r.bad, "body "+string(body))
		}
		st := r.status()
		if st < 300 {
			r.got[req.Header.Get("webhook-id")]++
			r.types = append(r.types, m.Type)
			r.bodies = append(r.bodies, body)
		}
		w.WriteHeader(st)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *receiver) snapshot() (map[string]int, []string, []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	got := make(map[string]int, len(r.got))
	for k, v := range r.got {
		got[k] = v
	}
	return got, append([]string(nil), r.types...), append([]string(nil), r.bad...)
}

func setup(t *testing.T, url string, events ...string) (*memstore.Store, context.Context) {
	t.Helper()
	ctx := t.Context()
	st := memstore.New()
	t.Cleanup(func() { st.Close() })
	cfg := waitroom.DefaultConfig()
	cfg.Capacity = 1
	if _, _, err := st.PutRoom(ctx, "r", cfg, time.Now()); err != nil {
		t.Fatal(err)
	}
	if len(events) == 0 {
		events = []string{"*"}
	}
	if _, _, err := st.PutWebhook(ctx, waitroom.Webhook{Room: "r", Name: "a", URL: url, Events: events, Secret: secret}, time.Now()); err != nil {
		t.Fatal(err)
	}
	return st, ctx
}

func run(t *testing.T, o webhook.Options) *webhook.Deliverer {
	t.Helper()
	d := webhook.New(o)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { d.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return d
}

// waitFor polls cond for up to 20s (a loaded machine), failing with what.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

func TestDeliversSignedOnce(t *testing.T) {
	rc := newReceiver(t)
	st, ctx := setup(t, rc.srv.URL+"/hook")
	d := run(t, webhook.Options{Store: st, AllowPrivate: true, Poll: 10 * time.Millisecond})
	s1, _ := st.Join(ctx, "r", "", time.Now())
	st.Join(ctx, "r", "", time.Now())
	st.Leave(ctx, "r", s1.ID, waitroom.ReasonLeft, time.Now())
	d.Kick()
	waitFor(t, "5 deliveries", func() bool { got, _, _ := rc.snapshot(); return len(got) == 5 })
	time.Sleep(50 * time.Millisecond)
	got, types, bad := rc.snapshot()
	if len(bad) > 0 {
		t.Fatalf("the reference check refused: %v", bad)
	}
	for id, n := range got {
		if n != 1 || !strings.HasPrefix(id, "msg_") {
			t.Fatalf("webhook-id %q delivered %d times, want once", id, n)
		}
	}
	// Deliveries run side by side: their order is not promised.
	slices.Sort(types)
	want := []string{"session.admitted", "session.admitted", "session.ended", "session.joined", "session.joined"}
	if !slices.Equal(types, want) {
		t.Fatalf("types = %v, want %v", types, want)
	}
	waitFor(t, "settled", func() bool {
		s, _ := st.HookStats(ctx, "r")
		return s["a"].Delivered == 5 && s["a"].Pending == 0
	})
	if c := d.Counts(); c.Delivered != 5 || c.Failed != 0 {
		t.Fatalf("counts = %+v, want 5 delivered", c)
	}
}

func TestRetriesThenDeadLetter(t *testing.T) {
	rc := newReceiver(t)
	var mu sync.Mutex
	fails := 2
	rc.status = func() int {
		mu.Lock()
		defer mu.Unlock()
		if fails > 0 {
			fails--
			return 503
		}
		return 200
	}
	st, ctx := setup(t, rc.srv.URL, waitroom.HookSessionJoined)
	var tries []int
	backoff := func(n int) time.Duration {
		mu.Lock()
		tries = append(tries, n)
		mu.Unlock()
		return 20 * time.Millisecond
	}
	run(t, webhook.Options{Store: st, AllowPrivate: true, Poll: 10 * time.Millisecond, Backoff: backoff})
	st.Join(ctx, "r", "", time.Now())
	waitFor(t, "delivery after two failures", func() bool {
		s, _ := st.HookStats(ctx, "r")
		return s["a"].Delivered == 1
	})
	s, _ := st.HookStats(ctx, "r")
	if s["a"].Failed != 2 || !strings.Contains(s["a"].LastError, "503") {
		t.Fatalf("stats = %+v, want 2 failed tries with HTTP 503", s["a"])
	}
	mu.Lock()
	if len(tries) != 2 || tries[0] != 1 || tries[1] != 2 {
		t.Fatalf("backoff asked for %v, want [1 2]", tries)
	}
	mu.Unlock()

	// Always failing, with a short retry window: a dead letter, which a
	// replay sends again.
	mu.Lock()
	fails = 1 << 30
	mu.Unlock()
	st2, ctx2 := setup(t, rc.srv.URL)
	run(t, webhook.Options{Store: st2, AllowPrivate: true, Poll: 10 * time.Millisecond, RetryFor: 300 * time.Millisecond,
		Backoff: func(int) time.Duration { return 50 * time.Millisecond }})
	st2.Join(ctx2, "r", "", time.Now())
	waitFor(t, "dead letters", func() bool {
		s, _ := st2.HookStats(ctx2, "r")
		return s["a"].Dead == 2 && s["a"].Pending == 0
	})
	letters, _, _ := st2.DeadLetters(ctx2, "r", waitroom.Page{})
	if len(letters) != 2 || letters[0].Attempts < 2 || !strings.Contains(letters[0].LastError, "503") {
		t.Fatalf("dead letters = %+v, want 2 with several 503 tries", letters)
	}
	mu.Lock()
	fails = 0
	mu.Unlock()
	if n, err := st2.ReplayDeadLetters(ctx2, "r", nil, time.Now()); err != nil || n != 2 {
		t.Fatalf("replay = %d, %v", n, err)
	}
	waitFor(t, "replayed deliveries", func() bool {
		s, _ := st2.HookStats(ctx2, "r")
		return s["a"].Delivered == 2 && s["a"].Dead == 0
	})
}

func TestPrivateTargetRefusedWhenDialled(t *testing.T) {
	rc := newReceiver(t)
	st, ctx := setup(t, rc.srv.URL) // 127.0.0.1: the store does not judge targets
	run(t, webhook.Options{Store: st, Poll: 10 * time.Millisecond, Backoff: func(int) time.Duration { return time.Hour }})
	st.Join(ctx, "r", "", time.Now())
	waitFor(t, "a refused try", func() bool {
		s, _ := st.HookStats(ctx, "r")
		return s["a"].Failed >= 1
	})
	s, _ := st.HookStats(ctx, "r")
	if !strings.Contains(s["a"].LastError, "private") {
		t.Fatalf("last error %q, want the private-address refusal", s["a"].LastError)
	}
	if got, _, _ := rc.snapshot(); len(got) != 0 {
		t.Fatalf("the private receiver got %d requests, want none", len(got))
	}
}

// A slow endpoint holds at most PerHook workers: a fast one beside it
// still gets its deliveries at once.
func TestSlowEndpointDoesNotStarveOthers(t *testing.T) {
	slow, fast := newReceiver(t), newReceiver(t)
	slow.delay = 2 * time.Second
	st, ctx := setup(t, slow.srv.URL)
	if _, _, err := st.PutWebhook(ctx, waitroom.Webhook{Room: "r", Name: "fast", URL: fast.srv.URL, Events: []string{"session.joined"}, Secret: secret}, time.Now()); err != nil {
		t.Fatal(err)
	}
	run(t, webhook.Options{Store: st, AllowPrivate: true, Poll: 10 * time.Millisecond, Workers: 8, PerHook: 2})
	for range 20 {
		st.Join(ctx, "r", "", time.Now())
	}
	start := time.Now()
	waitFor(t, "20 fast deliveries", func() bool { got, _, _ := fast.snapshot(); return len(got) == 20 })
	// The slow endpoint's 2 workers take 2s a try; had it held all 8
	// workers, the fast deliveries would wait for several of its tries.
	if el := time.Since(start); el > 10*time.Second {
		t.Fatalf("fast deliveries took %s", el)
	}
	if got, _, _ := slow.snapshot(); len(got) > 4 {
		t.Fatalf("the slow endpoint finished %d tries while the fast got 20: more than its 2 workers could", len(got))
	}
}

// TestZonedTargetRefusedWhenDialled is issue 26's SSRF: a URL with an
// IPv6 zone, http://[::1%25lo]:PORT/ (stored directly: the API refuses it
// now), passed the private-address check, and deliveries reached a
// listener on [::1]. Now the try fails on the zone and the listener gets
// nothing.
func TestZonedTargetRefusedWhenDialled(t *testing.T) {
	var hits atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		hits.Add(1)
		w.WriteHeader(204)
	}))
	srv.Listener.Close()
	srv.Listener = listen6(t)
	srv.Start()
	t.Cleanup(srv.Close)
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	url := "http://[::1%25" + loopbackName(t) + "]:" + strconv.Itoa(port) + "/x"
	st, ctx := setup(t, url)
	run(t, webhook.Options{Store: st, Poll: 10 * time.Millisecond, Backoff: func(int) time.Duration { return time.Hour }})
	st.Join(ctx, "r", "", time.Now())
	waitFor(t, "a try", func() bool {
		s, _ := st.HookStats(ctx, "r")
		return s["a"].Failed >= 1 || s["a"].Delivered >= 1 || hits.Load() > 0
	})
	if n := hits.Load(); n != 0 {
		t.Fatalf("the listener on [::1] got %d requests from %s, want none", n, url)
	}
	if s, _ := st.HookStats(ctx, "r"); !strings.Contains(s["a"].LastError, "zone") {
		t.Fatalf("last error %q, want the zone refusal", s["a"].LastError)
	}
}
