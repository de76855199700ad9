package gatekeeper

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom/gate"

	"github.com/coder/websocket"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/internal/admit"
	"github.com/waitroom/waitroom/internal/clientaddr"
)

// upstream is the protected app of the proxy tests.
func upstream(t *testing.T, release chan struct{}) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "app:"+r.Header.Get(gate.HeaderSession)+":"+r.Header.Get(gate.HeaderTicket))
	})
	mux.HandleFunc("/static/", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "static:"+r.Header.Get(gate.HeaderSession))
	})
	mux.HandleFunc("/stream", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		io.WriteString(w, "one\n")
		_ = http.NewResponseController(w).Flush()
		select {
		case <-release:
		case <-r.Context().Done():
			return
		case <-time.After(10 * time.Second):
		}
		io.WriteString(w, "two\n")
	})
	mux.HandleFunc("/ws", func(w http.ResponseWriter, r *http.Request) {
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer c.CloseNow()
		ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
		defer cancel()
		typ, msg, err := c.Read(ctx)
		if err != nil {
			return
		}
		_ = c.Write(ctx, typ, append([]byte("echo:"+r.Header.Get(gate.HeaderTicket)+":"), msg...))
		c.Close(websocket.StatusNormalClosure, "")
	})
	mux.HandleFunc("/logout", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set(gate.HeaderCommand, "revoke")
		io.WriteString(w, "bye")
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

func proxyEnv(t *testing.T) (*env, *httptest.Server, chan struct{}) {
	t.Helper()
	cfg := waitroom.DefaultConfig()
	cfg.Capacity = 1
	e := newEnv(t, envConfig{room: cfg, gateCfg: func(c *Config) { c.ResyncWindow = time.Nanosecond }})
	release := make(chan struct{})
	up := upstream(t, release)
	u, _ := url.Parse(up.URL)
	srv := e.serve(&ProxyConfig{Upstream: u, Room: "default", Bypass: []string{"/static/", "*.ico"}})
	return e, srv, release
}

func get(t *testing.T, rawURL string, mod func(*http.Request)) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, rawURL, nil)
	if mod != nil {
		mod(req)
	}
	resp, err := noRedirect.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", rawURL, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

func bearer(pass string) func(*http.Request) {
	return func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+pass) }
}

func TestProxyAdmitsPassAndTurnsAwayOthers(t *testing.T) {
	e, srv, _ := proxyEnv(t)
	s := e.join()
	pass := e.pass(s)

	resp, body := get(t, srv.URL+"/page?q=1", func(r *http.Request) {
		r.AddCookie(&http.Cookie{Name: gate.CookieName("default", false), Value: pass})
		r.Header.Set(gate.HeaderSession, "spoofed")
	})
	if resp.StatusCode != http.StatusOK || body != "app:"+s.ID+":1" {
		t.Errorf("with pass cookie: got %d %q, want 200 from the app with the session id", resp.StatusCode, body)
	}
	resp, body = get(t, srv.URL+"/page", bearer(pass))
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(body, "app:") {
		t.Errorf("with bearer pass: got %d %q, want 200 from the app", resp.StatusCode, body)
	}

	resp, _ = get(t, srv.URL+"/page?q=1", func(r *http.Request) { r.Header.Set("Accept", "text/html") })
	wantLoc := srv.URL + "/r/default?return_to=" + url.QueryEscape(srv.URL+"/page?q=1")
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != wantLoc {
		t.Errorf("browser without pass: got %d Location %q, want 303 %q", resp.StatusCode, resp.Header.Get("Location"), wantLoc)
	}

	resp, body = get(t, srv.URL+"/api/items", func(r *http.Request) { r.Header.Set("Accept", "application/json") })
	var got waitroom.Session
	if err := json.Unmarshal([]byte(body), &got); err != nil {
		t.Fatalf("JSON client body %q: %v", body, err)
	}
	// The browser above joined first (the gate joins, the page resumes).
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" || got.Status != waitroom.StatusWaiting || got.Position != 2 {
		t.Errorf("JSON client without pass: got %d Retry-After %q session %+v, want 503, Retry-After and a waiting session at position 2",
			resp.StatusCode, resp.Header.Get("Retry-After"), got)
	}

	resp, body = get(t, srv.URL+"/static/app.css", func(r *http.Request) { r.Header.Set(gate.HeaderSession, "spoofed") })
	if resp.StatusCode != http.StatusOK || body != "static:" {
		t.Errorf("bypass path: got %d %q, want 200 from the app without identity", resp.StatusCode, body)
	}
	resp, _ = get(t, srv.URL+"/favicon.ico", nil)
	if resp.StatusCode != http.StatusOK {
		t.Errorf("bypass suffix: got %d, want 200", resp.StatusCode)
	}
	resp, _ = get(t, srv.URL+"/static/../admin", func(r *http.Request) { r.URL.Path = "/static/../admin"; r.URL.RawPath = "/static/%2e%2e/admin" })
	if resp.StatusCode == http.StatusOK {
		t.Errorf("dot-dot out of a bypass prefix: got 200, want the gate")
	}

	// The waiting page and the API stay reachable on the same host.
	resp, _ = get(t, srv.URL+"/r/default", nil)
	if resp.StatusCode != http.StatusOK {
		t.Errorf("waiting page through the proxy mux: got %d, want 200", resp.StatusCode)
	}
}

