package gatekeeper

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/waitroom/waitroom/gate"
	"github.com/waitroom/waitroom/internal/admit"
	"github.com/waitroom/waitroom/internal/console"
)

// seenApp is a protected app that records the last request it was sent and
// answers with the Set-Cookie headers the test asks for.
type seenApp struct {
	mu        sync.Mutex
	header    http.Header
	setCookie []string
}

func (a *seenApp) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	a.mu.Lock()
	a.header = r.Header.Clone()
	set := a.setCookie
	a.mu.Unlock()
	for _, c := range set {
		w.Header().Add("Set-Cookie", c)
	}
	io.WriteString(w, "app")
}

func (a *seenApp) last() http.Header {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.header
}

// privateProxy is the reverse proxy in front of a seenApp, on real
// listeners both.
func privateProxy(t *testing.T) (*env, *seenApp, *httptest.Server) {
	t.Helper()
	e := newEnv(t, envConfig{})
	app := &seenApp{}
	up := httptest.NewServer(app)
	t.Cleanup(up.Close)
	u, _ := url.Parse(up.URL)
	return e, app, e.serve(&ProxyConfig{Upstream: u, Room: "default", Bypass: []string{"/static/"}})
}

// TestProxyStripsEveryIdentitySpelling: a client's forged identity headers
// never reach the app in any spelling a CGI-style stack reads as the real
// one (underscores for dashes, any case), nor any other Waitroom-… or
// X-Waitroom-… header; the app gets only the gate's own. On a bypass path,
// where the gate sets none, none arrive either.
func TestProxyStripsEveryIdentitySpelling(t *testing.T) {
	e, app, srv := privateProxy(t)
	s := e.join()
	pass := e.pass(s)
	forged := []string{"Waitroom_Session", "WAITROOM_SESSION", "waitroom_session", "WAITROOM-SESSION", "Waitroom-Session",
		"waitroom_room", "Waitroom_Ticket", "waitroom-ticket", "Waitroom_pass", "X-Waitroom-Session", "x_waitroom_session",
		"X_Waitroom-Room", "Waitroom-Command", "Waitroom-Whatever"}
	for _, path := range []string{"/page", "/static/app.css"} {
		req, _ := http.NewRequest(http.MethodGet, srv.URL+path, nil)
		for _, k := range forged {
			// Set in the map as is: the client writes the name unchanged.
			req.Header[k] = []string{"forged"}
		}
		req.Header["X-Waitroomish"] = []string{"kept"} // not the gate's namespace
		req.AddCookie(&http.Cookie{Name: gate.CookieName("default", false), Value: pass})
		resp, err := noRedirect.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s with a pass: %d, want 200 from the app", path, resp.StatusCode)
		}
		var ours []string
		for k, v := range app.last() {
			if strings.Contains(strings.ToLower(k), "waitroom") {
				ours = append(ours, k+"="+strings.Join(v, ","))
			}
		}
		sort.Strings(ours)
		want := "Waitroom-Room=default Waitroom-Session=" + s.ID + " Waitroom-Ticket=1 X-Waitroomish=kept"
		if path == "/static/app.css" {
			want = "X-Waitroomish=kept"
		}
		if got := strings.Join(ours, " "); got != want {
			t.Errorf("GET %s: the app got %q, want only %q", path, got, want)
		}
	}
}

// TestGateHeaderNames: which names are the gate's, for stripIdentity.
func TestGateHeaderNames(t *testing.T) {
	for name, want := range map[string]bool{
		"Waitroom-Session": true, "Waitroom_session": true, "WAITROOM_SESSION": true, "waitroom-ticket": true,
		"X-Waitroom-Room": true, "X_waitroom_room": true, "x-WAITROOM_x": true, "Waitroom-": true,
		"Waitroom": false, "Waitroomsession": false, "X-Waitroom": false, "Xwaitroom-Session": false,
		"Authorization": false, "Cookie": false, "X-Forwarded-For": false, "": false, "Wait": false,
	} {
		if got := gateHeader(name); got != want {
			t.Errorf("gateHeader(%q) = %v, want %v", name, got, want)
		}
	}
}

// TestProxyKeepsWaitroomCookiesFromTheApp: the console's sign-in and the
// waiting page's session ids the browser sends on the app's origin are
// removed before the request goes to the app (the pass stays: an app may
// check it itself), and the app cannot set, replace or clear any of
// waitroom's cookies in the visitor's browser.
func TestProxyKeepsWaitroomCookiesFromTheApp(t *testing.T) {
	e, app, srv := privateProxy(t)
	pass := e.pass(e.join())
	passCookie := gate.CookieName("default", false)
	app.setCookie = []string{
		console.CookieName + "=evil; Path=/",
		admit.CookieName("default") + "=evil; Path=/",
		admit.CookieName("other") + "=evil",
		passCookie + "=; Max-Age=0",
		gate.CookieName("default", true) + "=x; Secure; Path=/",
		"app=1; Path=/",
		"waitroom_other=2",
	}
	for _, path := range []string{"/page", "/static/app.css"} {
		req, _ := http.NewRequest(http.MethodGet, srv.URL+path, nil)
		// One Cookie line as a browser sends it, and a second as HTTP/2
		// clients may.
		req.Header.Add("Cookie", "app=1; "+console.CookieName+"=secret-console; "+passCookie+"="+pass+
			"; "+admit.CookieName("default")+"=sid1;"+admit.CookieName("other")+"=sid2; theme=dark")
		req.Header.Add("Cookie", console.CookieName+"=secret-console")
		resp, err := noRedirect.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s with a pass: %d, want 200 from the app", path, resp.StatusCode)
		}
		got := app.last().Values("Cookie")
		want := []string{"app=1; " + passCookie + "=" + pass + "; theme=dark"}
		if strings.Join(got, "|") != strings.Join(want, "|") {
			t.Errorf("GET %s: the app got Cookie %q, want %q", path, got, want)
		}
		set := resp.Header.Values("Set-Cookie")
		if strings.Join(set, "|") != "app=1; Path=/|waitroom_other=2" {
			t.Errorf("GET %s: the visitor got Set-Cookie %q, want only the app's own (app, waitroom_other)", path, set)
		}
	}
	// A request with only waitroom's private cookies reaches the app
	// without a Cookie header at all.
	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/static/x", nil)
	req.Header.Set("Cookie", console.CookieName+"=secret-console; "+admit.CookieName("default")+"=sid1")
	resp, err := noRedirect.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if c, ok := app.last()["Cookie"]; ok {
		t.Errorf("only private cookies: the app got Cookie %q, want none", c)
	}
}

// TestCookieNamesMatch: the names the proxy strips are the ones the
// console and the waiting page set.
func TestCookieNamesMatch(t *testing.T) {
	if consoleCookie != console.CookieName || sessionCookiePrefix+"r" != admit.CookieName("r") {
		t.Errorf("the proxy strips %q and %q…, but the console sets %q and the page %q",
			consoleCookie, sessionCookiePrefix, console.CookieName, admit.CookieName("r"))
	}
}
