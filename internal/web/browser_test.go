package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/internal/admit"
	"github.com/waitroom/waitroom/internal/browsertest"
	"github.com/waitroom/waitroom/internal/web"
)

// browser is one headless Chromium process; each person in it gets a
// browser context of their own (own cookies, own storage).
type browser struct {
	t *testing.T
	b *browsertest.Browser
}

// newBrowser starts Chromium for the test, or skips it when Chromium is
// not installed (a failure under CI=true, where it must be).
func newBrowser(t *testing.T) *browser {
	t.Helper()
	return &browser{t: t, b: browsertest.Start(t, browsertest.Options{Width: 900, Height: 820, Quiet: true})}
}

// person is one visitor: a tab in a browser context of their own, and
// the console messages its pages wrote.
type person struct {
	*browsertest.Tab
	t    *testing.T
	name string
}

func (b *browser) person(name string) *person {
	b.t.Helper()
	tab, err := b.b.NewTab()
	if err != nil {
		b.t.Fatalf("%s: opening a tab: %v", name, err)
	}
	return &person{Tab: tab, t: b.t, name: name}
}

// do runs actions with a time limit of their own (the tab stays open).
func (p *person) do(d time.Duration, actions ...chromedp.Action[chromedp.Void]) error {
	return p.Do(d, actions...)
}

func (p *person) navigate(url string) {
	p.t.Helper()
	if err := p.do(10*time.Second, chromedp.Navigate(url)); err != nil {
		p.t.Fatalf("%s: navigate to %s: %v", p.name, url, err)
	}
}

// eval evaluates a JavaScript expression in the current page.
func eval[T any](p *person, expr string) (T, error) {
	return browsertest.Eval[T](p.Tab, 3*time.Second, expr, chromedp.EvalAwaitPromise)
}

// mustEval is eval that fails the test on an error.
func mustEval[T any](p *person, expr string) T {
	p.t.Helper()
	v, err := eval[T](p, expr)
	if err != nil {
		p.t.Fatalf("%s: evaluating %s: %v", p.name, expr, err)
	}
	return v
}

// waitUntil evaluates a JavaScript condition until it is true, across
// navigations, and reports whether it became true within d.
func (p *person) waitUntil(d time.Duration, cond string) bool {
	return p.WaitUntil(d, cond)
}

// text returns the text of the first element matching a CSS selector.
func (p *person) text(selector string) string {
	v, err := p.RawText(selector)
	if err != nil {
		return "<" + err.Error() + ">"
	}
	return strings.TrimSpace(v)
}

func (p *person) path() string {
	v, err := eval[string](p, "location.pathname")
	if err != nil {
		return "<" + err.Error() + ">"
	}
	return v
}

// cookie reads a cookie of the person's browser context (HttpOnly ones too).
func (p *person) cookie(base, name string) string {
	p.t.Helper()
	res, err := chromedp.Call(p.Ctx, network.GetCookies, network.GetCookiesParams{URLs: []string{base + "/"}})
	if err != nil {
		p.t.Fatalf("%s: reading cookies: %v", p.name, err)
	}
	for _, c := range res.Cookies {
		if c.Name == name {
			if !c.HTTPOnly {
				p.t.Errorf("%s: cookie %s is not HttpOnly", p.name, name)
			}
			return c.Value
		}
	}
	return ""
}

// screenshot saves the viewport as <artifacts>/<test>-<step>.png, logs
// the path and returns the PNG (nil when it failed).
func (p *person) screenshot(step string) []byte {
	p.t.Helper()
	png, err := p.Screenshot(10*time.Second, chromedp.CaptureScreenshot())
	if err != nil {
		p.t.Errorf("%s: screenshot %s: %v", p.name, step, err)
		return nil
	}
	dir := artifactsDir(p.t)
	name := strings.NewReplacer("/", "-", " ", "-").Replace(p.t.Name()) + "-" + step + ".png"
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, png, 0o644); err != nil {
		p.t.Errorf("saving screenshot: %v", err)
		return nil
	}
	p.t.Logf("screenshot: %s", path)
	return png
}