func TestProxyStreamingAndWebSocket(t *testing.T) {
	e, srv, release := proxyEnv(t)
	pass := e.pass(e.join())

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/stream", nil)
	bearer(pass)(req)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	// The first chunk must arrive while the app still holds the second:
	// the proxy streams rather than buffering.
	line, err := br.ReadString('\n')
	if err != nil || line != "one\n" {
		t.Fatalf("first streamed chunk: got %q (err %v), want \"one\\n\" before the app finishes", line, err)
	}
	close(release)
	line, err = br.ReadString('\n')
	if err != nil || line != "two\n" {
		t.Errorf("second streamed chunk: got %q (err %v), want \"two\\n\"", line, err)
	}

	wsURL := "ws" + strings.TrimPrefix(srv.URL, "http") + "/ws"
	c, _, err := websocket.Dial(ctx, wsURL, &websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + pass}}})
	if err != nil {
		t.Fatalf("WebSocket through the proxy: %v", err)
	}
	defer c.CloseNow()
	if err := c.Write(ctx, websocket.MessageText, []byte("hi")); err != nil {
		t.Fatal(err)
	}
	_, msg, err := c.Read(ctx)
	if err != nil || string(msg) != "echo:1:hi" {
		t.Errorf("WebSocket echo: got %q (err %v), want \"echo:1:hi\"", msg, err)
	}
	if _, _, err := websocket.Dial(ctx, wsURL, nil); err == nil {
		t.Error("WebSocket without a pass: got connected, want refused")
	}
}

func TestProxyRevokeCommandAndRenewal(t *testing.T) {
	e, srv, _ := proxyEnv(t)
	clock := e.clock.(*waitroom.ManualClock)
	s := e.join()
	pass := e.pass(s)

	// Past half its life the pass is renewed on the way through.
	clock.Advance(3 * time.Minute)
	resp, _ := get(t, srv.URL+"/", bearer(pass))
	var renewed string
	for _, c := range resp.Cookies() {
		if c.Name == gate.CookieName("default", false) {
			renewed = c.Value
		}
	}
	if resp.StatusCode != http.StatusOK || renewed == "" || renewed == pass {
		t.Fatalf("past half life: got %d and cookie %q, want 200 with a renewed pass", resp.StatusCode, renewed)
	}

	resp, body := get(t, srv.URL+"/logout", bearer(renewed))
	if resp.StatusCode != http.StatusOK || body != "bye" {
		t.Fatalf("logout: got %d %q, want 200 bye", resp.StatusCode, body)
	}
	if v := resp.Header.Get(gate.HeaderCommand); v != "" {
		t.Errorf("Waitroom-Command reached the client: %q", v)
	}
	cleared := false
	for _, c := range resp.Cookies() {
		if c.Name == gate.CookieName("default", false) && c.MaxAge < 0 {
			cleared = true
		}
	}
	if !cleared {
		t.Errorf("logout: Set-Cookie %q, want the pass cookie cleared", resp.Header.Values("Set-Cookie"))
	}
	got, err := e.store.Sessions(context.Background(), "default", []string{s.ID})
	if err != nil || got[0].Status != waitroom.StatusLeft || got[0].EndReason != waitroom.ReasonRevoked {
		t.Errorf("session after revoke: got %+v (err %v), want left/revoked", got, err)
	}
	// Someone else takes the freed slot, so a newcomer would wait.
	e.join()
	for _, p := range []string{pass, renewed} {
		resp, _ = get(t, srv.URL+"/", bearer(p))
		if resp.StatusCode != http.StatusSeeOther {
			t.Errorf("revoked pass: got %d, want 303 to the waiting page", resp.StatusCode)
		}
	}
}

