package web_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/internal/admit"
	"github.com/waitroom/waitroom/internal/limit"
	"github.com/waitroom/waitroom/internal/web"
	"github.com/waitroom/waitroom/memstore"
)

var refreshRE = regexp.MustCompile(`<noscript><meta http-equiv="refresh" content="(\d+)"></noscript>`)

func TestPageWorksWithoutJavaScript(t *testing.T) {
	s := newSite(t, siteOptions{})
	s.room("shop", config(1, "/target/"))
	first, second, third := s.visitor(), s.visitor(), s.visitor()

	r := s.get(first, "/r/shop")
	if r.status != http.StatusSeeOther || r.header.Get("Location") != "/target/" {
		t.Fatalf("first visitor: got %d Location %q, want 303 to /target/", r.status, r.header.Get("Location"))
	}
	if got := r.header.Get("Cache-Control"); got != "no-store" {
		t.Errorf("redirect to the target: Cache-Control %q, want no-store", got)
	}
	for i, c := range []*http.Client{second, third} {
		want := strconv.Itoa(i + 1)
		r := s.get(c, "/r/shop")
		if r.status != http.StatusOK {
			t.Fatalf("visitor %d: status %d, want 200; body:\n%s", i+2, r.status, r.body)
		}
		if got := between(r.body, `data-waitroom="position">`, "<"); got != want {
			t.Errorf("visitor %d: server-rendered position %q, want %q", i+2, got, want)
		}
		m := refreshRE.FindStringSubmatch(r.body)
		if m == nil {
			t.Fatalf("visitor %d: no <noscript><meta http-equiv=refresh> in the page:\n%s", i+2, r.body)
		}
		if n, _ := strconv.Atoi(m[1]); n < 5 || n > 10 {
			t.Errorf("visitor %d: refresh every %ds, want 5 to 10", i+2, n)
		}
		for _, part := range []string{"You’re in line", `aria-live="polite"`, `name="viewport"`, "Your place in line", "Waiting in total"} {
			if !strings.Contains(r.body, part) {
				t.Errorf("visitor %d: page lacks %q", i+2, part)
			}
		}
	}

	// A reload (what the meta refresh does) keeps the same session and place.
	id := s.cookie(second, admit.CookieName("shop"))
	r = s.get(second, "/r/shop")
	if got := between(r.body, `data-waitroom="position">`, "<"); got != "1" {
		t.Errorf("second visitor after a reload: position %q, want 1", got)
	}
	if r.header.Get("Set-Cookie") != "" {
		t.Errorf("a reload set a cookie again: %q", r.header.Get("Set-Cookie"))
	}
	if got := s.cookie(second, admit.CookieName("shop")); got != id {
		t.Errorf("the session cookie changed on a reload: %q, then %q", id, got)
	}
	if _, reads := s.store.count(id); reads < 1 {
		t.Errorf("a reload did not read the session (no presence)")
	}

	// The first leaves; the second's next load redirects to the target.
	s.leave("shop", s.cookie(first, admit.CookieName("shop")))
	r = s.get(second, "/r/shop")
	if r.status != http.StatusSeeOther || r.header.Get("Location") != "/target/" {
		t.Errorf("second visitor after the first left: got %d Location %q, want 303 to /target/", r.status, r.header.Get("Location"))
	}
	r = s.get(third, "/r/shop")
	if got := between(r.body, `data-waitroom="position">`, "<"); got != "1" {
		t.Errorf("third visitor after the first left: position %q, want 1", got)
	}
}

