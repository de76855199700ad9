package httpapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/storetest"
)

// badInput is one row of the bad-input table: a request and the answer it
// must get. code is empty for rows that must succeed (hostile input that is
// valid, or ignored on purpose).
type badInput struct {
	name    string
	method  string
	path    string // {id}: a live waiting session; {active}: the active one; {ended}: one that left; {forged}: {id} with another secret; {unknown}: a well-formed id never issued
	header  map[string]string
	body    string
	status  int
	code    waitroom.Code
	allow   string // for 405: a method the Allow header must list
	ctStart string // for success rows: the Content-Type must start with this
}

// The headers rows use.
var (
	admin     = map[string]string{"Authorization": "Bearer " + adminToken}
	wrongTok  = map[string]string{"Authorization": "Bearer not-the-token"}
	basicAuth = map[string]string{"Authorization": "Basic YWRtaW46" + adminToken}
	textPlain = map[string]string{"Content-Type": "text/plain"}
	upgrade   = map[string]string{"Connection": "Upgrade", "Upgrade": "websocket", "Sec-WebSocket-Version": "13", "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ=="}
)

func with(hs ...map[string]string) map[string]string {
	m := map[string]string{}
	for _, h := range hs {
		for k, v := range h {
			m[k] = v
		}
	}
	return m
}

