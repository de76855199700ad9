package httpapi_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"testing"

	"github.com/waitroom/waitroom"
)

// TestOperatorMoves drives queue-all, move to the front, extend, find and
// the audit log through the API and checks each answer and the log.
func TestOperatorMoves(t *testing.T) {
	e := newEnv(t)
	e.must(http.StatusCreated, withAdmin, "PUT", "/v1/rooms/r", `{"capacity":2,"waiting_timeout":"0s","active_timeout":"0s","max_session":"1h"}`)
	var ss []waitroom.Session
	for i := range 5 {
		body := ""
		if i == 4 {
			body = `{"key":"dana@example.com"}`
		}
		ss = append(ss, e.session(e.must(http.StatusCreated, withAdmin, "POST", "/v1/rooms/r/sessions", body)))
	}
	// #5 (dana) to the front.
	got := e.session(e.must(http.StatusOK, withAdmin, "POST", "/v1/rooms/r/sessions/"+ss[4].ID+"/front", `{"reason":"lost her place to a bug"}`))
	if got.Position != 1 || got.Place >= 0 {
		t.Fatalf("front: position %d, place %d; want 1, negative", got.Position, got.Place)
	}
	// Queue-all: #1 and #2 back ahead of everyone, the room paused.
	var room waitroom.Room
	if err := json.Unmarshal(e.must(http.StatusOK, withAdmin, "POST", "/v1/rooms/r/queue-all", "").body, &room); err != nil {
		t.Fatal(err)
	}
	if !room.Paused || room.Active != 0 || room.Waiting != 5 {
		t.Fatalf("queue-all: paused %v, %d active, %d waiting; want paused, 0, 5", room.Paused, room.Active, room.Waiting)
	}
	line, _ := e.sessions(e.must(http.StatusOK, withAdmin, "GET", "/v1/rooms/r/waiting?limit=2", ""))
	if len(line) != 2 || line[0].Ticket != 1 || line[1].Ticket != 2 {
		t.Fatalf("waiting after queue-all starts %v, want #1, #2", tickets(line))
	}
	// Their own pages say so: waiting again, at the front.
	if s := e.session(e.must(http.StatusOK, noAuth, "GET", "/v1/rooms/r/sessions/"+ss[0].ID, "")); s.Status != waitroom.StatusWaiting || s.Position != 1 || s.Pass != "" {
		t.Fatalf("#1 after queue-all: %s at %d pass %q; want waiting at 1, no pass", s.Status, s.Position, s.Pass)
	}
	// Resume: #1 and #2 in first.
	e.must(http.StatusOK, withAdmin, "PUT", "/v1/rooms/r", `{"capacity":2,"waiting_timeout":"0s","active_timeout":"0s","max_session":"1h","paused":false}`)
	for _, s := range ss[:2] {
		if x := e.session(e.must(http.StatusOK, noAuth, "GET", "/v1/rooms/r/sessions/"+s.ID, "")); x.Status != waitroom.StatusActive {
			t.Fatalf("#%d after resume: %s, want active", s.Ticket, x.Status)
		}
	}
	// Extend #1.
	x := e.session(e.must(http.StatusOK, withAdmin, "POST", "/v1/rooms/r/sessions/"+ss[0].ID+"/extend", `{"by":"15m","reason":"support call"}`))
	if x.Extended.Minutes() != 15 {
		t.Fatalf("extend: extended %s, want 15m", x.Extended)
	}
	// Find by ticket, by key, by id prefix.
	for _, q := range []string{"5", "#5", "dana@example.com", ss[4].ID[:11], ss[4].ID[:20]} {
		var ans struct {
			Sessions []waitroom.Session    `json:"sessions"`
			Audit    []waitroom.AuditEntry `json:"audit"`
		}
		if err := json.Unmarshal(e.must(http.StatusOK, withAdmin, "GET", "/v1/rooms/r/find?q="+url.QueryEscape(q), "").body, &ans); err != nil {
			t.Fatal(err)
		}
		if len(ans.Sessions) != 1 || ans.Sessions[0].ID != ss[4].ID {
			t.Fatalf("find %q: %v, want #5", q, tickets(ans.Sessions))
		}
		if len(ans.Audit) != 1 || ans.Audit[0].Action != waitroom.AuditFront || ans.Audit[0].Reason != "lost her place to a bug" {
			t.Fatalf("find %q: audit %+v, want the move to the front with its reason", q, ans.Audit)
		}
	}
	// A prefix that is not #5's own finds nobody, though it names ticket 5.
	wrong := []byte(ss[4].ID[:20])
	wrong[19] ^= 1
	if ans := e.must(http.StatusOK, withAdmin, "GET", "/v1/rooms/r/find?q="+string(wrong), ""); string(ans.body) != "{\"sessions\":[],\"audit\":[]}\n" {
		t.Fatalf("find by a wrong prefix: %s", ans.body)
	}
	// Revoke #2 with the token.
	e.must(http.StatusOK, withAdmin, "DELETE", "/v1/rooms/r/sessions/"+ss[1].ID, "")

	// The audit log, newest first, every action with the API as actor.
	var log struct {
		Entries []waitroom.AuditEntry `json:"entries"`
		Next    string                `json:"next"`
	}
	if err := json.Unmarshal(e.must(http.StatusOK, withAdmin, "GET", "/v1/rooms/r/audit", "").body, &log); err != nil {
		t.Fatal(err)
	}
	var actions []string
	for _, en := range log.Entries {
		actions = append(actions, en.Action)
		if en.Actor != waitroom.AuditActorAPI || en.Room != "r" || en.At.IsZero() {
			t.Fatalf("audit entry %+v: want actor api, room r, a time", en)
		}
	}
	want := []string{"revoke", "extend", "resume", "queue_all", "front", "config"}
	if len(actions) != len(want) {
		t.Fatalf("audit actions %v, want %v", actions, want)
	}
	for i := range want {
		if actions[i] != want[i] {
			t.Fatalf("audit actions %v, want %v", actions, want)
		}
	}
	// Paging: one at a time gives the same.
	page, next := e.auditPage("/v1/rooms/r/audit?limit=1")
	for i := 1; next != ""; i++ {
		if page[0].Action != want[i-1] {
			t.Fatalf("audit page %d: %s, want %s", i, page[0].Action, want[i-1])
		}
		page, next = e.auditPage("/v1/rooms/r/audit?limit=1&after=" + url.QueryEscape(next))
	}
}