func TestPageLanguageFromAcceptLanguage(t *testing.T) {
	s := newSite(t, siteOptions{})
	s.room("shop", config(0, "")) // nobody is admitted: everyone waits
	for _, tc := range []struct {
		accept, lang, heading string
	}{
		{"de", "de", "Sie sind in der Warteschlange"},
		{"de-CH, en;q=0.5", "de", "Sie sind in der Warteschlange"},
		{"fr-CA;q=0.8, de;q=0.7", "fr", "Vous êtes dans la file"},
		{"es, it;q=0.9", "en", "You’re in line"},
		{"de;q=0, fr;q=0.1", "fr", "Vous êtes dans la file"},
		{"", "en", "You’re in line"},
	} {
		r := s.get(s.visitor(), "/r/shop", "Accept-Language", tc.accept)
		if !strings.Contains(r.body, `<html lang="`+tc.lang+`">`) {
			t.Errorf("Accept-Language %q: page is not lang=%q", tc.accept, tc.lang)
		}
		if got := r.header.Get("Content-Language"); got != tc.lang {
			t.Errorf("Accept-Language %q: Content-Language %q, want %q", tc.accept, got, tc.lang)
		}
		if !strings.Contains(r.body, tc.heading) {
			t.Errorf("Accept-Language %q: page lacks heading %q", tc.accept, tc.heading)
		}
	}
	// German numbers and sentences, rendered on the server.
	for range 1100 {
		if _, err := s.store.Join(context.Background(), "shop", "", time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	r := s.get(s.visitor(), "/r/shop", "Accept-Language", "de-DE,de;q=0.9")
	if got := between(r.body, `data-waitroom="position">`, "<"); got != "1.107" {
		t.Errorf("German position %q, want 1.107", got)
	}
	if !strings.Contains(r.body, "Sie sind auf Platz 1.107. 1.106 Personen sind vor Ihnen.") {
		t.Errorf("German announcement missing; got %q", between(r.body, `data-waitroom="announce">`, "<"))
	}
}

func TestReturnToOnlyToAllowedOrigins(t *testing.T) {
	s := newSite(t, siteOptions{})
	cfg := config(100, "/target/")
	cfg.ReturnOrigins = []string{"https://shop.example", "http://localhost:3000"}
	s.room("shop", cfg)
	for _, tc := range []struct {
		returnTo, want string
	}{
		{"https://shop.example/cart?item=7", "https://shop.example/cart?item=7"},
		{"HTTPS://Shop.Example/basket", "https://Shop.Example/basket"},
		{"http://localhost:3000/", "http://localhost:3000/"},
		{"https://evil.example/", "/target/"},
		{"https://shop.example.evil.example/", "/target/"},
		{"https://shop.example@evil.example/", "/target/"},
		{`https://shop.example\@evil.example/`, "/target/"},
		{"//evil.example/", "/target/"},
		{"/elsewhere", "/target/"},
		{"javascript:alert(1)", "/target/"},
		{"http://shop.example/", "/target/"},       // other scheme, other origin
		{"https://shop.example:8443/", "/target/"}, // other port, other origin
		{"https://shop.example/\r\nSet-Cookie: x=1", "/target/"},
	} {
		r := s.get(s.visitor(), "/r/shop?return_to="+url.QueryEscape(tc.returnTo))
		if r.status != http.StatusSeeOther {
			t.Errorf("return_to %q: status %d, want 303", tc.returnTo, r.status)
			continue
		}
		if got := r.header.Get("Location"); got != tc.want {
			t.Errorf("return_to %q: Location %q, want %q", tc.returnTo, got, tc.want)
		}
	}

	// A room without return_origins ignores return_to altogether.
	s.room("plain", config(100, "/target/"))
	r := s.get(s.visitor(), "/r/plain?return_to="+url.QueryEscape("https://shop.example/"))
	if got := r.header.Get("Location"); got != "/target/" {
		t.Errorf("room without return_origins: Location %q, want /target/", got)
	}

	// A waiting page carries the allowed destination for its script.
	s.room("full", func() waitroom.RoomConfig { c := config(0, "/target/"); c.ReturnOrigins = cfg.ReturnOrigins; return c }())
	r = s.get(s.visitor(), "/r/full?return_to="+url.QueryEscape("https://shop.example/x"))
	if !strings.Contains(r.body, `data-target="https://shop.example/x"`) {
		t.Errorf("waiting page does not carry the allowed return_to as its target")
	}
	r = s.get(s.visitor(), "/r/full?return_to="+url.QueryEscape("https://evil.example/x"))
	if strings.Contains(r.body, "evil.example") || !strings.Contains(r.body, `data-target="/target/"`) {
		t.Errorf("waiting page carries a refused return_to, or not the room's target")
	}
}

func TestAdmittedWithoutTargetSaysYoureIn(t *testing.T) {
	s := newSite(t, siteOptions{})
	s.room("plain", config(5, ""))
	r := s.get(s.visitor(), "/r/plain")
	if r.status != http.StatusOK || !strings.Contains(r.body, "You’re in") {
		t.Fatalf("admitted without a target: status %d, want 200 with \"You're in\"; body:\n%s", r.status, r.body)
	}
	if refreshRE.MatchString(r.body) {
		t.Errorf("an admitted page reloads itself; it should not")
	}
}

func TestSessionCookieFlags(t *testing.T) {
	for _, tc := range []struct {
		name       string
		opt        siteOptions
		headers    []string
		wantSecure bool
	}{
		{"plain http", siteOptions{}, nil, false},
		{"https proxy", siteOptions{}, []string{"X-Forwarded-Proto", "https"}, true},
		{"Config.Secure", siteOptions{web: web.Config{Secure: true}}, nil, true},
		{"TLS", siteOptions{tls: true}, nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSite(t, tc.opt)
			s.room("shop", config(0, ""))
			r := s.get(s.visitor(), "/r/shop", tc.headers...)
			cookies := (&http.Response{Header: r.header}).Cookies()
			if len(cookies) != 1 {
				t.Fatalf("got %d cookies (%q), want 1", len(cookies), r.header.Values("Set-Cookie"))
			}
			c := cookies[0]
			if c.Name != "waitroom-sid-shop" || !c.HttpOnly || c.SameSite != http.SameSiteLaxMode || c.Path != "/" || c.Secure != tc.wantSecure {
				t.Errorf("cookie %q: got name %s HttpOnly=%v SameSite=%v Path=%q Secure=%v; want waitroom-sid-shop HttpOnly SameSite=Lax Path=/ Secure=%v",
					r.header.Get("Set-Cookie"), c.Name, c.HttpOnly, c.SameSite, c.Path, c.Secure, tc.wantSecure)
			}
			if _, err := waitroom.ParseSessionID(c.Value); err != nil {
				t.Errorf("cookie value %q is not a session id: %v", c.Value, err)
			}
		})
	}
}

func TestEndedOrForgedCookieJoinsAnew(t *testing.T) {
	s := newSite(t, siteOptions{})
	s.room("shop", config(0, ""))
	v := s.visitor()
	s.get(v, "/r/shop")
	old := s.cookie(v, admit.CookieName("shop"))
	s.leave("shop", old)
	r := s.get(v, "/r/shop")
	next := s.cookie(v, admit.CookieName("shop"))
	if next == "" || next == old {
		t.Fatalf("after leaving, the page kept session %q (now %q), want a new one", old, next)
	}
	if got := between(r.body, `data-waitroom="position">`, "<"); got != "1" {
		t.Errorf("rejoined position %q, want 1", got)
	}
	for _, forged := range []string{"garbage", "AAAAAAAAAAkAAAAAAAAAAAAAAAAAAAAA"} {
		r := s.get(s.visitor(), "/r/shop", "Cookie", "waitroom-sid-shop="+forged)
		if r.status != http.StatusOK || !strings.Contains(r.header.Get("Set-Cookie"), "waitroom-sid-shop=") {
			t.Errorf("cookie %q: status %d Set-Cookie %q, want 200 and a new session", forged, r.status, r.header.Get("Set-Cookie"))
		}
	}
}

func TestSecurityHeadersAndNoInlineCode(t *testing.T) {
	s := newSite(t, siteOptions{})
	s.room("shop", config(0, ""))
	r := s.get(s.visitor(), "/r/shop")
	csp := r.header.Get("Content-Security-Policy")
	for _, want := range []string{"default-src 'self'", "frame-ancestors 'none'", "object-src 'none'", "base-uri 'none'"} {
		if !strings.Contains(csp, want) {
			t.Errorf("CSP %q lacks %q", csp, want)
		}
	}
	if strings.Contains(csp, "unsafe-inline") || strings.Contains(csp, "unsafe-eval") {
		t.Errorf("CSP %q allows inline code", csp)
	}
	for name, want := range map[string]string{
		"X-Content-Type-Options": "nosniff",
		"Referrer-Policy":        "no-referrer",
		"X-Frame-Options":        "DENY",
		"Cache-Control":          "no-store",
		"Content-Type":           "text/html; charset=utf-8",
	} {
		if got := r.header.Get(name); got != want {
			t.Errorf("%s: %q, want %q", name, got, want)
		}
	}
	if regexp.MustCompile(`<script(\s[^>]*)?>\s*[^<\s]`).MatchString(r.body) {
		t.Errorf("the page has an inline script")
	}
	if regexp.MustCompile(`\sstyle=|<style`).MatchString(r.body) {
		t.Errorf("the page has inline styles")
	}
	if strings.Contains(r.body, "http://") || strings.Contains(r.body, "https://") {
		t.Errorf("the page refers to another origin (CDN, fonts?)")
	}
}

func TestErrorPages(t *testing.T) {
	s := newSite(t, siteOptions{})
	for _, tc := range []struct {
		path, accept string
		status       int
		want         string
	}{
		{"/r/nosuchroom", "", http.StatusNotFound, "There is no waiting room called “nosuchroom”"},
		{"/r/nosuchroom", "fr", http.StatusNotFound, "Salle d’attente introuvable"},
		{"/r/%3Cscript%3Ealert(1)%3C%2Fscript%3E", "", http.StatusBadRequest, "“&lt;script&gt;alert(1)&lt;/script&gt;” cannot be the name"},
		{"/r/Shop", "de", http.StatusBadRequest, "Dieser Link stimmt nicht"},
		{"/r/shop/extra", "", http.StatusNotFound, "Waiting room not found"},
		{"/waitroom/nothing.js", "", http.StatusNotFound, "Waiting room not found"},
	} {
		r := s.get(s.visitor(), tc.path, "Accept-Language", tc.accept)
		if r.status != tc.status {
			t.Errorf("GET %s: status %d, want %d", tc.path, r.status, tc.status)
		}
		if !strings.HasPrefix(r.header.Get("Content-Type"), "text/html") || !strings.Contains(r.body, tc.want) {
			t.Errorf("GET %s: %s page lacks %q:\n%s", tc.path, r.header.Get("Content-Type"), tc.want, r.body)
		}
		if strings.Contains(r.body, "<script>") {
			t.Errorf("GET %s: the page reflects a script tag", tc.path)
		}
		if r.header.Get("Content-Security-Policy") == "" {
			t.Errorf("GET %s: no Content-Security-Policy", tc.path)
		}
	}
	if r := s.do(s.visitor(), http.MethodDelete, "/r/shop"); r.status != http.StatusMethodNotAllowed {
		t.Errorf("DELETE /r/shop: status %d, want 405", r.status)
	}
}

func TestHeadDoesNotJoin(t *testing.T) {
	s := newSite(t, siteOptions{})
	s.room("shop", config(0, ""))
	r := s.do(s.visitor(), http.MethodHead, "/r/shop")
	if r.status != http.StatusOK || r.header.Get("Set-Cookie") != "" {
		t.Errorf("HEAD: status %d Set-Cookie %q, want 200 and no cookie", r.status, r.header.Get("Set-Cookie"))
	}
	if room, _ := s.store.Room(context.Background(), "shop"); room.LastTicket != 0 {
		t.Errorf("HEAD joined the room: last ticket %d, want 0", room.LastTicket)
	}
}

func TestServedSessionAndJoinAgain(t *testing.T) {
	s := newSite(t, siteOptions{})
	cfg := config(0, "")
	cfg.Mode = waitroom.ModeManual
	s.room("desk", cfg)
	v := s.visitor()
	s.get(v, "/r/desk")
	id := s.cookie(v, admit.CookieName("desk"))
	if _, err := s.store.Advance(context.Background(), "desk", 1, time.Now()); err != nil {
		t.Fatal(err)
	}
	r := s.get(v, "/r/desk")
	if !strings.Contains(r.body, "It’s your turn") || !strings.Contains(r.body, `<form method="post" action="/r/desk">`) {
		t.Fatalf("served session: page lacks \"It’s your turn\" and the join-again form:\n%s", r.body)
	}
	if s.cookie(v, admit.CookieName("desk")) != id {
		t.Errorf("showing a served session replaced its cookie")
	}
	r = s.do(v, http.MethodPost, "/r/desk")
	if r.status != http.StatusSeeOther || r.header.Get("Location") != "/r/desk" {
		t.Errorf("POST /r/desk: %d Location %q, want 303 to /r/desk", r.status, r.header.Get("Location"))
	}
	if next := s.cookie(v, admit.CookieName("desk")); next == id || next == "" {
		t.Errorf("join again kept session %q, want a new one", id)
	}
	r = s.get(v, "/r/desk")
	if got := between(r.body, `data-waitroom="position">`, "<"); got != "1" {
		t.Errorf("after joining again: position %q, want 1", got)
	}
}

func TestClientScriptIsServedWithCaching(t *testing.T) {
	s := newSite(t, siteOptions{})
	c := s.visitor()
	r := s.get(c, "/waitroom.js")
	if r.status != http.StatusOK || r.header.Get("Content-Type") != "text/javascript; charset=utf-8" {
		t.Fatalf("GET /waitroom.js: %d %q, want 200 text/javascript; charset=utf-8", r.status, r.header.Get("Content-Type"))
	}
	if !strings.Contains(r.body, "Waitroom") || !strings.Contains(r.body, "EventSource") {
		t.Errorf("/waitroom.js does not look like the client")
	}
	etag := r.header.Get("ETag")
	if etag == "" || !strings.Contains(r.header.Get("Cache-Control"), "max-age=") {
		t.Errorf("/waitroom.js: ETag %q Cache-Control %q, want both", etag, r.header.Get("Cache-Control"))
	}
	if r := s.get(c, "/waitroom.js", "If-None-Match", etag); r.status != http.StatusNotModified {
		t.Errorf("If-None-Match the ETag: status %d, want 304", r.status)
	}
	v := strings.Trim(etag, `"`)
	if r := s.get(c, "/waitroom.js?v="+v); !strings.Contains(r.header.Get("Cache-Control"), "immutable") {
		t.Errorf("versioned URL: Cache-Control %q, want immutable", r.header.Get("Cache-Control"))
	}
	// The page links its assets by version.
	s.room("shop", config(0, ""))
	page := s.get(c, "/r/shop")
	for _, a := range []string{"/waitroom.js?v=", "/waitroom/page.js?v=", "/waitroom/page.css?v="} {
		if !strings.Contains(page.body, a) {
			t.Errorf("page does not link %s", a)
		}
	}
	css := s.get(c, "/waitroom/page.css")
	if css.header.Get("Content-Type") != "text/css; charset=utf-8" || !strings.Contains(css.body, "prefers-reduced-motion") {
		t.Errorf("page.css: %q, or it ignores prefers-reduced-motion", css.header.Get("Content-Type"))
	}
}

func TestOperatorTemplates(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("_brand.html", `{{define "brand"}}<b class="brand">ACME</b>{{end}}`)
	write("page.html", `<!doctype html><html lang="{{.Lang}}"><head>{{template "waitroom-head" .}}<style nonce="{{.Nonce}}">b{color:red}</style></head>`+
		`<body><main id="waitroom" {{.Data}}>{{template "brand"}} {{.T.Heading}}: <span data-waitroom="position">{{.Position}}</span> room={{.Room}} status={{.Status}}</main>`+
		`<script nonce="{{.Nonce}}">var seen = 1;</script></body></html>`)
	write("vip.html", `<!doctype html><p>VIP line for {{.Room}}, you are {{.Position}} of {{.Waiting}}</p>`)
	s := newSite(t, siteOptions{web: web.Config{Templates: dir}})
	s.room("shop", config(0, ""))
	s.room("vip", config(0, ""))

	r := s.get(s.visitor(), "/r/shop", "Accept-Language", "de")
	for _, want := range []string{`<b class="brand">ACME</b> Sie sind in der Warteschlange: <span data-waitroom="position">1</span> room=shop status=waiting`, `data-room="shop"`} {
		if !strings.Contains(r.body, want) {
			t.Errorf("page.html: body lacks %q:\n%s", want, r.body)
		}
	}
	n := between(r.body, `<script nonce="`, `"`)
	if n == "" || !strings.Contains(r.header.Get("Content-Security-Policy"), "'nonce-"+n+"'") {
		t.Errorf("the inline script's nonce %q is not in the CSP %q", n, r.header.Get("Content-Security-Policy"))
	}
	r = s.get(s.visitor(), "/r/vip")
	if !strings.Contains(r.body, "VIP line for vip, you are 1 of 1") {
		t.Errorf("vip.html not used for room vip:\n%s", r.body)
	}

	for _, tc := range []struct {
		file, text, want string
	}{
		{"page.html", `{{if}}`, "page.html:1"},
		{"page.html", `<p>{{.Nope}}</p>`, "does not run on a sample"},
		{"Shop.html", `<p></p>`, "the name must be"},
		{"_part.html", `{{define "x"}}{{end`, "_part.html"},
	} {
		bad := t.TempDir()
		if err := os.WriteFile(filepath.Join(bad, tc.file), []byte(tc.text), 0o644); err != nil {
			t.Fatal(err)
		}
		if tc.file == "_part.html" {
			os.WriteFile(filepath.Join(bad, "page.html"), []byte(`<p></p>`), 0o644)
		}
		_, err := web.New(web.Config{Store: s.store, Rooms: newRooms(t, s.store), Templates: bad, Admit: admits(s.store)})
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), tc.file) {
			t.Errorf("template %s %q: error %v, want one naming the file and %q", tc.file, tc.text, err, tc.want)
		}
	}
	if _, err := web.New(web.Config{Store: s.store, Rooms: newRooms(t, s.store), Templates: filepath.Join(dir, "missing"), Admit: admits(s.store)}); err == nil {
		t.Errorf("a missing templates folder is not an error")
	}
	if _, err := web.New(web.Config{Store: s.store, Rooms: newRooms(t, s.store)}); err == nil {
		t.Errorf("a Config without an admission is not an error")
	}
}

