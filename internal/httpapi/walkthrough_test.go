package httpapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/waitroom/waitroom"
)

// TestWalkthrough follows the SPEC over real HTTP: a room of capacity 2,
// five joins, leaves from the line and from a slot, and an idle expiry that
// hands the slot on.
func TestWalkthrough(t *testing.T) {
	e := newEnv(t)
	e.must(http.StatusCreated, withAdmin, "PUT", "/v1/rooms/shop",
		`{"capacity":2,"active_timeout":"1m","waiting_timeout":"10m"}`)

	var s [5]waitroom.Session
	for i := range s {
		s[i] = e.session(e.must(http.StatusCreated, noAuth, "POST", "/v1/rooms/shop/sessions", ""))
		if s[i].Ticket != int64(i+1) {
			t.Errorf("join %d: got ticket %d, want %d", i+1, s[i].Ticket, i+1)
		}
	}
	for i := range 2 {
		if s[i].Status != waitroom.StatusActive {
			t.Errorf("join %d: got status %s, want active", i+1, s[i].Status)
		}
	}
	for i := 2; i < 5; i++ {
		want := int64(i - 1)
		if s[i].Status != waitroom.StatusWaiting || s[i].Position != want || s[i].Ahead() != want-1 {
			t.Errorf("join %d: got %s at position %d (ahead %d), want waiting at %d (ahead %d)",
				i+1, s[i].Status, s[i].Position, s[i].Ahead(), want, want-1)
		}
	}
	if last := s[4]; last.Waiting != 3 || last.Active != 2 || last.Capacity != 2 {
		t.Errorf("fifth join: got totals waiting %d active %d capacity %d, want 3 2 2", last.Waiting, last.Active, last.Capacity)
	}
	checkStatus(t, e, 2, 3)

	// Position 2 leaves: the last moves up to 2.
	left := e.session(e.must(http.StatusOK, noAuth, "DELETE", "/v1/rooms/shop/sessions/"+s[3].ID, ""))
	if left.Status != waitroom.StatusLeft || left.EndReason != waitroom.ReasonLeft {
		t.Errorf("leave from the line: got %s/%s, want left/left", left.Status, left.EndReason)
	}
	if got := e.session(e.must(http.StatusOK, noAuth, "GET", "/v1/rooms/shop/sessions/"+s[4].ID, "")); got.Position != 2 || got.Ahead() != 1 {
		t.Errorf("last after position 2 left: got position %d ahead %d, want 2 and 1", got.Position, got.Ahead())
	}
	// Leaving again answers the same ended session.
	if again := e.session(e.must(http.StatusOK, noAuth, "DELETE", "/v1/rooms/shop/sessions/"+s[3].ID, "")); again.Status != waitroom.StatusLeft {
		t.Errorf("second leave: got status %s, want left", again.Status)
	}

	// An active session leaves (a second later, so the history order is
	// plain): position 1 is admitted within that request.
	e.clock.Advance(time.Second)
	e.must(http.StatusOK, noAuth, "DELETE", "/v1/rooms/shop/sessions/"+s[0].ID, "")
	waiting, next := e.sessions(e.must(http.StatusOK, withAdmin, "GET", "/v1/rooms/shop/waiting", ""))
	if len(waiting) != 1 || waiting[0].ID != s[4].ID || waiting[0].Position != 1 || next != "" {
		t.Errorf("waiting after an active left: got %v (next %q), want only the last join at position 1", ids(waiting), next)
	}
	if got := e.session(e.must(http.StatusOK, noAuth, "GET", "/v1/rooms/shop/sessions/"+s[2].ID, "")); got.Status != waitroom.StatusActive {
		t.Errorf("former position 1 after an active left: got status %s, want active", got.Status)
	}
	checkStatus(t, e, 2, 1)

	// s[1] has been idle since it joined; s[2] shows activity half-way.
	e.clock.Advance(30 * time.Second)
	e.must(http.StatusOK, noAuth, "POST", "/v1/rooms/shop/sessions/"+s[2].ID+"/heartbeat", "")
	e.clock.Advance(30 * time.Second)
	// A sweep (the server's background work) expires s[1] and admits the last.
	if _, err := e.store.Sweep(context.Background(), "shop", e.clock.Now()); err != nil {
		t.Fatalf("Sweep: %v", err)
	}
	idle := e.session(e.must(http.StatusOK, noAuth, "GET", "/v1/rooms/shop/sessions/"+s[1].ID, ""))
	if idle.Status != waitroom.StatusExpired || idle.EndReason != waitroom.ReasonIdle {
		t.Errorf("idle active session: got %s/%s, want expired/idle", idle.Status, idle.EndReason)
	}
	if got := e.session(e.must(http.StatusOK, noAuth, "GET", "/v1/rooms/shop/sessions/"+s[4].ID, "")); got.Status != waitroom.StatusActive {
		t.Errorf("last join after the idle expiry: got status %s, want active", got.Status)
	}
	if got := e.session(e.must(http.StatusOK, noAuth, "GET", "/v1/rooms/shop/sessions/"+s[2].ID, "")); got.Status != waitroom.StatusActive {
		t.Errorf("session with a heartbeat: got status %s, want active", got.Status)
	}
	checkStatus(t, e, 2, 0)

	hist, _ := e.sessions(e.must(http.StatusOK, withAdmin, "GET", "/v1/rooms/shop/history", ""))
	if got, want := ids(hist), []string{s[1].ID, s[0].ID, s[3].ID}; !slices.Equal(got, want) {
		t.Errorf("history: got %v, want %v (newest first)", got, want)
	}
	expired, _ := e.sessions(e.must(http.StatusOK, withAdmin, "GET", "/v1/rooms/shop/history?status=expired", ""))
	if len(expired) != 1 || expired[0].ID != s[1].ID {
		t.Errorf("history?status=expired: got %v, want [%s]", ids(expired), s[1].ID)
	}
}

