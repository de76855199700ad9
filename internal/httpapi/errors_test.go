package httpapi_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/waitroom/waitroom"
)

// TestErrors covers every error case of the SPEC: each row is one request
// and the status and code it must get, in the documented JSON error shape.
func TestErrors(t *testing.T) {
	e := newEnv(t)
	e.must(http.StatusCreated, withAdmin, "PUT", "/v1/rooms/r", `{"capacity":1}`)
	e.must(http.StatusCreated, withAdmin, "PUT", "/v1/rooms/m", `{"mode":"manual"}`)
	live := e.session(e.must(http.StatusCreated, withAdmin, "POST", "/v1/rooms/r/sessions", `{"key":"k1"}`))
	sid := "/v1/rooms/r/sessions/" + live.ID
	unknown := "/v1/rooms/r/sessions/" + waitroom.NewSessionID(999).String()
	huge := `{"key":"` + strings.Repeat("x", 1<<20) + `"}`

	type row struct {
		name   string
		auth   auth
		method string
		path   string
		body   string
		status int
		code   waitroom.Code
	}
	rows := []row{
		// 400: bodies.
		{"join: not JSON", withAdmin, "POST", "/v1/rooms/r/sessions", `{`, 400, waitroom.CodeInvalidJSON},
		{"join: unknown field", noAuth, "POST", "/v1/rooms/r/sessions", `{"nope":1}`, 400, waitroom.CodeInvalidJSON},
		{"join: trailing data", noAuth, "POST", "/v1/rooms/r/sessions", `{} {}`, 400, waitroom.CodeInvalidJSON},
		{"join: key of the wrong type", withAdmin, "POST", "/v1/rooms/r/sessions", `{"key":5}`, 400, waitroom.CodeInvalidJSON},
		{"join: body not an object", noAuth, "POST", "/v1/rooms/r/sessions", `[1]`, 400, waitroom.CodeInvalidJSON},
		{"join: empty key", withAdmin, "POST", "/v1/rooms/r/sessions", `{"key":""}`, 400, waitroom.CodeInvalidKey},
		{"join: control character in key", withAdmin, "POST", "/v1/rooms/r/sessions", `{"key":"a\u0001b"}`, 400, waitroom.CodeInvalidKey},
		{"join: key too long", withAdmin, "POST", "/v1/rooms/r/sessions", `{"key":"` + strings.Repeat("k", 257) + `"}`, 400, waitroom.CodeInvalidKey},
		{"put: not JSON", withAdmin, "PUT", "/v1/rooms/x", `capacity=1`, 400, waitroom.CodeInvalidJSON},
		{"put: unknown field", withAdmin, "PUT", "/v1/rooms/x", `{"capacityy":1}`, 400, waitroom.CodeInvalidJSON},
		{"put: trailing data", withAdmin, "PUT", "/v1/rooms/x", `{"capacity":1}x`, 400, waitroom.CodeInvalidJSON},
		{"put: number as duration", withAdmin, "PUT", "/v1/rooms/x", `{"grace":30}`, 400, waitroom.CodeInvalidJSON},
		{"put: negative capacity", withAdmin, "PUT", "/v1/rooms/x", `{"capacity":-1}`, 400, waitroom.CodeInvalidConfig},
		{"put: unknown mode", withAdmin, "PUT", "/v1/rooms/x", `{"mode":"turbo"}`, 400, waitroom.CodeInvalidConfig},
		{"put: rate too high", withAdmin, "PUT", "/v1/rooms/x", `{"rate_per_minute":2000000000}`, 400, waitroom.CodeInvalidConfig},
		{"advance: not JSON", withAdmin, "POST", "/v1/rooms/m/advance", `{"n":`, 400, waitroom.CodeInvalidJSON},
		{"advance: unknown field", withAdmin, "POST", "/v1/rooms/m/advance", `{"count":1}`, 400, waitroom.CodeInvalidJSON},
		{"advance: n of zero", withAdmin, "POST", "/v1/rooms/m/advance", `{"n":0}`, 400, waitroom.CodeInvalidRequest},
		{"advance: n above the maximum", withAdmin, "POST", "/v1/rooms/m/advance", `{"n":10001}`, 400, waitroom.CodeInvalidRequest},
		{"advance: n not a number", withAdmin, "POST", "/v1/rooms/m/advance", `{"n":"2"}`, 400, waitroom.CodeInvalidJSON},
		// 400: names, ids, parameters.
		{"join: bad room name", noAuth, "POST", "/v1/rooms/Bad!/sessions", "", 400, waitroom.CodeInvalidRoomName},
		{"status: room name too long", noAuth, "GET", "/v1/rooms/" + strings.Repeat("a", 65), "", 400, waitroom.CodeInvalidRoomName},
		{"status: room name with a slash", noAuth, "GET", "/v1/rooms/a%2Fb", "", 400, waitroom.CodeInvalidRoomName},
		{"put: bad room name", withAdmin, "PUT", "/v1/rooms/-x", "{}", 400, waitroom.CodeInvalidRoomName},
		{"session: bad room name", noAuth, "GET", "/v1/rooms/_r/sessions/" + live.ID, "", 400, waitroom.CodeInvalidRoomName},
		{"session: malformed id", noAuth, "GET", "/v1/rooms/r/sessions/not-an-id", "", 400, waitroom.CodeInvalidSessionID},
		{"heartbeat: malformed id", noAuth, "POST", "/v1/rooms/r/sessions/xyz/heartbeat", "", 400, waitroom.CodeInvalidSessionID},
		{"away: malformed id", noAuth, "POST", "/v1/rooms/r/sessions/xyz/away", "", 400, waitroom.CodeInvalidSessionID},
		{"leave: malformed id", noAuth, "DELETE", "/v1/rooms/r/sessions/xyz", "", 400, waitroom.CodeInvalidSessionID},
		{"waiting: limit 0", withAdmin, "GET", "/v1/rooms/r/waiting?limit=0", "", 400, waitroom.CodeInvalidRequest},
		{"waiting: limit 1001", withAdmin, "GET", "/v1/rooms/r/waiting?limit=1001", "", 400, waitroom.CodeInvalidRequest},
		{"waiting: limit junk", withAdmin, "GET", "/v1/rooms/r/waiting?limit=ten", "", 400, waitroom.CodeInvalidRequest},
		{"history: limit empty", withAdmin, "GET", "/v1/rooms/r/history?limit=", "", 400, waitroom.CodeInvalidRequest},
		{"history: status waiting", withAdmin, "GET", "/v1/rooms/r/history?status=waiting", "", 400, waitroom.CodeInvalidRequest},
		{"history: status junk", withAdmin, "GET", "/v1/rooms/r/history?status=gone", "", 400, waitroom.CodeInvalidRequest},
		{"delete room: force junk", withAdmin, "DELETE", "/v1/rooms/r?force=maybe", "", 400, waitroom.CodeInvalidRequest},
		// 401.
		{"join: key without a token", noAuth, "POST", "/v1/rooms/r/sessions", `{"key":"k2"}`, 401, waitroom.CodeUnauthorized},
		{"join: key with a wrong token", wrongToken, "POST", "/v1/rooms/r/sessions", `{"key":"k2"}`, 401, waitroom.CodeUnauthorized},
		{"revoke: wrong token", wrongToken, "DELETE", sid, "", 401, waitroom.CodeUnauthorized},
		// 404.
		{"status: unknown room", noAuth, "GET", "/v1/rooms/nope", "", 404, waitroom.CodeRoomNotFound},
		{"join: unknown room", noAuth, "POST", "/v1/rooms/nope/sessions", "", 404, waitroom.CodeRoomNotFound},
		{"session: unknown room", noAuth, "GET", "/v1/rooms/nope/sessions/" + live.ID, "", 404, waitroom.CodeRoomNotFound},
		{"waiting: unknown room", withAdmin, "GET", "/v1/rooms/nope/waiting", "", 404, waitroom.CodeRoomNotFound},
		{"history: unknown room", withAdmin, "GET", "/v1/rooms/nope/history", "", 404, waitroom.CodeRoomNotFound},
		{"advance: unknown room", withAdmin, "POST", "/v1/rooms/nope/advance", "", 404, waitroom.CodeRoomNotFound},
		{"delete room: unknown room", withAdmin, "DELETE", "/v1/rooms/nope", "", 404, waitroom.CodeRoomNotFound},
		{"session: unknown id", noAuth, "GET", unknown, "", 404, waitroom.CodeSessionNotFound},
		{"heartbeat: unknown id", noAuth, "POST", unknown + "/heartbeat", "", 404, waitroom.CodeSessionNotFound},
		{"leave: unknown id", noAuth, "DELETE", unknown, "", 404, waitroom.CodeSessionNotFound},
		{"revoke: unknown id", withAdmin, "DELETE", unknown, "", 404, waitroom.CodeSessionNotFound},
		{"advance: nobody waits", withAdmin, "POST", "/v1/rooms/m/advance", "", 404, waitroom.CodeQueueEmpty},
		{"unknown route", noAuth, "GET", "/nope", "", 404, waitroom.CodeNotFound},
		{"unknown route below a room", noAuth, "GET", sid + "/extra/parts", "", 404, waitroom.CodeNotFound},
		{"unknown API version", noAuth, "GET", "/v2/rooms/r", "", 404, waitroom.CodeNotFound},
		{"root", noAuth, "GET", "/", "", 404, waitroom.CodeNotFound},
		// 405.
		{"POST a room", withAdmin, "POST", "/v1/rooms/r", "{}", 405, waitroom.CodeMethodNotAllowed},
		{"GET advance", withAdmin, "GET", "/v1/rooms/r/advance", "", 405, waitroom.CodeMethodNotAllowed},
		{"GET away", noAuth, "GET", sid + "/away", "", 405, waitroom.CodeMethodNotAllowed},
		{"PUT a session", noAuth, "PUT", sid, "", 405, waitroom.CodeMethodNotAllowed},
		{"POST healthz", noAuth, "POST", "/healthz", "", 405, waitroom.CodeMethodNotAllowed},
		{"DELETE the room list", withAdmin, "DELETE", "/v1/rooms", "", 405, waitroom.CodeMethodNotAllowed},
		// 409.
		{"join: key already joined", withAdmin, "POST", "/v1/rooms/r/sessions", `{"key":"k1"}`, 409, waitroom.CodeAlreadyJoined},
		{"delete room: live sessions", withAdmin, "DELETE", "/v1/rooms/r", "", 409, waitroom.CodeRoomNotEmpty},
		// 413.
		{"join: body too large", withAdmin, "POST", "/v1/rooms/r/sessions", huge, 413, waitroom.CodeBodyTooLarge},
		{"put: body too large", withAdmin, "PUT", "/v1/rooms/r", huge, 413, waitroom.CodeBodyTooLarge},
		{"advance: body too large", withAdmin, "POST", "/v1/rooms/m/advance", huge, 413, waitroom.CodeBodyTooLarge},
	}
	// 401 for every admin endpoint, without a token, with a wrong one, and
	// with another scheme.
	admin := []struct{ method, path, body string }{
		{"PUT", "/v1/rooms/r", "{}"},
		{"PUT", "/v1/rooms/new", "{}"},
		{"GET", "/v1/rooms", ""},
		{"DELETE", "/v1/rooms/r", ""},
		{"DELETE", "/v1/rooms/nope?force=true", ""},
		{"POST", "/v1/rooms/r/advance", `{"n":1}`},
		{"GET", "/v1/rooms/r/waiting", ""},
		{"GET", "/v1/rooms/r/history", ""},
		{"GET", "/v1/rooms/Bad!/history", ""},
	}
	for _, a := range admin {
		for _, au := range []auth{noAuth, wrongToken} {
			rows = append(rows, row{"admin " + a.method + " " + a.path + " with " + au.String(), au, a.method, a.path, a.body, 401, waitroom.CodeUnauthorized})
		}
	}

	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			ans := e.do(r.auth, r.method, r.path, r.body)
			if ans.status != r.status {
				t.Errorf("%s %s: got status %d, want %d; body %s", r.method, r.path, ans.status, r.status, ans.body)
			}
			v, err := errorShape(ans.header, ans.body)
			if err != nil {
				t.Fatalf("%s %s: %v", r.method, r.path, err)
			}
			if v.Error.Code != r.code {
				t.Errorf("%s %s: got code %s (%q), want %s", r.method, r.path, v.Error.Code, v.Error.Message, r.code)
			}
			switch r.status {
			case http.StatusMethodNotAllowed:
				if ans.header.Get("Allow") == "" {
					t.Errorf("%s %s: 405 without an Allow header", r.method, r.path)
				}
			case http.StatusUnauthorized:
				if ans.header.Get("WWW-Authenticate") == "" {
					t.Errorf("%s %s: 401 without WWW-Authenticate", r.method, r.path)
				}
			}
			if r.code == waitroom.CodeAlreadyJoined {
				var s waitroom.Session
				if err := json.Unmarshal(v.Session, &s); err != nil || s.ID != live.ID || s.Key != "k1" {
					t.Errorf("already_joined: got session %s (%v), want the live session %s", v.Session, err, live.ID)
				}
			}
		})
	}

	// Nothing above changed the room or its live session.
	if got := e.session(e.must(http.StatusOK, noAuth, "GET", sid, "")); got.Status != waitroom.StatusActive {
		t.Errorf("live session after the error cases: got status %s, want active", got.Status)
	}
}

// TestNoAdminToken checks that a handler without an admin token refuses
// every admin request, even one with an empty bearer token.
func TestNoAdminToken(t *testing.T) {
	e := newEnv(t)
	h := newHandlerWithoutToken(e)
	for _, authz := range []string{"", "Bearer ", "Bearer x"} {
		rec := serve(h, "GET", "/v1/rooms", authz, "")
		if rec.Code != http.StatusUnauthorized {
			t.Errorf("GET /v1/rooms with Authorization %q and no admin token configured: got %d, want 401", authz, rec.Code)
		}
	}
}
