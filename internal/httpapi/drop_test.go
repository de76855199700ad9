package httpapi_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom"
)

// TestDropWalkthrough follows a drop over real HTTP: a room scheduled an
// hour ahead publishes only its commitment; joins before the opening wait
// in the pre-queue without positions; at the opening the published draw
// verifies and orders everyone; after closes_at joins are refused.
func TestDropWalkthrough(t *testing.T) {
	e := newEnv(t)
	opens := e.clock.Now().Add(time.Hour)
	closes := opens.Add(2 * time.Hour)
	cfg := `{"capacity":2,"waiting_timeout":"0s","opens_at":"` + opens.Format(time.RFC3339) + `","closes_at":"` + closes.In(time.FixedZone("", 2*3600)).Format(time.RFC3339) + `"}`
	var room map[string]any
	json.Unmarshal(e.must(http.StatusCreated, withAdmin, "PUT", "/v1/rooms/drop", cfg).body, &room)
	if room["opens_at"] != opens.Format(time.RFC3339) || room["closes_at"] != closes.UTC().Format(time.RFC3339) {
		t.Errorf("PUT answer: opens_at %v closes_at %v, want %s and %s (UTC)", room["opens_at"], room["closes_at"], opens.Format(time.RFC3339), closes.UTC().Format(time.RFC3339))
	}

	var before waitroom.DrawRecord
	ans := e.must(http.StatusOK, noAuth, "GET", "/v1/rooms/drop/draw", "")
	if err := json.Unmarshal(ans.body, &before); err != nil || before.Drawn || len(before.Commitment) != 64 || strings.Contains(string(ans.body), `"seed"`) {
		t.Fatalf("draw record before the opening = %s (%v), want a commitment and no seed", ans.body, err)
	}

	var entrants []waitroom.Session
	for i := range 5 {
		s := e.session(e.must(http.StatusCreated, noAuth, "POST", "/v1/rooms/drop/sessions", ""))
		if s.Status != waitroom.StatusWaiting || s.Position != 0 || s.Entrants != i+1 || !s.OpensAt.Equal(opens) || s.Entry == "" {
			t.Fatalf("join %d before the opening = %+v, want a pre-queue entrant", i, s)
		}
		entrants = append(entrants, s)
	}
	raw := string(e.must(http.StatusOK, noAuth, "GET", "/v1/rooms/drop/sessions/"+entrants[0].ID, "").body)
	for _, want := range []string{`"status":"waiting"`, `"opens_at":"` + opens.Format(waitroom.TimeFormat) + `"`, `"entrants":5`, `"entry":"s:`} {
		if !strings.Contains(raw, want) {
			t.Errorf("entrant JSON %s lacks %s", raw, want)
		}
	}
	if strings.Contains(raw, `"position"`) || strings.Contains(raw, `"ahead"`) {
		t.Errorf("entrant JSON %s has a position before the draw", raw)
	}
	var status map[string]any
	json.Unmarshal(e.must(http.StatusOK, noAuth, "GET", "/v1/rooms/drop", "").body, &status)
	if status["entrants"] != 5.0 || status["opens_at"] != opens.Format(waitroom.TimeFormat) {
		t.Errorf("room status = %v, want entrants 5 and opens_at", status)
	}
	moved := strings.Replace(cfg, opens.Format(time.RFC3339), opens.Add(time.Minute).Format(time.RFC3339), 1)
	e.must(http.StatusOK, withAdmin, "PUT", "/v1/rooms/drop", moved)
	e.must(http.StatusOK, withAdmin, "PUT", "/v1/rooms/drop", cfg)

	// The opening: the first request after it holds the draw.
	e.clock.Set(opens.Add(time.Second))
	var after waitroom.DrawRecord
	if err := json.Unmarshal(e.must(http.StatusOK, noAuth, "GET", "/v1/rooms/drop/draw", "").body, &after); err != nil {
		t.Fatal(err)
	}
	if err := waitroom.VerifyDraw(after); err != nil || after.Commitment != before.Commitment || len(after.Entries) != 5 {
		t.Fatalf("draw after the opening: verify %v, commitment %s (was %s), %d entries", err, after.Commitment, before.Commitment, len(after.Entries))
	}
	for _, s := range entrants {
		got := e.session(e.must(http.StatusOK, noAuth, "GET", "/v1/rooms/drop/sessions/"+s.ID, ""))
		var ticket int64
		for _, d := range after.Entries {
			if d.Entry == s.Entry {
				ticket = d.Ticket
			}
		}
		if got.Ticket != ticket || got.Entry != s.Entry || (ticket > 2 && got.Position != ticket-2) || (ticket <= 2 && got.Status != waitroom.StatusActive) {
			t.Errorf("entrant %s after the draw = ticket %d %s position %d, want ticket %d from the record", s.Entry, got.Ticket, got.Status, got.Position, ticket)
		}
	}
	ans = e.do(withAdmin, "PUT", "/v1/rooms/drop", moved)
	wantError(t, ans, http.StatusConflict, waitroom.CodeDrawDone)

	var fair struct {
		Room       string               `json:"room"`
		Order      string               `json:"order"`
		Admissions int64                `json:"admissions"`
		Inversions int64                `json:"inversions"`
		Draw       *waitroom.DrawRecord `json:"draw"`
	}
	if err := json.Unmarshal(e.must(http.StatusOK, noAuth, "GET", "/v1/rooms/drop/fairness", "").body, &fair); err != nil {
		t.Fatal(err)
	}
	if fair.Order != "draw" || fair.Admissions != 2 || fair.Inversions != 0 || fair.Draw == nil || fair.Draw.Digest != after.Digest || len(fair.Draw.Entries) != 0 {
		t.Errorf("fairness = %+v, want order draw, 2 admissions, 0 inversions, the draw's digest without its entries", fair)
	}

	e.clock.Set(closes)
	ans = e.do(noAuth, "POST", "/v1/rooms/drop/sessions", "")
	wantError(t, ans, http.StatusConflict, waitroom.CodeRoomClosed)
	if !strings.Contains(string(ans.body), closes.UTC().Format(time.RFC3339)) {
		t.Errorf("room_closed answer %s does not give the time %s", ans.body, closes.UTC().Format(time.RFC3339))
	}
}