func TestDemoApp(t *testing.T) {
	s := newSite(t, siteOptions{web: web.Config{Demo: true}})
	s.room(web.DemoRoom, config(1, web.DemoAppPath))
	v, other := s.visitor(), s.visitor()
	if r := s.get(v, web.DemoAppPath); r.status != http.StatusSeeOther || r.header.Get("Location") != "/r/demo-room" {
		t.Errorf("app without a session: %d Location %q, want 303 to /r/demo-room", r.status, r.header.Get("Location"))
	}
	if r := s.get(v, "/r/demo-room"); r.header.Get("Location") != web.DemoAppPath {
		t.Fatalf("first visitor not sent to the app: %d Location %q", r.status, r.header.Get("Location"))
	}
	r := s.get(v, web.DemoAppPath)
	if r.status != http.StatusOK || !strings.Contains(r.body, "You are in") || !strings.Contains(r.body, `data-demo="leave"`) {
		t.Errorf("app with an active session: %d, want 200 with \"You are in\" and a Leave button:\n%s", r.status, r.body)
	}
	s.get(other, "/r/demo-room")
	if r := s.get(other, web.DemoAppPath); r.status != http.StatusSeeOther {
		t.Errorf("app for a waiting visitor: %d, want 303 back to the line", r.status)
	}
	if r := s.get(v, "/demo/"); r.status != http.StatusOK || !strings.Contains(r.body, `data-mode="client"`) {
		t.Errorf("GET /demo/: %d, want the one-person-per-tab page", r.status)
	}
	// Without Demo the paths are not served.
	plain := newSite(t, siteOptions{})
	if r := plain.get(plain.visitor(), web.DemoAppPath); r.status != http.StatusNotFound {
		t.Errorf("demo off: GET %s status %d, want 404", web.DemoAppPath, r.status)
	}
}

