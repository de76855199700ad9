package httpapi_test

import (
	"bytes"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/internal/httpapi"
	"github.com/waitroom/waitroom/memstore"
)

// TestAdminTokenLimit is the security review's reproduction of unlimited
// guessing: wrong bearer tokens from one address, on any mix of routes
// that take the token, get 401 five times a minute, then 429
// rate_limited with Retry-After, the right token included; the right
// token from another address still works, a join without a token from
// the limited address too; each refusal is logged without the token and
// counted in waitroom_admin_auth_failures_total.
func TestAdminTokenLimit(t *testing.T) {
	var buf bytes.Buffer
	var mu sync.Mutex
	logger := slog.New(slog.NewJSONHandler(&lockedWriter{w: &buf, mu: &mu}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	st := memstore.New()
	defer st.Close()
	clock := waitroom.NewManualClock(time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC))
	h := checked(t, httpapi.NewHandler(withParts(t, httpapi.Config{Store: st, AdminToken: adminToken, Clock: clock, Logger: logger,
		Registry: prometheus.NewRegistry(), Admit: admission(t, st, clock, nil)})))
	srv := httptest.NewServer(h) // the guesser: 127.0.0.1
	defer srv.Close()
	admin := "Bearer " + adminToken
	// The operator, elsewhere (httptest.NewRequest's 192.0.2.1).
	if rec := serveWith(h, "PUT", "/v1/rooms/r", admin, `{"capacity":1}`); rec.Code != http.StatusCreated {
		t.Fatalf("create the room: %d %s", rec.Code, rec.Body.Bytes())
	}
	var s waitroom.Session
	if err := jsonUnmarshal(serveWith(h, "POST", "/v1/rooms/r/sessions", "", "").Body.Bytes(), &s); err != nil {
		t.Fatal(err)
	}

	guess := func(i int, method, path, body string) (int, http.Header, string) {
		t.Helper()
		req, err := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer guess-"+strconv.Itoa(i)+"-"+adminToken)
		if i < 0 {
			req.Header.Set("Authorization", admin)
		}
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header, string(b)
	}
	routes := []struct{ method, path, body string }{
		{"GET", "/v1/rooms", ""},
		{"PUT", "/v1/rooms/r", `{"capacity":9}`},
		{"DELETE", "/v1/rooms/r/sessions/" + s.ID, ""},      // revoke
		{"POST", "/v1/rooms/r/sessions", `{"key":"alice"}`}, // a join as a trusted backend
		{"GET", "/v1/stats", ""},
		{"GET", "/v1/rooms/r/waiting", ""},
		{"POST", "/v1/rooms/r/advance", `{"n":1}`},
	}
	for i, rt := range routes[:5] {
		if code, _, body := guess(i, rt.method, rt.path, rt.body); code != http.StatusUnauthorized {
			t.Fatalf("wrong token %d (%s %s): %d %s, want 401", i+1, rt.method, rt.path, code, body)
		}
	}
	for i, rt := range routes {
		code, hdr, body := guess(100+i, rt.method, rt.path, rt.body)
		if code != http.StatusTooManyRequests || !strings.Contains(body, `"code":"rate_limited"`) {
			t.Fatalf("wrong token %d (%s %s) from the same address: %d %s, want 429 rate_limited", 6+i, rt.method, rt.path, code, body)
		}
		if ra, err := strconv.Atoi(hdr.Get("Retry-After")); err != nil || ra < 1 || ra > 60 {
			t.Fatalf("Retry-After %q, want 1 to 60 seconds", hdr.Get("Retry-After"))
		}
	}
	if code, _, body := guess(-1, "GET", "/v1/rooms", ""); code != http.StatusTooManyRequests {
		t.Fatalf("the right token from the limited address: %d %s, want 429 (else a guesser would see which guess is right)", code, body)
	}
	if rec := serveWith(h, "GET", "/v1/rooms", admin, ""); rec.Code != http.StatusOK {
		t.Fatalf("the right token from another address: %d %s, want 200", rec.Code, rec.Body.Bytes())
	}
	if resp, err := srv.Client().Post(srv.URL+"/v1/rooms/r/sessions", "application/json", nil); err != nil || resp.StatusCode != http.StatusCreated {
		t.Fatalf("a join without a token from the limited address: %v %v, want 201", resp, err)
	} else {
		resp.Body.Close()
	}
	// Nothing the guesses asked for happened.
	if room, _ := st.Room(t.Context(), "r"); room.Capacity != 1 || room.Active != 1 {
		t.Fatalf("room after the guesses: %+v, want capacity 1 and the first session still active", room)
	}

	if rec := serveWith(h, "GET", "/metrics", admin, ""); !strings.Contains(rec.Body.String(), `waitroom_admin_auth_failures_total{reason="rate_limited",via="api"} 8`) ||
		!strings.Contains(rec.Body.String(), `waitroom_admin_auth_failures_total{reason="wrong_token",via="api"} 5`) {
		t.Errorf("/metrics: want 5 wrong tokens and 8 rate-limited refusals counted:\n%s", grepLines(rec.Body.String(), "admin_auth"))
	}
	mu.Lock()
	log := buf.String()
	mu.Unlock()
	if n := strings.Count(log, `"msg":"admin token refused"`); n != 13 {
		t.Errorf("%d refusals logged, want 13:\n%s", n, log)
	}
	for _, banned := range []string{"guess-", adminToken, s.ID} {
		if strings.Contains(log, banned) {
			t.Errorf("the log holds %q:\n%s", banned, log)
		}
	}
}

// grepLines returns the lines of s holding sub.
func grepLines(s, sub string) string {
	var out []string
	for l := range strings.SplitSeq(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