// TestScheduleBadInput checks that bad schedules answer 400 invalid_config
// with a sentence that says what to change, and change nothing.
func TestScheduleBadInput(t *testing.T) {
	e := newEnv(t)
	for _, tc := range []struct{ body, says string }{
		{`{"opens_at":"tomorrow"}`, "RFC 3339"},
		{`{"opens_at":"2030-01-01"}`, "RFC 3339"},
		{`{"opens_at":1893456000}`, "RFC 3339"},
		{`{"opens_at":"2030-01-01T10:00:00Z","closes_at":"2030-01-01T09:00:00Z"}`, "closes_at (2030-01-01T09:00:00Z) must be after opens_at"},
		{`{"closes_at":"1999-12-31T00:00:00Z"}`, "closes_at must lie between"},
	} {
		ans := e.do(withAdmin, "PUT", "/v1/rooms/bad", tc.body)
		wantError(t, ans, http.StatusBadRequest, waitroom.CodeInvalidConfig)
		if !strings.Contains(string(ans.body), tc.says) {
			t.Errorf("PUT %s: answer %s does not say %q", tc.body, ans.body, tc.says)
		}
	}
	e.must(http.StatusNotFound, noAuth, "GET", "/v1/rooms/bad", "")
	wantError(t, e.do(noAuth, "GET", "/v1/rooms/default-nope/draw", ""), http.StatusNotFound, waitroom.CodeRoomNotFound)
	e.must(http.StatusCreated, withAdmin, "PUT", "/v1/rooms/plain", `{"capacity":1}`)
	wantError(t, e.do(noAuth, "GET", "/v1/rooms/plain/draw", ""), http.StatusNotFound, waitroom.CodeNotFound)
	e.must(http.StatusCreated, noAuth, "POST", "/v1/rooms/plain/sessions", "")
	e.must(http.StatusCreated, noAuth, "POST", "/v1/rooms/plain/sessions", "")
	got := strings.TrimSpace(string(e.must(http.StatusOK, noAuth, "GET", "/v1/rooms/plain/fairness", "").body))
	if got != `{"room":"plain","order":"first_come","admissions":1,"inversions":0}` {
		t.Errorf("fairness of a first-come room = %s", got)
	}
	wantError(t, e.do(noAuth, "GET", "/v1/rooms/nope/fairness", ""), http.StatusNotFound, waitroom.CodeRoomNotFound)
}

// wantError checks an answer is the documented error with status and code.
func wantError(t *testing.T, ans answer, status int, code waitroom.Code) {
	t.Helper()
	e, err := errorShape(ans.header, ans.body)
	if err != nil || ans.status != status || e.Error.Code != code {
		t.Errorf("answer %d %s (%v), want %d %s", ans.status, ans.body, err, status, code)
	}
}
