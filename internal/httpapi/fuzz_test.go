package httpapi_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/internal/httpapi"
)

// serve sends one request straight to h and returns the recorded answer.
func serve(h http.Handler, method, target, authz, body string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, target, strings.NewReader(body))
	if authz != "" {
		req.Header.Set("Authorization", authz)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// newHandlerWithoutToken returns a handler over e's store with no admin token.
func newHandlerWithoutToken(e *env) http.Handler {
	return httpapi.NewHandler(withParts(e.t, httpapi.Config{Store: e.store, Clock: e.clock, Admit: admission(e.t, e.store, e.clock, nil)}))
}

// checkAnswer fails unless an answer is below 500 and, for 4xx, the
// documented error shape with a code that fits the status.
func checkAnswer(t *testing.T, what string, rec *httptest.ResponseRecorder) {
	t.Helper()
	if rec.Code >= 500 {
		t.Fatalf("%s: got status %d, want below 500; body %s", what, rec.Code, rec.Body.Bytes())
	}
	if rec.Code < 400 {
		return
	}
	v, err := errorShape(rec.Header(), rec.Body.Bytes())
	if err != nil {
		t.Fatalf("%s: status %d: %v", what, rec.Code, err)
	}
	if want := statusFor(v.Error.Code); want != rec.Code {
		t.Fatalf("%s: got status %d with code %s, which goes with %d", what, rec.Code, v.Error.Code, want)
	}
}

// statusFor is the documented status of each 4xx code (the SPEC's table,
// written out again so the test does not trust the code under test).
func statusFor(c waitroom.Code) int {
	switch c {
	case waitroom.CodeInvalidRequest, waitroom.CodeInvalidJSON, waitroom.CodeInvalidRoomName,
		waitroom.CodeInvalidSessionID, waitroom.CodeInvalidConfig, waitroom.CodeInvalidKey,
		"challenge_invalid", "challenge_wrong_room":
		return 400
	case waitroom.CodeUnauthorized:
		return 401
	case "forbidden", "invite_required", "invite_invalid", "invite_expired", "invite_wrong_room":
		return 403
	case waitroom.CodeNotFound, waitroom.CodeRoomNotFound, waitroom.CodeSessionNotFound, waitroom.CodeQueueEmpty:
		return 404
	case waitroom.CodeMethodNotAllowed:
		return 405
	case waitroom.CodeAlreadyJoined, waitroom.CodeRoomNotEmpty, "room_closed", "draw_done", "sold_out", "stock_conflict",
		"invite_used", "challenge_used", waitroom.CodeNotInvited:
		return 409
	case waitroom.CodeBodyTooLarge:
		return 413
	case "challenge_required", "challenge_expired":
		return 428
	case waitroom.CodeRateLimited:
		return 429
	}
	return -1
}

func authHeader(admin bool) string {
	if admin {
		return "Bearer " + adminToken
	}
	return ""
}

// FuzzJoinBody sends any body to the join endpoint, of a room that holds
// places or of one that does not. A join that succeeds with a contact was
// made with the admin token in the room that holds places, and keeps the
// contact.
func FuzzJoinBody(f *testing.F) {
	for _, s := range []string{"", "{}", " \n", `{"key":"u1"}`, `{"key":null}`, `{"key":""}`, `{"key":1}`,
		`{"key":"a\u0000"}`, `{"key":"u1","x":1}`, `{}{}`, `[]`, `null`, `"key"`, "{\"key\":\"\xff\"}",
		`{"contact":"mailto:a@example.com"}`, `{"contact":""}`, `{"contact":null}`, `{"contact":1}`, `{"contact":"a\u0007b"}`,
		`{"contact":"` + strings.Repeat("c", 513) + `"}`, `{"key":"u2","contact":"+15551234567"}`, `{"Contact":"x"}`,
		`{"contact":"x","contact":"y"}`, "{\"contact\":\"\xc2\x85\"}"} {
		for _, held := range []bool{false, true} {
			f.Add([]byte(s), false, held)
			f.Add([]byte(s), true, held)
		}
	}
	e := newEnv(f)
	e.must(http.StatusCreated, withAdmin, "PUT", "/v1/rooms/r", `{"capacity":3}`)
	e.must(http.StatusCreated, withAdmin, "PUT", "/v1/rooms/h", `{"capacity":3,"hold_places":true}`)
	f.Fuzz(func(t *testing.T, body []byte, admin, held bool) {
		h := e.checkedBy(t)
		room := "r"
		if held {
			room = "h"
		}
		rec := serve(h, "POST", "/v1/rooms/"+room+"/sessions", authHeader(admin), string(body))
		checkAnswer(t, "join", rec)
		switch rec.Code {
		case 201:
			var s waitroom.Session
			if err := json.Unmarshal(rec.Body.Bytes(), &s); err != nil || s.ID == "" || s.Room != room {
				t.Fatalf("join: 201 with body %s (%v), want a session of room %s", rec.Body.Bytes(), err, room)
			}
			var req struct {
				Contact *string `json:"contact"`
			}
			_ = json.Unmarshal(body, &req)
			switch {
			case req.Contact == nil && s.Contact != "":
				t.Fatalf("join %q: a session with contact %q, but none was asked", body, s.Contact)
			case req.Contact != nil && (!admin || !held):
				t.Fatalf("join %q (admin %v) into room %s: a held join succeeded", body, admin, room)
			case req.Contact != nil && s.Contact != *req.Contact:
				t.Fatalf("join %q: contact %q, want %q", body, s.Contact, *req.Contact)
			case req.Contact != nil && s.Status != waitroom.StatusWaiting && s.Status != waitroom.StatusInvited:
				t.Fatalf("held join %q: status %s, want waiting or invited", body, s.Status)
			}
		case 400, 401, 409, 413:
		default:
			t.Fatalf("join: got status %d, want 201, 400, 401, 409 or 413", rec.Code)
		}
	})
}

// FuzzConfigBody sends any body as a room configuration. Whatever the
// server accepts must be what ParseRoomConfig makes of it.
func FuzzConfigBody(f *testing.F) {
	for _, s := range []string{"", "{}", `{"mode":"manual"}`, `{"capacity":5,"grace":"1s"}`, `{"grace":1}`,
		`{"capacity":-1}`, `{"active_timeout":"1h","max_session":"2h","waiting_timeout":"0s","paused":true,"rate_per_minute":60}`,
		`{"capacity":1e3}`, `{"capacity":1.5}`, `{"mode":null}`, `{"grace":"-1s"}`, `{"grace":"1ns"}`, `{"x":1}`} {
		f.Add([]byte(s))
	}
	e := newEnv(f)
	f.Fuzz(func(t *testing.T, body []byte) {
		h := e.checkedBy(t)
		rec := serve(h, "PUT", "/v1/rooms/r", authHeader(true), string(body))
		checkAnswer(t, "put room", rec)
		switch rec.Code {
		case 200, 201:
			want, err := waitroom.ParseRoomConfig(body)
			if err != nil {
				t.Fatalf("put room: accepted a body ParseRoomConfig refuses (%v)", err)
			}
			var got waitroom.Room
			if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
				t.Fatalf("put room: answer %s: %v", rec.Body.Bytes(), err)
			}
			if !got.RoomConfig.Equal(want) || got.Name != "r" {
				t.Fatalf("put room: got %+v, want room r with %+v", got, want)
			}
		case 400, 413:
		default:
			t.Fatalf("put room: got status %d, want 200, 201, 400 or 413", rec.Code)
		}
	})
}

