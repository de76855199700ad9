package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/internal/admintoken"
	"github.com/waitroom/waitroom/internal/httpapi"
	"github.com/waitroom/waitroom/memstore"
)

// adminRoutes are every admin endpoint, with a body that would succeed.
var adminRoutes = []struct{ method, path, body string }{
	{"PUT", "/v1/rooms/r", `{"capacity":5}`},
	{"GET", "/v1/rooms", ""},
	{"DELETE", "/v1/rooms/r?force=true", ""},
	{"POST", "/v1/rooms/r/advance", `{"n":1}`},
	{"GET", "/v1/rooms/r/waiting", ""},
	{"GET", "/v1/rooms/r/history", ""},
	{"DELETE", "/v1/rooms/r/sessions/{id}", ""}, // revoke
}

func TestAdminEndpointsNeedTheToken(t *testing.T) {
	e := newEnv(t)
	e.must(http.StatusCreated, withAdmin, "PUT", "/v1/rooms/r", `{"capacity":1}`)
	s := e.session(e.must(http.StatusCreated, noAuth, "POST", "/v1/rooms/r/sessions", ""))
	e.must(http.StatusCreated, noAuth, "POST", "/v1/rooms/r/sessions", "")
	noToken := checked(t, httpapi.NewHandler(withParts(t, httpapi.Config{Store: e.store, Clock: e.clock, Admit: admission(t, e.store, e.clock, nil),
		AdminGuard: admintoken.New(admintoken.Config{Clock: e.clock, MaxWrong: 1 << 20})}))) // every route, many tokens: not the limit's test
	for _, authz := range []struct {
		name, header string
		h            http.Handler
	}{
		{"no Authorization", "", e.handler},
		{"wrong token", "Bearer not-" + adminToken, e.handler},
		{"token with a suffix", "Bearer " + adminToken + "x", e.handler},
		{"token prefix", "Bearer " + adminToken[:len(adminToken)-1], e.handler},
		{"token with a trailing space", "Bearer " + adminToken + " ", e.handler},
		{"Basic scheme", "Basic " + adminToken, e.handler},
		{"Token scheme", "Token " + adminToken, e.handler},
		{"bare token", adminToken, e.handler},
		{"Bearer without a token", "Bearer ", e.handler},
		{"two spaces", "Bearer  " + adminToken, e.handler},
		{"empty token on a server without one", "Bearer ", noToken},
		{"any token on a server without one", "Bearer " + adminToken, noToken},
	} {
		for _, rt := range adminRoutes {
			if authz.header == "" && strings.Contains(rt.path, "{id}") {
				continue // without Authorization, DELETE of a session is its holder leaving
			}
			path := strings.ReplaceAll(rt.path, "{id}", s.ID)
			h := authz.h
			rec := serveWith(h, rt.method, path, authz.header, rt.body)
			if rec.Code != http.StatusUnauthorized {
				t.Errorf("%s: %s %s: got %d, want 401; body %s", authz.name, rt.method, rt.path, rec.Code, rec.Body.Bytes())
				continue
			}
			v, err := errorShape(rec.Header(), rec.Body.Bytes())
			if err != nil || v.Error.Code != waitroom.CodeUnauthorized {
				t.Errorf("%s: %s %s: got code %s (%v), want unauthorized", authz.name, rt.method, rt.path, v.Error.Code, err)
			}
			if got := rec.Header().Get("WWW-Authenticate"); got != `Bearer realm="waitroom"` {
				t.Errorf("%s: %s %s: WWW-Authenticate %q, want Bearer realm=\"waitroom\"", authz.name, rt.method, rt.path, got)
			}
		}
	}
	// Nothing happened: the room and both sessions are as they were.
	room, err := e.store.Room(context.Background(), "r")
	if err != nil || room.Capacity != 1 || room.Active != 1 || room.Waiting != 1 {
		t.Fatalf("room after refused admin calls: %+v, %v; want capacity 1, 1 active, 1 waiting", room, err)
	}
	// The scheme is case-insensitive (RFC 9110): the right token passes.
	if rec := serveWith(e.handler, "GET", "/v1/rooms", "bearer "+adminToken, ""); rec.Code != http.StatusOK {
		t.Fatalf("lower-case scheme with the right token: got %d, want 200", rec.Code)
	}
}