// TestIdleExpiryOnRequest checks that a request alone, with no sweep, sees
// the expiry that is due at its time and the slot handed on.
func TestIdleExpiryOnRequest(t *testing.T) {
	e := newEnv(t)
	e.must(http.StatusCreated, withAdmin, "PUT", "/v1/rooms/one", `{"capacity":1,"active_timeout":"1m","waiting_timeout":"0s"}`)
	a := e.session(e.must(http.StatusCreated, noAuth, "POST", "/v1/rooms/one/sessions", ""))
	b := e.session(e.must(http.StatusCreated, noAuth, "POST", "/v1/rooms/one/sessions", ""))
	e.clock.Advance(time.Minute)
	if got := e.session(e.must(http.StatusOK, noAuth, "GET", "/v1/rooms/one/sessions/"+b.ID, "")); got.Status != waitroom.StatusActive {
		t.Errorf("waiting session after the active one idled out: got %s, want active", got.Status)
	}
	if got := e.session(e.must(http.StatusOK, noAuth, "GET", "/v1/rooms/one/sessions/"+a.ID, "")); got.EndReason != waitroom.ReasonIdle {
		t.Errorf("idle session: got end_reason %q, want idle", got.EndReason)
	}
}

// TestAdminFlow covers the admin endpoints' success answers: PUT 201 then
// 200, the room list, revoke, advance, a keyed join, away, and deletion.
func TestAdminFlow(t *testing.T) {
	e := newEnv(t)
	created := e.must(http.StatusCreated, withAdmin, "PUT", "/v1/rooms/desk", `{"mode":"manual","grace":"10s"}`)
	var room waitroom.Room
	if err := json.Unmarshal(created.body, &room); err != nil {
		t.Fatalf("decoding room %s: %v", created.body, err)
	}
	if room.Name != "desk" || room.Mode != waitroom.ModeManual || room.Capacity != 100 || room.Grace != waitroom.Duration(10*time.Second) {
		t.Errorf("PUT answer: got %+v, want room desk, manual, default capacity 100, grace 10s", room)
	}
	e.must(http.StatusOK, withAdmin, "PUT", "/v1/rooms/desk", `{"mode":"manual"}`)

	var list struct {
		Rooms []map[string]any `json:"rooms"`
	}
	if err := json.Unmarshal(e.must(http.StatusOK, withAdmin, "GET", "/v1/rooms", "").body, &list); err != nil {
		t.Fatal(err)
	}
	if len(list.Rooms) != 1 || list.Rooms[0]["room"] != "desk" || list.Rooms[0]["grace"] != "30s" || list.Rooms[0]["waiting"] != 0.0 {
		t.Errorf("room list: got %v, want desk with grace 30s (replaced) and 0 waiting", list.Rooms)
	}

	keyed := e.session(e.must(http.StatusCreated, withAdmin, "POST", "/v1/rooms/desk/sessions", `{"key":"user-1"}`))
	if keyed.Key != "user-1" || keyed.Status != waitroom.StatusWaiting {
		t.Errorf("keyed join in a manual room: got key %q status %s, want user-1 waiting", keyed.Key, keyed.Status)
	}
	second := e.session(e.must(http.StatusCreated, noAuth, "POST", "/v1/rooms/desk/sessions", "{}"))
	// A null key is refused, not read as no key (issue 24).
	if v, err := errorShape(e.must(http.StatusBadRequest, noAuth, "POST", "/v1/rooms/desk/sessions", `{"key":null}`).header,
		e.do(noAuth, "POST", "/v1/rooms/desk/sessions", `{"key":null}`).body); err != nil || v.Error.Code != waitroom.CodeInvalidJSON {
		t.Errorf("join with a null key: %+v, %v; want 400 invalid_json", v, err)
	}
	third := e.session(e.must(http.StatusCreated, noAuth, "POST", "/v1/rooms/desk/sessions", `{}`))

	// Away answers 204 to a sendBeacon-like body of any type.
	ans := e.must(http.StatusNoContent, noAuth, "POST", "/v1/rooms/desk/sessions/"+second.ID+"/away", "any text at all")
	if len(ans.body) != 0 {
		t.Errorf("away: got body %q, want none", ans.body)
	}

	served, _ := e.sessions(e.must(http.StatusOK, withAdmin, "POST", "/v1/rooms/desk/advance", ""))
	if len(served) != 1 || served[0].ID != keyed.ID || served[0].Status != waitroom.StatusServed {
		t.Errorf("advance with no body: got %v, want the first join served", served)
	}
	revoked := e.session(e.must(http.StatusOK, withAdmin, "DELETE", "/v1/rooms/desk/sessions/"+second.ID, ""))
	if revoked.Status != waitroom.StatusLeft || revoked.EndReason != waitroom.ReasonRevoked {
		t.Errorf("revoke: got %s/%s, want left/revoked", revoked.Status, revoked.EndReason)
	}
	served, _ = e.sessions(e.must(http.StatusOK, withAdmin, "POST", "/v1/rooms/desk/advance", `{"n":5}`))
	if len(served) != 1 || served[0].ID != third.ID {
		t.Errorf("advance n=5 with one waiting: got %v, want [%s]", ids(served), third.ID)
	}

	pub := e.must(http.StatusOK, noAuth, "GET", "/v1/rooms/desk", "")
	var status map[string]any
	if err := json.Unmarshal(pub.body, &status); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"room": "desk", "mode": "manual", "capacity": 100.0, "active": 0.0, "waiting": 0.0, "paused": false}
	if len(status) != len(want) {
		t.Errorf("public status: got %v, want exactly %v", status, want)
	}
	for k, v := range want {
		if status[k] != v {
			t.Errorf("public status %s: got %v, want %v", k, status[k], v)
		}
	}

	e.must(http.StatusNoContent, withAdmin, "DELETE", "/v1/rooms/desk", "")
	e.must(http.StatusNotFound, noAuth, "GET", "/v1/rooms/desk", "")
}

