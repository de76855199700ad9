package httpapi_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/internal/console"
	"github.com/waitroom/waitroom/internal/httpapi"
	"github.com/waitroom/waitroom/internal/openapi/openapitest"
	"github.com/waitroom/waitroom/internal/roomstats"
	"github.com/waitroom/waitroom/memstore"
)

// consoleEnv is the API and the console on one real server, as `waitroom
// serve` mounts them, with a browser-like client (a cookie jar).
type consoleEnv struct {
	t     *testing.T
	store *memstore.Store
	clock *waitroom.ManualClock
	stats *roomstats.Recorder
	srv   *httptest.Server
	jar   http.Client
	csrf  string
}

func newConsoleEnv(t *testing.T) *consoleEnv {
	t.Helper()
	e := &consoleEnv{t: t, store: memstore.New(), clock: waitroom.NewManualClock(time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC))}
	e.stats = roomstats.New(e.store, e.store, roomstats.Options{Clock: e.clock, Sample: -1})
	cons := console.New(console.Options{AdminToken: adminToken, Ledger: e.store, Clock: e.clock})
	api := httpapi.NewHandler(httpapi.Config{Store: e.store, AdminToken: adminToken, Clock: e.clock, Registry: prometheus.NewRegistry(),
		Console: cons, Stats: e.stats, Admit: admission(t, e.store, e.clock, nil)})
	mux := http.NewServeMux()
	mux.Handle(console.Prefix, cons.Handler())
	mux.Handle("/", api)
	e.srv = httptest.NewServer(openapitest.Handler(t, mux, apiOnly, openapitest.Serves(console.Prefix)))
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	e.jar = http.Client{Jar: jar, Timeout: 30 * time.Second}
	t.Cleanup(func() {
		e.srv.Close()
		_ = e.stats.Close()
		_ = e.store.Close()
	})
	return e
}