func serveWith(h http.Handler, method, target, authz, body string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, target, strings.NewReader(body))
	if authz != "" {
		req.Header.Set("Authorization", authz)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

func TestJoinKeyOnlyWithAdminToken(t *testing.T) {
	e := newEnv(t)
	e.must(http.StatusCreated, withAdmin, "PUT", "/v1/rooms/r", "")
	for _, a := range []auth{noAuth, wrongToken} {
		ans := e.do(a, "POST", "/v1/rooms/r/sessions", `{"key":"alice"}`)
		if v, err := errorShape(ans.header, ans.body); ans.status != 401 || err != nil || v.Error.Code != waitroom.CodeUnauthorized {
			t.Fatalf("join with a key, %s: got %d %s, want 401 unauthorized", a, ans.status, ans.body)
		}
	}
	room, _ := e.store.Room(context.Background(), "r")
	if room.LastTicket != 0 {
		t.Fatalf("refused keyed joins issued %d tickets, want 0", room.LastTicket)
	}
	s := e.session(e.must(http.StatusCreated, withAdmin, "POST", "/v1/rooms/r/sessions", `{"key":"alice"}`))
	if s.Key != "alice" {
		t.Fatalf("admin join with key alice: session key %q, want alice", s.Key)
	}
	// Someone without the token cannot take alice's identity or learn her session.
	ans := e.do(noAuth, "POST", "/v1/rooms/r/sessions", `{"key":"alice"}`)
	if ans.status != 401 || bytes.Contains(ans.body, []byte(s.ID)) {
		t.Fatalf("keyed join of alice without the token: got %d %s, want 401 without her session", ans.status, ans.body)
	}
}

// TestSessionIDEntropy: ids are 32 base64url characters holding the ticket
// and 128 bits from crypto/rand; every one of the 128 bits varies, and no
// secret repeats.
func TestSessionIDEntropy(t *testing.T) {
	const n = 2000
	e := newEnv(t)
	e.must(http.StatusCreated, withAdmin, "PUT", "/v1/rooms/r", `{"capacity":0}`)
	e.must(http.StatusCreated, withAdmin, "PUT", "/v1/rooms/q", `{"capacity":0}`)
	seen := make(map[[16]byte]bool, n)
	var ones [128]int
	for i := range n {
		room := []string{"r", "q"}[i%2]
		rec := serve(e.handler, "POST", "/v1/rooms/"+room+"/sessions", "", "")
		if rec.Code != http.StatusCreated {
			t.Fatalf("join %d: got %d", i, rec.Code)
		}
		var s waitroom.Session
		if err := jsonUnmarshal(rec.Body.Bytes(), &s); err != nil {
			t.Fatal(err)
		}
		if len(s.ID) != waitroom.SessionIDLen || waitroom.SessionIDLen != 32 {
			t.Fatalf("id %q: length %d, want 32", s.ID, len(s.ID))
		}
		id, err := waitroom.ParseSessionID(s.ID)
		if err != nil {
			t.Fatalf("ParseSessionID(%q): %v", s.ID, err)
		}
		if id.Ticket != s.Ticket {
			t.Fatalf("id %q holds ticket %d, session says %d", s.ID, id.Ticket, s.Ticket)
		}
		if seen[id.Secret] {
			t.Fatalf("secret of %q seen before", s.ID)
		}
		seen[id.Secret] = true
		for b := range 128 {
			if id.Secret[b/8]>>(7-b%8)&1 == 1 {
				ones[b]++
			}
		}
	}
	// Each bit is 1 in about half the ids: 1000 ± 22 (one standard
	// deviation); 700..1300 is ±13 deviations, so a good source never fails,
	// while a constant, counter or short-seeded bit always does.
	for b, c := range ones {
		if c < 700 || c > 1300 {
			t.Errorf("secret bit %d is 1 in %d of %d ids, want about half: fewer than 128 random bits", b, c, n)
		}
	}
}

// TestNoCORS: the API grants no cross-origin access. The session endpoints
// serve the waiting page on the same origin; a browser on another origin can
// send simple requests but cannot read the answers, and preflights fail.
func TestNoCORS(t *testing.T) {
	e := newEnv(t)
	e.must(http.StatusCreated, withAdmin, "PUT", "/v1/rooms/r", `{"capacity":1}`)
	s := e.session(e.must(http.StatusCreated, noAuth, "POST", "/v1/rooms/r/sessions", ""))
	for _, rt := range []struct{ method, path string }{
		{"POST", "/v1/rooms/r/sessions"},
		{"GET", "/v1/rooms/r/sessions/" + s.ID},
		{"POST", "/v1/rooms/r/sessions/" + s.ID + "/heartbeat"},
		{"GET", "/v1/rooms/r"},
		{"GET", "/v1/rooms"},
		{"GET", "/healthz"},
		{"OPTIONS", "/v1/rooms/r/sessions"},
		{"OPTIONS", "/v1/rooms/r/sessions/" + s.ID},
		{"OPTIONS", "/v1/rooms"},
	} {
		req := httptest.NewRequest(rt.method, rt.path, nil)
		req.Header.Set("Origin", "https://evil.example")
		if rt.method == "OPTIONS" {
			req.Header.Set("Access-Control-Request-Method", "DELETE")
			req.Header.Set("Access-Control-Request-Headers", "authorization")
		}
		rec := httptest.NewRecorder()
		e.handler.ServeHTTP(rec, req)
		for k := range rec.Header() {
			if strings.HasPrefix(k, "Access-Control-") {
				t.Errorf("%s %s with Origin: header %s: %q, want no CORS headers", rt.method, rt.path, k, rec.Header().Get(k))
			}
		}
		if rt.method == "OPTIONS" && rec.Code < 400 {
			t.Errorf("preflight %s: got %d, want a failure", rt.path, rec.Code)
		}
	}

	// WebSocket: a real cross-origin handshake is refused, a same-origin one
	// and one without Origin (a non-browser client) are served.
	url := strings.Replace(e.srv.URL, "http", "ws", 1) + "/v1/rooms/r/sessions/" + s.ID + "/ws"
	for _, tc := range []struct {
		origin string
		ok     bool
	}{
		{"https://evil.example", false},
		{"http://" + strings.TrimPrefix(e.srv.URL, "http://") + ".evil.example", false},
		{"null", false},
		{e.srv.URL, true},
		{"", true},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		h := http.Header{}
		if tc.origin != "" {
			h.Set("Origin", tc.origin)
		}
		c, resp, err := websocket.Dial(ctx, url, &websocket.DialOptions{HTTPHeader: h})
		cancel()
		if tc.ok {
			if err != nil {
				t.Errorf("WebSocket with Origin %q: %v, want served", tc.origin, err)
				continue
			}
			c.CloseNow()
			continue
		}
		if err == nil {
			c.CloseNow()
			t.Errorf("WebSocket with Origin %q: served, want refused", tc.origin)
			continue
		}
		if resp == nil || resp.StatusCode != http.StatusForbidden || resp.Header.Get("Content-Type") != "application/json; charset=utf-8" {
			t.Errorf("WebSocket with Origin %q: answer %v, want 403 JSON", tc.origin, resp)
		}
	}
}

// failingStore is a memstore that fails or panics on demand, to drive the
// handler's error and panic logging.
type failingStore struct {
	*memstore.Store
	mu   sync.Mutex
	mode string // "", "fail" or "panic"
}

func (f *failingStore) set(mode string) {
	f.mu.Lock()
	f.mode = mode
	f.mu.Unlock()
}

func (f *failingStore) trouble(what string) error {
	f.mu.Lock()
	mode := f.mode
	f.mu.Unlock()
	switch mode {
	case "fail":
		return waitroom.Unavailable(errors.New("connection reset by peer"), what)
	case "panic":
		panic("store exploded in " + what)
	}
	return nil
}

func (f *failingStore) Session(ctx context.Context, room, id string, now time.Time) (waitroom.Session, error) {
	if err := f.trouble("session"); err != nil {
		return waitroom.Session{}, err
	}
	return f.Store.Session(ctx, room, id, now)
}

func (f *failingStore) Heartbeat(ctx context.Context, room, id string, now time.Time) (waitroom.Session, error) {
	if err := f.trouble("heartbeat"); err != nil {
		return waitroom.Session{}, err
	}
	return f.Store.Heartbeat(ctx, room, id, now)
}

func (f *failingStore) Leave(ctx context.Context, room, id string, reason waitroom.Reason, now time.Time) (waitroom.Session, error) {
	if err := f.trouble("leave"); err != nil {
		return waitroom.Session{}, err
	}
	return f.Store.Leave(ctx, room, id, reason, now)
}

// TestNoSecretsInLogs runs successful, failing and panicking requests
// through a handler logging JSON at debug level, and checks that neither the
// admin token nor any session id (nor the secret part of one) is written.
func TestNoSecretsInLogs(t *testing.T) {
	var buf bytes.Buffer
	var mu sync.Mutex
	logger := slog.New(slog.NewJSONHandler(&lockedWriter{w: &buf, mu: &mu}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	st := &failingStore{Store: memstore.New()}
	defer st.Close()
	clock := waitroom.NewManualClock(time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC))
	h := checked(t, httpapi.NewHandler(withParts(t, httpapi.Config{Store: st, AdminToken: adminToken, Clock: clock, Logger: logger, Admit: admission(t, st, clock, nil)})))
	admin := "Bearer " + adminToken
	do := func(method, path, authz, body string, want int) {
		t.Helper()
		rec := serveWith(h, method, path, authz, body)
		if rec.Code != want {
			t.Fatalf("%s %s: got %d, want %d; body %s", method, path, rec.Code, want, rec.Body.Bytes())
		}
	}
	do("PUT", "/v1/rooms/r", admin, `{"capacity":1}`, 201)
	var ids []string
	for i := range 4 {
		rec := serveWith(h, "POST", "/v1/rooms/r/sessions", admin, `{"key":"user-`+string(rune('a'+i))+`"}`)
		var s waitroom.Session
		if err := jsonUnmarshal(rec.Body.Bytes(), &s); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, s.ID)
	}
	for _, id := range ids[:2] {
		base := "/v1/rooms/r/sessions/" + id
		do("GET", base, "", "", 200)
		do("PUT", base, "", "", 405)
		do("GET", base+"/nope", "", "", 404)
		do("POST", base+"/heartbeat", "Bearer wrong", "", 200)
		do("DELETE", base, "Bearer wrong-"+adminToken, "", 401)
		do("GET", base+"/ws", "", "", 400)
		do("GET", "/v1/rooms/q/sessions/"+id, "", "", 404)
		st.set("fail")
		do("GET", base, "", "", 503)
		do("GET", base+"/events", "", "", 503)
		st.set("panic")
		do("POST", base+"/heartbeat", "", "", 500)
		do("DELETE", base, admin, "", 500)
		st.set("")
	}
	do("DELETE", "/v1/rooms/r/sessions/"+ids[2], admin, "", 200)
	do("GET", "/v1/rooms", "Bearer "+adminToken+"x", "", 401)

	mu.Lock()
	out := buf.String()
	mu.Unlock()
	if !strings.Contains(out, "panic serving request") || !strings.Contains(out, "store exploded") || !strings.Contains(out, "connection reset by peer") {
		t.Fatalf("the log lacks the panics and failures the test caused; it is:\n%s", out)
	}
	if !strings.Contains(out, ids[0][:10]+"…") {
		t.Fatalf("the log lacks the redacted session paths (%s…), so this test proves nothing; it is:\n%s", ids[0][:10], out)
	}
	if strings.Contains(out, adminToken) {
		t.Errorf("the admin token appears in the log:\n%s", out)
	}
	for _, id := range ids {
		// Characters 11 on hold only secret bits.
		if strings.Contains(out, id[11:]) {
			t.Errorf("session id %s (or its secret part) appears in the log:\n%s", id, out)
		}
	}
	t.Logf("%d bytes of log checked", len(out))
}

type lockedWriter struct {
	w  *bytes.Buffer
	mu *sync.Mutex
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }
