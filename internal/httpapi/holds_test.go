package httpapi_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/internal/httpapi"
	"github.com/waitroom/waitroom/memstore"
)

// holdRoom is a room of one slot that holds places for 2 minutes.
const holdRoom = `{"capacity":1,"hold_places":true,"claim_window":"2m","waiting_timeout":"30s","active_timeout":"0s"}`

// newPassEnv is newEnv whose handler completes active sessions with a
// stand-in pass, as `waitroom serve` does with the gate's Fill.
func newPassEnv(t *testing.T) *env {
	t.Helper()
	e := &env{t: t, store: memstore.New(), clock: waitroom.NewManualClock(time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)), reg: prometheus.NewRegistry()}
	e.handler = checked(t, httpapi.NewHandler(withParts(t, httpapi.Config{
		Store: e.store, AdminToken: adminToken, Clock: e.clock, Registry: e.reg, Admit: admission(t, e.store, e.clock, nil),
		Fill: func(s *waitroom.Session, _ time.Time) {
			if s.Status == waitroom.StatusActive {
				s.Pass = "pass-of-" + s.ID[:10]
			}
		},
	})))
	e.srv = httptest.NewServer(e.handler)
	t.Cleanup(func() {
		e.srv.Close()
		_ = e.store.Close()
	})
	return e
}

// TestHeldJoinAndClaim follows a held place over HTTP: a trusted backend
// joins it with a contact; it waits without presence; its turn makes it
// invited with claim_by; a claim before then makes it active with a pass.
func TestHeldJoinAndClaim(t *testing.T) {
	e := newPassEnv(t)
	e.must(http.StatusCreated, withAdmin, "PUT", "/v1/rooms/h", holdRoom)
	first := e.session(e.must(http.StatusCreated, noAuth, "POST", "/v1/rooms/h/sessions", ""))
	held := e.session(e.must(http.StatusCreated, withAdmin, "POST", "/v1/rooms/h/sessions", `{"contact":"mailto:ada@example.com"}`))
	if held.Status != waitroom.StatusWaiting || held.Position != 1 || held.Contact != "mailto:ada@example.com" {
		t.Fatalf("held join: got %s at %d with contact %q, want waiting at 1 with the contact", held.Status, held.Position, held.Contact)
	}
	base := "/v1/rooms/h/sessions/" + held.ID

	// Still waiting: the claim is refused, and nothing changes.
	ans := e.must(http.StatusConflict, noAuth, "POST", base+"/claim", "")
	v, err := errorShape(ans.header, ans.body)
	if err != nil || v.Error.Code != waitroom.CodeNotInvited || !strings.Contains(v.Error.Message, "waiting") {
		t.Fatalf("claim while waiting: got %s (%v), want 409 not_invited saying it still waits", ans.body, err)
	}

	// A held place needs no presence: long past waiting_timeout it waits on.
	e.clock.Set(e.clock.Now().Add(5 * time.Minute))
	e.must(http.StatusOK, noAuth, "POST", "/v1/rooms/h/sessions/"+first.ID+"/heartbeat", "")
	if got := e.session(e.must(http.StatusOK, noAuth, "GET", base, "")); got.Status != waitroom.StatusWaiting || got.Position != 1 {
		t.Fatalf("held place after 5 minutes without presence: got %s at %d, want waiting at 1", got.Status, got.Position)
	}

	// The slot frees: the held place is invited until claim_by.
	e.must(http.StatusOK, noAuth, "DELETE", "/v1/rooms/h/sessions/"+first.ID, "")
	invitedAt := e.clock.Now()
	inv := e.session(e.must(http.StatusOK, noAuth, "GET", base, ""))
	if inv.Status != waitroom.StatusInvited || !inv.ClaimBy.Equal(invitedAt.Add(2*time.Minute)) || inv.Pass != "" {
		t.Fatalf("held place at its turn: got %s, claim_by %v, pass %q; want invited until %v without a pass", inv.Status, inv.ClaimBy, inv.Pass, invitedAt.Add(2*time.Minute))
	}
	if !strings.Contains(string(e.must(http.StatusOK, noAuth, "GET", base, "").body), `"claim_by":"`) {
		t.Errorf("an invited session's answer lacks claim_by")
	}

	// The claim: active, with its pass, admitted now.
	e.clock.Set(e.clock.Now().Add(time.Minute))
	ans = e.must(http.StatusOK, noAuth, "POST", base+"/claim", "")
	got := e.session(ans)
	if got.ID != held.ID || got.Status != waitroom.StatusActive || got.Pass != "pass-of-"+held.ID[:10] || !got.AdmittedAt.Equal(e.clock.Now()) {
		t.Fatalf("claim: got %s, pass %q, admitted %v; want active with its pass, admitted %v", got.Status, got.Pass, got.AdmittedAt, e.clock.Now())
	}
	if ct := ans.header.Get("Content-Type"); ct != "application/json; charset=utf-8" {
		t.Errorf("claim: Content-Type %q", ct)
	}
	// A second claim (a double click) answers the active session as it is.
	again := e.session(e.must(http.StatusOK, noAuth, "POST", base+"/claim", ""))
	if again.Status != waitroom.StatusActive || !again.AdmittedAt.Equal(got.AdmittedAt) || again.Pass == "" {
		t.Fatalf("second claim: got %s admitted %v pass %q, want the same active session", again.Status, again.AdmittedAt, again.Pass)
	}
	checkStatusOf(t, e, "h", 1, 0)
}