// do sends a request with the jar's cookies; csrf adds the CSRF header.
func (e *consoleEnv) do(method, path, body string, csrf bool) (int, []byte) {
	e.t.Helper()
	req, err := http.NewRequest(method, e.srv.URL+path, strings.NewReader(body))
	if err != nil {
		e.t.Fatal(err)
	}
	if csrf {
		req.Header.Set(console.CSRFHeader, e.csrf)
	}
	resp, err := e.jar.Do(req)
	if err != nil {
		e.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

func (e *consoleEnv) signIn() {
	e.t.Helper()
	code, b := e.do("POST", "/admin/api/session", `{"token":"`+adminToken+`"}`, false)
	var v struct {
		CSRF string `json:"csrf"`
	}
	if code != 200 || json.Unmarshal(b, &v) != nil || v.CSRF == "" {
		e.t.Fatalf("sign in: %d %s", code, b)
	}
	e.csrf = v.CSRF
}

// TestConsoleSessionUsesTheAdminAPI: a signed-in console reads the admin
// API with its cookie alone, changes things only with its CSRF token, and
// its actions are audited as the console's.
func TestConsoleSessionUsesTheAdminAPI(t *testing.T) {
	e := newConsoleEnv(t)
	if code, _ := e.do("GET", "/v1/rooms", "", false); code != http.StatusUnauthorized {
		t.Fatalf("GET /v1/rooms before signing in: %d, want 401", code)
	}
	e.signIn()
	if code, b := e.do("PUT", "/v1/rooms/r", `{"capacity":1,"waiting_timeout":"0s"}`, true); code != http.StatusCreated {
		t.Fatalf("PUT with cookie and CSRF: %d %s", code, b)
	}
	if code, _ := e.do("GET", "/v1/rooms", "", false); code != http.StatusOK {
		t.Fatalf("GET /v1/rooms with the cookie: %d, want 200", code)
	}
	var ss []waitroom.Session
	for range 3 {
		s, err := e.store.Join(context.Background(), "r", "", e.clock.Now())
		if err != nil {
			t.Fatal(err)
		}
		ss = append(ss, s)
	}
	// Without the CSRF token nothing changes.
	for _, c := range []struct{ method, path, body string }{
		{"POST", "/v1/rooms/r/queue-all", ""},
		{"POST", "/v1/rooms/r/advance", `{"n":1}`},
		{"PUT", "/v1/rooms/r", `{"capacity":5}`},
		{"POST", "/v1/rooms/r/sessions/" + ss[2].ID + "/front", `{"reason":"x"}`},
	} {
		code, b := e.do(c.method, c.path, c.body, false)
		if code != http.StatusForbidden || !strings.Contains(string(b), `"forbidden"`) {
			t.Fatalf("%s %s without CSRF: %d %s, want 403 forbidden", c.method, c.path, code, b)
		}
	}
	if r, _ := e.store.Room(context.Background(), "r"); r.Capacity != 1 || r.Paused || r.Active != 1 || r.Waiting != 2 {
		t.Fatalf("after refused requests: %+v, want unchanged", r)
	}
	// With it, the move and the queue-all happen.
	if code, b := e.do("POST", "/v1/rooms/r/sessions/"+ss[2].ID+"/front", `{"reason":"restored"}`, true); code != http.StatusOK {
		t.Fatalf("front with CSRF: %d %s", code, b)
	}
	if code, b := e.do("POST", "/v1/rooms/r/queue-all", "", true); code != http.StatusOK {
		t.Fatalf("queue-all with CSRF: %d %s", code, b)
	}
	// A DELETE from the console (CSRF sent) revokes; its audit names the console.
	code, b := e.do("DELETE", "/v1/rooms/r/sessions/"+ss[1].ID, "", true)
	var gone waitroom.Session
	if code != http.StatusOK || json.Unmarshal(b, &gone) != nil || gone.EndReason != waitroom.ReasonRevoked {
		t.Fatalf("console DELETE: %d %s, want revoked", code, b)
	}
	code, b = e.do("GET", "/v1/rooms/r/audit", "", false)
	var log struct {
		Entries []waitroom.AuditEntry `json:"entries"`
	}
	if code != 200 || json.Unmarshal(b, &log) != nil {
		t.Fatalf("audit: %d %s", code, b)
	}
	want := []string{"revoke", "queue_all", "front", "config"}
	if len(log.Entries) != len(want) {
		t.Fatalf("audit has %d entries, want %v", len(log.Entries), want)
	}
	for i, en := range log.Entries {
		if en.Action != want[i] || en.Actor != waitroom.AuditActorConsole {
			t.Fatalf("audit entry %d: %s by %s, want %s by console", i, en.Action, en.Actor, want[i])
		}
	}
	// Signed out, the cookie is worth nothing.
	if code, _ := e.do("DELETE", "/admin/api/session", "", true); code != http.StatusNoContent {
		t.Fatalf("sign out: %d", code)
	}
	if code, _ := e.do("GET", "/v1/rooms", "", false); code != http.StatusUnauthorized {
		t.Fatalf("GET /v1/rooms after signing out: %d, want 401", code)
	}
}

// TestStatsAndConsoleStream: the overview and a room's stats count what
// happened, and the console's live stream sends the room, its numbers each
// second and new audit entries.
func TestStatsAndConsoleStream(t *testing.T) {
	e := newConsoleEnv(t)
	e.signIn()
	if code, b := e.do("PUT", "/v1/rooms/r", `{"capacity":2,"waiting_timeout":"0s"}`, true); code != http.StatusCreated {
		t.Fatalf("PUT: %d %s", code, b)
	}
	ctx := context.Background()
	var ss []waitroom.Session
	for range 5 {
		s, err := e.store.Join(ctx, "r", "", e.clock.Now())
		if err != nil {
			t.Fatal(err)
		}
		ss = append(ss, s)
	}
	e.clock.Advance(30 * time.Second)
	if _, err := e.store.Leave(ctx, "r", ss[0].ID, waitroom.ReasonLeft, e.clock.Now()); err != nil { // admits #3 after 30 s
		t.Fatal(err)
	}
	if _, err := e.store.Leave(ctx, "r", ss[4].ID, waitroom.ReasonLeft, e.clock.Now()); err != nil { // #5 gives up
		t.Fatal(err)
	}
	if err := e.stats.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(time.Minute)
	code, b := e.do("GET", "/v1/stats", "", false)
	var over struct {
		Rooms []struct {
			Name                string `json:"name"`
			State               string `json:"state"`
			Waiting, Active     int
			JoinsPerMinute      int64 `json:"joins_per_minute"`
			AdmissionsPerMinute int64 `json:"admissions_per_minute"`
		} `json:"rooms"`
	}
	if code != 200 || json.Unmarshal(b, &over) != nil || len(over.Rooms) != 1 {
		t.Fatalf("GET /v1/stats: %d %s", code, b)
	}
	if r := over.Rooms[0]; r.Name != "r" || r.State != "open" || r.Waiting != 1 || r.Active != 2 {
		t.Fatalf("overview row %+v, want r open, 1 waiting, 2 active", r)
	}
	code, b = e.do("GET", "/v1/rooms/r/stats", "", false)
	var sum roomstats.Summary
	if code != 200 || json.Unmarshal(b, &sum) != nil {
		t.Fatalf("GET stats: %d %s", code, b)
	}
	var joins, admissions, abandons int64
	for _, p := range sum.Series {
		joins, admissions, abandons = joins+p.Joins, admissions+p.Admissions, abandons+p.Abandons
	}
	if joins != 5 || admissions != 1 || abandons != 1 || sum.Waits.Count != 1 {
		t.Fatalf("stats over the hour: %d joins, %d admissions, %d abandons, %d waits; want 5, 1, 1, 1", joins, admissions, abandons, sum.Waits.Count)
	}
	if p := time.Duration(sum.Waits.P50Ms) * time.Millisecond; p < 28*time.Second || p > 32*time.Second {
		t.Fatalf("median wait %s, want about 30s", p)
	}
	if code, _ := e.do("GET", "/v1/rooms/nope/stats", "", false); code != http.StatusNotFound {
		t.Fatalf("stats of no room: %d, want 404", code)
	}

	// The live stream.
	req, _ := http.NewRequest("GET", e.srv.URL+"/v1/rooms/r/admin-events", nil)
	resp, err := e.jar.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("admin-events: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	events := make(chan [2]string, 64)
	go func() {
		defer close(events)
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		var name string
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, "event: "):
				name = line[7:]
			case strings.HasPrefix(line, "data: "):
				events <- [2]string{name, line[6:]}
			}
		}
	}()
	next := func(want string) string {
		t.Helper()
		deadline := time.After(15 * time.Second)
		for {
			select {
			case ev, ok := <-events:
				if !ok {
					t.Fatalf("stream ended before a %q event", want)
				}
				if ev[0] == want {
					return ev[1]
				}
			case <-deadline:
				t.Fatalf("no %q event within 15s", want)
			}
		}
	}
	var room waitroom.Room
	if err := json.Unmarshal([]byte(next("room")), &room); err != nil || room.Name != "r" || room.Waiting != 1 {
		t.Fatalf("first room event: %+v %v", room, err)
	}
	var live roomstats.Summary
	if err := json.Unmarshal([]byte(next("stats")), &live); err != nil || len(live.Series) != 1 || live.Waits.Count != 1 {
		t.Fatalf("stats event: %+v %v, want one point and the wait", live, err)
	}
	if code, _ := e.do("PUT", "/v1/rooms/r", `{"capacity":2,"waiting_timeout":"0s","paused":true}`, true); code != 200 {
		t.Fatalf("pause: %d", code)
	}
	// The pause comes as a room event and an audit entry, in one tick.
	var en waitroom.AuditEntry
	paused := false
	for !paused || en.Action == "" {
		select {
		case ev, ok := <-events:
			if !ok {
				t.Fatal("stream ended")
			}
			switch ev[0] {
			case "room":
				if json.Unmarshal([]byte(ev[1]), &room) != nil {
					t.Fatalf("room event %s", ev[1])
				}
				paused = room.Paused
			case "audit":
				if err := json.Unmarshal([]byte(ev[1]), &en); err != nil || en.Action != waitroom.AuditPause {
					t.Fatalf("audit event: %+v %v, want the pause", en, err)
				}
			}
		case <-time.After(15 * time.Second):
			t.Fatalf("within 15s of the pause: room paused %v, audit %q", paused, en.Action)
		}
	}
	// Deleting the room ends the stream.
	if code, _ := e.do("DELETE", "/v1/rooms/r?force=true", "", true); code != http.StatusNoContent {
		t.Fatalf("delete: %d", code)
	}
	next("deleted")
}