// badInputs covers every route of routes.go, plus unknown paths.
func badInputs() []badInput {
	big := `{"key":"` + strings.Repeat("a", 1<<20) + `"}`
	long := strings.Repeat("x", 10_000)
	return []badInput{
		// POST /v1/rooms/{room}/sessions (join)
		{name: "join: malformed JSON", method: "POST", path: "/v1/rooms/r/sessions", body: `{"key":`, status: 400, code: waitroom.CodeInvalidJSON},
		{name: "join: not JSON at all", method: "POST", path: "/v1/rooms/r/sessions", body: `key=u1`, status: 400, code: waitroom.CodeInvalidJSON},
		{name: "join: key of the wrong type", method: "POST", path: "/v1/rooms/r/sessions", header: admin, body: `{"key":1}`, status: 400, code: waitroom.CodeInvalidJSON},
		{name: "join: unknown field", method: "POST", path: "/v1/rooms/r/sessions", body: `{"keyy":"u1"}`, status: 400, code: waitroom.CodeInvalidJSON},
		{name: "join: unknown field of 10,000 characters", method: "POST", path: "/v1/rooms/r/sessions", body: `{"` + long + `":1}`, status: 400, code: waitroom.CodeInvalidJSON},
		{name: "join: two JSON values", method: "POST", path: "/v1/rooms/r/sessions", body: `{} {}`, status: 400, code: waitroom.CodeInvalidJSON},
		{name: "join: array body", method: "POST", path: "/v1/rooms/r/sessions", body: `[]`, status: 400, code: waitroom.CodeInvalidJSON},
		{name: "join: body over 1 MiB", method: "POST", path: "/v1/rooms/r/sessions", header: admin, body: big, status: 413, code: waitroom.CodeBodyTooLarge},
		{name: "join: key without the admin token", method: "POST", path: "/v1/rooms/r/sessions", body: `{"key":"u1"}`, status: 401, code: waitroom.CodeUnauthorized},
		{name: "join: key with a wrong token", method: "POST", path: "/v1/rooms/r/sessions", header: wrongTok, body: `{"key":"u1"}`, status: 401, code: waitroom.CodeUnauthorized},
		{name: "join: key with NUL", method: "POST", path: "/v1/rooms/r/sessions", header: admin, body: `{"key":"a\u0000b"}`, status: 400, code: waitroom.CodeInvalidKey},
		{name: "join: key of invalid UTF-8", method: "POST", path: "/v1/rooms/r/sessions", header: admin, body: "{\"key\":\"a\xff\xfeb\"}", status: 400, code: waitroom.CodeInvalidKey},
		{name: "join: key of 257 bytes", method: "POST", path: "/v1/rooms/r/sessions", header: admin, body: `{"key":"` + strings.Repeat("k", 257) + `"}`, status: 400, code: waitroom.CodeInvalidKey},
		{name: "join: empty key", method: "POST", path: "/v1/rooms/r/sessions", header: admin, body: `{"key":""}`, status: 400, code: waitroom.CodeInvalidKey},
		{name: "join: key with a newline", method: "POST", path: "/v1/rooms/r/sessions", header: admin, body: `{"key":"a\nb"}`, status: 400, code: waitroom.CodeInvalidKey},
		{name: "join: contact without the admin token", method: "POST", path: "/v1/rooms/r/sessions", body: `{"contact":"c1"}`, status: 401, code: waitroom.CodeUnauthorized},
		{name: "join: contact with a wrong token", method: "POST", path: "/v1/rooms/r/sessions", header: wrongTok, body: `{"contact":"c1"}`, status: 401, code: waitroom.CodeUnauthorized},
		{name: "join: contact where places are not held", method: "POST", path: "/v1/rooms/r/sessions", header: admin, body: `{"contact":"c1"}`, status: 400, code: waitroom.CodeInvalidRequest},
		{name: "join: contact of 513 bytes", method: "POST", path: "/v1/rooms/r/sessions", header: admin, body: `{"contact":"` + strings.Repeat("c", 513) + `"}`, status: 400, code: waitroom.CodeInvalidRequest},
		{name: "join: contact with a control character", method: "POST", path: "/v1/rooms/r/sessions", header: admin, body: `{"contact":"a\u001bb"}`, status: 400, code: waitroom.CodeInvalidRequest},
		{name: "join: empty contact", method: "POST", path: "/v1/rooms/r/sessions", header: admin, body: `{"contact":""}`, status: 400, code: waitroom.CodeInvalidRequest},
		{name: "join: contact of the wrong type", method: "POST", path: "/v1/rooms/r/sessions", header: admin, body: `{"contact":["c1"]}`, status: 400, code: waitroom.CodeInvalidJSON},
		{name: "join: contact over 1 MiB", method: "POST", path: "/v1/rooms/r/sessions", header: admin, body: `{"contact":"` + strings.Repeat("c", 1<<20) + `"}`, status: 413, code: waitroom.CodeBodyTooLarge},
		{name: "join: upper-case room name", method: "POST", path: "/v1/rooms/R/sessions", status: 400, code: waitroom.CodeInvalidRoomName},
		{name: "join: room name of 65 characters", method: "POST", path: "/v1/rooms/" + strings.Repeat("a", 65) + "/sessions", status: 400, code: waitroom.CodeInvalidRoomName},
		{name: "join: room name with NUL", method: "POST", path: "/v1/rooms/a%00b/sessions", status: 400, code: waitroom.CodeInvalidRoomName},
		{name: "join: room name of invalid UTF-8", method: "POST", path: "/v1/rooms/a%FF/sessions", status: 400, code: waitroom.CodeInvalidRoomName},
		{name: "join: room name with an encoded slash", method: "POST", path: "/v1/rooms/r%2F..%2Fx/sessions", status: 400, code: waitroom.CodeInvalidRoomName},
		{name: "join: room name starting with a dot", method: "POST", path: "/v1/rooms/.r/sessions", status: 400, code: waitroom.CodeInvalidRoomName},
		{name: "join: unknown room", method: "POST", path: "/v1/rooms/nope/sessions", status: 404, code: waitroom.CodeRoomNotFound},
		{name: "join: wrong method", method: "GET", path: "/v1/rooms/r/sessions", status: 405, code: waitroom.CodeMethodNotAllowed, allow: "POST"},
		{name: "join: text/plain JSON is accepted (content type is not checked)", method: "POST", path: "/v1/rooms/r/sessions", header: textPlain, body: `{}`, status: 201, ctStart: "application/json"},
		{name: "join: blank body is a plain join", method: "POST", path: "/v1/rooms/r/sessions", body: " \r\n\t", status: 201, ctStart: "application/json"},

		// GET /v1/rooms/{room}/sessions/{id}
		{name: "session: id too short", method: "GET", path: "/v1/rooms/r/sessions/abc", status: 400, code: waitroom.CodeInvalidSessionID},
		{name: "session: id of 10,000 characters", method: "GET", path: "/v1/rooms/r/sessions/" + long, status: 400, code: waitroom.CodeInvalidSessionID},
		{name: "session: id with characters outside base64url", method: "GET", path: "/v1/rooms/r/sessions/" + strings.Repeat("!", 32), status: 400, code: waitroom.CodeInvalidSessionID},
		{name: "session: id with NUL", method: "GET", path: "/v1/rooms/r/sessions/" + strings.Repeat("A", 31) + "%00", status: 400, code: waitroom.CodeInvalidSessionID},
		{name: "session: id with ticket 0", method: "GET", path: "/v1/rooms/r/sessions/" + strings.Repeat("A", 32), status: 400, code: waitroom.CodeInvalidSessionID},
		{name: "session: unknown id", method: "GET", path: "/v1/rooms/r/sessions/{unknown}", status: 404, code: waitroom.CodeSessionNotFound},
		{name: "session: right ticket, wrong secret", method: "GET", path: "/v1/rooms/r/sessions/{forged}", status: 404, code: waitroom.CodeSessionNotFound},
		{name: "session: id of another room", method: "GET", path: "/v1/rooms/empty/sessions/{id}", status: 404, code: waitroom.CodeSessionNotFound},
		{name: "session: unknown room", method: "GET", path: "/v1/rooms/nope/sessions/{id}", status: 404, code: waitroom.CodeRoomNotFound},
		{name: "session: invalid room name", method: "GET", path: "/v1/rooms/R%20R/sessions/{id}", status: 400, code: waitroom.CodeInvalidRoomName},
		{name: "session: wrong method", method: "PUT", path: "/v1/rooms/r/sessions/{id}", status: 405, code: waitroom.CodeMethodNotAllowed, allow: "GET"},
		{name: "session: body and query are ignored", method: "GET", path: "/v1/rooms/r/sessions/{id}?x=%00&y", body: "\x00junk", status: 200, ctStart: "application/json"},

		// POST /v1/rooms/{room}/sessions/{id}/heartbeat
		{name: "heartbeat: invalid id", method: "POST", path: "/v1/rooms/r/sessions/nope/heartbeat", status: 400, code: waitroom.CodeInvalidSessionID},
		{name: "heartbeat: unknown id", method: "POST", path: "/v1/rooms/r/sessions/{unknown}/heartbeat", status: 404, code: waitroom.CodeSessionNotFound},
		{name: "heartbeat: forged id", method: "POST", path: "/v1/rooms/r/sessions/{forged}/heartbeat", status: 404, code: waitroom.CodeSessionNotFound},
		{name: "heartbeat: invalid room name", method: "POST", path: "/v1/rooms/_r/sessions/{id}/heartbeat", status: 400, code: waitroom.CodeInvalidRoomName},
		{name: "heartbeat: wrong method", method: "GET", path: "/v1/rooms/r/sessions/{id}/heartbeat", status: 405, code: waitroom.CodeMethodNotAllowed, allow: "POST"},

		// POST /v1/rooms/{room}/sessions/{id}/away
		{name: "away: invalid id", method: "POST", path: "/v1/rooms/r/sessions/" + long + "/away", status: 400, code: waitroom.CodeInvalidSessionID},
		{name: "away: unknown id", method: "POST", path: "/v1/rooms/r/sessions/{unknown}/away", status: 404, code: waitroom.CodeSessionNotFound},
		{name: "away: forged id with a 1 MiB body", method: "POST", path: "/v1/rooms/r/sessions/{forged}/away", body: strings.Repeat("z", 1<<20), status: 404, code: waitroom.CodeSessionNotFound},
		{name: "away: a 2 MiB body", method: "POST", path: "/v1/rooms/r/sessions/{id}/away", body: strings.Repeat("z", 2<<20), status: 413, code: waitroom.CodeBodyTooLarge},
		{name: "away: unknown room", method: "POST", path: "/v1/rooms/nope/sessions/{id}/away", status: 404, code: waitroom.CodeRoomNotFound},
		{name: "away: wrong method", method: "PUT", path: "/v1/rooms/r/sessions/{id}/away", status: 405, code: waitroom.CodeMethodNotAllowed, allow: "POST"},

		// POST /v1/rooms/{room}/sessions/{id}/claim
		{name: "claim: a waiting session is not invited", method: "POST", path: "/v1/rooms/r/sessions/{id}/claim", status: 409, code: waitroom.CodeNotInvited},
		{name: "claim: an ended session is not invited", method: "POST", path: "/v1/rooms/r/sessions/{ended}/claim", status: 409, code: waitroom.CodeNotInvited},
		{name: "claim: an active session answers as it is", method: "POST", path: "/v1/rooms/r/sessions/{active}/claim", status: 200, ctStart: "application/json"},
		{name: "claim: invalid id", method: "POST", path: "/v1/rooms/r/sessions/" + long + "/claim", status: 400, code: waitroom.CodeInvalidSessionID},
		{name: "claim: unknown id", method: "POST", path: "/v1/rooms/r/sessions/{unknown}/claim", status: 404, code: waitroom.CodeSessionNotFound},
		{name: "claim: forged id", method: "POST", path: "/v1/rooms/r/sessions/{forged}/claim", status: 404, code: waitroom.CodeSessionNotFound},
		{name: "claim: unknown room", method: "POST", path: "/v1/rooms/nope/sessions/{id}/claim", status: 404, code: waitroom.CodeRoomNotFound},
		{name: "claim: invalid room name", method: "POST", path: "/v1/rooms/r%00/sessions/{id}/claim", status: 400, code: waitroom.CodeInvalidRoomName},
		{name: "claim: wrong method", method: "GET", path: "/v1/rooms/r/sessions/{id}/claim", status: 405, code: waitroom.CodeMethodNotAllowed, allow: "POST"},

		// DELETE /v1/rooms/{room}/sessions/{id}
		{name: "leave: invalid id", method: "DELETE", path: "/v1/rooms/r/sessions/%FF%FE", status: 400, code: waitroom.CodeInvalidSessionID},
		{name: "leave: unknown id", method: "DELETE", path: "/v1/rooms/r/sessions/{unknown}", status: 404, code: waitroom.CodeSessionNotFound},
		{name: "leave: forged id", method: "DELETE", path: "/v1/rooms/r/sessions/{forged}", status: 404, code: waitroom.CodeSessionNotFound},
		{name: "leave: revoke with a wrong token", method: "DELETE", path: "/v1/rooms/r/sessions/{id}", header: wrongTok, status: 401, code: waitroom.CodeUnauthorized},
		{name: "leave: revoke with a Basic token", method: "DELETE", path: "/v1/rooms/r/sessions/{active}", header: basicAuth, status: 401, code: waitroom.CodeUnauthorized},
		{name: "leave: empty Authorization", method: "DELETE", path: "/v1/rooms/r/sessions/{id}", header: map[string]string{"Authorization": ""}, status: 401, code: waitroom.CodeUnauthorized},
		{name: "leave: ended session answers the same again", method: "DELETE", path: "/v1/rooms/r/sessions/{ended}", status: 200, ctStart: "application/json"},
		{name: "leave: invalid room name", method: "DELETE", path: "/v1/rooms/r!/sessions/{id}", status: 400, code: waitroom.CodeInvalidRoomName},

		// GET /v1/rooms/{room}
		{name: "room: invalid name", method: "GET", path: "/v1/rooms/Room", status: 400, code: waitroom.CodeInvalidRoomName},
		{name: "room: hostile name", method: "GET", path: "/v1/rooms/%3Cscript%3E", status: 400, code: waitroom.CodeInvalidRoomName},
		{name: "room: unknown", method: "GET", path: "/v1/rooms/nope", status: 404, code: waitroom.CodeRoomNotFound},
		{name: "room: wrong method", method: "POST", path: "/v1/rooms/r", status: 405, code: waitroom.CodeMethodNotAllowed, allow: "GET"},

		// GET /v1/rooms/{room}/sessions/{id}/events
		{name: "events: invalid id", method: "GET", path: "/v1/rooms/r/sessions/x/events", status: 400, code: waitroom.CodeInvalidSessionID},
		{name: "events: unknown id", method: "GET", path: "/v1/rooms/r/sessions/{unknown}/events", status: 404, code: waitroom.CodeSessionNotFound},
		{name: "events: unknown room", method: "GET", path: "/v1/rooms/nope/sessions/{id}/events", status: 404, code: waitroom.CodeRoomNotFound},
		{name: "events: wrong method", method: "POST", path: "/v1/rooms/r/sessions/{id}/events", status: 405, code: waitroom.CodeMethodNotAllowed, allow: "GET"},
		{name: "events: Last-Event-ID garbage", method: "GET", path: "/v1/rooms/r/sessions/{ended}/events", header: map[string]string{"Last-Event-ID": "garbage"}, status: 200, ctStart: "text/event-stream"},
		{name: "events: Last-Event-ID negative", method: "GET", path: "/v1/rooms/r/sessions/{ended}/events", header: map[string]string{"Last-Event-ID": "-5"}, status: 200, ctStart: "text/event-stream"},
		{name: "events: Last-Event-ID over 2^64", method: "GET", path: "/v1/rooms/r/sessions/{ended}/events", header: map[string]string{"Last-Event-ID": "99999999999999999999999"}, status: 200, ctStart: "text/event-stream"},
		{name: "events: Last-Event-ID with NUL and invalid UTF-8", method: "GET", path: "/v1/rooms/r/sessions/{ended}/events", header: map[string]string{"Last-Event-ID": "1\x00\xff"}, status: 200, ctStart: "text/event-stream"},
		{name: "events: Last-Event-ID of 10,000 digits", method: "GET", path: "/v1/rooms/r/sessions/{ended}/events", header: map[string]string{"Last-Event-ID": strings.Repeat("9", 10_000)}, status: 200, ctStart: "text/event-stream"},

		// GET /v1/rooms/{room}/sessions/{id}/ws
		{name: "ws: invalid id", method: "GET", path: "/v1/rooms/r/sessions/x/ws", header: upgrade, status: 400, code: waitroom.CodeInvalidSessionID},
		{name: "ws: unknown id", method: "GET", path: "/v1/rooms/r/sessions/{unknown}/ws", header: upgrade, status: 404, code: waitroom.CodeSessionNotFound},
		{name: "ws: not a WebSocket handshake", method: "GET", path: "/v1/rooms/r/sessions/{id}/ws", status: 400, code: waitroom.CodeInvalidRequest},
		{name: "ws: WebSocket version 8", method: "GET", path: "/v1/rooms/r/sessions/{id}/ws", header: with(upgrade, map[string]string{"Sec-WebSocket-Version": "8"}), status: 400, code: waitroom.CodeInvalidRequest},
		{name: "ws: cross-origin handshake", method: "GET", path: "/v1/rooms/r/sessions/{id}/ws", header: with(upgrade, map[string]string{"Origin": "https://evil.example"}), status: 403, code: "forbidden"},
		{name: "ws: wrong method", method: "DELETE", path: "/v1/rooms/r/sessions/{id}/ws", status: 405, code: waitroom.CodeMethodNotAllowed, allow: "GET"},

		// PUT /v1/rooms/{room}
		{name: "put room: no token", method: "PUT", path: "/v1/rooms/scratch", body: `{}`, status: 401, code: waitroom.CodeUnauthorized},
		{name: "put room: malformed JSON", method: "PUT", path: "/v1/rooms/scratch", header: admin, body: `{"capacity":`, status: 400, code: waitroom.CodeInvalidJSON},
		{name: "put room: unknown field", method: "PUT", path: "/v1/rooms/scratch", header: admin, body: `{"capacty":5}`, status: 400, code: waitroom.CodeInvalidJSON},
		{name: "put room: capacity as a string", method: "PUT", path: "/v1/rooms/scratch", header: admin, body: `{"capacity":"5"}`, status: 400, code: waitroom.CodeInvalidJSON},
		{name: "put room: fractional capacity", method: "PUT", path: "/v1/rooms/scratch", header: admin, body: `{"capacity":1.5}`, status: 400, code: waitroom.CodeInvalidJSON},
		{name: "put room: negative capacity", method: "PUT", path: "/v1/rooms/scratch", header: admin, body: `{"capacity":-1}`, status: 400, code: waitroom.CodeInvalidConfig},
		{name: "put room: capacity over the maximum", method: "PUT", path: "/v1/rooms/scratch", header: admin, body: `{"capacity":1000000001}`, status: 400, code: waitroom.CodeInvalidConfig},
		{name: "put room: capacity over int64", method: "PUT", path: "/v1/rooms/scratch", header: admin, body: `{"capacity":99999999999999999999}`, status: 400, code: waitroom.CodeInvalidJSON},
		{name: "put room: negative rate", method: "PUT", path: "/v1/rooms/scratch", header: admin, body: `{"rate_per_minute":-1}`, status: 400, code: waitroom.CodeInvalidConfig},
		{name: "put room: unknown mode", method: "PUT", path: "/v1/rooms/scratch", header: admin, body: `{"mode":"fifo"}`, status: 400, code: waitroom.CodeInvalidConfig},
		{name: "put room: duration as a number", method: "PUT", path: "/v1/rooms/scratch", header: admin, body: `{"grace":30}`, status: 400, code: waitroom.CodeInvalidJSON},
		{name: "put room: negative duration", method: "PUT", path: "/v1/rooms/scratch", header: admin, body: `{"active_timeout":"-1s"}`, status: 400, code: waitroom.CodeInvalidJSON},
		{name: "put room: duration without a unit", method: "PUT", path: "/v1/rooms/scratch", header: admin, body: `{"max_session":"90"}`, status: 400, code: waitroom.CodeInvalidJSON},
		{name: "put room: duration of a year and a day", method: "PUT", path: "/v1/rooms/scratch", header: admin, body: `{"waiting_timeout":"8785h"}`, status: 400, code: waitroom.CodeInvalidJSON},
		{name: "put room: duration under a millisecond", method: "PUT", path: "/v1/rooms/scratch", header: admin, body: `{"grace":"1ns"}`, status: 400, code: waitroom.CodeInvalidJSON},
		{name: "put room: duration of words", method: "PUT", path: "/v1/rooms/scratch", header: admin, body: `{"grace":"a fortnight"}`, status: 400, code: waitroom.CodeInvalidJSON},
		{name: "put room: javascript target", method: "PUT", path: "/v1/rooms/scratch", header: admin, body: `{"target_url":"javascript:alert(1)"}`, status: 400, code: waitroom.CodeInvalidConfig},
		{name: "put room: target with credentials", method: "PUT", path: "/v1/rooms/scratch", header: admin, body: `{"target_url":"https://u:p@shop.example/"}`, status: 400, code: waitroom.CodeInvalidConfig},
		{name: "put room: protocol-relative target", method: "PUT", path: "/v1/rooms/scratch", header: admin, body: `{"target_url":"//evil.example/"}`, status: 400, code: waitroom.CodeInvalidConfig},
		{name: "put room: target of 3,000 bytes", method: "PUT", path: "/v1/rooms/scratch", header: admin, body: `{"target_url":"/` + strings.Repeat("a", 3000) + `"}`, status: 400, code: waitroom.CodeInvalidConfig},
		{name: "put room: return origin with a path", method: "PUT", path: "/v1/rooms/scratch", header: admin, body: `{"return_origins":["https://shop.example/cart"]}`, status: 400, code: waitroom.CodeInvalidConfig},
		{name: "put room: 33 return origins", method: "PUT", path: "/v1/rooms/scratch", header: admin, body: `{"return_origins":[` + strings.TrimSuffix(strings.Repeat(`"https://a.example",`, 33), ",") + `]}`, status: 400, code: waitroom.CodeInvalidConfig},
		{name: "put room: paused as a string", method: "PUT", path: "/v1/rooms/scratch", header: admin, body: `{"paused":"yes"}`, status: 400, code: waitroom.CodeInvalidJSON},
		{name: "put room: body over 1 MiB", method: "PUT", path: "/v1/rooms/scratch", header: admin, body: big, status: 413, code: waitroom.CodeBodyTooLarge},
		{name: "put room: invalid room name", method: "PUT", path: "/v1/rooms/-scratch", header: admin, body: `{}`, status: 400, code: waitroom.CodeInvalidRoomName},
		{name: "put room: invalid room name without a token is 401 first", method: "PUT", path: "/v1/rooms/-scratch", body: `{}`, status: 401, code: waitroom.CodeUnauthorized},
		{name: "put room: text/plain JSON is accepted (the token is the guard)", method: "PUT", path: "/v1/rooms/scratch", header: with(admin, textPlain), body: `{"capacity":2}`, status: 201, ctStart: "application/json"},
		{name: "put room: wrong method", method: "POST", path: "/v1/rooms/scratch", header: admin, body: `{}`, status: 405, code: waitroom.CodeMethodNotAllowed, allow: "PATCH"},

		// GET /v1/rooms
		{name: "rooms: no token", method: "GET", path: "/v1/rooms", status: 401, code: waitroom.CodeUnauthorized},
		{name: "rooms: wrong method", method: "POST", path: "/v1/rooms", header: admin, status: 405, code: waitroom.CodeMethodNotAllowed, allow: "GET"},
		{name: "rooms: query is ignored", method: "GET", path: "/v1/rooms?limit=-1&x=%FF", header: admin, status: 200, ctStart: "application/json"},

		// DELETE /v1/rooms/{room}
		{name: "delete room: no token", method: "DELETE", path: "/v1/rooms/r?force=true", status: 401, code: waitroom.CodeUnauthorized},
		{name: "delete room: force not a boolean", method: "DELETE", path: "/v1/rooms/r?force=please", header: admin, status: 400, code: waitroom.CodeInvalidRequest},
		{name: "delete room: live sessions without force", method: "DELETE", path: "/v1/rooms/r", header: admin, status: 409, code: waitroom.CodeRoomNotEmpty},
		{name: "delete room: unknown room", method: "DELETE", path: "/v1/rooms/nope", header: admin, status: 404, code: waitroom.CodeRoomNotFound},
		{name: "delete room: invalid name", method: "DELETE", path: "/v1/rooms/a%00", header: admin, status: 400, code: waitroom.CodeInvalidRoomName},

		// POST /v1/rooms/{room}/advance
		{name: "advance: no token", method: "POST", path: "/v1/rooms/r/advance", body: `{"n":1}`, status: 401, code: waitroom.CodeUnauthorized},
		{name: "advance: n = 0", method: "POST", path: "/v1/rooms/r/advance", header: admin, body: `{"n":0}`, status: 400, code: waitroom.CodeInvalidRequest},
		{name: "advance: negative n", method: "POST", path: "/v1/rooms/r/advance", header: admin, body: `{"n":-3}`, status: 400, code: waitroom.CodeInvalidRequest},
		{name: "advance: huge n", method: "POST", path: "/v1/rooms/r/advance", header: admin, body: `{"n":1000000000}`, status: 400, code: waitroom.CodeInvalidRequest},
		{name: "advance: n over int64", method: "POST", path: "/v1/rooms/r/advance", header: admin, body: `{"n":1e30}`, status: 400, code: waitroom.CodeInvalidJSON},
		{name: "advance: n as a string", method: "POST", path: "/v1/rooms/r/advance", header: admin, body: `{"n":"2"}`, status: 400, code: waitroom.CodeInvalidJSON},
		{name: "advance: unknown field", method: "POST", path: "/v1/rooms/r/advance", header: admin, body: `{"count":2}`, status: 400, code: waitroom.CodeInvalidJSON},
		{name: "advance: body over 1 MiB", method: "POST", path: "/v1/rooms/r/advance", header: admin, body: big, status: 413, code: waitroom.CodeBodyTooLarge},
		{name: "advance: nobody waiting", method: "POST", path: "/v1/rooms/empty/advance", header: admin, status: 404, code: waitroom.CodeQueueEmpty},
		{name: "advance: unknown room", method: "POST", path: "/v1/rooms/nope/advance", header: admin, status: 404, code: waitroom.CodeRoomNotFound},
		{name: "advance: wrong method", method: "GET", path: "/v1/rooms/r/advance", header: admin, status: 405, code: waitroom.CodeMethodNotAllowed, allow: "POST"},

		// GET /v1/rooms/{room}/waiting
		{name: "waiting: no token", method: "GET", path: "/v1/rooms/r/waiting", status: 401, code: waitroom.CodeUnauthorized},
		{name: "waiting: limit 0", method: "GET", path: "/v1/rooms/r/waiting?limit=0", header: admin, status: 400, code: waitroom.CodeInvalidRequest},
		{name: "waiting: negative limit", method: "GET", path: "/v1/rooms/r/waiting?limit=-1", header: admin, status: 400, code: waitroom.CodeInvalidRequest},
		{name: "waiting: limit over the maximum", method: "GET", path: "/v1/rooms/r/waiting?limit=1000000", header: admin, status: 400, code: waitroom.CodeInvalidRequest},
		{name: "waiting: limit not a number", method: "GET", path: "/v1/rooms/r/waiting?limit=ten", header: admin, status: 400, code: waitroom.CodeInvalidRequest},
		{name: "waiting: empty limit", method: "GET", path: "/v1/rooms/r/waiting?limit=", header: admin, status: 400, code: waitroom.CodeInvalidRequest},
		{name: "waiting: garbage cursor", method: "GET", path: "/v1/rooms/r/waiting?after=%00%FF", header: admin, status: 400, code: waitroom.CodeInvalidRequest},
		{name: "waiting: cursor of 10,000 characters", method: "GET", path: "/v1/rooms/r/waiting?after=" + long, header: admin, status: 400, code: waitroom.CodeInvalidRequest},
		{name: "waiting: cursor of 256 characters is the store's to refuse", method: "GET", path: "/v1/rooms/r/waiting?after=" + strings.Repeat("9", 256), header: admin, status: 400, code: waitroom.CodeInvalidRequest},
		{name: "waiting: cursor past the end is an empty page", method: "GET", path: "/v1/rooms/r/waiting?after=999999", header: admin, status: 200, ctStart: "application/json"},
		{name: "waiting: unknown room", method: "GET", path: "/v1/rooms/nope/waiting", header: admin, status: 404, code: waitroom.CodeRoomNotFound},
		{name: "waiting: wrong method", method: "DELETE", path: "/v1/rooms/r/waiting", header: admin, status: 405, code: waitroom.CodeMethodNotAllowed, allow: "GET"},

		// GET /v1/rooms/{room}/history
		{name: "history: no token", method: "GET", path: "/v1/rooms/r/history", status: 401, code: waitroom.CodeUnauthorized},
		{name: "history: unknown status", method: "GET", path: "/v1/rooms/r/history?status=waiting", header: admin, status: 400, code: waitroom.CodeInvalidRequest},
		{name: "history: status with NUL", method: "GET", path: "/v1/rooms/r/history?status=left%00", header: admin, status: 400, code: waitroom.CodeInvalidRequest},
		{name: "history: bad limit", method: "GET", path: "/v1/rooms/r/history?limit=1.5", header: admin, status: 400, code: waitroom.CodeInvalidRequest},
		{name: "history: garbage cursor", method: "GET", path: "/v1/rooms/r/history?after=zzzz", header: admin, status: 400, code: waitroom.CodeInvalidRequest},
		{name: "history: cursor of 10,000 characters", method: "GET", path: "/v1/rooms/r/history?after=" + long, header: admin, status: 400, code: waitroom.CodeInvalidRequest},
		{name: "history: unknown room", method: "GET", path: "/v1/rooms/nope/history", header: admin, status: 404, code: waitroom.CodeRoomNotFound},
		{name: "history: wrong method", method: "POST", path: "/v1/rooms/r/history", header: admin, status: 405, code: waitroom.CodeMethodNotAllowed, allow: "GET"},

		// The operator's moves (issue 13): POST …/queue-all, …/front, …/extend; GET …/find, …/audit
		{name: "queue-all: no token", method: "POST", path: "/v1/rooms/r/queue-all", status: 401, code: waitroom.CodeUnauthorized},
		{name: "queue-all: wrong token", method: "POST", path: "/v1/rooms/r/queue-all", header: wrongTok, status: 401, code: waitroom.CodeUnauthorized},
		{name: "queue-all: wrong method", method: "GET", path: "/v1/rooms/r/queue-all", header: admin, status: 405, code: waitroom.CodeMethodNotAllowed, allow: "POST"},
		{name: "queue-all: unknown room", method: "POST", path: "/v1/rooms/nope/queue-all", header: admin, status: 404, code: waitroom.CodeRoomNotFound},
		{name: "queue-all: bad room name", method: "POST", path: "/v1/rooms/%00/queue-all", header: admin, status: 400, code: waitroom.CodeInvalidRoomName},
		{name: "queue-all: a body is ignored", method: "POST", path: "/v1/rooms/empty/queue-all", header: admin, body: "\xff junk", status: 200, ctStart: "application/json"},
		{name: "front: no token", method: "POST", path: "/v1/rooms/r/sessions/{id}/front", body: `{"reason":"x"}`, status: 401, code: waitroom.CodeUnauthorized},
		{name: "front: no body", method: "POST", path: "/v1/rooms/r/sessions/{id}/front", header: admin, status: 400, code: waitroom.CodeInvalidJSON},
		{name: "front: malformed JSON", method: "POST", path: "/v1/rooms/r/sessions/{id}/front", header: admin, body: `{"reason":`, status: 400, code: waitroom.CodeInvalidJSON},
		{name: "front: unknown field", method: "POST", path: "/v1/rooms/r/sessions/{id}/front", header: admin, body: `{"reason":"x","n":1}`, status: 400, code: waitroom.CodeInvalidJSON},
		{name: "front: no reason", method: "POST", path: "/v1/rooms/r/sessions/{id}/front", header: admin, body: `{}`, status: 400, code: waitroom.CodeInvalidRequest},
		{name: "front: blank reason", method: "POST", path: "/v1/rooms/r/sessions/{id}/front", header: admin, body: `{"reason":"   "}`, status: 400, code: waitroom.CodeInvalidRequest},
		{name: "front: reason too long", method: "POST", path: "/v1/rooms/r/sessions/{id}/front", header: admin, body: `{"reason":"` + strings.Repeat("r", 501) + `"}`, status: 400, code: waitroom.CodeInvalidRequest},
		{name: "front: reason with a control character", method: "POST", path: "/v1/rooms/r/sessions/{id}/front", header: admin, body: `{"reason":"a\u0007b"}`, status: 400, code: waitroom.CodeInvalidRequest},
		{name: "front: body over 1 MiB", method: "POST", path: "/v1/rooms/r/sessions/{id}/front", header: admin, body: big, status: 413, code: waitroom.CodeBodyTooLarge},
		{name: "front: an active session", method: "POST", path: "/v1/rooms/r/sessions/{active}/front", header: admin, body: `{"reason":"x"}`, status: 400, code: waitroom.CodeInvalidRequest},
		{name: "front: an ended session", method: "POST", path: "/v1/rooms/r/sessions/{ended}/front", header: admin, body: `{"reason":"x"}`, status: 400, code: waitroom.CodeInvalidRequest},
		{name: "front: forged id", method: "POST", path: "/v1/rooms/r/sessions/{forged}/front", header: admin, body: `{"reason":"x"}`, status: 404, code: waitroom.CodeSessionNotFound},
		{name: "front: unknown id", method: "POST", path: "/v1/rooms/r/sessions/{unknown}/front", header: admin, body: `{"reason":"x"}`, status: 404, code: waitroom.CodeSessionNotFound},
		{name: "front: malformed id", method: "POST", path: "/v1/rooms/r/sessions/abc/front", header: admin, body: `{"reason":"x"}`, status: 400, code: waitroom.CodeInvalidSessionID},
		{name: "front: unknown room", method: "POST", path: "/v1/rooms/nope/sessions/{id}/front", header: admin, body: `{"reason":"x"}`, status: 404, code: waitroom.CodeRoomNotFound},
		{name: "front: wrong method", method: "GET", path: "/v1/rooms/r/sessions/{id}/front", header: admin, status: 405, code: waitroom.CodeMethodNotAllowed, allow: "POST"},
		{name: "extend: no token", method: "POST", path: "/v1/rooms/r/sessions/{active}/extend", body: `{"by":"1m"}`, status: 401, code: waitroom.CodeUnauthorized},
		{name: "extend: no by", method: "POST", path: "/v1/rooms/r/sessions/{active}/extend", header: admin, body: `{}`, status: 400, code: waitroom.CodeInvalidRequest},
		{name: "extend: by zero", method: "POST", path: "/v1/rooms/r/sessions/{active}/extend", header: admin, body: `{"by":"0s"}`, status: 400, code: waitroom.CodeInvalidRequest},
		{name: "extend: by a negative duration", method: "POST", path: "/v1/rooms/r/sessions/{active}/extend", header: admin, body: `{"by":"-1m"}`, status: 400, code: waitroom.CodeInvalidJSON},
		{name: "extend: by a number", method: "POST", path: "/v1/rooms/r/sessions/{active}/extend", header: admin, body: `{"by":60}`, status: 400, code: waitroom.CodeInvalidJSON},
		{name: "extend: by over a year", method: "POST", path: "/v1/rooms/r/sessions/{active}/extend", header: admin, body: `{"by":"9000h"}`, status: 400, code: waitroom.CodeInvalidJSON},
		{name: "extend: by gibberish", method: "POST", path: "/v1/rooms/r/sessions/{active}/extend", header: admin, body: `{"by":"soon"}`, status: 400, code: waitroom.CodeInvalidJSON},
		{name: "extend: a waiting session", method: "POST", path: "/v1/rooms/r/sessions/{id}/extend", header: admin, body: `{"by":"1m"}`, status: 400, code: waitroom.CodeInvalidRequest},
		{name: "extend: an ended session", method: "POST", path: "/v1/rooms/r/sessions/{ended}/extend", header: admin, body: `{"by":"1m"}`, status: 400, code: waitroom.CodeInvalidRequest},
		{name: "extend: forged id", method: "POST", path: "/v1/rooms/r/sessions/{forged}/extend", header: admin, body: `{"by":"1m"}`, status: 404, code: waitroom.CodeSessionNotFound},
		{name: "extend: body over 1 MiB", method: "POST", path: "/v1/rooms/r/sessions/{active}/extend", header: admin, body: big, status: 413, code: waitroom.CodeBodyTooLarge},
		{name: "find: no token", method: "GET", path: "/v1/rooms/r/find?q=1", status: 401, code: waitroom.CodeUnauthorized},
		{name: "find: no q", method: "GET", path: "/v1/rooms/r/find", header: admin, status: 400, code: waitroom.CodeInvalidRequest},
		{name: "find: empty q", method: "GET", path: "/v1/rooms/r/find?q=", header: admin, status: 400, code: waitroom.CodeInvalidRequest},
		{name: "find: two q", method: "GET", path: "/v1/rooms/r/find?q=1&q=2", header: admin, status: 400, code: waitroom.CodeInvalidRequest},
		{name: "find: q of 10,000 characters", method: "GET", path: "/v1/rooms/r/find?q=" + long, header: admin, status: 400, code: waitroom.CodeInvalidRequest},
		{name: "find: q with NUL finds nobody", method: "GET", path: "/v1/rooms/r/find?q=%00%FF", header: admin, status: 200, ctStart: "application/json"},
		{name: "find: a huge ticket finds nobody", method: "GET", path: "/v1/rooms/r/find?q=99999999999999999999", header: admin, status: 200, ctStart: "application/json"},
		{name: "find: unknown room", method: "GET", path: "/v1/rooms/nope/find?q=1", header: admin, status: 404, code: waitroom.CodeRoomNotFound},
		{name: "find: wrong method", method: "POST", path: "/v1/rooms/r/find?q=1", header: admin, status: 405, code: waitroom.CodeMethodNotAllowed, allow: "GET"},
		{name: "audit: no token", method: "GET", path: "/v1/rooms/r/audit", status: 401, code: waitroom.CodeUnauthorized},
		{name: "audit: bad limit", method: "GET", path: "/v1/rooms/r/audit?limit=x", header: admin, status: 400, code: waitroom.CodeInvalidRequest},
		{name: "audit: garbage cursor", method: "GET", path: "/v1/rooms/r/audit?after=%00zz", header: admin, status: 400, code: waitroom.CodeInvalidRequest},
		{name: "audit: session of 10,000 characters", method: "GET", path: "/v1/rooms/r/audit?session=" + long, header: admin, status: 400, code: waitroom.CodeInvalidRequest},
		{name: "audit: unknown room", method: "GET", path: "/v1/rooms/nope/audit", header: admin, status: 404, code: waitroom.CodeRoomNotFound},
		{name: "audit: wrong method", method: "DELETE", path: "/v1/rooms/r/audit", header: admin, status: 405, code: waitroom.CodeMethodNotAllowed, allow: "GET"},

		{name: "stats: no token", method: "GET", path: "/v1/stats", status: 401, code: waitroom.CodeUnauthorized},
		{name: "stats: wrong token", method: "GET", path: "/v1/stats", header: wrongTok, status: 401, code: waitroom.CodeUnauthorized},
		{name: "stats: wrong method", method: "POST", path: "/v1/stats", header: admin, status: 405, code: waitroom.CodeMethodNotAllowed, allow: "GET"},
		{name: "stats: junk query is ignored", method: "GET", path: "/v1/stats?%00=%FF", header: admin, status: 200, ctStart: "application/json"},
		{name: "room stats: no token", method: "GET", path: "/v1/rooms/r/stats", status: 401, code: waitroom.CodeUnauthorized},
		{name: "room stats: unknown room", method: "GET", path: "/v1/rooms/nope/stats", header: admin, status: 404, code: waitroom.CodeRoomNotFound},
		{name: "room stats: bad room name", method: "GET", path: "/v1/rooms/%2e%2e/stats", header: admin, status: 400, code: waitroom.CodeInvalidRoomName},
		{name: "room stats: wrong method", method: "DELETE", path: "/v1/rooms/r/stats", header: admin, status: 405, code: waitroom.CodeMethodNotAllowed, allow: "GET"},
		{name: "admin events: no token", method: "GET", path: "/v1/rooms/r/admin-events", status: 401, code: waitroom.CodeUnauthorized},
		{name: "admin events: unknown room", method: "GET", path: "/v1/rooms/nope/admin-events", header: admin, status: 404, code: waitroom.CodeRoomNotFound},
		{name: "admin events: wrong method", method: "POST", path: "/v1/rooms/r/admin-events", header: admin, status: 405, code: waitroom.CodeMethodNotAllowed, allow: "GET"},
		{name: "admin events: HEAD answers the head only", method: "HEAD", path: "/v1/rooms/r/admin-events", header: admin, status: 200, ctStart: "text/event-stream"},
		{name: "console cookie of garbage", method: "GET", path: "/v1/rooms", header: map[string]string{"Cookie": "waitroom_console=\xff\x00; waitroom_console=a.b"}, status: 401, code: waitroom.CodeUnauthorized},

		// Operations
		{name: "healthz: wrong method", method: "POST", path: "/healthz", status: 405, code: waitroom.CodeMethodNotAllowed, allow: "GET"},
		{name: "healthz: junk query", method: "GET", path: "/healthz?%00=%FF", status: 200, ctStart: "application/json"},
		{name: "readyz: wrong method", method: "DELETE", path: "/readyz", status: 405, code: waitroom.CodeMethodNotAllowed, allow: "GET"},
		{name: "metrics: wrong method", method: "PUT", path: "/metrics", status: 405, code: waitroom.CodeMethodNotAllowed, allow: "GET"},
		{name: "metrics: junk Accept", method: "GET", path: "/metrics", header: map[string]string{"Accept": "\xff;q=nan, */*", "Authorization": admin["Authorization"]}, status: 200, ctStart: "text/plain"},
		{name: "metrics: no token", method: "GET", path: "/metrics", status: 401, code: waitroom.CodeUnauthorized},
		{name: "metrics: wrong token", method: "GET", path: "/metrics", header: wrongTok, status: 401, code: waitroom.CodeUnauthorized},
		{name: "metrics: token in the query is no token", method: "GET", path: "/metrics?token=" + adminToken, status: 401, code: waitroom.CodeUnauthorized},

		// Unknown paths and methods
		{name: "unknown path", method: "GET", path: "/v2/rooms", status: 404, code: waitroom.CodeNotFound},
		{name: "unknown path under a room", method: "GET", path: "/v1/rooms/r/nope", status: 404, code: waitroom.CodeNotFound},
		{name: "path traversal is redirected to the clean path", method: "GET", path: "/v1/rooms/r/sessions/../../../etc/passwd", status: 307},
		{name: "clean path of the traversal", method: "GET", path: "/etc/passwd", status: 404, code: waitroom.CodeNotFound},
		{name: "unknown method token", method: "BREW", path: "/v1/rooms/r", status: 405, code: waitroom.CodeMethodNotAllowed, allow: "GET"},
		{name: "CORS preflight", method: "OPTIONS", path: "/v1/rooms/r/sessions", header: map[string]string{"Origin": "https://evil.example", "Access-Control-Request-Method": "POST"}, status: 405, code: waitroom.CodeMethodNotAllowed, allow: "POST"},
	}
}