func TestMiddlewareRevokeCommand(t *testing.T) {
	e := newEnv(t, envConfig{})
	s := e.join()
	pass := e.pass(s)
	h := e.gate.Middleware("default")(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, ok := gate.ClaimsFrom(r.Context())
		if !ok || c.Session != s.ID {
			t.Errorf("ClaimsFrom: got %+v %v, want the session's claims", c, ok)
		}
		w.Header().Set(gate.HeaderCommand, "revoke")
		w.WriteHeader(http.StatusNoContent)
	}))
	r := httptest.NewRequest(http.MethodGet, "/", nil)
	r.Header.Set("Authorization", "Bearer "+pass)
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	if w.Code != http.StatusNoContent || w.Header().Get(gate.HeaderCommand) != "" {
		t.Errorf("middleware revoke: got %d with command header %q, want 204 without it", w.Code, w.Header().Get(gate.HeaderCommand))
	}
	if _, err := e.gate.Check(context.Background(), "default", pass, e.clock.Now()); err == nil {
		t.Error("pass after Waitroom-Command: revoke: got valid, want refused")
	}
}

func TestVerifierFromJWKS(t *testing.T) {
	e := newEnv(t, envConfig{})
	srv := e.serve(nil)
	s := e.join()
	pass := e.pass(s)
	v, err := gate.NewJWKSVerifier(context.Background(), srv.URL+JWKSPath, "", srv.Client())
	if err != nil {
		t.Fatalf("NewJWKSVerifier: %v", err)
	}
	// The public keys verify the pass; its session id stays sealed.
	if c, err := v.Verify(context.Background(), "default", pass, e.clock.Now()); err != nil || c.Ticket != s.Ticket || c.Session != "" {
		t.Errorf("Verify with JWKS: got %+v (session %q) %v, want ticket %d without the session id", c, c.Session, err, s.Ticket)
	}
	if _, err := v.Verify(context.Background(), "other", pass, e.clock.Now()); err == nil {
		t.Error("Verify for another room: got valid, want refused")
	}
	h := gate.NewVerifier(e.keys, "").Require("default", "/r/default")(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	r := httptest.NewRequest(http.MethodGet, "/", nil)
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	if w.Code != http.StatusSeeOther || w.Header().Get("Location") != "/r/default" {
		t.Errorf("Require without pass: got %d %q, want 303 /r/default", w.Code, w.Header().Get("Location"))
	}
}

func TestProxyLetsInAtOnceWhenThereIsRoom(t *testing.T) {
	_, srv, _ := proxyEnv(t)
	b := newBrowser(t)
	final, status, body := b.get(srv.URL + "/page")
	if status != http.StatusOK || final.Path != "/page" || !strings.HasPrefix(body, "app:") {
		t.Fatalf("first visitor of an empty room: ended at %d %s %q, want the app", status, final, body)
	}
	sid := b.cookie(srv.URL, admit.CookieName("default"))
	if body != "app:"+sid+":1" || b.cookie(srv.URL, gate.CookieName("default", false)) == "" {
		t.Errorf("first visitor: body %q, cookies sid %q; want the app to see the session and a pass cookie", body, sid)
	}
	// The room (capacity 1) is now full: the next one waits on the page.
	final, status, _ = newBrowser(t).get(srv.URL + "/page")
	if status != http.StatusOK || final.Path != "/r/default" {
		t.Errorf("second visitor: ended at %d %s, want the waiting page", status, final)
	}
}

func TestForwardAuthUntrustedPeerHasNoReturn(t *testing.T) {
	e := newEnv(t, envConfig{gateCfg: func(c *Config) { c.TrustedProxies = clientaddr.Trusted{} }})
	r := httptest.NewRequest(http.MethodGet, "http://shop.test/v1/gate/default/forward-auth", nil)
	r.Header.Set("Accept", "text/html")
	r.Header.Set("X-Forwarded-Host", "evil.example")
	r.Header.Set("X-Forwarded-Uri", "/x")
	w := httptest.NewRecorder()
	e.gate.Handler().ServeHTTP(w, r)
	if loc := w.Header().Get("Location"); loc != "http://shop.test/r/default" {
		t.Errorf("forward-auth from an untrusted peer: Location %q, want the waiting page without return_to", loc)
	}
}

// TestMiddlewareStockCommands checks that the app's Waitroom-Command: sold
// and release reach the room's stock for the visitor's session, and that
// the header never reaches the client.
func TestMiddlewareStockCommands(t *testing.T) {
	cfg := waitroom.DefaultConfig()
	cfg.Capacity = 5
	inv := int64(3)
	cfg.Inventory = &inv
	e := newEnv(t, envConfig{room: cfg})
	a, b := e.join(), e.join()
	for _, tc := range []struct {
		s                         waitroom.Session
		cmd                       string
		sold, reserved, remaining int64
	}{
		{a, "sold", 1, 1, 1},
		{b, " Release ", 1, 0, 2},
		{b, "release", 1, 0, 2}, // nothing left to release: refused, logged, changes nothing
	} {
		h := e.gate.Middleware("default")(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set(gate.HeaderCommand, tc.cmd)
			w.WriteHeader(http.StatusOK)
		}))
		r := httptest.NewRequest(http.MethodGet, "/buy", nil)
		r.Header.Set("Authorization", "Bearer "+e.pass(tc.s))
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != http.StatusOK || w.Header().Get(gate.HeaderCommand) != "" {
			t.Errorf("%q: got %d with command header %q, want 200 without it", tc.cmd, w.Code, w.Header().Get(gate.HeaderCommand))
		}
		room, err := e.store.Room(context.Background(), "default")
		if err != nil || room.Sold != tc.sold || room.Reserved != tc.reserved || room.Remaining == nil || *room.Remaining != tc.remaining {
			t.Errorf("after %q: sold %d reserved %d remaining %v (%v), want %d, %d, %d", tc.cmd, room.Sold, room.Reserved, room.Remaining, err, tc.sold, tc.reserved, tc.remaining)
		}
	}
}