func (e *env) auditPage(path string) ([]waitroom.AuditEntry, string) {
	e.t.Helper()
	var v struct {
		Entries []waitroom.AuditEntry `json:"entries"`
		Next    string                `json:"next"`
	}
	if err := json.Unmarshal(e.must(http.StatusOK, withAdmin, "GET", path, "").body, &v); err != nil {
		e.t.Fatal(err)
	}
	return v.Entries, v.Next
}

func tickets(ss []waitroom.Session) []int64 {
	out := make([]int64, len(ss))
	for i, s := range ss {
		out[i] = s.Ticket
	}
	return out
}

// TestAdvanceAnswersWithThePass: the sessions an advance admits are shown
// as a read of each shows it, active with its pass (issue 24).
func TestAdvanceAnswersWithThePass(t *testing.T) {
	e := newPassEnv(t)
	// An auto room of no capacity: only an advance admits.
	e.must(http.StatusCreated, withAdmin, "PUT", "/v1/rooms/m", `{"capacity":0}`)
	var ids []string
	for range 2 {
		ids = append(ids, e.session(e.must(http.StatusCreated, noAuth, "POST", "/v1/rooms/m/sessions", "")).ID)
	}
	moved, _ := e.sessions(e.must(http.StatusOK, withAdmin, "POST", "/v1/rooms/m/advance", `{"n":2}`))
	if len(moved) != 2 {
		t.Fatalf("advance moved %d sessions, want 2", len(moved))
	}
	for i, s := range moved {
		read := e.session(e.must(http.StatusOK, noAuth, "GET", "/v1/rooms/m/sessions/"+ids[i], ""))
		if s.Status != waitroom.StatusActive || s.Pass == "" || s.Pass != read.Pass {
			t.Errorf("advanced #%d: %s with pass %q; a read shows pass %q; want active with the read's pass", i+1, s.Status, s.Pass, read.Pass)
		}
	}
}