// TestUnclaimedPlaceExpires: a held place not claimed within claim_window
// ends (unclaimed), the slot goes on, and a late claim is 409 not_invited.
func TestUnclaimedPlaceExpires(t *testing.T) {
	e := newEnv(t)
	e.must(http.StatusCreated, withAdmin, "PUT", "/v1/rooms/h", `{"capacity":1,"hold_places":true,"claim_window":"2m","waiting_timeout":"0s","active_timeout":"0s"}`)
	held := e.session(e.must(http.StatusCreated, withAdmin, "POST", "/v1/rooms/h/sessions", `{"contact":"+15551234567"}`))
	if held.Status != waitroom.StatusInvited {
		t.Fatalf("held join into a free slot: got %s, want invited at once", held.Status)
	}
	next := e.session(e.must(http.StatusCreated, noAuth, "POST", "/v1/rooms/h/sessions", ""))
	if next.Status != waitroom.StatusWaiting {
		t.Fatalf("join behind an invited place: got %s, want waiting (the slot is held)", next.Status)
	}
	e.clock.Set(e.clock.Now().Add(2*time.Minute + time.Second))
	e.must(http.StatusOK, noAuth, "POST", "/v1/rooms/h/sessions/"+next.ID+"/heartbeat", "")
	ans := e.must(http.StatusConflict, noAuth, "POST", "/v1/rooms/h/sessions/"+held.ID+"/claim", "")
	v, err := errorShape(ans.header, ans.body)
	if err != nil || v.Error.Code != waitroom.CodeNotInvited || !strings.Contains(v.Error.Message, "unclaimed") {
		t.Fatalf("late claim: got %s (%v), want 409 not_invited naming the end (unclaimed)", ans.body, err)
	}
	ended := e.session(e.must(http.StatusOK, noAuth, "GET", "/v1/rooms/h/sessions/"+held.ID, ""))
	if ended.Status != waitroom.StatusExpired || ended.EndReason != waitroom.ReasonUnclaimed {
		t.Fatalf("unclaimed place: got %s/%s, want expired/unclaimed", ended.Status, ended.EndReason)
	}
	if got := e.session(e.must(http.StatusOK, noAuth, "GET", "/v1/rooms/h/sessions/"+next.ID, "")); got.Status != waitroom.StatusActive {
		t.Fatalf("the one behind after the window passed: got %s, want active (the slot went on)", got.Status)
	}
}