// TestProxyRefusesTraceAndConnect: a TRACE, which an app may answer by
// echoing the request with its pass cookie, and a CONNECT never reach the
// protected app, with a pass or on a bypass path: 405 with Allow.
func TestProxyRefusesTraceAndConnect(t *testing.T) {
	e, srv, _ := proxyEnv(t)
	pass := e.pass(e.join())
	for _, m := range []string{http.MethodTrace, http.MethodConnect} {
		for _, path := range []string{"/page", "/static/app.css"} {
			req, _ := http.NewRequest(m, srv.URL+path, nil)
			req.AddCookie(&http.Cookie{Name: gate.CookieName("default", false), Value: pass})
			resp, err := noRedirect.Do(req)
			if err != nil {
				t.Fatalf("%s %s: %v", m, path, err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != gateMethods || strings.Contains(string(b), "app:") {
				t.Errorf("%s %s with a pass: %d Allow %q %.100q; want 405 with Allow %q, the app never asked",
					m, path, resp.StatusCode, resp.Header.Get("Allow"), b, gateMethods)
			}
		}
	}
	// The middleware refuses them too.
	h := e.gate.Middleware("default")(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "app:") }))
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodTrace, "/page", nil)
	req.AddCookie(&http.Cookie{Name: gate.CookieName("default", false), Value: pass})
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusMethodNotAllowed {
		t.Errorf("TRACE through the middleware: %d %q, want 405", rec.Code, rec.Body.String())
	}
}