// TestForceDelete deletes a room with live sessions only with force=true.
func TestForceDelete(t *testing.T) {
	e := newEnv(t)
	e.must(http.StatusCreated, withAdmin, "PUT", "/v1/rooms/r", "")
	e.must(http.StatusCreated, noAuth, "POST", "/v1/rooms/r/sessions", "")
	e.must(http.StatusConflict, withAdmin, "DELETE", "/v1/rooms/r", "")
	e.must(http.StatusNoContent, withAdmin, "DELETE", "/v1/rooms/r?force=true", "")
	e.must(http.StatusNotFound, noAuth, "GET", "/v1/rooms/r", "")
}

// TestPaging walks the waiting list in pages.
func TestPaging(t *testing.T) {
	e := newEnv(t)
	e.must(http.StatusCreated, withAdmin, "PUT", "/v1/rooms/r", `{"capacity":0}`)
	var want []string
	for range 7 {
		want = append(want, e.session(e.must(http.StatusCreated, noAuth, "POST", "/v1/rooms/r/sessions", "")).ID)
	}
	var got []string
	after := ""
	for pages := 0; ; pages++ {
		if pages > 7 {
			t.Fatalf("paging does not end; got %v so far", got)
		}
		page, next := e.sessions(e.must(http.StatusOK, withAdmin, "GET", "/v1/rooms/r/waiting?limit=3&after="+after, ""))
		if len(page) > 3 {
			t.Errorf("page of limit 3: got %d sessions", len(page))
		}
		for _, s := range page {
			if s.Position != int64(len(got)+1) {
				t.Errorf("session %s: got position %d, want %d", s.ID, s.Position, len(got)+1)
			}
			got = append(got, s.ID)
		}
		if next == "" {
			break
		}
		after = next
	}
	if !slices.Equal(got, want) {
		t.Errorf("paged waiting list: got %v, want %v", got, want)
	}
	// An empty list is [], not null.
	ans := e.must(http.StatusOK, withAdmin, "GET", "/v1/rooms/r/history", "")
	if string(ans.body) != `{"sessions":[],"next":""}`+"\n" {
		t.Errorf("empty history: got %s, want {\"sessions\":[],\"next\":\"\"}", ans.body)
	}
}

