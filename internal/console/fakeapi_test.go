package console_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/internal/apierror"
	"github.com/waitroom/waitroom/internal/console"
)

// fakeAPI stands in for httpapi's admin routes the page calls, so the
// page can be driven in a browser without the rest of the server. Every
// route is let in by Console.Authorize alone (no bearer token), as httpapi
// does for a console cookie, and the requests are recorded.
type fakeAPI struct {
	c *console.Console

	mu      sync.Mutex
	room    waitroom.Room
	calls   []call
	audit   []map[string]any
	changed chan struct{} // a room or audit change for the event streams
}

// call is one state-changing request the page made.
type call struct {
	method, path string
	body         map[string]any
}

func newFakeAPI(c *console.Console) *fakeAPI {
	inv := int64(100)
	rem := int64(60)
	return &fakeAPI{c: c, changed: make(chan struct{}, 16), room: waitroom.Room{
		Name: "demo",
		RoomConfig: waitroom.RoomConfig{Mode: waitroom.ModeAuto, Capacity: 3, ActiveTimeout: waitroom.Duration(5 * time.Minute),
			WaitingTimeout: waitroom.Duration(time.Minute), Grace: waitroom.Duration(30 * time.Second), Inventory: &inv},
		Waiting: 7, Active: 2, LastTicket: 9, Admissions: 2, Sold: 38, Reserved: 2, Remaining: &rem, Revision: 1,
	}}
}

