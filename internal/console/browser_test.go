package console_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/internal/browsertest"
	"github.com/waitroom/waitroom/internal/console"
	"github.com/waitroom/waitroom/memstore"
)

// tab is one headless Chromium tab and what its pages wrote to the console.
type tab struct {
	*browsertest.Tab
	t *testing.T
}

// newTab starts Chromium, or skips the test when it is not installed (a
// failure under CI=true, where it must be).
func newTab(t *testing.T) *tab {
	t.Helper()
	return &tab{Tab: browsertest.New(t, browsertest.Options{Width: 1100, Height: 900}), t: t}
}

// newPageSite serves the console and a stand-in of the admin API, on a
// manual clock.
func newPageSite(t *testing.T) (*waitroom.ManualClock, *fakeAPI, *httptest.Server) {
	t.Helper()
	clock := waitroom.NewManualClock(time.Now())
	c := console.New(console.Options{AdminToken: token, Ledger: memstore.New(), Clock: clock})
	api := newFakeAPI(c)
	mux := http.NewServeMux()
	mux.Handle(console.Prefix, c.Handler())
	api.routes(mux)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return clock, api, srv
}

// must runs actions, failing the test with what it was doing.
func (tb *tab) must(what string, actions ...chromedp.Action[chromedp.Void]) {
	tb.t.Helper()
	if err := tb.Do(5*time.Second, actions...); err != nil {
		tb.shot("failed")
		tb.t.Fatalf("%s: %v", what, err)
	}
}

func (tb *tab) eval(expr string) (bool, error) {
	return browsertest.Eval[bool](tb.Tab, 3*time.Second, expr, chromedp.EvalAwaitPromise)
}

// waitFor evaluates a JavaScript condition until it holds, failing the
// test after 5 s.
func (tb *tab) waitFor(what, cond string) {
	tb.t.Helper()
	if !tb.WaitUntil(5*time.Second, cond) {
		tb.shot("failed")
		tb.t.Fatalf("%s: %s did not hold within 5s (page: %q)", what, cond, tb.text("main"))
	}
}

func (tb *tab) text(selector string) string { return tb.Text(selector) }

// shot saves a screenshot of the whole page under $WAITROOM_ARTIFACTS
// when it is set.
func (tb *tab) shot(step string) {
	dir := os.Getenv("WAITROOM_ARTIFACTS")
	if dir == "" {
		return
	}
	png, err := tb.Screenshot(5*time.Second, chromedp.FullScreenshot(100))
	if err == nil {
		_ = os.WriteFile(filepath.Join(dir, "console-"+step+".png"), png, 0o644)
	}
}

// click clicks a button once it is enabled: a control is disabled while
// its action runs, and a click on it then does nothing.
func (tb *tab) click(what, sel string) {
	tb.t.Helper()
	tb.waitFor(what+": "+sel+" enabled", fmt.Sprintf(`!document.querySelector(%q).disabled`, sel))
	tb.must(what, chromedp.Click(chromedp.CSS(sel)))
}

// confirm waits for the confirmation dialog, checks it spells out the
// action, and clicks OK (or Cancel).
func (tb *tab) confirm(want string, ok bool) {
	tb.t.Helper()
	tb.waitFor("the confirmation dialog for "+want, `document.querySelector("#confirm").open`)
	if got := tb.text("#confirm-title") + " " + tb.text("#confirm-text") + " " + tb.text("#confirm-changes"); !strings.Contains(got, want) {
		tb.t.Errorf("the dialog says %q, want it to spell out %q", got, want)
	}
	button := "#confirm-cancel"
	if ok {
		button = "#confirm-ok"
	}
	tb.must("answering the dialog", chromedp.Click(chromedp.CSS(button)))
	tb.waitFor("the dialog to close", `!document.querySelector("#confirm").open`)
}