// docScreenshot is screenshot, and with WAITROOM_DOC_SCREENSHOTS=1 it also
// writes docs/screenshots/<name>.png at the module root: the pictures the
// documentation shows, renewed only when asked for, so that ordinary test
// runs leave the tracked files alone.
func (p *person) docScreenshot(name string) {
	p.t.Helper()
	png := p.screenshot(name)
	if png == nil || os.Getenv("WAITROOM_DOC_SCREENSHOTS") != "1" {
		return
	}
	dir := filepath.Join(moduleRoot(p.t), "docs", "screenshots")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		p.t.Errorf("saving the documentation screenshot: %v", err)
		return
	}
	path := filepath.Join(dir, name+".png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		p.t.Errorf("saving the documentation screenshot: %v", err)
		return
	}
	p.t.Logf("documentation screenshot: %s", path)
}

// consoleProblems returns the errors and warnings the person's pages wrote.
func (p *person) consoleProblems() []string { return p.ConsoleProblems() }

// artifactsDir is $WAITROOM_ARTIFACTS, or testdata/artifacts/web at the
// module root (ignored by git).
func artifactsDir(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("WAITROOM_ARTIFACTS")
	if dir == "" {
		dir = filepath.Join(moduleRoot(t), "testdata", "artifacts", "web")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// moduleRoot is the directory of the go.mod above the test's directory.
func moduleRoot(t *testing.T) string {
	t.Helper()
	root, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(root, "go.mod")); err == nil {
			return root
		}
		parent := filepath.Dir(root)
		if parent == root {
			t.Fatal("no go.mod above the test's directory")
		}
		root = parent
	}
}

// TestBrowserLineMovesWithoutReload is the acceptance test: three people,
// one place; when the first leaves, the second is let in and the third
// moves up, live, without a reload.
func TestBrowserLineMovesWithoutReload(t *testing.T) {
	s := newSite(t, siteOptions{})
	s.room("line", config(1, "/target/"))
	b := newBrowser(t)
	first, second, third := b.person("first"), b.person("second"), b.person("third")
	page := s.srv.URL + "/r/line"

	first.navigate(page)
	if got := first.path(); got != "/target/" {
		t.Fatalf("first: landed on %s, want the target /target/", got)
	}
	first.screenshot("1-first-admitted")

	for i, p := range []*person{second, third} {
		want := fmt.Sprint(i + 1)
		p.navigate(page)
		if !p.waitUntil(5*time.Second, `document.getElementById("waitroom").dataset.live === "sse"`) {
			t.Fatalf("%s: the live stream did not connect (data-live %q)", p.name, p.text("#nothing"))
		}
		if got := p.text(`[data-waitroom="position"]`); got != want {
			t.Errorf("%s: position %q, want %s", p.name, got, want)
		}
		p.screenshot(fmt.Sprintf("%d-%s-waiting", i+2, p.name))
	}
	if got := third.text(`[data-waitroom="announce"]`); got != "You are number 2 in line. 1 person is ahead of you." {
		t.Errorf("third: announcement %q", got)
	}
	mustEval[bool](third, `window.stillTheSamePage = true`)
	mustEval[bool](second, `window.stillTheSamePage = true`)

	id := first.cookie(s.srv.URL, "waitroom-sid-line")
	if id == "" {
		t.Fatalf("first: no session cookie")
	}
	start := time.Now()
	if left := s.leave("line", id); left.Status != waitroom.StatusLeft {
		t.Fatalf("first leaving: status %s, want left", left.Status)
	}
	if !second.waitUntil(2*time.Second-time.Since(start), `location.pathname === "/target/"`) {
		t.Errorf("second: not on the target within 2s of the first leaving; on %s", second.path())
	}
	if !third.waitUntil(2*time.Second-time.Since(start), `document.querySelector('[data-waitroom="position"]').textContent === "1"`) {
		t.Errorf("third: position %q 2s after the first left, want 1", third.text(`[data-waitroom="position"]`))
	}
	t.Logf("the line moved within %v", time.Since(start).Round(time.Millisecond))
	if !mustEval[bool](third, `window.stillTheSamePage === true`) {
		t.Errorf("third: the page was reloaded; it should update in place")
	}
	if got := third.text(`[data-waitroom="announce"]`); got != "You are number 1 in line. You’re next." {
		t.Errorf("third: announcement %q after moving up", got)
	}
	if got := mustEval[string](third, `document.title`); !strings.HasPrefix(got, "No. 1 in line") {
		t.Errorf("third: title %q, want it to start with the new place", got)
	}
	if got := third.text(`[data-waitroom="ahead"]`); got != "0" {
		t.Errorf("third: ahead %q, want 0", got)
	}
	second.screenshot("4-second-admitted")
	third.screenshot("5-third-next")

	// Accessibility basics of the page as the browser sees it.
	if got := mustEval[string](third, `document.querySelector('[data-waitroom="announce"]').getAttribute("aria-live")`); got != "polite" {
		t.Errorf("announcement region aria-live %q, want polite", got)
	}
	if got := mustEval[string](third, `document.querySelector('meta[name="viewport"]').content`); !strings.Contains(got, "width=device-width") {
		t.Errorf("viewport meta %q", got)
	}

	for _, p := range []*person{first, second, third} {
		if msgs := p.consoleProblems(); len(msgs) > 0 {
			t.Errorf("%s: the console has errors or warnings (CSP violations show here):\n%s", p.name, strings.Join(msgs, "\n"))
		}
	}
}