// downStore is a store whose backend is unreachable or broken.
type downStore struct {
	waitroom.Store
	err error
}

func (s downStore) Room(context.Context, string) (waitroom.Room, error) {
	return waitroom.Room{}, s.err
}

// Subscribe delivers no events: nothing changes in a store that is down.
func (s downStore) Subscribe(func(waitroom.Event)) func() { return func() {} }

func TestStoreFailurePages(t *testing.T) {
	for _, tc := range []struct {
		name   string
		err    error
		status int
		want   string
	}{
		{"unavailable", waitroom.Errorf(waitroom.CodeUnavailable, "redis is down at 10.0.0.7"), http.StatusServiceUnavailable, "The line is paused"},
		{"internal", errors.New("disk on fire at /var/lib/secret"), http.StatusInternalServerError, "Something went wrong"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := downStore{err: tc.err}
			h := checked(t, web.NewHandler(web.Config{Store: st, Rooms: newRooms(t, st), Admit: admits(st)}))
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/r/shop", nil))
			body := rec.Body.String()
			if rec.Code != tc.status || !strings.Contains(body, tc.want) {
				t.Errorf("got %d, want %d with %q:\n%s", rec.Code, tc.status, tc.want, body)
			}
			if strings.Contains(body, "10.0.0.7") || strings.Contains(body, "secret") {
				t.Errorf("the page shows the internal error")
			}
			if tc.status == http.StatusServiceUnavailable {
				if rec.Header().Get("Retry-After") == "" || !strings.Contains(body, `http-equiv="refresh"`) {
					t.Errorf("503 without Retry-After or a reload")
				}
			}
		})
	}
	long := strings.Repeat("x", 500) + "Y"
	h := checked(t, web.NewHandler(web.Config{Store: downStore{}, Rooms: newRooms(t, downStore{}), Admit: admits(downStore{})}))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/r/"+long, nil))
	if rec.Code != http.StatusBadRequest || strings.Contains(rec.Body.String(), "Y") && strings.Contains(rec.Body.String(), long) {
		t.Errorf("a 501-character room name: %d, want 400 without the whole name shown back", rec.Code)
	}
}