func (f *fakeAPI) routes(mux *http.ServeMux) {
	h := func(pattern string, fn func(w http.ResponseWriter, r *http.Request) any) {
		mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
			if err := f.c.Authorize(r); err != nil {
				writeAPI(w, apierror.Status(waitroom.ErrorCode(err)), map[string]any{"error": map[string]any{
					"code": waitroom.ErrorCode(err), "message": waitroom.ErrorMessage(err)}})
				return
			}
			if v := fn(w, r); v != nil {
				writeAPI(w, 200, v)
			}
		})
	}
	h("GET /v1/stats", func(w http.ResponseWriter, r *http.Request) any {
		f.mu.Lock()
		defer f.mu.Unlock()
		state := "open"
		if f.room.Paused {
			state = "paused"
		}
		return map[string]any{"rooms": []map[string]any{{"name": "demo", "state": state, "waiting": f.room.Waiting,
			"active": f.room.Active, "capacity": f.room.Capacity, "paused": f.room.Paused,
			"joins_per_minute": 1.5, "admissions_per_minute": 0.5}}}
	})
	h("GET /v1/rooms", func(w http.ResponseWriter, r *http.Request) any {
		f.mu.Lock()
		defer f.mu.Unlock()
		return map[string]any{"rooms": []waitroom.Room{f.room}}
	})
	h("PUT /v1/rooms/demo", func(w http.ResponseWriter, r *http.Request) any {
		b, _ := io.ReadAll(r.Body)
		var cfg waitroom.RoomConfig
		// The real API's decoder: unknown fields (counts) are refused.
		if err := waitroom.DecodeJSON(b, &cfg); err != nil {
			writeAPI(w, 400, map[string]any{"error": map[string]any{"code": "invalid_json", "message": waitroom.ErrorMessage(err)}})
			return nil
		}
		f.record(r, b)
		f.mu.Lock()
		f.room.RoomConfig = cfg
		f.room.Revision++
		room := f.room
		f.mu.Unlock()
		f.addAudit(map[string]any{"room": "demo", "actor": "console", "action": "config"})
		return room
	})
	// PATCH: a merge patch, on the condition If-Match names, as the real
	// API takes it (roomchange.go).
	h("PATCH /v1/rooms/demo", func(w http.ResponseWriter, r *http.Request) any {
		b, _ := io.ReadAll(r.Body)
		f.record(r, b)
		f.mu.Lock()
		defer f.mu.Unlock()
		if m := r.Header.Get("If-Match"); m != "" && m != f.room.ETag() {
			writeAPI(w, 412, map[string]any{"error": map[string]any{"code": "precondition_failed", "message": "changed"}})
			return nil
		}
		var patch map[string]json.RawMessage
		_ = json.Unmarshal(b, &patch)
		cur, _ := json.Marshal(f.room.RoomConfig)
		var doc map[string]json.RawMessage
		_ = json.Unmarshal(cur, &doc)
		for k, v := range patch {
			if string(v) == "null" {
				delete(doc, k)
			} else {
				doc[k] = v
			}
		}
		merged, _ := json.Marshal(doc)
		var cfg waitroom.RoomConfig
		if err := waitroom.DecodeJSON(merged, &cfg); err != nil {
			writeAPI(w, 400, map[string]any{"error": map[string]any{"code": "invalid_json", "message": waitroom.ErrorMessage(err)}})
			return nil
		}
		f.room.RoomConfig = cfg
		f.room.Revision++
		return f.room
	})
	for _, verb := range []string{"pause", "resume"} {
		h("POST /v1/rooms/demo/"+verb, func(w http.ResponseWriter, r *http.Request) any {
			b, _ := io.ReadAll(r.Body)
			f.record(r, b)
			f.mu.Lock()
			f.room.Paused = verb == "pause"
			f.room.Revision++
			room := f.room
			f.mu.Unlock()
			f.addAudit(map[string]any{"room": "demo", "actor": "console", "action": verb})
			return room
		})
	}
	h("POST /v1/rooms/demo/queue-all", func(w http.ResponseWriter, r *http.Request) any {
		f.record(r, nil)
		f.mu.Lock()
		f.room.Paused = true
		room := f.room
		f.mu.Unlock()
		return room
	})
	h("POST /v1/rooms/demo/advance", func(w http.ResponseWriter, r *http.Request) any {
		b, _ := io.ReadAll(r.Body)
		f.record(r, b)
		return map[string]any{"sessions": []map[string]any{{"id": "s8", "ticket": 8, "status": "active"}}}
	})
	h("GET /v1/rooms/demo/stats", func(w http.ResponseWriter, r *http.Request) any {
		return f.stats(time.Now(), 60)
	})
	h("GET /v1/rooms/demo/audit", func(w http.ResponseWriter, r *http.Request) any {
		f.mu.Lock()
		defer f.mu.Unlock()
		out := make([]map[string]any, len(f.audit))
		for i, e := range f.audit {
			out[len(f.audit)-1-i] = e
		}
		return map[string]any{"entries": out, "next": ""}
	})
	h("GET /v1/rooms/demo/find", func(w http.ResponseWriter, r *http.Request) any {
		if r.URL.Query().Get("q") == "user" {
			// Two sessions: the page offers a choice between them.
			return map[string]any{"sessions": []map[string]any{
				{"id": "AAAAAAAAAAUsessionidforfive", "room": "demo", "status": "waiting", "ticket": 5, "position": 3, "ahead": 2, "key": "user-5"},
				{"id": "AAAAAAAAAAYsessionidforsix", "room": "demo", "status": "active", "ticket": 6, "key": "user-6"}},
				"audit": []any{}}
		}
		if r.URL.Query().Get("q") == "tier" {
			// A tiered session (a positive place, from its tier and
			// ticket) and one an operator moved (a negative place).
			return map[string]any{"sessions": []map[string]any{
				{"id": "AAAAAAAAAAcsessionidforseven", "room": "demo", "status": "waiting", "ticket": 7, "position": 2,
					"tier": "presale", "place": 7},
				{"id": "AAAAAAAAAAgsessionidforeight", "room": "demo", "status": "waiting", "ticket": 8, "position": 1,
					"tier": "general", "place": -1}},
				"audit": []any{}}
		}
		if r.URL.Query().Get("q") == "10" {
			// A held place invited to claim its slot, five minutes left.
			now := time.Now().UTC()
			return map[string]any{"sessions": []map[string]any{{"id": "AAAAAAAAAAosessionidforten", "room": "demo",
				"status": "invited", "ticket": 10, "contact": "ana@example.com", "joined_at": now.Add(-time.Hour).Format(waitroom.TimeFormat),
				"admitted_at": now.Format(waitroom.TimeFormat), "claim_by": now.Add(5 * time.Minute).Format(waitroom.TimeFormat)}},
				"audit": []any{}}
		}
		if r.URL.Query().Get("q") != "5" {
			return map[string]any{"sessions": []any{}, "audit": []any{}}
		}
		return map[string]any{"sessions": []map[string]any{{"id": "AAAAAAAAAAUsessionidforfive", "room": "demo",
			"status": "waiting", "ticket": 5, "position": 3, "ahead": 2, "key": "user-5"}},
			"audit": []map[string]any{{"id": "a0", "at": "2030-01-01T00:00:00.000Z", "room": "demo", "actor": "api", "action": "advance"}}}
	})
	for _, p := range []string{"DELETE /v1/rooms/demo/sessions/{id}", "POST /v1/rooms/demo/sessions/{id}/front", "POST /v1/rooms/demo/sessions/{id}/extend"} {
		h(p, func(w http.ResponseWriter, r *http.Request) any {
			b, _ := io.ReadAll(r.Body)
			f.record(r, b)
			action := r.URL.Path[strings.LastIndexByte(r.URL.Path, '/')+1:]
			if r.Method == "DELETE" {
				action = "revoke"
			}
			f.addAudit(map[string]any{"room": "demo", "actor": "console", "action": action, "session": r.PathValue("id"), "ticket": 5})
			return map[string]any{"id": r.PathValue("id"), "room": "demo", "status": "waiting", "ticket": 5, "position": 1}
		})
	}
	// The line and the history: a held place waiting, one that let its
	// claim window pass.
	h("GET /v1/rooms/demo/waiting", func(w http.ResponseWriter, r *http.Request) any {
		return map[string]any{"sessions": []map[string]any{
			{"id": "AAAAAAAAAAUsessionidforfive", "room": "demo", "status": "waiting", "ticket": 5, "position": 1, "ahead": 0,
				"key": "user-5", "joined_at": "2030-01-01T00:00:00Z"},
			{"id": "AAAAAAAAAAssessionidforeleven", "room": "demo", "status": "waiting", "ticket": 11, "position": 2, "ahead": 1,
				"contact": "bob@example.com", "joined_at": "2030-01-01T00:01:00Z"}},
			"next": ""}
	})
	h("GET /v1/rooms/demo/history", func(w http.ResponseWriter, r *http.Request) any {
		return map[string]any{"sessions": []map[string]any{
			{"id": "AAAAAAAAAAQsessionidforfour", "room": "demo", "status": "expired", "ticket": 4, "end_reason": "unclaimed",
				"contact": "+15551234567", "joined_at": "2030-01-01T00:00:00Z", "admitted_at": "2030-01-01T00:05:00Z", "ended_at": "2030-01-01T00:15:00Z"},
			{"id": "AAAAAAAAAAMsessionidforthree", "room": "demo", "status": "left", "ticket": 3, "end_reason": "left",
				"joined_at": "2030-01-01T00:00:00Z", "ended_at": "2030-01-01T00:04:00Z"}},
			"next": ""}
	})
	h("POST /v1/rooms/demo/invites", func(w http.ResponseWriter, r *http.Request) any {
		f.invites(w, r)
		return nil
	})
	// One webhook, failing, and one dead letter: the Webhooks panel has
	// something to show (the real routes are driven in
	// webhooks_browser_test.go).
	h("GET /v1/rooms/demo/webhooks", func(w http.ResponseWriter, r *http.Request) any {
		return map[string]any{"webhooks": []map[string]any{{"room": "demo", "name": "orders",
			"url":    "https://hooks.example.com/waitroom/a-rather-long-path-that-must-wrap-on-a-phone-screen/orders",
			"events": []string{"session.admitted", "session.ended"}, "created_at": "2030-01-01T00:00:00Z", "updated_at": "2030-01-01T00:00:00Z",
			"stats": map[string]any{"pending": 2, "dead": 1, "delivered": 40, "failed": 9, "last_error": "HTTP 503 Service Unavailable",
				"last_error_at": "2030-01-01T01:00:00Z", "last_delivered_at": "2030-01-01T00:30:00Z"}}}}
	})
	h("GET /v1/rooms/demo/dead-letters", func(w http.ResponseWriter, r *http.Request) any {
		return map[string]any{"dead_letters": []map[string]any{{"room": "demo", "webhook": "orders",
			"message": map[string]any{"id": "msg_7", "type": "session.ended", "timestamp": "2029-12-31T00:00:00Z",
				"data": map[string]any{"room": "demo", "session": "AAAAAAAAAAUsessionidforfive", "ticket": 5, "status": "served"}},
			"attempts": 17, "last_error": "HTTP 503 Service Unavailable", "dead_at": "2030-01-01T00:00:00Z"}}, "next": ""}
	})
	h("GET /v1/rooms/demo/admin-events", func(w http.ResponseWriter, r *http.Request) any {
		f.events(w, r)
		return nil
	})
}