// FuzzPaths sends any method, path and body. "{id}" in a path stands for a
// live session's id, so the fuzzer reaches real sessions too.
func FuzzPaths(f *testing.F) {
	seeds := []struct {
		method, path, body string
	}{
		{"GET", "/v1/rooms/r", ""},
		{"GET", "/v1/rooms/r/sessions/{id}", ""},
		{"POST", "/v1/rooms/r/sessions/{id}/heartbeat", ""},
		{"POST", "/v1/rooms/r/sessions/{id}/away", "x"},
		{"POST", "/v1/rooms/r/sessions/{id}/claim", ""},
		{"POST", "/v1/rooms/r/sessions", `{"contact":"c"}`},
		{"DELETE", "/v1/rooms/r/sessions/{id}", ""},
		{"POST", "/v1/rooms/r/sessions", `{"key":"k"}`},
		{"PUT", "/v1/rooms/q", `{"capacity":1}`},
		{"GET", "/v1/rooms", ""},
		{"DELETE", "/v1/rooms/q?force=1", ""},
		{"POST", "/v1/rooms/r/advance", `{"n":2}`},
		{"POST", "/v1/rooms/r/inventory", `{"sold":1}`},
		{"GET", "/v1/rooms/r/draw", ""},
		{"GET", "/v1/rooms/r/fairness", ""},
		{"PUT", "/v1/rooms/q", `{"opens_at":"2030-01-01T00:00:00Z","inventory":5}`},
		{"GET", "/v1/rooms/r/waiting?limit=2&after=abc", ""},
		{"GET", "/v1/rooms/r/history?status=left&limit=1000&after=%00", ""},
		{"GET", "/v1/rooms/../../etc/passwd", ""},
		{"GET", "/v1//rooms/r", ""},
		{"OPTIONS", "*", ""},
		{"BREW", "/v1/rooms/r", ""},
		{"GET", "/healthz", ""},
		{"GET", "/readyz", ""},
		{"HEAD", "/v1/rooms/r/sessions/{id}", ""},
		{"GET", "/v1/rooms/%ZZ", ""},
		{"GET", "/v1/rooms/r%2F..%2Fx/sessions", ""},
	}
	for _, s := range seeds {
		f.Add(s.method, s.path, []byte(s.body), false)
		f.Add(s.method, s.path, []byte(s.body), true)
	}
	e := newEnv(f)
	e.must(http.StatusCreated, withAdmin, "PUT", "/v1/rooms/r", `{"capacity":1,"waiting_timeout":"0s"}`)
	live := e.session(e.must(http.StatusCreated, noAuth, "POST", "/v1/rooms/r/sessions", ""))
	f.Fuzz(func(t *testing.T, method, path string, body []byte, admin bool) {
		h := e.checkedBy(t)
		path = strings.ReplaceAll(path, "{id}", live.ID)
		req, err := http.NewRequest(method, "http://waitroom.test"+path, bytes.NewReader(body))
		if err != nil {
			return // not a request a server would hand to a handler
		}
		if admin {
			req.Header.Set("Authorization", "Bearer "+adminToken)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		checkAnswer(t, method+" "+path, rec)
	})
}

// TestAwayLargeBody checks that away, built for sendBeacon, answers 204 to a
// body of any type and any size within the limit (1 MiB) rather than 413;
// over the limit it is refused like on every route.
func TestAwayLargeBody(t *testing.T) {
	e := newEnv(t)
	e.must(http.StatusCreated, withAdmin, "PUT", "/v1/rooms/r", "")
	s := e.session(e.must(http.StatusCreated, noAuth, "POST", "/v1/rooms/r/sessions", ""))
	for _, tc := range []struct {
		size, want int
	}{{1 << 20, http.StatusNoContent}, {2 << 20, http.StatusRequestEntityTooLarge}} {
		req := httptest.NewRequest("POST", "/v1/rooms/r/sessions/"+s.ID+"/away", strings.NewReader(strings.Repeat("z", tc.size)))
		req.Header.Set("Content-Type", "text/plain;charset=UTF-8")
		rec := httptest.NewRecorder()
		e.handler.ServeHTTP(rec, req)
		if rec.Code != tc.want {
			t.Errorf("away with a text body of %d bytes: got %d, want %d; body %s", tc.size, rec.Code, tc.want, rec.Body.Bytes())
		}
	}
}