// flakyStore is a real store that a test can make unreachable: the calls
// a page makes fail while down is set.
type flakyStore struct {
	waitroom.Store
	down *atomic.Bool
}

func (s flakyStore) fail() error {
	if s.down.Load() {
		return waitroom.Errorf(waitroom.CodeUnavailable, "redis is down")
	}
	return nil
}

func (s flakyStore) Room(ctx context.Context, name string) (waitroom.Room, error) {
	if err := s.fail(); err != nil {
		return waitroom.Room{}, err
	}
	return s.Store.Room(ctx, name)
}

func (s flakyStore) Session(ctx context.Context, room, id string, now time.Time) (waitroom.Session, error) {
	if err := s.fail(); err != nil {
		return waitroom.Session{}, err
	}
	return s.Store.Session(ctx, room, id, now)
}

func (s flakyStore) JoinWith(ctx context.Context, room string, req waitroom.JoinRequest, now time.Time) (waitroom.Session, error) {
	if err := s.fail(); err != nil {
		return waitroom.Session{}, err
	}
	return s.Store.JoinWith(ctx, room, req, now)
}

func TestStoreDownFailsOpenOrClosed(t *testing.T) {
	ctx := context.Background()
	mem := memstore.New()
	cfg := waitroom.DefaultConfig()
	cfg.Capacity = 0 // nobody gets in while the store works
	cfg.TargetURL = "https://shop.example/checkout"
	if _, _, err := mem.PutRoom(ctx, "shop", cfg, time.Now()); err != nil {
		t.Fatal(err)
	}
	if _, _, err := mem.PutRoom(ctx, "unseen", cfg, time.Now()); err != nil {
		t.Fatal(err)
	}
	var down, open atomic.Bool
	st := flakyStore{Store: mem, down: &down}
	h := checked(t, web.NewHandler(web.Config{Store: st, Rooms: newRooms(t, st), FailOpen: open.Load, Admit: admits(st)}))
	get := func(path string) *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		return rec
	}
	if rec := get("/r/shop"); rec.Code != http.StatusOK {
		t.Fatalf("page with the store up: %d, want 200 (waiting)", rec.Code)
	}
	down.Store(true)
	if rec := get("/r/shop"); rec.Code != http.StatusServiceUnavailable || !strings.Contains(rec.Body.String(), "The line is paused") {
		t.Errorf("store down, failing closed: %d, want 503 saying the line is paused", rec.Code)
	}
	open.Store(true)
	if rec := get("/r/shop"); rec.Code != http.StatusSeeOther || rec.Header().Get("Location") != cfg.TargetURL {
		t.Errorf("store down, failing open: %d to %q, want 303 to %q", rec.Code, rec.Header().Get("Location"), cfg.TargetURL)
	}
	// A room this process never read has no known target: it stays closed.
	if rec := get("/r/unseen"); rec.Code != http.StatusServiceUnavailable {
		t.Errorf("store down, failing open, room never seen: %d, want 503", rec.Code)
	}
	down.Store(false)
	if rec := get("/r/shop"); rec.Code != http.StatusOK {
		t.Errorf("store back: %d, want 200 (waiting again)", rec.Code)
	}
}

