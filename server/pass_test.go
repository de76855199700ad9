package server

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/gate"
)

// TestPassAloneCannotReachItsSession: whoever sees a pass (an app's log, a
// downstream service) learns the session's ticket and nothing that owns
// the session. The pass's subject is the ticket; no claim holds the id or
// its secret; no claim read as an id reads or ends the session through the
// API; and the forward-auth endpoint, asked with the pass by anyone but a
// trusted proxy, lets it through without the Waitroom-Session header. A
// trusted proxy still gets the id, for the app.
func TestPassAloneCannotReachItsSession(t *testing.T) {
	cfg := testConfig(t)
	cfg.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("192.0.2.1/32")}
	srv, err := New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	room := waitroom.DefaultConfig()
	room.Capacity = 5
	if _, _, err := srv.Store().PutRoom(context.Background(), "shop", room, time.Now()); err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()
	do := func(method, path, bearer string) (int, http.Header, []byte) {
		t.Helper()
		req, err := http.NewRequest(method, ts.URL+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		if bearer != "" {
			req.Header.Set("Authorization", "Bearer "+bearer)
			req.Header.Set("Accept", "application/json")
		}
		resp, err := ts.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header, b
	}
	code, _, body := do("POST", "/v1/rooms/shop/sessions", "")
	var s waitroom.Session
	if err := json.Unmarshal(body, &s); err != nil || code != http.StatusCreated || s.Status != waitroom.StatusActive || s.Pass == "" {
		t.Fatalf("join: %d %s, want an active session with a pass", code, body)
	}
	secret := s.ID[11:] // the 16 random bytes after the ticket
	if strings.Contains(s.Pass, secret) {
		t.Fatalf("the pass %s holds the session's secret", s.Pass)
	}
	parts := strings.Split(s.Pass, ".")
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	var claims map[string]any
	if err := json.Unmarshal(payload, &claims); err != nil {
		t.Fatal(err)
	}
	if claims["sub"] != strconv.FormatInt(s.Ticket, 10) || strings.Contains(string(payload), secret) {
		t.Fatalf("pass claims %s: want sub the ticket %d and no session id", payload, s.Ticket)
	}
	// Every string in the pass, tried as a session id: none reads the
	// session, none ends it.
	for name, v := range claims {
		str, ok := v.(string)
		if !ok {
			continue
		}
		p := "/v1/rooms/shop/sessions/" + str
		if code, _, b := do("GET", p, ""); code == http.StatusOK {
			t.Fatalf("GET the session by the pass's %s: %d %s", name, code, b)
		}
		if code, _, b := do("DELETE", p, ""); code < 400 {
			t.Fatalf("DELETE the session by the pass's %s: %d %s", name, code, b)
		}
	}
	// The gate, asked with the pass by anyone: let through, with the
	// public identity only.
	for _, path := range []string{"/v1/gate/shop/forward-auth", "/v1/gate/shop/auth-request"} {
		code, h, _ := do("GET", path, s.Pass)
		if code/100 != 2 || h.Get(gate.HeaderTicket) != strconv.FormatInt(s.Ticket, 10) || h.Get(gate.HeaderSession) != "" {
			t.Fatalf("%s with the pass from an untrusted address: %d, ticket %q, session %q; want 2xx with the ticket and no session id",
				path, code, h.Get(gate.HeaderTicket), h.Get(gate.HeaderSession))
		}
	}
	// A trusted proxy gets the session id for the app.
	r := httptest.NewRequest("GET", "/v1/gate/shop/forward-auth", nil)
	r.RemoteAddr = "192.0.2.1:4000"
	r.Header.Set("Authorization", "Bearer "+s.Pass)
	r.Header.Set("Accept", "application/json")
	w := httptest.NewRecorder()
	srv.Handler().ServeHTTP(w, r)
	if w.Code != http.StatusOK || w.Header().Get(gate.HeaderSession) != s.ID {
		t.Fatalf("forward-auth from the trusted proxy: %d, session %q; want 200 with the session id", w.Code, w.Header().Get(gate.HeaderSession))
	}
	code, _, body = do("GET", "/v1/rooms/shop/sessions/"+s.ID, "")
	if err := json.Unmarshal(body, &s); err != nil || code != http.StatusOK || s.Status != waitroom.StatusActive {
		t.Fatalf("the session after all that: %d %s, want still active", code, body)
	}
}