// TestHeldJoinNeedsTheAdminToken: a contact without the token, or with a
// wrong one, is 401 and makes nothing; the message names the contact.
func TestHeldJoinNeedsTheAdminToken(t *testing.T) {
	e := newEnv(t)
	e.must(http.StatusCreated, withAdmin, "PUT", "/v1/rooms/h", holdRoom)
	for _, a := range []auth{noAuth, wrongToken} {
		ans := e.do(a, "POST", "/v1/rooms/h/sessions", `{"contact":"user-7"}`)
		v, err := errorShape(ans.header, ans.body)
		if ans.status != http.StatusUnauthorized || err != nil || v.Error.Code != waitroom.CodeUnauthorized {
			t.Fatalf("held join, %s: got %d %s (%v), want 401 unauthorized", a, ans.status, ans.body, err)
		}
		if !strings.Contains(v.Error.Message, "contact") || !strings.Contains(v.Error.Message, "admin token") {
			t.Errorf("held join, %s: message %q, want it to say a contact needs the admin token", a, v.Error.Message)
		}
		if ans.header.Get("WWW-Authenticate") == "" {
			t.Errorf("held join, %s: 401 without WWW-Authenticate", a)
		}
	}
	room, err := e.store.Room(context.Background(), "h")
	if err != nil || room.LastTicket != 0 {
		t.Fatalf("refused held joins: room %+v, %v; want no ticket issued", room, err)
	}
}

// TestHeldJoinBadInput: what a trusted backend may get wrong, each with
// its documented answer, in a room that holds places and one that does
// not.
func TestHeldJoinBadInput(t *testing.T) {
	e := newEnv(t)
	e.must(http.StatusCreated, withAdmin, "PUT", "/v1/rooms/h", holdRoom)
	e.must(http.StatusCreated, withAdmin, "PUT", "/v1/rooms/plain", `{"capacity":1}`)
	for _, tc := range []struct {
		name, room, body string
		status           int
		code             waitroom.Code
	}{
		{"malformed JSON", "h", `{"contact":`, 400, waitroom.CodeInvalidJSON},
		{"contact as a number", "h", `{"contact":7}`, 400, waitroom.CodeInvalidJSON},
		{"contact as an object", "h", `{"contact":{"mail":"a@b"}}`, 400, waitroom.CodeInvalidJSON},
		{"empty contact", "h", `{"contact":""}`, 400, waitroom.CodeInvalidRequest},
		{"contact of 513 bytes", "h", `{"contact":"` + strings.Repeat("c", waitroom.MaxContactLen+1) + `"}`, 400, waitroom.CodeInvalidRequest},
		{"contact with a newline", "h", `{"contact":"a\nb"}`, 400, waitroom.CodeInvalidRequest},
		{"contact with NUL", "h", `{"contact":"a\u0000b"}`, 400, waitroom.CodeInvalidRequest},
		{"contact with DEL", "h", `{"contact":"a\u007fb"}`, 400, waitroom.CodeInvalidRequest},
		{"contact with a C1 control", "h", `{"contact":"a\u0085b"}`, 400, waitroom.CodeInvalidRequest},
		{"room that does not hold places", "plain", `{"contact":"user-7"}`, 400, waitroom.CodeInvalidRequest},
		{"body over 1 MiB", "h", `{"contact":"` + strings.Repeat("c", 1<<20) + `"}`, 413, waitroom.CodeBodyTooLarge},
		{"unknown room", "nope", `{"contact":"user-7"}`, 404, waitroom.CodeRoomNotFound},
	} {
		ans := e.do(withAdmin, "POST", "/v1/rooms/"+tc.room+"/sessions", tc.body)
		v, err := errorShape(ans.header, ans.body)
		if ans.status != tc.status || err != nil || v.Error.Code != tc.code {
			t.Errorf("%s: got %d %.200s (%v), want %d %s", tc.name, ans.status, ans.body, err, tc.status, tc.code)
		}
	}
	if got := e.do(withAdmin, "POST", "/v1/rooms/plain/sessions", `{"contact":"user-7"}`); !strings.Contains(string(got.body), "hold_places") {
		t.Errorf("held join where places are not held: %s, want the message to name hold_places", got.body)
	}
	// A contact of exactly the limit, with every printable kind of text, is fine.
	ok := strings.Repeat("é", waitroom.MaxContactLen/2)
	s := e.session(e.must(http.StatusCreated, withAdmin, "POST", "/v1/rooms/h/sessions", `{"contact":"`+ok+`"}`))
	if s.Contact != ok {
		t.Errorf("contact of %d bytes: got %q back", len(ok), s.Contact)
	}
	for _, r := range []string{"h", "plain"} {
		room, err := e.store.Room(context.Background(), r)
		if want := int64(map[string]int{"h": 1, "plain": 0}[r]); err != nil || room.LastTicket != want {
			t.Errorf("room %s after the refused joins: last ticket %d (%v), want %d", r, room.LastTicket, err, want)
		}
	}
}

