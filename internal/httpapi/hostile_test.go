package httpapi_test

// Issue 17, part 4: hostile input tried from outside.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/internal/httpapi"
	"github.com/waitroom/waitroom/memstore"
)

const hostileToken = "hostile-admin-token"

// hostileEnv is an API server over a fresh memstore, with an auto room "r"
// of capacity 1 holding one active and one waiting session, a manual room
// "m" and a room "h" that holds places.
type hostileEnv struct {
	t               *testing.T
	store           *memstore.Store
	srv             *httptest.Server
	active, waiting string
}

func newHostileEnv(t *testing.T) *hostileEnv {
	t.Helper()
	store := memstore.New()
	clock := waitroom.NewManualClock(time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC))
	srv := httptest.NewServer(httpapi.NewHandler(withParts(t, httpapi.Config{Store: store, AdminToken: hostileToken, Clock: clock, Admit: admission(t, store, clock, nil)})))
	t.Cleanup(func() {
		srv.Close()
		_ = store.Close()
	})
	e := &hostileEnv{t: t, store: store, srv: srv}
	ctx := context.Background()
	cfg := waitroom.DefaultConfig()
	cfg.Capacity = 1
	manual := waitroom.DefaultConfig()
	manual.Mode = waitroom.ModeManual
	held := waitroom.DefaultConfig()
	held.HoldPlaces, held.ClaimWindow = true, waitroom.Duration(time.Minute)
	for name, c := range map[string]waitroom.RoomConfig{"r": cfg, "m": manual, "h": held} {
		if _, _, err := store.PutRoom(ctx, name, c, clock.Now()); err != nil {
			t.Fatalf("PutRoom %s: %v", name, err)
		}
	}
	a, err := store.Join(ctx, "r", "", clock.Now())
	if err != nil {
		t.Fatalf("Join: %v", err)
	}
	w, err := store.Join(ctx, "r", "", clock.Now())
	if err != nil {
		t.Fatalf("Join: %v", err)
	}
	e.active, e.waiting = a.ID, w.ID
	return e
}

// hostileAnswer is one answer, read whole.
type hostileAnswer struct {
	status int
	header http.Header
	body   []byte
}