// invites answers POST /v1/rooms/demo/invites as httpapi does: the same
// defaults, limits, errors and audit entry, with tokens of its own.
func (f *fakeAPI) invites(w http.ResponseWriter, r *http.Request) {
	fail := func(status int, code, format string, args ...any) {
		writeAPI(w, status, map[string]any{"error": map[string]any{"code": code, "message": fmt.Sprintf(format, args...)}})
	}
	b, _ := io.ReadAll(r.Body)
	var req struct {
		Count  int    `json:"count"`
		Tier   string `json:"tier"`
		Key    string `json:"key"`
		Uses   int    `json:"uses"`
		Expiry string `json:"expiry"`
	}
	if len(b) > 0 {
		if err := waitroom.DecodeJSON(b, &req); err != nil {
			fail(400, "invalid_json", "%s", waitroom.ErrorMessage(err))
			return
		}
	}
	f.record(r, b)
	now := time.Now()
	if req.Count == 0 {
		req.Count = 1
	}
	if req.Uses == 0 {
		req.Uses = 1
	}
	if req.Count < 0 || req.Count > 1000 {
		fail(400, "invalid_request", "count is between 1 and 1000.")
		return
	}
	f.mu.Lock()
	cfg := f.room.RoomConfig
	f.mu.Unlock()
	if cfg.TierIndex(req.Tier) < 0 {
		fail(400, "invalid_request", "Room %q has no tier named %q.", "demo", req.Tier)
		return
	}
	expires := now.Add(7 * 24 * time.Hour)
	if req.Expiry != "" {
		if d, err := waitroom.ParseDuration(req.Expiry); err == nil {
			expires = now.Add(d.D())
		} else if t, err := time.Parse(time.RFC3339, req.Expiry); err == nil {
			expires = t
		} else {
			fail(400, "invalid_request", `expiry is a duration such as "72h" or an RFC 3339 time such as "2030-06-01T18:00:00Z", within 366 days.`)
			return
		}
	}
	expires = expires.Truncate(time.Second).UTC()
	out := make([]map[string]any, req.Count)
	for i := range out {
		token := fmt.Sprintf("wr1.fake%04d", i+1)
		out[i] = map[string]any{"token": token, "link": "/r/demo#invite=" + token, "uses": req.Uses, "expires_at": expires}
		if req.Tier != "" {
			out[i]["tier"] = req.Tier
		}
	}
	f.addAudit(map[string]any{"room": "demo", "actor": "console", "action": "invites",
		"detail": map[string]any{"count": req.Count, "tier": req.Tier, "uses": req.Uses, "expires_at": expires.Format(time.RFC3339)}})
	writeAPI(w, 201, map[string]any{"invites": out})
}

