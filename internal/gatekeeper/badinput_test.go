package gatekeeper

import (
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"
)

// Hostile or malformed requests to the gate's endpoints get the documented
// JSON error, never a panic or a plain-text page.
func TestGateEndpointsBadInput(t *testing.T) {
	e := newEnv(t, envConfig{})
	h := checked(t, e.gate.Handler())
	for _, tc := range []struct {
		method, target string
		header         map[string]string
		status         int
		code           string
	}{
		{"GET", "/v1/gate/bad%20room/forward-auth", nil, 400, "invalid_room_name"},
		{"GET", "/v1/gate/" + strings.Repeat("r", 300) + "/auth-request", nil, 400, "invalid_room_name"},
		{"GET", "/v1/gate/..%2F..%2Fetc/forward-auth", nil, 400, "invalid_room_name"},
		{"GET", "/v1/gate/nosuchroom/forward-auth", map[string]string{"Accept": "application/json"}, 404, "room_not_found"},
		{"GET", "/v1/gate/default/nothing-here", nil, 404, "not_found"},
		{"POST", "/.well-known/jwks.json", nil, 405, "method_not_allowed"},
		{"DELETE", "/.well-known/jwks.json", nil, 405, "method_not_allowed"},
		// TRACE would have an app echo the pass cookie; CONNECT would make
		// the gate a tunnel: neither is answered as a visitor's request.
		{"TRACE", "/v1/gate/default/forward-auth", nil, 405, "method_not_allowed"},
		{"CONNECT", "/v1/gate/default/auth-request", nil, 405, "method_not_allowed"},
		{"GET", "/v1/gate/default/forward-auth", map[string]string{"X-Forwarded-Method": "TRACE"}, 405, "method_not_allowed"},
		{"GET", "/v1/gate/default/auth-request", map[string]string{"X-Forwarded-Method": "connect"}, 405, "method_not_allowed"},
		{"GET", "/v1/gate/default/auth-request", map[string]string{"Cookie": "waitroom-default=" + strings.Repeat("x.", 4000)}, 401, ""},
		{"GET", "/v1/gate/default/auth-request", map[string]string{"Authorization": "Bearer \x00\xff.not.a.jwt"}, 401, ""},
		{"GET", "/v1/gate/default/forward-auth", map[string]string{"X-Forwarded-Uri": "//evil.example/\r\nx", "X-Forwarded-Host": "evil.example:99999", "Accept": "application/json"}, 401, ""},
	} {
		req := httptest.NewRequest(tc.method, tc.target, nil)
		if _, ok := tc.header["X-Forwarded-Method"]; ok {
			req.RemoteAddr = "127.0.0.1:40000" // a trusted proxy's account of the visitor
		}
		for k, v := range tc.header {
			req.Header.Set(k, v)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != tc.status {
			t.Errorf("%s %.60s: status %d, want %d; body %.200s", tc.method, tc.target, rec.Code, tc.status, rec.Body.String())
			continue
		}
		if want := map[string]string{"TRACE": gateMethods, "CONNECT": gateMethods, "GET": gateMethods}[tc.method]; tc.status == 405 {
			if tc.target == JWKSPath {
				want = "GET, HEAD"
			}
			if got := rec.Header().Get("Allow"); got != want {
				t.Errorf("%s %.60s: Allow %q, want %q", tc.method, tc.target, got, want)
			}
		}
		if tc.code == "" {
			continue
		}
		var body struct {
			Error struct{ Code, Message string } `json:"error"`
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil || body.Error.Code != tc.code || body.Error.Message == "" {
			t.Errorf("%s %.60s: body %.200s, want a JSON error with code %s", tc.method, tc.target, rec.Body.String(), tc.code)
		}
		if !strings.HasPrefix(rec.Header().Get("Content-Type"), "application/json") {
			t.Errorf("%s %.60s: Content-Type %q, want JSON", tc.method, tc.target, rec.Header().Get("Content-Type"))
		}
	}
	// Nothing a hostile request did made a session.
	if room, err := e.mem.Room(t.Context(), "default"); err != nil || room.Waiting+room.Active != 0 {
		t.Errorf("after the bad requests the room holds %d sessions (%v), want 0", room.Waiting+room.Active, err)
	}
}