// TestBrowserPageOnPhoneAndInGerman looks at the page the way a phone user
// with German settings and reduced motion would.
func TestBrowserPageOnPhoneAndInGerman(t *testing.T) {
	s := newSite(t, siteOptions{})
	s.room("tickets", config(0, "/target/"))
	for range 41 {
		if _, err := s.store.Join(context.Background(), "tickets", "", time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	b := newBrowser(t)
	p := b.person("phone")
	err := p.do(5*time.Second,
		chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile, chromedp.EmulateScale(2)),
		chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			if _, err := chromedp.Call(ctx, network.SetExtraHTTPHeaders, network.SetExtraHTTPHeadersParams{Headers: network.Headers{"Accept-Language": "de-DE,de;q=0.9,en;q=0.5"}}); err != nil {
				return err
			}
			_, err := chromedp.Call(ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{Features: []*emulation.MediaFeature{{Name: "prefers-reduced-motion", Value: "reduce"}}})
			return err
		}),
	)
	if err != nil {
		t.Fatalf("emulating a phone: %v", err)
	}
	p.navigate(s.srv.URL + "/r/tickets")
	if !p.waitUntil(5*time.Second, `document.getElementById("waitroom").dataset.live === "sse"`) {
		t.Fatalf("the live stream did not connect")
	}
	if got := p.text("h1"); got != "Sie sind in der Warteschlange" {
		t.Errorf("heading %q, want the German one", got)
	}
	if got := p.text(`[data-waitroom="position"]`); got != "42" {
		t.Errorf("position %q, want 42", got)
	}
	if wide := mustEval[bool](p, `document.documentElement.scrollWidth > window.innerWidth`); wide {
		t.Errorf("the page is wider than the phone's screen")
	}
	if got := mustEval[string](p, `getComputedStyle(document.querySelector("progress")).animationName`); got != "none" {
		t.Errorf("with prefers-reduced-motion the progress bar animates (%q)", got)
	}
	p.screenshot("phone-de-reduced-motion")

	// The same page in dark mode, with an ETA, in French on a desktop.
	q := b.person("desktop")
	if err := q.do(5*time.Second, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		if _, err := chromedp.Call(ctx, network.SetExtraHTTPHeaders, network.SetExtraHTTPHeadersParams{Headers: network.Headers{"Accept-Language": "fr"}}); err != nil {
			return err
		}
		_, err := chromedp.Call(ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: "dark"}}})
		return err
	})); err != nil {
		t.Fatal(err)
	}
	// 150 departures give the estimator a rate (fewer would need a
	// minute of them; the fill of a room's capacity is none): a room of
	// 150 fills, and its 150 leave, making room for 150 more.
	ctx := context.Background()
	s.room("shows", config(150, "/target/"))
	var first []string
	for i := range 300 {
		x, err := s.store.Join(ctx, "shows", "", time.Now())
		if err != nil {
			t.Fatal(err)
		}
		if i < 150 {
			first = append(first, x.ID)
		}
	}
	for _, id := range first {
		if _, err := s.store.Leave(ctx, "shows", id, waitroom.ReasonLeft, time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	q.navigate(s.srv.URL + "/r/shows")
	if !q.waitUntil(5*time.Second, `document.getElementById("waitroom").dataset.live === "sse"`) {
		t.Fatalf("the live stream did not connect")
	}
	if got := q.text(`[data-waitroom="eta"]`); got == "" || got == "Pas encore connue" {
		t.Errorf("French ETA %q, want an estimate", got)
	}
	if got := mustEval[bool](q, `document.querySelector("progress").hasAttribute("value")`); !got {
		t.Errorf("with an estimate the progress bar is still indeterminate")
	}
	q.screenshot("desktop-fr-dark-eta")
	for _, x := range []*person{p, q} {
		if msgs := x.consoleProblems(); len(msgs) > 0 {
			t.Errorf("%s: console problems:\n%s", x.name, strings.Join(msgs, "\n"))
		}
	}
}

// TestBrowserAwayBeaconAndBackForwardCache checks pagehide sends the away
// beacon and a restore from the back/forward cache reconnects.
func TestBrowserAwayBeaconAndBackForwardCache(t *testing.T) {
	s := newSite(t, siteOptions{})
	s.room("shop", config(0, "/target/"))
	b := newBrowser(t)
	p := b.person("visitor")
	p.navigate(s.srv.URL + "/r/shop")
	if !p.waitUntil(5*time.Second, `document.getElementById("waitroom").dataset.live === "sse"`) {
		t.Fatalf("the live stream did not connect")
	}
	id := p.cookie(s.srv.URL, "waitroom-sid-shop")
	base := "/v1/rooms/shop/sessions/" + id

	_, mark := s.seen(0)
	mustEval[bool](p, `window.dispatchEvent(new PageTransitionEvent("pagehide", {persisted: true}))`)
	if !waitFor(2*time.Second, func() bool { reqs, _ := s.seen(mark); return contains(reqs, "POST "+base+"/away") }) {
		reqs, _ := s.seen(mark)
		t.Fatalf("no away beacon after pagehide; requests: %q", reqs)
	}

	_, mark = s.seen(0)
	mustEval[bool](p, `window.dispatchEvent(new PageTransitionEvent("pageshow", {persisted: true}))`)
	if !waitFor(2*time.Second, func() bool {
		reqs, _ := s.seen(mark)
		return contains(reqs, "GET "+base) && contains(reqs, "GET "+base+"/events")
	}) {
		reqs, _ := s.seen(mark)
		t.Fatalf("no presence read and new stream after pageshow; requests: %q", reqs)
	}
	// Back in line: the session is present (not away) and waiting.
	got, err := s.store.Session(context.Background(), "shop", id, time.Now())
	if err != nil || got.Status != waitroom.StatusWaiting {
		t.Errorf("after the restore: %v %v, want waiting", got.Status, err)
	}
}

// TestBrowserClientAPI drives /waitroom.js as an app would.
func TestBrowserClientAPI(t *testing.T) {
	s := newSite(t, siteOptions{})
	s.room("api", config(1, ""))
	ctx := context.Background()
	blocker, err := s.store.Join(ctx, "api", "", time.Now())
	if err != nil || blocker.Status != waitroom.StatusActive {
		t.Fatalf("blocker: %v %v", blocker.Status, err)
	}
	b := newBrowser(t)
	app := b.person("app")
	app.navigate(s.srv.URL + "/client-test/")
	if !app.waitUntil(5*time.Second, `calls.some(c => c[0] === "position" && c[2] === 1)`) {
		t.Fatalf("no onPosition(position 1); calls: %s", mustEval[string](app, `JSON.stringify(calls)`))
	}
	if mode := mustEval[string](app, `line.mode`); mode != "sse" {
		t.Errorf("transport %q, want sse", mode)
	}
	key := `"waitroom:` + s.srv.URL + `:api"`
	id := mustEval[string](app, `localStorage.getItem(`+key+`) || ""`)
	if id == "" || id != mustEval[string](app, `line.id`) {
		t.Errorf("localStorage holds %q, want the session id %q", id, mustEval[string](app, `line.id`))
	}

	start := time.Now()
	s.leave("api", blocker.ID)
	if !app.waitUntil(2*time.Second, `calls.some(c => c[0] === "admitted" && c[1] === "active")`) {
		t.Fatalf("no onAdmitted within 2s of the slot freeing; calls: %s", mustEval[string](app, `JSON.stringify(calls)`))
	}
	t.Logf("onAdmitted %v after the slot freed", time.Since(start).Round(time.Millisecond))

	// A reload resumes the stored session instead of joining again.
	app.navigate(s.srv.URL + "/client-test/")
	if !app.waitUntil(5*time.Second, `calls.some(c => c[0] === "admitted")`) {
		t.Fatalf("after a reload: no onAdmitted; calls: %s", mustEval[string](app, `JSON.stringify(calls)`))
	}
	if got := mustEval[string](app, `line.id`); got != id {
		t.Errorf("after a reload the client holds %q, want the stored %q", got, id)
	}

	raw := mustEval[string](app, `line.leave().then(s => JSON.stringify(s))`)
	var left waitroom.Session
	if err := json.Unmarshal([]byte(raw), &left); err != nil || left.Status != waitroom.StatusLeft {
		t.Errorf("leave(): got %s (%v), want a session with status left", raw, err)
	}
	if !app.waitUntil(2*time.Second, `calls.some(c => c[0] === "ended" && c[1] === "left" && c[2] === "left")`) {
		t.Errorf("no onEnded(left); calls: %s", mustEval[string](app, `JSON.stringify(calls)`))
	}
	if got := mustEval[string](app, `localStorage.getItem(`+key+`) || ""`); got != "" {
		t.Errorf("after leave() localStorage still holds %q", got)
	}

	// Without EventSource the client polls, and still sees the admission.
	blocker, err = s.store.Join(ctx, "api", "", time.Now())
	if err != nil || blocker.Status != waitroom.StatusActive {
		t.Fatalf("second blocker: %v %v", blocker.Status, err)
	}
	poller := b.person("poller")
	poller.navigate(s.srv.URL + "/client-test/#noes")
	if !poller.waitUntil(5*time.Second, `calls.some(c => c[0] === "position" && c[2] === 1)`) {
		t.Fatalf("poller: no onPosition; calls: %s", mustEval[string](poller, `JSON.stringify(calls)`))
	}
	if mode := mustEval[string](poller, `line.mode`); mode != "poll" {
		t.Errorf("poller: transport %q, want poll", mode)
	}
	s.leave("api", blocker.ID)
	if !poller.waitUntil(3*time.Second, `calls.some(c => c[0] === "admitted")`) {
		t.Errorf("poller: no onAdmitted; calls: %s", mustEval[string](poller, `JSON.stringify(calls)`))
	}
	for _, p := range []*person{app, poller} {
		if msgs := p.consoleProblems(); len(msgs) > 0 {
			t.Errorf("%s: console problems:\n%s", p.name, strings.Join(msgs, "\n"))
		}
	}
}

// TestBrowserDemo opens the demo app, leaves with its button, and checks
// the next person is let in; then a tab of the one-person-per-tab page.
func TestBrowserDemo(t *testing.T) {
	s := newSite(t, siteOptions{web: web.Config{Demo: true}})
	s.room(web.DemoRoom, config(1, web.DemoAppPath))
	b := newBrowser(t)
	alice, bob := b.person("alice"), b.person("bob")
	alice.navigate(s.srv.URL + "/r/demo-room")
	if got := alice.path(); got != web.DemoAppPath {
		t.Fatalf("alice: on %s, want the demo app %s", got, web.DemoAppPath)
	}
	if got := alice.text("h1"); got != "You are in" {
		t.Errorf("alice: heading %q, want \"You are in\"", got)
	}
	alice.screenshot("1-app")
	bob.navigate(s.srv.URL + "/r/demo-room")
	if !bob.waitUntil(5*time.Second, `document.getElementById("waitroom").dataset.live === "sse"`) {
		t.Fatalf("bob: the live stream did not connect")
	}
	if got := bob.text(`[data-waitroom="position"]`); got != "1" {
		t.Errorf("bob: position %q, want 1", got)
	}
	start := time.Now()
	if err := alice.do(5*time.Second, chromedp.Click(chromedp.CSS(`[data-demo="leave"]`))); err != nil {
		t.Fatalf("alice: clicking Leave: %v", err)
	}
	if !alice.waitUntil(2*time.Second, `document.querySelector("h1").textContent === "You left"`) {
		t.Errorf("alice: heading %q after Leave, want \"You left\"", alice.text("h1"))
	}
	if !bob.waitUntil(2*time.Second-time.Since(start), `location.pathname === "/demo/app/"`) {
		t.Errorf("bob: on %s 2s after alice left, want the demo app", bob.path())
	}
	alice.screenshot("2-left")
	bob.screenshot("3-bob-in")

	// One person per tab: a tab of /demo/ waits behind bob.
	tab := b.person("tab")
	tab.navigate(s.srv.URL + "/demo/")
	if !tab.waitUntil(5*time.Second, `document.querySelector('[data-demo="position"]').textContent === "1"`) {
		t.Errorf("tab: position %q, want 1", tab.text(`[data-demo="position"]`))
	}
	tab.screenshot("4-tab-waiting")
	for _, p := range []*person{alice, bob, tab} {
		if msgs := p.consoleProblems(); len(msgs) > 0 {
			t.Errorf("%s: console problems:\n%s", p.name, strings.Join(msgs, "\n"))
		}
	}
}

// TestBrowserOperatorTemplateNonce checks in the browser that an operator
// template's inline script runs with the page's nonce, and one without it
// is blocked by the Content-Security-Policy.
func TestBrowserOperatorTemplateNonce(t *testing.T) {
	dir := t.TempDir()
	page := `<!doctype html><html lang="{{.Lang}}"><head>{{template "waitroom-head" .}}<title>{{.DocTitle}}</title></head>` +
		`<body><main id="waitroom" class="card" {{.Data}}><h1>{{.T.Heading}}</h1><p data-waitroom="position">{{.Position}}</p></main>` +
		`<script nonce="{{.Nonce}}">document.body.dataset.withNonce = "ran";</script>` +
		`<script>document.body.dataset.withoutNonce = "ran";</script></body></html>`
	if err := os.WriteFile(filepath.Join(dir, "page.html"), []byte(page), 0o644); err != nil {
		t.Fatal(err)
	}
	s := newSite(t, siteOptions{web: web.Config{Templates: dir}})
	s.room("shop", config(0, ""))
	b := newBrowser(t)
	p := b.person("visitor")
	p.navigate(s.srv.URL + "/r/shop")
	if got := mustEval[string](p, `document.body.dataset.withNonce || ""`); got != "ran" {
		t.Errorf("the inline script with the nonce did not run")
	}
	if got := mustEval[string](p, `document.body.dataset.withoutNonce || ""`); got != "" {
		t.Errorf("the inline script without the nonce ran; the CSP does not hold")
	}
	if got := p.text(`[data-waitroom="position"]`); got != "1" {
		t.Errorf("position %q, want 1", got)
	}
}

// TestBrowserOtherStates looks at the pages besides waiting: admitted
// without a target, the end of such a visit, and an unknown room.
func TestBrowserOtherStates(t *testing.T) {
	s := newSite(t, siteOptions{})
	s.room("open", config(5, ""))
	b := newBrowser(t)
	p := b.person("visitor")
	p.navigate(s.srv.URL + "/r/open")
	if got := p.text("h1"); got != "You’re in" {
		t.Errorf("admitted without a target: heading %q", got)
	}
	p.screenshot("1-admitted-no-target")
	if !p.waitUntil(5*time.Second, `document.getElementById("waitroom").dataset.live === "sse"`) {
		t.Fatalf("the live stream did not connect")
	}
	s.leave("open", p.cookie(s.srv.URL, "waitroom-sid-open"))
	if !p.waitUntil(2*time.Second, `document.querySelector("h1").textContent === "Your visit has ended"`) {
		t.Errorf("after the session ended: heading %q", p.text("h1"))
	}
	if hidden := mustEval[bool](p, `document.querySelector('[data-waitroom="rejoin"]').hidden`); hidden {
		t.Errorf("the join-again button stays hidden after the visit ended")
	}
	p.screenshot("2-ended")
	p.navigate(s.srv.URL + "/r/no-such-room")
	if got := p.text("h1"); got != "Waiting room not found" {
		t.Errorf("unknown room: heading %q", got)
	}
	p.screenshot("3-not-found")
	if msgs := p.consoleProblems(); len(msgs) > 0 {
		// The 404 itself is reported by the browser; nothing else may be.
		for _, m := range msgs {
			if !strings.Contains(m, "404") {
				t.Errorf("console problem: %s", m)
			}
		}
	}
}

// watchAnnouncements records every change of the live region's text in
// window.announced, to check the page does not talk over a screen reader.
const watchAnnouncements = `(() => {
	const el = document.querySelector('[data-waitroom="announce"]');
	window.announced = [];
	new MutationObserver(() => announced.push(el.textContent)).observe(el, {childList: true, characterData: true, subtree: true});
	return true;
})()`

// visible is a JavaScript condition: the element matching selector is shown.
func visible(selector string) string {
	return fmt.Sprintf(`(el => !!el && !el.closest("[hidden]") && el.getClientRects().length > 0)(document.querySelector(%q))`, selector)
}

// TestBrowserDropCountdownAndDraw opens the page of a session in the
// pre-queue of a room that opens in an hour: it counts down every second
// without talking over a screen reader, shows how many are in the draw and
// links the draw record; when the draw takes place the page shows the
// drawn place live, without a reload.
func TestBrowserDropCountdownAndDraw(t *testing.T) {
	s := newSite(t, siteOptions{})
	opens := time.Now().Add(time.Hour).Truncate(time.Millisecond).UTC()
	s.putRoom("drop", drop(0, "/target/", opens))
	s.joinN("drop", 1233)
	b := newBrowser(t)
	p := b.person("entrant")
	p.navigate(s.srv.URL + "/r/drop")
	if !p.waitUntil(5*time.Second, `document.getElementById("waitroom").dataset.live === "sse"`) {
		t.Fatalf("the live stream did not connect")
	}
	if got := p.text(`[data-waitroom="countdown"]`); !hourCountdownRE.MatchString(got) {
		t.Errorf("countdown %q, want about an hour (%s)", got, hourCountdownRE)
	}
	if got := p.text(`[data-waitroom="entrants"]`); got != "1,234 people are in the draw" {
		t.Errorf("entrants %q, want 1,234 people are in the draw", got)
	}
	if got := p.text(`[data-waitroom="announce"]`); !hourAnnounceRE.MatchString(got) {
		t.Errorf("announcement %q, want %s", got, hourAnnounceRE)
	}
	if got := p.text("h1"); got != "You’re in the draw" {
		t.Errorf("heading %q, want You’re in the draw", got)
	}
	for _, sel := range []string{`[data-waitroom="countdown"]`, `[data-waitroom="entrants"]`, `[data-waitroom="prequeue"] a[href="/v1/rooms/drop/draw"]`} {
		if !mustEval[bool](p, visible(sel)) {
			t.Errorf("%s is not shown", sel)
		}
	}
	for _, sel := range []string{`[data-waitroom="position"]`, `[data-waitroom="ahead"]`, `[data-waitroom="drawn"]`} {
		if mustEval[bool](p, visible(sel)) {
			t.Errorf("%s is shown before the draw", sel)
		}
	}
	// The opening in the visitor's time zone, from the exact instant.
	if got := mustEval[string](p, `document.querySelector('[data-waitroom="opens-at"]').getAttribute("datetime")`); got != opens.Format("2006-01-02T15:04:05.000Z") {
		t.Errorf("opening datetime %q, want %s", got, opens.Format("2006-01-02T15:04:05.000Z"))
	}
	if got := p.text(`[data-waitroom="opens-at"]`); got == "" || regexp.MustCompile(`^\d{4}-`).MatchString(got) {
		t.Errorf("opening shown as %q, want it in local time words", got)
	}

	// It ticks every second, the title with it, and the live region keeps
	// quiet meanwhile.
	mustEval[bool](p, watchAnnouncements)
	for range 2 {
		before := p.text(`[data-waitroom="countdown"]`)
		if !p.waitUntil(5*time.Second, fmt.Sprintf(`document.querySelector('[data-waitroom="countdown"]').textContent !== %q`, before)) {
			t.Fatalf("the countdown stands still at %q", before)
		}
	}
	// Both change in the same tick: read them in one go.
	if !mustEval[bool](p, `document.title === "Opens in " + document.querySelector('[data-waitroom="countdown"]').textContent + " · Waiting room"`) {
		t.Errorf("title %q while the countdown shows %q, want Opens in <countdown> · Waiting room", mustEval[string](p, `document.title`), p.text(`[data-waitroom="countdown"]`))
	}
	if n := mustEval[int](p, `announced.length`); n != 0 {
		t.Errorf("the live region spoke %d times while counting down: %s", n, mustEval[string](p, `JSON.stringify(announced)`))
	}
	p.docScreenshot("drop-countdown")

	// The draw: the operator clears opens_at, which draws at once.
	mustEval[bool](p, `window.stillTheSamePage = true`)
	id := p.cookie(s.srv.URL, admit.CookieName("drop"))
	s.putRoom("drop", config(0, "/target/"))
	if !p.waitUntil(5*time.Second, visible(`[data-waitroom="position"]`)) {
		t.Fatalf("the drawn place is not shown 5s after the draw; countdown %q", p.text(`[data-waitroom="countdown"]`))
	}
	got, err := s.store.Session(context.Background(), "drop", id, time.Now())
	if err != nil || got.Position < 1 {
		t.Fatalf("session after the draw: %+v, %v", got, err)
	}
	pos := mustEval[string](p, `new Intl.NumberFormat("en").format(`+strconv.FormatInt(got.Position, 10)+`)`)
	if !p.waitUntil(2*time.Second, fmt.Sprintf(`document.querySelector('[data-waitroom="position"]').textContent === %q`, pos)) {
		t.Errorf("position %q after the draw, want %s", p.text(`[data-waitroom="position"]`), pos)
	}
	if got := p.text(`[data-waitroom="announce"]`); !strings.HasPrefix(got, "The draw is done. You are number "+pos+" in line. ") {
		t.Errorf("announcement after the draw %q, want The draw is done. You are number %s in line. …", got, pos)
	}
	if got := mustEval[string](p, `document.title`); got != "No. "+pos+" in line · Waiting room" {
		t.Errorf("title after the draw %q, want No. %s in line · Waiting room", got, pos)
	}
	if got := p.text(`p.drawn`); !mustEval[bool](p, visible(`p.drawn`)) || !strings.HasPrefix(got, "The draw is done: your place was drawn at random.") {
		t.Errorf("the drawn note is hidden or says %q", got)
	}
	for _, sel := range []string{`[data-waitroom="countdown"]`, `[data-waitroom="entrants"]`, `[data-waitroom="intro"]`} {
		if mustEval[bool](p, visible(sel)) {
			t.Errorf("%s is still shown after the draw", sel)
		}
	}
	if got := p.text("h1"); got != "You’re in line" {
		t.Errorf("heading after the draw %q, want You’re in line", got)
	}
	if !mustEval[bool](p, `window.stillTheSamePage === true`) {
		t.Errorf("the page was reloaded; it should switch in place")
	}
	p.docScreenshot("drop-drawn")
	if msgs := p.consoleProblems(); len(msgs) > 0 {
		t.Errorf("console problems:\n%s", strings.Join(msgs, "\n"))
	}
}

// TestBrowserDropLastMinute checks, in German, that the live region speaks
// once more a minute before the opening, and that the draw is announced.
func TestBrowserDropLastMinute(t *testing.T) {
	s := newSite(t, siteOptions{})
	s.putRoom("soon", drop(0, "/target/", time.Now().Add(65*time.Second)))
	b := newBrowser(t)
	p := b.person("entrant")
	if err := p.do(5*time.Second, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := chromedp.Call(ctx, network.SetExtraHTTPHeaders, network.SetExtraHTTPHeadersParams{Headers: network.Headers{"Accept-Language": "de"}})
		return err
	})); err != nil {
		t.Fatal(err)
	}
	p.navigate(s.srv.URL + "/r/soon")
	mustEval[bool](p, watchAnnouncements)
	if got := p.text(`[data-waitroom="entrants"]`); got != "1 Person ist bei der Verlosung dabei" {
		t.Errorf("entrants %q", got)
	}
	if !p.waitUntil(15*time.Second, `document.querySelector('[data-waitroom="announce"]').textContent === "Die Warteschlange öffnet in 1 Minute."`) {
		t.Fatalf("no announcement of the last minute; the live region says %q, the countdown %q", p.text(`[data-waitroom="announce"]`), p.text(`[data-waitroom="countdown"]`))
	}
	if got := p.text(`[data-waitroom="countdown"]`); !regexp.MustCompile(`^(1:00|0:[0-5]\d)$`).MatchString(got) {
		t.Errorf("countdown %q in the last minute", got)
	}
	if got := mustEval[string](p, `document.title`); !strings.HasPrefix(got, "Öffnet in ") || !strings.HasSuffix(got, " · Warteraum") {
		t.Errorf("title %q, want Öffnet in <countdown> · Warteraum", got)
	}
	if n := mustEval[int](p, `announced.length`); n > 1 {
		t.Errorf("the live region spoke %d times in a few seconds: %s", n, mustEval[string](p, `JSON.stringify(announced)`))
	}
	s.putRoom("soon", config(0, "/target/"))
	if !p.waitUntil(5*time.Second, `document.querySelector('[data-waitroom="announce"]').textContent === "Die Verlosung hat stattgefunden. Sie sind auf Platz 1. Sie sind als Nächstes dran."`) {
		t.Errorf("announcement after the draw %q", p.text(`[data-waitroom="announce"]`))
	}
	if msgs := p.consoleProblems(); len(msgs) > 0 {
		t.Errorf("console problems:\n%s", strings.Join(msgs, "\n"))
	}
}

func waitFor(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
	return true
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