// TestPageInBrowser drives the page through every control against a
// stand-in of the admin API, checking each request it makes.
func TestPageInBrowser(t *testing.T) {
	clock, api, srv := newPageSite(t)
	tb := newTab(t)
	lastCall := func(what string, n int) call {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for {
			if calls := api.callsSoFar(); len(calls) >= n {
				return calls[n-1]
			}
			if time.Now().After(deadline) {
				tb.shot("failed")
				t.Fatalf("%s: the page did not make request %d (errors: %q)", what, n, tb.text("#error"))
			}
			time.Sleep(25 * time.Millisecond)
		}
	}

	tb.must("opening the console", chromedp.Navigate(srv.URL+"/admin/"))
	tb.waitFor("the sign-in form", `!document.querySelector("#view-signin").hidden && document.activeElement.id === "token"`)
	tb.must("a wrong token", chromedp.SendKeys(chromedp.CSS("#token"), "wrong"), chromedp.Click(chromedp.CSS("#signin")))
	tb.waitFor("the wrong-token message", `!document.querySelector("#signin-error").hidden`)
	if got := tb.text("#signin-error"); !strings.Contains(got, "wrong") {
		t.Errorf("after a wrong token the page says %q", got)
	}
	// Five wrong tries a minute, then the page says how long to wait.
	for range 5 {
		tb.must("another wrong token", chromedp.Evaluate[chromedp.Void](`document.querySelector("#signin-error").hidden = true`),
			chromedp.Click(chromedp.CSS("#signin")))
		tb.waitFor("the answer", `!document.querySelector("#signin-error").hidden && !document.querySelector("#signin").disabled`)
	}
	if got := tb.text("#signin-error"); !strings.Contains(got, "Too many wrong tokens") || !strings.Contains(got, "try again in") {
		t.Errorf("after six wrong tokens the page says %q", got)
	}
	clock.Advance(time.Minute)
	tb.must("the right token", chromedp.Evaluate[chromedp.Void](`document.querySelector("#token").value = ""`),
		chromedp.SendKeys(chromedp.CSS("#token"), token+"\n"))

	tb.waitFor("the rooms table", `document.querySelector('#rooms-body tr[data-room="demo"]')`)
	if ok, _ := tb.eval(`[...document.querySelector('tr[data-room="demo"]').children].map(c => c.textContent).join("|") === "demo|Open|7|2 / 3|1.5|0.5"`); !ok {
		t.Errorf("the room's row reads %q, want demo|Open|7|2 / 3|1.5|0.5", tb.text(`tr[data-room="demo"]`))
	}
	if ok, _ := tb.eval(`location.href.includes(` + fmt.Sprintf("%q", token) + `) || document.body.innerHTML.includes(` + fmt.Sprintf("%q", token) + `)`); ok {
		t.Errorf("the admin token is in the URL or the page")
	}
	tb.shot("rooms")

	tb.must("opening the room", chromedp.Click(chromedp.CSS(`tr[data-room="demo"] a`)))
	tb.waitFor("the live room view", `location.hash === "#/rooms/demo" && document.querySelector("#live-status").textContent === "Live."`)
	tb.waitFor("the charts", `document.querySelectorAll("svg[data-series] path.line").length === 5`)
	tb.waitFor("the headline", `document.querySelector("#stat-waiting").textContent === "7"`)
	for sel, want := range map[string]string{
		"#stat-active": "2 of 3", "#stat-joins": "12", "#stat-admissions": "6",
		"#stat-eta": "1m 35s", "#stat-p50": "1m 05s", "#stat-p99": "5m 01s", "#range-waiting": "now 7",
		"#room-stock": "Remaining60", "#room-state": "Open",
	} {
		if got := tb.text(sel); !strings.Contains(strings.ReplaceAll(got, " ", ""), strings.ReplaceAll(want, " ", "")) {
			t.Errorf("%s reads %q, want %q", sel, got, want)
		}
	}
	// A room without tiers: none to show or to choose for invites.
	if got := tb.text("#room-door"); !strings.Contains(got, "Tiersnone: one line") || !strings.Contains(got, "Challengenone") {
		t.Errorf("#room-door reads %q, want no tiers and no challenge", got)
	}
	if ok, _ := tb.eval(`document.querySelector("#inv-tier-field").hidden`); !ok {
		t.Errorf("the invites' tier select is shown in a room without tiers")
	}
	if got := tb.text("#room-holds"); got != "Hold placesnoNotify atoff" {
		t.Errorf("#room-holds reads %q, want no held places and no notices", got)
	}
	// The line and the history: a held place with its contact, one that
	// let its claim window pass.
	tb.waitFor("the line and history", `document.querySelector('#history-list li[data-reason="unclaimed"]')`)
	for sel, want := range map[string]string{
		`#line-list li[data-session="AAAAAAAAAAssessionidforeleven"] .badge[data-held]`: "held place",
		`#line-list li[data-session="AAAAAAAAAAssessionidforeleven"] .contact`:          "bob@example.com",
		`#history-list li[data-reason="unclaimed"] .contact`:                            "+15551234567",
		"#line-status":    "2 waiting.",
		"#history-status": "2 sessions ended, newest first.",
	} {
		if got := tb.text(sel); got != want {
			t.Errorf("%s reads %q, want %q", sel, got, want)
		}
	}
	if got := tb.text(`#history-list li[data-reason="unclaimed"]`); !strings.Contains(got, "#4 expired · unclaimed (invited, and not claimed within the claim window)") {
		t.Errorf("the unclaimed session reads %q", got)
	}
	if ok, _ := tb.eval(`!!document.querySelector('#line-list li[data-session="AAAAAAAAAAUsessionidforfive"] .badge')`); ok {
		t.Errorf("a session joined without a contact is shown as held")
	}
	tb.shot("room")

	// Pause: POST …/pause, which changes nothing else.
	tb.click("pause", "#pause")
	tb.confirm("Pause room demo?", true)
	if c := lastCall("pause", 1); c.method != "POST" || c.path != "/v1/rooms/demo/pause" || len(c.body) != 0 {
		t.Errorf("pause sent %s %s %v", c.method, c.path, c.body)
	}
	tb.waitFor("the resume button", `!document.querySelector("#resume").hidden && document.querySelector("#pause").hidden`)
	tb.waitFor("the audit entry from the event stream", `document.querySelector("#audit-list li[data-audit]")`)

	tb.must("advance 2", chromedp.Evaluate[chromedp.Void](`document.querySelector("#advance-n").value = "2"`), chromedp.Click(chromedp.CSS("#advance")))
	tb.confirm("Advance the next 2 people", true)
	if c := lastCall("advance", 2); c.path != "/v1/rooms/demo/advance" || c.body["n"] != float64(2) {
		t.Errorf("advance sent %s %v", c.path, c.body)
	}
	tb.waitFor("the advance notice", `document.querySelector("#notice").textContent.includes("#8")`)
	tb.waitFor("the advance to finish", `!document.querySelector("#advance").disabled`)

	tb.click("queue everyone", "#queue-all")
	tb.confirm("back to the front of the line", true)
	tb.waitFor("queue-all to finish", `document.querySelector("#notice").textContent.includes("back in line")`)
	if c := lastCall("queue-all", 3); c.path != "/v1/rooms/demo/queue-all" {
		t.Errorf("queue-all sent %s %s", c.method, c.path)
	}

	// Find, then act on what was found.
	tb.must("find ticket 5", chromedp.SendKeys(chromedp.CSS("#find-q"), "5\n"))
	tb.waitFor("the found session", `document.querySelector('#found article[data-session="AAAAAAAAAAUsessionidforfive"]')`)
	if got := tb.text("#found"); !strings.Contains(got, "user-5") {
		t.Errorf("the found record reads %q, want all of it", got)
	}
	if ok, _ := tb.eval(`!!document.querySelector("#found .badge")`); ok {
		t.Errorf("a session in a room without tiers, never moved, has a badge: %q", tb.text("#found .badge"))
	}
	tb.must("move to front without a reason", chromedp.Click(chromedp.CSS("#front")))
	if ok, _ := tb.eval(`document.querySelector("#confirm").open`); ok {
		t.Errorf("move to front asked to confirm without a reason")
	}
	tb.must("move to front", chromedp.SendKeys(chromedp.CSS("#front-reason"), "VIP guest"), chromedp.Click(chromedp.CSS("#front")))
	tb.confirm("VIP guest", true)
	tb.waitFor("the move to front to finish", `document.querySelector("#notice").textContent.includes("first in line")`)
	if c := lastCall("front", 4); !strings.HasSuffix(c.path, "/sessions/AAAAAAAAAAUsessionidforfive/front") || c.body["reason"] != "VIP guest" {
		t.Errorf("front sent %s %v", c.path, c.body)
	}
	tb.click("revoke, cancelled", "#revoke")
	tb.confirm("Revoke session #5", false)
	tb.click("revoke", "#revoke")
	tb.confirm("Revoke session #5", true)
	tb.waitFor("the revoke to finish", `document.querySelector("#notice").textContent.includes("revoked")`)
	if c := lastCall("revoke", 5); c.method != "DELETE" {
		t.Errorf("revoke sent %s %s", c.method, c.path)
	}
	tb.waitFor("the revoke in the audit log", `document.querySelector("#audit-list").textContent.includes("revoke by console")`)

	// Edit the configuration: the changes are spelled out, the API's own
	// message shown when it refuses.
	tb.must("edit", chromedp.Click(chromedp.CSS("#edit")),
		chromedp.Evaluate[chromedp.Void](`document.querySelector("#cfg-capacity").value = "5"`), chromedp.Click(chromedp.CSS("#config-save")))
	tb.confirm("capacity: 3 → 5", true)
	if c := lastCall("config", 6); c.method != "PATCH" || c.body["capacity"] != float64(5) || len(c.body) != 1 {
		t.Errorf("the configuration sent %s %v, want a PATCH of capacity alone", c.method, c.body)
	}
	tb.waitFor("the form to close", `document.querySelector("#config-form").hidden`)
	tb.must("edit badly", chromedp.Click(chromedp.CSS("#edit")),
		chromedp.Evaluate[chromedp.Void](`document.querySelector("#cfg-capacity").value = "many"`), chromedp.Click(chromedp.CSS("#config-save")))
	tb.confirm(`capacity: 5 → "many"`, true)
	tb.waitFor("the API's message", `!document.querySelector("#error-box").hidden`)
	if got := tb.text("#error"); !strings.Contains(got, `"capacity"`) {
		t.Errorf("#error reads %q, want the API's message about capacity", got)
	}
	tb.shot("room-after")

	// A phone: nothing wider than the screen.
	if _, err := chromedp.Call(tb.Ctx, emulation.SetDeviceMetricsOverride, emulation.SetDeviceMetricsOverrideParams{
		Width: 375, Height: 800, DeviceScaleFactor: 2, Mobile: true}); err != nil {
		t.Fatal(err)
	}
	tb.waitFor("a phone-sized layout", `document.documentElement.scrollWidth <= window.innerWidth`)
	if dir := os.Getenv("WAITROOM_ARTIFACTS"); dir != "" {
		png, err := chromedp.Run(tb.Ctx, chromedp.CaptureScreenshot())
		if err == nil {
			_ = os.WriteFile(filepath.Join(dir, "console-phone.png"), png, 0o644)
		}
	}

	tb.click("sign out", "#signout")
	tb.waitFor("the sign-in form again", `!document.querySelector("#view-signin").hidden`)
	if ok, _ := tb.eval(`fetch("/admin/api/session").then(r => r.status === 401)`); !ok {
		t.Errorf("still signed in after signing out")
	}
	for _, p := range tb.ConsoleProblems() {
		// The wrong tokens' 401 and 429, the refused configuration's 400
		// and the check after sign-out are expected.
		if strings.Contains(p, "status of 401") || strings.Contains(p, "status of 400") || strings.Contains(p, "status of 429") {
			continue
		}
		t.Errorf("browser console: %s", p)
	}
}