// send sends method path with body, its length declared (Content-Length)
// or not (chunked), and the admin token when admin, on a connection of its
// own. It writes the body while it reads the answer, as a client that is
// answered before it finished sending must (net/http's client may report
// its failed write instead of the answer).
func (e *hostileEnv) send(method, path string, body []byte, chunked, admin bool) hostileAnswer {
	e.t.Helper()
	conn, err := net.Dial("tcp", e.srv.Listener.Addr().String())
	if err != nil {
		e.t.Fatalf("dial: %v", err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(30 * time.Second))
	var head strings.Builder
	fmt.Fprintf(&head, "%s %s HTTP/1.1\r\nHost: waitroom.test\r\nConnection: close\r\n", method, path)
	if admin {
		head.WriteString("Authorization: Bearer " + hostileToken + "\r\n")
	}
	switch {
	case body == nil:
	case chunked:
		head.WriteString("Transfer-Encoding: chunked\r\n")
	default:
		fmt.Fprintf(&head, "Content-Length: %d\r\n", len(body))
	}
	head.WriteString("\r\n")
	go func() {
		if _, err := io.WriteString(conn, head.String()); err != nil {
			return
		}
		if !chunked || body == nil {
			_, _ = conn.Write(body)
			return
		}
		for rest := body; len(rest) > 0; {
			n := min(len(rest), 64<<10)
			if _, err := fmt.Fprintf(conn, "%x\r\n%s\r\n", n, rest[:n]); err != nil {
				return
			}
			rest = rest[n:]
		}
		_, _ = io.WriteString(conn, "0\r\n\r\n")
	}()
	resp, err := http.ReadResponse(bufio.NewReader(conn), &http.Request{Method: method})
	if err != nil {
		e.t.Fatalf("%s %s: reading the answer: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil && resp.StatusCode != http.StatusOK { // an event stream's 200 does not end
		e.t.Fatalf("%s %s: reading the answer's body: %v", method, path, err)
	}
	return hostileAnswer{resp.StatusCode, resp.Header, b}
}

// errorCode returns the code of an answer in the documented error shape,
// or "" (and an explanation) when it is not in that shape.
func errorCode(a hostileAnswer) (waitroom.Code, string) {
	if ct := a.header.Get("Content-Type"); ct != "application/json; charset=utf-8" {
		return "", fmt.Sprintf("Content-Type %q", ct)
	}
	var v struct {
		Error struct {
			Code    waitroom.Code `json:"code"`
			Message string        `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(a.body, &v); err != nil || v.Error.Code == "" || v.Error.Message == "" {
		return "", fmt.Sprintf("body %.200q", a.body)
	}
	return v.Error.Code, ""
}

// TestJoinRefusesInvisibleKeys: a join with the admin token and a key (or
// a contact) holding a format or invisible character is refused like one
// with a control character (it answered 201).
func TestJoinRefusesInvisibleKeys(t *testing.T) {
	e := newHostileEnv(t)
	for _, tc := range []struct{ name, body, room string }{
		{"right-to-left override", `{"key":"a\u202eb"}`, "r"},
		{"zero width space", `{"key":"a\u200bb"}`, "r"},
		{"no-break space", `{"key":"a\u00a0b"}`, "r"},
		{"bell", `{"key":"\u0007"}`, "r"},
		{"byte order mark", `{"key":"\ufeffa"}`, "r"},
		{"line separator", `{"key":"a\u2028b"}`, "r"},
		{"Hangul filler", `{"key":"\u3164"}`, "r"},
		{"contact with a right-to-left override", `{"contact":"a\u202eb"}`, "h"},
		{"contact with a zero width joiner", `{"contact":"a\u200db"}`, "h"},
	} {
		ans := e.send("POST", "/v1/rooms/"+tc.room+"/sessions", []byte(tc.body), false, true)
		code, bad := errorCode(ans)
		want := waitroom.CodeInvalidKey
		if strings.Contains(tc.body, "contact") {
			want = waitroom.CodeInvalidRequest
		}
		if ans.status != http.StatusBadRequest || code != want {
			t.Errorf("%s: got %d %s%s, want 400 %s", tc.name, ans.status, code, bad, want)
		}
	}
	// Printable keys in any script still join.
	for _, key := range []string{"ключ ✓", "a b", "e\u0301", "👍🏽"} {
		body, _ := json.Marshal(map[string]string{"key": key})
		if ans := e.send("POST", "/v1/rooms/m/sessions", body, false, true); ans.status != http.StatusCreated {
			t.Errorf("key %q: got %d %s, want 201", key, ans.status, ans.body)
		}
	}
}

// TestEveryRouteRefusesBodiesOverTheLimit: a body over 1 MiB is refused
// with 413 body_too_large on every route, whether the handler reads bodies
// or not, with its length declared or chunked (heartbeat and leave
// answered 200), and before the handler runs: the leave does not happen.
func TestEveryRouteRefusesBodiesOverTheLimit(t *testing.T) {
	e := newHostileEnv(t)
	big := bytes.Repeat([]byte("x"), 2_000_000)
	w, a := e.waiting, e.active
	routes := []struct {
		method, path string
		admin        bool
	}{
		{"POST", "/v1/rooms/r/sessions", false},
		{"POST", "/v1/rooms/r/sessions", true},
		{"GET", "/v1/rooms/r/sessions/" + w, false},
		{"POST", "/v1/rooms/r/sessions/" + w + "/heartbeat", false},
		{"POST", "/v1/rooms/r/sessions/" + w + "/away", false},
		{"POST", "/v1/rooms/r/sessions/" + w + "/claim", false},
		{"DELETE", "/v1/rooms/r/sessions/" + w, false},
		{"DELETE", "/v1/rooms/r/sessions/" + a, true},
		{"GET", "/v1/rooms/r", false},
		{"GET", "/v1/rooms/r/draw", false},
		{"GET", "/v1/rooms/r/fairness", false},
		{"GET", "/v1/rooms/r/challenge", false},
		{"GET", "/v1/rooms/r/sessions/" + w + "/events", false},
		{"GET", "/v1/rooms/r/sessions/" + w + "/ws", false},
		{"PUT", "/v1/rooms/r", true},
		{"GET", "/v1/rooms", true},
		{"DELETE", "/v1/rooms/m", true},
		{"POST", "/v1/rooms/r/advance", true},
		{"POST", "/v1/rooms/r/inventory", true},
		{"GET", "/v1/rooms/r/waiting", true},
		{"GET", "/v1/rooms/r/history", true},
		{"POST", "/v1/rooms/r/queue-all", true},
		{"POST", "/v1/rooms/r/sessions/" + w + "/front", true},
		{"POST", "/v1/rooms/r/sessions/" + a + "/extend", true},
		{"GET", "/v1/rooms/r/find?q=1", true},
		{"POST", "/v1/rooms/r/invites", true},
		{"GET", "/v1/rooms/r/audit", true},
		{"GET", "/v1/stats", true},
		{"GET", "/v1/rooms/r/stats", true},
		{"GET", "/v1/rooms/r/admin-events", true},
		{"PUT", "/v1/rooms/r/webhooks/w", true},
		{"GET", "/v1/rooms/r/webhooks", true},
		{"GET", "/v1/rooms/r/webhooks/w", true},
		{"DELETE", "/v1/rooms/r/webhooks/w", true},
		{"PATCH", "/v1/rooms/r", true},
		{"POST", "/v1/rooms/r/pause", true},
		{"POST", "/v1/rooms/r/resume", true},
		{"GET", "/v1/rooms/r/dead-letters", true},
		{"POST", "/v1/rooms/r/dead-letters/replay", true},
		{"GET", "/healthz", false},
		{"GET", "/readyz", false},
		{"GET", "/metrics", true},
		// No such route, or not that method: still no body over the limit.
		{"POST", "/v1/nope", false},
		{"POST", "/v1/rooms/r", true},
	}
	for _, rt := range routes {
		for _, chunked := range []bool{false, true} {
			ans := e.send(rt.method, rt.path, big, chunked, rt.admin)
			code, bad := errorCode(ans)
			if ans.status != http.StatusRequestEntityTooLarge || code != waitroom.CodeBodyTooLarge {
				t.Errorf("%s %s (admin %v, chunked %v) with a body of %d bytes: got %d %s%s, want 413 %s",
					rt.method, rt.path, rt.admin, chunked, len(big), ans.status, code, bad, waitroom.CodeBodyTooLarge)
			}
		}
	}
	// Nothing the refused requests asked for happened.
	ss, err := e.store.Sessions(context.Background(), "r", []string{w, a})
	if err != nil || len(ss) != 2 || ss[0].Status != waitroom.StatusWaiting || ss[1].Status != waitroom.StatusActive {
		t.Errorf("after the refused requests: sessions %+v (%v), want still waiting and active", ss, err)
	}
	if _, err := e.store.Room(context.Background(), "m"); err != nil {
		t.Errorf("room m after the refused delete: %v, want it there", err)
	}
}

// TestAwayTakesAnyBodyWithinTheLimit: /away (navigator.sendBeacon) answers
// 204 with no body, an empty one, any text or a body of exactly 1 MiB,
// declared or chunked.
func TestAwayTakesAnyBodyWithinTheLimit(t *testing.T) {
	e := newHostileEnv(t)
	path := "/v1/rooms/r/sessions/" + e.waiting + "/away"
	for _, tc := range []struct {
		name string
		body []byte
	}{
		{"none", nil},
		{"empty", []byte{}},
		{"text", []byte("bye")},
		{"not JSON", []byte("\x00\xff{")},
		{"exactly 1 MiB", bytes.Repeat([]byte("x"), 1<<20)},
	} {
		for _, chunked := range []bool{false, true} {
			if ans := e.send("POST", path, tc.body, chunked, false); ans.status != http.StatusNoContent {
				t.Errorf("away with a body %s (chunked %v): got %d %.200s, want 204", tc.name, chunked, ans.status, ans.body)
			}
		}
	}
	// A body just over the limit is not.
	if ans := e.send("POST", path, bytes.Repeat([]byte("x"), 1<<20+1), true, false); ans.status != http.StatusRequestEntityTooLarge {
		t.Errorf("away with a chunked body of 1 MiB + 1: got %d, want 413", ans.status)
	}
	// A join with a body of exactly 1 MiB is read (and refused for what it says).
	body := append(append([]byte(`{"key":"`), bytes.Repeat([]byte("k"), 1<<20-10)...), '"', '}')
	for _, chunked := range []bool{false, true} {
		if ans := e.send("POST", "/v1/rooms/r/sessions", body, chunked, true); ans.status != http.StatusBadRequest {
			t.Errorf("join with a body of %d bytes (chunked %v): got %d, want 400 invalid_key", len(body), chunked, ans.status)
		}
	}
}
