package admintoken_test

import (
	"bytes"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/internal/admintoken"
	"github.com/waitroom/waitroom/internal/clientaddr"
	"github.com/waitroom/waitroom/internal/limit"
)

var t0 = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

// from is a request to an admin route from addr (its RemoteAddr).
func from(addr string) *http.Request {
	r := httptest.NewRequest("GET", "/v1/rooms", nil)
	r.RemoteAddr = addr
	r.Pattern = "GET /v1/rooms"
	return r
}

func wantLimited(t *testing.T, err error, what string) time.Duration {
	t.Helper()
	re, ok := err.(*limit.RetryError)
	if !ok || waitroom.ErrorCode(err) != waitroom.CodeRateLimited {
		t.Fatalf("%s: %v (%T), want a rate_limited *limit.RetryError", what, err, err)
	}
	return re.After
}

// TestFiveWrongTokensAMinute: five wrong tokens from an address are
// counted and let through (to their 401), the sixth and everything after
// it from that address, the right token too, is refused until the oldest
// wrong token is a minute old; another address is not affected.
func TestFiveWrongTokensAMinute(t *testing.T) {
	clock := waitroom.NewManualClock(t0)
	g := admintoken.New(admintoken.Config{Clock: clock})
	a := from("192.0.2.1:1234")
	for i := range admintoken.DefaultMaxWrong {
		if err := g.Check(a, false, admintoken.ViaAPI); err != nil {
			t.Fatalf("wrong token %d: %v, want nil (the caller's 401)", i+1, err)
		}
		clock.Advance(time.Second)
	}
	if wait := wantLimited(t, g.Check(a, false, admintoken.ViaAPI), "6th wrong token"); wait != 55*time.Second {
		t.Errorf("6th wrong token: wait %v, want 55s (until the first is a minute old)", wait)
	}
	wantLimited(t, g.Check(a, true, admintoken.ViaAPI), "the right token from the limited address")
	wantLimited(t, g.Check(a, true, admintoken.ViaConsole), "the right token by the console from the limited address")
	wantLimited(t, g.Check(from("192.0.2.1:999"), true, admintoken.ViaAPI), "another port of the limited address")

	// Another address: untouched, right or wrong.
	b := from("198.51.100.7:1")
	if err := g.Check(b, true, admintoken.ViaAPI); err != nil {
		t.Fatalf("the right token from another address: %v", err)
	}
	if err := g.Check(b, false, admintoken.ViaAPI); err != nil {
		t.Fatalf("a wrong token from another address: %v", err)
	}

	// A minute after the first wrong token, one more may be tried.
	clock.Advance(55 * time.Second)
	if err := g.Check(a, true, admintoken.ViaAPI); err != nil {
		t.Fatalf("the right token once the first wrong one is a minute old: %v", err)
	}
}

// TestIPv6CountsBy64: the addresses of one /64 share an allowance.
func TestIPv6CountsBy64(t *testing.T) {
	g := admintoken.New(admintoken.Config{Clock: waitroom.NewManualClock(t0)})
	for i := range admintoken.DefaultMaxWrong {
		r := from("[2001:db8:1:2::" + strconv.Itoa(i+1) + "]:443")
		if err := g.Check(r, false, admintoken.ViaAPI); err != nil {
			t.Fatalf("wrong token %d: %v", i+1, err)
		}
	}
	wantLimited(t, g.Check(from("[2001:db8:1:2:ffff::1]:1"), true, admintoken.ViaAPI), "another address of the /64")
	if err := g.Check(from("[2001:db8:1:3::1]:1"), false, admintoken.ViaAPI); err != nil {
		t.Fatalf("the next /64: %v", err)
	}
}

// TestTrustedProxyNamesTheClient: behind a trusted proxy the client in
// X-Forwarded-For is counted, not the proxy, so one guesser does not lock
// out everyone behind it; an untrusted peer's X-Forwarded-For is ignored.
func TestTrustedProxyNamesTheClient(t *testing.T) {
	proxies, err := clientaddr.Parse("10.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	g := admintoken.New(admintoken.Config{Clock: waitroom.NewManualClock(t0), Proxies: proxies})
	via := func(client string) *http.Request {
		r := from("10.0.0.1:5000")
		r.Header.Set("X-Forwarded-For", client)
		return r
	}
	for range admintoken.DefaultMaxWrong {
		if err := g.Check(via("203.0.113.9"), false, admintoken.ViaAPI); err != nil {
			t.Fatal(err)
		}
	}
	wantLimited(t, g.Check(via("203.0.113.9"), true, admintoken.ViaAPI), "the guesser behind the proxy")
	if err := g.Check(via("203.0.113.10"), true, admintoken.ViaAPI); err != nil {
		t.Fatalf("another client behind the same proxy: %v", err)
	}
	// Not from the proxy: the header is the sender's own claim.
	spoof := from("192.0.2.50:1")
	spoof.Header.Set("X-Forwarded-For", "203.0.113.77")
	for range admintoken.DefaultMaxWrong {
		_ = g.Check(spoof, false, admintoken.ViaAPI)
	}
	spoof.Header.Set("X-Forwarded-For", "203.0.113.78")
	wantLimited(t, g.Check(spoof, false, admintoken.ViaAPI), "an untrusted peer changing its X-Forwarded-For")
}

// TestRacingGuessesGetFiveAnswers: many wrong tokens at once from one
// address get exactly five answers that are not 429, and any number of
// right tokens at once from another address all pass (they are not
// counted, so they cannot use an allowance up).
func TestRacingGuessesGetFiveAnswers(t *testing.T) {
	g := admintoken.New(admintoken.Config{})
	var wg sync.WaitGroup
	var answered, rightRefused atomic.Int64
	for range 64 {
		wg.Add(2)
		go func() {
			defer wg.Done()
			if g.Check(from("192.0.2.1:1"), false, admintoken.ViaAPI) == nil {
				answered.Add(1)
			}
		}()
		go func() {
			defer wg.Done()
			if g.Check(from("192.0.2.2:1"), true, admintoken.ViaAPI) != nil {
				rightRefused.Add(1)
			}
		}()
	}
	wg.Wait()
	if n := answered.Load(); n != admintoken.DefaultMaxWrong {
		t.Errorf("%d racing wrong tokens answered, want %d", n, admintoken.DefaultMaxWrong)
	}
	if n := rightRefused.Load(); n != 0 {
		t.Errorf("%d racing right tokens refused, want 0", n)
	}
}

// TestRefusalsLoggedAndCounted: every refusal is counted by way in and
// reason; the first twenty a minute are logged one by one with the
// address and the route pattern, the rest in one summary line; no line
// carries a token or the request's path.
func TestRefusalsLoggedAndCounted(t *testing.T) {
	var buf bytes.Buffer
	var mu sync.Mutex
	logger := slog.New(slog.NewJSONHandler(&lockedWriter{w: &buf, mu: &mu}, nil))
	reg := prometheus.NewRegistry()
	clock := waitroom.NewManualClock(t0)
	g := admintoken.New(admintoken.Config{Clock: clock, Logger: logger, Registry: reg})
	const secretPath = "/v1/rooms/r/sessions/AAAAsecret-session-idAAAA"
	for i := range 30 { // 30 addresses, one wrong token each: 30 refusals
		r := httptest.NewRequest("DELETE", secretPath, nil)
		r.RemoteAddr = "192.0.2." + strconv.Itoa(i+1) + ":1"
		r.Pattern = "DELETE /v1/rooms/{room}/sessions/{id}"
		r.Header.Set("Authorization", "Bearer guess-number-"+strconv.Itoa(i))
		if err := g.Check(r, false, admintoken.ViaAPI); err != nil {
			t.Fatal(err)
		}
	}
	for range admintoken.DefaultMaxWrong + 2 { // five wrong, then two limited
		_ = g.Check(from("198.51.100.1:1"), false, admintoken.ViaConsole)
	}
	for labels, want := range map[[2]string]float64{
		{"api", "wrong_token"}: 30, {"console", "wrong_token"}: 5, {"console", "rate_limited"}: 2, {"api", "rate_limited"}: 0,
	} {
		got := counter(t, reg, labels[0], labels[1])
		if got != want {
			t.Errorf("waitroom_admin_auth_failures_total{via=%q,reason=%q} = %v, want %v", labels[0], labels[1], got, want)
		}
	}

	// A refusal after the minute writes the summary of the ones not logged.
	clock.Advance(time.Minute)
	_ = g.Check(from("203.0.113.1:1"), false, admintoken.ViaAPI)

	mu.Lock()
	log := buf.String()
	mu.Unlock()
	if n := strings.Count(log, `"msg":"admin token refused"`); n != 21 {
		t.Errorf("%d refusals logged one by one, want 20 in the first minute and 1 after:\n%s", n, log)
	}
	if !strings.Contains(log, `"msg":"admin token refusals not logged one by one","count":17,"addresses":11`) {
		t.Errorf("no summary of the 17 refusals not logged (10 addresses of the API's guesses, 1 of the console's):\n%s", log)
	}
	for _, banned := range []string{"guess-number", "Bearer", "secret-session-id"} {
		if strings.Contains(log, banned) {
			t.Errorf("the log holds %q:\n%s", banned, log)
		}
	}
	for _, want := range []string{`"addr":"192.0.2.1"`, `"route":"DELETE /v1/rooms/{room}/sessions/{id}"`, `"via":"api"`, `"reason":"wrong_token"`} {
		if !strings.Contains(log, want) {
			t.Errorf("the log lacks %s:\n%s", want, log)
		}
	}
}

// counter is the value of waitroom_admin_auth_failures_total{via, reason}.
func counter(t *testing.T, reg *prometheus.Registry, via, reason string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "waitroom_admin_auth_failures_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			got := map[string]string{}
			for _, l := range m.GetLabel() {
				got[l.GetName()] = l.GetValue()
			}
			if got["via"] == via && got["reason"] == reason {
				return m.GetCounter().GetValue()
			}
		}
	}
	t.Fatalf("no series waitroom_admin_auth_failures_total{via=%q,reason=%q}", via, reason)
	return 0
}

// lockedWriter serialises writes to w.
type lockedWriter struct {
	w  *bytes.Buffer
	mu *sync.Mutex
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