// configure changes the room's configuration, as a PUT by someone else
// would.
func (f *fakeAPI) configure(fn func(*waitroom.RoomConfig)) {
	f.mu.Lock()
	fn(&f.room.RoomConfig)
	f.mu.Unlock()
}

func (f *fakeAPI) record(r *http.Request, b []byte) {
	var body map[string]any
	_ = json.Unmarshal(b, &body)
	f.mu.Lock()
	f.calls = append(f.calls, call{method: r.Method, path: r.URL.Path, body: body})
	f.mu.Unlock()
}

func (f *fakeAPI) callsSoFar() []call {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]call(nil), f.calls...)
}

func (f *fakeAPI) addAudit(e map[string]any) {
	f.mu.Lock()
	e["id"] = fmt.Sprintf("a%d", len(f.audit)+1)
	e["at"] = time.Now().UTC().Format(waitroom.TimeFormat)
	f.audit = append(f.audit, e)
	f.mu.Unlock()
	select {
	case f.changed <- struct{}{}:
	default:
	}
}

// stats is the /stats answer with n buckets of 10 s up to now.
func (f *fakeAPI) stats(now time.Time, n int) map[string]any {
	f.mu.Lock()
	waiting, active := f.room.Waiting, f.room.Active
	f.mu.Unlock()
	end := now.Truncate(10 * time.Second)
	series := make([]map[string]any, 0, n)
	for i := n - 1; i >= 0; i-- {
		series = append(series, map[string]any{"t": end.Add(-time.Duration(i) * 10 * time.Second).UTC().Format(waitroom.TimeFormat),
			"waiting": waiting + i%5, "active": active, "joins": 2, "admissions": 1, "abandons": i % 2})
	}
	return map[string]any{"room": "demo", "at": now.UTC().Format(waitroom.TimeFormat), "step_seconds": 10, "series": series,
		"waits":    map[string]any{"window_seconds": 900, "count": 12, "p50_ms": 65000, "p90_ms": 185000, "p99_ms": 301000},
		"estimate": map[string]any{"last_eta_seconds": 95, "count": 12, "mean_error_seconds": -4.5, "mean_abs_error_seconds": 12.25, "mean_rel_error_pct": 8.5}}
}

// events is the admin event stream: stats five times a second, the room
// and the newest audit entry at each change.
func (f *fakeAPI) events(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(200)
	rc := http.NewResponseController(w)
	send := func(event string, v any) bool {
		b, _ := json.Marshal(v)
		if _, err := fmt.Fprintf(w, "event: %s\ndata: %s\n\n", event, b); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-tick.C:
			if !send("stats", f.stats(time.Now(), 1)) {
				return
			}
		case <-f.changed:
			f.mu.Lock()
			room := f.room
			last := f.audit[len(f.audit)-1]
			f.mu.Unlock()
			if !send("room", room) || !send("audit", last) {
				return
			}
		}
	}
}

func writeAPI(w http.ResponseWriter, status int, v any) {
	b, _ := json.Marshal(v)
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}