// TestHeaders checks the headers every API answer carries.
func TestHeaders(t *testing.T) {
	e := newEnv(t)
	for _, path := range []string{"/healthz", "/v1/rooms/nope", "/nowhere"} {
		ans := e.do(noAuth, "GET", path, "")
		if got := ans.header.Get("Content-Type"); got != "application/json; charset=utf-8" {
			t.Errorf("GET %s: got Content-Type %q, want application/json; charset=utf-8", path, got)
		}
		if got := ans.header.Get("Cache-Control"); got != "no-store" {
			t.Errorf("GET %s: got Cache-Control %q, want no-store", path, got)
		}
	}
	if ans := e.must(http.StatusOK, noAuth, "GET", "/healthz", ""); string(ans.body) != `{"status":"ok"}`+"\n" {
		t.Errorf("healthz: got %s, want {\"status\":\"ok\"}", ans.body)
	}
	e.must(http.StatusOK, noAuth, "GET", "/readyz", "")
}

func ids(ss []waitroom.Session) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = s.ID
	}
	return out
}

// checkStatus checks the public room status of room shop.
func checkStatus(t *testing.T, e *env, active, waiting int) {
	t.Helper()
	var st struct {
		Active, Waiting int
	}
	if err := json.Unmarshal(e.must(http.StatusOK, noAuth, "GET", "/v1/rooms/shop", "").body, &st); err != nil {
		t.Fatal(err)
	}
	if st.Active != active || st.Waiting != waiting {
		t.Errorf("room status: got active %d waiting %d, want %d and %d", st.Active, st.Waiting, active, waiting)
	}
}