// The page's joins go through the same limits as the API's: a visitor
// without a cookie who keeps reloading from one address is refused with
// 429 and a page that retries by itself, and a full room answers 503.
func TestPageJoinsAreLimited(t *testing.T) {
	ctx := context.Background()
	mem := memstore.New()
	if _, _, err := mem.PutRoom(ctx, "shop", waitroom.DefaultConfig(), time.Now()); err != nil {
		t.Fatal(err)
	}
	rooms := newRooms(t, mem)
	joins := &limit.Joins{Rate: limit.NewLimiter(60, 3, 0), MaxSessionsPerRoom: 5, Rooms: rooms}
	h := checked(t, web.NewHandler(web.Config{Store: mem, Rooms: rooms, Admit: admit.New(admit.Config{Store: mem, Joins: joins})}))
	get := func(addr string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(http.MethodGet, "/r/shop", nil)
		req.RemoteAddr = addr + ":40000"
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec
	}
	for i := range 3 {
		if rec := get("192.0.2.1"); rec.Code != http.StatusOK {
			t.Fatalf("join %d from one address within the burst: %d, want 200", i+1, rec.Code)
		}
	}
	rec := get("192.0.2.1")
	if rec.Code != http.StatusTooManyRequests || rec.Header().Get("Retry-After") == "" || !strings.Contains(rec.Body.String(), "Too many at once") {
		t.Errorf("fourth join from one address: %d, Retry-After %q; want 429 with Retry-After and the busy page",
			rec.Code, rec.Header().Get("Retry-After"))
	}
	for _, addr := range []string{"192.0.2.2", "192.0.2.3"} {
		if rec := get(addr); rec.Code != http.StatusOK {
			t.Fatalf("join from %s: %d, want 200", addr, rec.Code)
		}
	}
	if rec := get("192.0.2.4"); rec.Code != http.StatusServiceUnavailable || rec.Header().Get("Retry-After") == "" {
		t.Errorf("sixth session in a room capped at 5: %d, want 503 with Retry-After", rec.Code)
	}
	if room, _ := mem.Room(ctx, "shop"); room.Waiting+room.Active != 5 {
		t.Errorf("room holds %d sessions, want 5 (refused joins make none)", room.Waiting+room.Active)
	}
}