// TestBadInputTable sends every row to a room with live sessions, checks
// each answer, then checks that nothing was lost or changed on the way.
func TestBadInputTable(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	e.must(http.StatusCreated, withAdmin, "PUT", "/v1/rooms/r", `{"capacity":1,"waiting_timeout":"0s","active_timeout":"0s"}`)
	e.must(http.StatusCreated, withAdmin, "PUT", "/v1/rooms/empty", "")
	var issued []waitroom.Session
	for range 5 {
		issued = append(issued, e.session(e.must(http.StatusCreated, noAuth, "POST", "/v1/rooms/r/sessions", "")))
	}
	ended := e.session(e.must(http.StatusCreated, noAuth, "POST", "/v1/rooms/r/sessions", ""))
	issued = append(issued, ended)
	e.must(http.StatusOK, noAuth, "DELETE", "/v1/rooms/r/sessions/"+ended.ID, "")
	active, waiting := issued[0], issued[1]
	if active.Status != waitroom.StatusActive || waiting.Status != waitroom.StatusWaiting {
		t.Fatalf("setup: got %s and %s, want active and waiting", active.Status, waiting.Status)
	}
	id, err := waitroom.ParseSessionID(waiting.ID)
	if err != nil {
		t.Fatal(err)
	}
	id.Secret[0] ^= 1
	forged := id.String()
	unknown := waitroom.NewSessionID(999_999).String()
	before, err := e.store.Sessions(ctx, "r", sessionIDs(issued))
	if err != nil {
		t.Fatal(err)
	}

	rows := badInputs()
	for _, row := range rows {
		t.Run(row.name, func(t *testing.T) {
			path := strings.NewReplacer("{id}", waiting.ID, "{active}", active.ID, "{ended}", ended.ID, "{forged}", forged, "{unknown}", unknown).Replace(row.path)
			req := httptest.NewRequest(row.method, "http://waitroom.test"+path, strings.NewReader(row.body))
			for k, v := range row.header {
				req.Header.Set(k, v)
			}
			rec := httptest.NewRecorder()
			e.handler.ServeHTTP(rec, req)
			if rec.Code != row.status {
				t.Fatalf("%s %.80s: got status %d, want %d; body %.300s", row.method, path, rec.Code, row.status, rec.Body.Bytes())
			}
			if row.code == "" {
				if ct := rec.Header().Get("Content-Type"); !strings.HasPrefix(ct, row.ctStart) {
					t.Fatalf("got Content-Type %q, want %s", ct, row.ctStart)
				}
				if rec.Code == http.StatusCreated && strings.HasSuffix(path, "/v1/rooms/r/sessions") {
					var s waitroom.Session
					if err := json.Unmarshal(rec.Body.Bytes(), &s); err != nil {
						t.Fatalf("join answer %s: %v", rec.Body.Bytes(), err)
					}
					issued = append(issued, s)
				}
				return
			}
			v, err := errorShape(rec.Header(), rec.Body.Bytes())
			if err != nil {
				t.Fatal(err)
			}
			if v.Error.Code != row.code {
				t.Fatalf("got code %s, want %s; message %q", v.Error.Code, row.code, v.Error.Message)
			}
			if len(v.Error.Message) > 400 {
				t.Errorf("message of %d bytes, want a short sentence (hostile input must not be echoed at length)", len(v.Error.Message))
			}
			if row.allow != "" && !strings.Contains(rec.Header().Get("Allow"), row.allow) {
				t.Errorf("Allow %q, want it to list %s", rec.Header().Get("Allow"), row.allow)
			}
			if rec.Code == http.StatusUnauthorized && rec.Header().Get("WWW-Authenticate") == "" {
				t.Errorf("401 without WWW-Authenticate")
			}
			for k := range rec.Header() {
				if strings.HasPrefix(k, "Access-Control-") {
					t.Errorf("header %s set; the API sends no CORS headers", k)
				}
			}
		})
	}
	t.Logf("bad-input table: %d rows", len(rows))

	// Nothing was lost or changed: the six first sessions read back as
	// before, the joins the table made are all there, and the room's
	// invariants hold.
	after, err := e.store.Sessions(ctx, "r", sessionIDs(issued[:len(before)]))
	if err != nil {
		t.Fatal(err)
	}
	for i := range before {
		b, a := before[i], after[i]
		if a.ID != b.ID || a.Status != b.Status || a.Ticket != b.Ticket || a.Position != b.Position || !a.AdmittedAt.Equal(b.AdmittedAt) || a.EndReason != b.EndReason {
			t.Errorf("session %d after the table: %+v, want as before: %+v", i, a, b)
		}
	}
	storetest.CheckInvariants(t, e.store, "r", issued, 1)
	room, err := e.store.Room(ctx, "r")
	if err != nil {
		t.Fatal(err)
	}
	if room.Active != 1 || room.Waiting != len(issued)-2 {
		t.Errorf("room after the table: %d active, %d waiting; want 1 and %d", room.Active, room.Waiting, len(issued)-2)
	}
}

func sessionIDs(ss []waitroom.Session) []string {
	ids := make([]string, len(ss))
	for i, s := range ss {
		ids[i] = s.ID
	}
	return ids
}