// TestClaimErrors: the claim route's refusals, each in the error shape.
func TestClaimErrors(t *testing.T) {
	e := newEnv(t)
	e.must(http.StatusCreated, withAdmin, "PUT", "/v1/rooms/h", holdRoom)
	active := e.session(e.must(http.StatusCreated, noAuth, "POST", "/v1/rooms/h/sessions", ""))
	waiting := e.session(e.must(http.StatusCreated, noAuth, "POST", "/v1/rooms/h/sessions", ""))
	held := e.session(e.must(http.StatusCreated, withAdmin, "POST", "/v1/rooms/h/sessions", `{"contact":"c-1"}`))
	left := e.session(e.must(http.StatusCreated, withAdmin, "POST", "/v1/rooms/h/sessions", `{"contact":"c-2"}`))
	e.must(http.StatusOK, noAuth, "DELETE", "/v1/rooms/h/sessions/"+left.ID, "")
	id, _ := waitroom.ParseSessionID(held.ID)
	id.Secret[3] ^= 8
	forged := id.String()
	for _, tc := range []struct {
		name, method, path string
		status             int
		code               waitroom.Code
	}{
		{"a plain waiting session", "POST", "/v1/rooms/h/sessions/" + waiting.ID + "/claim", 409, waitroom.CodeNotInvited},
		{"a held waiting session", "POST", "/v1/rooms/h/sessions/" + held.ID + "/claim", 409, waitroom.CodeNotInvited},
		{"a held session that left", "POST", "/v1/rooms/h/sessions/" + left.ID + "/claim", 409, waitroom.CodeNotInvited},
		{"an unknown id", "POST", "/v1/rooms/h/sessions/" + waitroom.NewSessionID(999).String() + "/claim", 404, waitroom.CodeSessionNotFound},
		{"a forged id", "POST", "/v1/rooms/h/sessions/" + forged + "/claim", 404, waitroom.CodeSessionNotFound},
		{"an id of another room", "POST", "/v1/rooms/other/sessions/" + held.ID + "/claim", 404, waitroom.CodeRoomNotFound},
		{"a malformed id", "POST", "/v1/rooms/h/sessions/xyz/claim", 400, waitroom.CodeInvalidSessionID},
		{"a bad room name", "POST", "/v1/rooms/H!/sessions/" + held.ID + "/claim", 400, waitroom.CodeInvalidRoomName},
		{"GET", "GET", "/v1/rooms/h/sessions/" + held.ID + "/claim", 405, waitroom.CodeMethodNotAllowed},
	} {
		ans := e.do(noAuth, tc.method, tc.path, "")
		v, err := errorShape(ans.header, ans.body)
		if ans.status != tc.status || err != nil || v.Error.Code != tc.code {
			t.Errorf("claim of %s: got %d %s (%v), want %d %s", tc.name, ans.status, ans.body, err, tc.status, tc.code)
		}
	}
	// None of it changed anything.
	for _, s := range []waitroom.Session{active, waiting, held} {
		got := e.session(e.must(http.StatusOK, noAuth, "GET", "/v1/rooms/h/sessions/"+s.ID, ""))
		if got.Status != s.Status || got.Position != s.Position {
			t.Errorf("session %d after refused claims: %s at %d, want %s at %d", s.Ticket, got.Status, got.Position, s.Status, s.Position)
		}
	}
}

// checkStatusOf checks the public counts of room.
func checkStatusOf(t *testing.T, e *env, room string, active, waiting int) {
	t.Helper()
	var st struct {
		Active  int `json:"active"`
		Waiting int `json:"waiting"`
	}
	if err := jsonUnmarshal(e.must(http.StatusOK, noAuth, "GET", "/v1/rooms/"+room, "").body, &st); err != nil {
		t.Fatal(err)
	}
	if st.Active != active || st.Waiting != waiting {
		t.Errorf("room %s: %d active and %d waiting, want %d and %d", room, st.Active, st.Waiting, active, waiting)
	}
}