// An admitted visitor may be sent back to the page's own origin (what a
// gate on the same host asks for), never to another one that the room does
// not list.
func TestReturnToSameOriginOnly(t *testing.T) {
	ctx := context.Background()
	mem := memstore.New()
	cfg := waitroom.DefaultConfig()
	cfg.TargetURL = "/home"
	if _, _, err := mem.PutRoom(ctx, "shop", cfg, time.Now()); err != nil {
		t.Fatal(err)
	}
	h := checked(t, web.NewHandler(web.Config{Store: mem, Rooms: newRooms(t, mem), Admit: admits(mem)}))
	for _, tc := range []struct{ returnTo, want string }{
		{"http://shop.example/cart?x=1", "http://shop.example/cart?x=1"},
		{"https://shop.example/cart", "/home"}, // another scheme is another origin
		{"http://evil.example/cart", "/home"},
		{"http://shop.example.evil.example/", "/home"},
		{"//evil.example/", "/home"},
	} {
		req := httptest.NewRequest(http.MethodGet, "http://shop.example/r/shop?return_to="+url.QueryEscape(tc.returnTo), nil)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req) // capacity 100: admitted at once
		if rec.Code != http.StatusSeeOther || rec.Header().Get("Location") != tc.want {
			t.Errorf("return_to %q: %d to %q, want 303 to %q", tc.returnTo, rec.Code, rec.Header().Get("Location"), tc.want)
		}
	}
}
