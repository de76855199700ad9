package console_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/chromedp"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/internal/admit"
	"github.com/waitroom/waitroom/internal/browsertest"
	"github.com/waitroom/waitroom/internal/console"
	"github.com/waitroom/waitroom/internal/door"
	"github.com/waitroom/waitroom/internal/httpapi"
	"github.com/waitroom/waitroom/internal/roomstats"
	"github.com/waitroom/waitroom/internal/roomview"
	"github.com/waitroom/waitroom/memstore"
)

// newLiveSite serves the console and the real API (httpapi) over one
// memstore, as `waitroom serve` mounts them, with the room demo. Private
// webhook targets are refused, as by default; nothing is delivered (no
// deliverer runs), so the outbox holds what the test puts there.
func newLiveSite(t *testing.T) (*memstore.Store, *httptest.Server) {
	t.Helper()
	store := memstore.New()
	stats := roomstats.New(store, store, roomstats.Options{Sample: -1})
	c := console.New(console.Options{AdminToken: token, Ledger: store})
	mux := http.NewServeMux()
	mux.Handle(console.Prefix, c.Handler())
	rooms := roomview.New(roomview.Config{Store: store})
	dr := door.New(rooms, []byte("a test door secret of 32 bytes or more"))
	mux.Handle("/", httpapi.NewHandler(httpapi.Config{Store: store, AdminToken: token, Console: c, Stats: stats,
		Admit: admit.New(admit.Config{Store: store, Door: dr})}))
	srv := httptest.NewServer(mux)
	t.Cleanup(func() {
		srv.Close()
		rooms.Close()
		_ = stats.Close()
		_ = store.Close()
	})
	if _, _, err := store.PutRoom(context.Background(), "demo", waitroom.DefaultConfig(), time.Now()); err != nil {
		t.Fatal(err)
	}
	return store, srv
}

// TestWebhooksInBrowser drives the Webhooks panel in a real browser
// against the real API: a private URL refused with the API's words, a
// webhook added with its secret shown once (and copied), its health as the
// store counts it, a dead letter put in the store shown and replayed, a
// replacement confirmed, and the webhook deleted.
func TestWebhooksInBrowser(t *testing.T) {
	store, srv := newLiveSite(t)
	ctx := context.Background()
	tb := newTab(t)
	// Room for a loaded machine: every verdict waits for its condition
	// (or its evaluation) up to 20 s, none for a fixed time.
	const patience = 20 * time.Second
	tb.EvalTimeout = patience
	wait := func(what, cond string) {
		t.Helper()
		if !tb.WaitUntil(patience, cond) {
			tb.shot("failed")
			t.Fatalf("%s: %s did not hold within 20s (error: %q; panel: %q)", what, cond, tb.text("#error"),
				tb.text("#webhooks-status")+" | "+tb.text("#webhooks-list")+" | "+tb.text("#dead-list"))
		}
	}
	// holds reports whether a condition holds now.
	holds := func(cond string) bool {
		t.Helper()
		ok, err := tb.Holds(cond)
		if err != nil {
			t.Fatalf("evaluating %s: %v", cond, err)
		}
		return ok
	}
	str := func(expr string) string {
		t.Helper()
		return browsertest.MustEval[string](tb.Tab, patience, expr)
	}
	// confirm answers the confirmation dialog, which must spell out want.
	confirm := func(want string) {
		t.Helper()
		wait("the dialog for "+want, `document.querySelector("#confirm").open`)
		if got := tb.text("#confirm-title") + " " + tb.text("#confirm-text"); !strings.Contains(got, want) {
			t.Errorf("the dialog says %q, want it to spell out %q", got, want)
		}
		tb.must("confirming", chromedp.Click(chromedp.CSS("#confirm-ok")))
		wait("the dialog to close", `!document.querySelector("#confirm").open`)
	}
	click := func(what, sel string) {
		t.Helper()
		wait(what+": "+sel+" enabled", fmt.Sprintf(`document.querySelector(%q) && !document.querySelector(%q).disabled`, sel, sel))
		tb.must(what, chromedp.Click(chromedp.CSS(sel)))
	}
	hookList := func() []waitroom.Webhook {
		t.Helper()
		list, err := store.Webhooks(ctx, "demo")
		if err != nil {
			t.Fatal(err)
		}
		return list
	}
	waitStore := func(what string, ok func() bool) {
		t.Helper()
		deadline := time.Now().Add(patience)
		for !ok() {
			if time.Now().After(deadline) {
				tb.shot("failed")
				t.Fatalf("%s: not so in the store within 20s (error: %q)", what, tb.text("#error"))
			}
			time.Sleep(25 * time.Millisecond)
		}
	}

	tb.must("opening the console", chromedp.Navigate(srv.URL+"/admin/#/rooms/demo"))
	wait("the sign-in form", `!document.querySelector("#view-signin").hidden && document.activeElement.id === "token"`)
	tb.must("signing in", chromedp.SendKeys(chromedp.CSS("#token"), token+"\n"))
	wait("the live room view", `location.hash === "#/rooms/demo" && document.querySelector("#live-status").textContent === "Live."`)
	wait("the empty panel", `document.querySelector("#webhooks-status").textContent.startsWith("No webhooks")`)
	wait("no dead letters", `document.querySelector("#dead-status").textContent === "No dead letters."`)
	var types []string
	if err := json.Unmarshal([]byte(str(`JSON.stringify([...document.querySelectorAll('input[name="wh-event"]')].map(b => b.value))`)), &types); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(types, waitroom.HookTypes) {
		t.Errorf("the panel offers events %q, want waitroom.HookTypes %q", types, waitroom.HookTypes)
	}
	if !holds(`document.querySelector("#wh-all").checked && [...document.querySelectorAll('input[name="wh-event"]')].every(b => b.disabled)`) {
		t.Errorf("the form does not start with all events chosen")
	}

	// A loopback URL: the API refuses it, and says how to allow it.
	tb.must("a private URL", chromedp.Evaluate[chromedp.Void](`(() => {
		document.querySelector("#wh-name").value = "orders";
		document.querySelector("#wh-url").value = "http://127.0.0.1:9/hook";
	})()`))
	click("save a private URL", "#webhook-save")
	wait("the API's refusal", `!document.querySelector("#error-box").hidden`)
	if got := tb.text("#error"); !strings.Contains(got, "--webhook-allow-private") {
		t.Errorf("#error reads %q, want the API's refusal naming --webhook-allow-private", got)
	}
	if !holds(`document.querySelector("#webhook-secret-result").hidden`) {
		t.Errorf("a refused webhook shows a secret")
	}
	if l := hookList(); len(l) != 0 {
		t.Fatalf("the refused webhook is stored: %+v", l)
	}

	// A public URL, two event types, no secret: the server makes one,
	// and the panel shows it once.
	tb.must("a public URL", chromedp.Evaluate[chromedp.Void](`document.querySelector("#wh-url").value = "https://hooks.example.com/x"`))
	click("all events off", "#wh-all")
	click("session.joined", "#wh-ev-session-joined")
	click("session.ended", "#wh-ev-session-ended")
	click("save the webhook", "#webhook-save")
	wait("the secret", `!document.querySelector("#webhook-secret-result").hidden && document.querySelector("#webhook-secret").value !== ""`)
	waitStore("the webhook", func() bool { return len(hookList()) == 1 })
	h := hookList()[0]
	if h.Name != "orders" || h.URL != "https://hooks.example.com/x" || !reflect.DeepEqual(h.Events, []string{"session.joined", "session.ended"}) {
		t.Errorf("stored %+v, want orders → https://hooks.example.com/x for session.joined, session.ended", h)
	}
	secret := str(`document.querySelector("#webhook-secret").value`)
	if secret != h.Secret || !strings.HasPrefix(secret, "whsec_") {
		t.Errorf("the panel shows secret %q, the store has %q", secret, h.Secret)
	}
	if got := tb.text("#webhook-secret-note"); !strings.Contains(got, "not shown again") {
		t.Errorf("#webhook-secret-note reads %q, want a word that it is not shown again", got)
	}
	if !holds(`document.activeElement.id === "webhook-secret"`) {
		t.Errorf("the focus is not on the secret shown")
	}
	li := `#webhooks-list li[data-webhook="orders"]`
	wait("the webhook listed", fmt.Sprintf(`document.querySelector('%s .hook-url') && document.querySelector('%s .hook-url').textContent === "https://hooks.example.com/x"`, li, li))
	for sel, want := range map[string]string{
		li + " .hook-events":                   "session.joined, session.ended",
		li + ` .badge[data-health="idle"]`:     "nothing sent yet",
		li + ` dd[data-stat="pending"]`:        "0",
		li + ` dd[data-stat="last_delivered"]`: "never",
		li + ` dd[data-stat="last_error"]`:     "none",
		li + ` button[data-action="delete"]`:   "Delete…",
	} {
		if got := tb.text(sel); got != want {
			t.Errorf("%s reads %q, want %q", sel, got, want)
		}
	}
	wait("the audit entry", `document.querySelector("#audit-list").textContent.includes("webhook orders added: https://hooks.example.com/x, events session.joined, session.ended")`)
	if !holds(fmt.Sprintf(`!document.querySelector("#webhooks-list").textContent.includes(%q)`, secret)) {
		t.Errorf("the listing shows the secret")
	}
	tb.shot("webhooks-added")
	tb.audit("webhooks panel with a secret shown")

	// Copy: the clipboard holds the secret. Hide: it is gone from the page.
	if _, err := chromedp.CallBrowser(tb.Ctx, browser.SetPermission, browser.SetPermissionParams{
		Permission: &browser.PermissionDescriptor{Name: "clipboard-read"}, Setting: browser.PermissionSettingGranted, Origin: srv.URL}); err != nil {
		t.Fatalf("granting clipboard-read: %v", err)
	}
	click("copy the secret", "#webhook-secret-copy")
	wait("the copy notice", `document.querySelector("#notice").textContent === "Copied the secret."`)
	if !holds(fmt.Sprintf(`navigator.clipboard.readText().then(t => t === %q)`, secret)) {
		t.Errorf("the clipboard does not hold the secret")
	}
	click("hide the secret", "#webhook-secret-hide")
	wait("the secret hidden", `document.querySelector("#webhook-secret-result").hidden && document.querySelector("#webhook-secret").value === ""`)
	if !holds(fmt.Sprintf(`!document.documentElement.outerHTML.includes(%q) && !document.querySelector("#webhook-secret").value`, secret)) {
		t.Errorf("the secret is still in the page after hiding it")
	}

	// A join puts a session.joined in the outbox; the health shows it.
	if _, err := store.Join(ctx, "demo", "user-1", time.Now()); err != nil {
		t.Fatal(err)
	}
	click("refresh", "#webhooks-refresh")
	wait("one pending", fmt.Sprintf(`document.querySelector('%s dd[data-stat="pending"]').textContent === "1"`, li))

	// The delivery fails for good: a dead letter.
	var ds []waitroom.Delivery
	waitStore("a delivery to claim", func() bool {
		var err error
		ds, err = store.ClaimDeliveries(ctx, "demo", "orders", time.Now(), time.Minute, 10)
		if err != nil {
			t.Fatal(err)
		}
		return len(ds) > 0
	})
	if len(ds) != 1 || ds[0].Message.Type != waitroom.HookSessionJoined {
		t.Fatalf("claimed %+v, want one session.joined", ds)
	}
	id := ds[0].Message.ID
	if err := store.SettleDeliveries(ctx, "demo", []waitroom.DeliveryOutcome{{Hook: "orders", ID: id, Dead: true,
		Error: "HTTP 500 Internal Server Error"}}, time.Now()); err != nil {
		t.Fatal(err)
	}
	click("refresh", "#webhooks-refresh")
	letter := fmt.Sprintf(`#dead-list li[data-dead=%q][data-webhook="orders"]`, id)
	wait("the dead letter", fmt.Sprintf(`document.querySelector('%s')`, letter))
	got := tb.text(letter)
	for _, want := range []string{"session.joined", "to webhook orders", "1 try", "last error: HTTP 500 Internal Server Error", id, `"key":"user-1"`} {
		if !strings.Contains(got, want) {
			t.Errorf("the dead letter reads %q, want %q in it", got, want)
		}
	}
	if got := tb.text("#dead-status"); got != "1 dead letter." {
		t.Errorf("#dead-status reads %q, want 1 dead letter.", got)
	}
	for sel, want := range map[string]string{
		li + ` .badge[data-health="failing"]`: "failing",
		li + ` dd[data-stat="pending"]`:       "0",
		li + ` dd[data-stat="dead"]`:          "1",
		li + ` dd[data-stat="failed"]`:        "1",
	} {
		if got := tb.text(sel); got != want {
			t.Errorf("%s reads %q, want %q", sel, got, want)
		}
	}
	if got := tb.text(li + ` dd[data-stat="last_error"]`); !strings.HasPrefix(got, "HTTP 500 Internal Server Error (") {
		t.Errorf("the last error reads %q, want the error and its time", got)
	}
	tb.shot("webhooks-dead")
	tb.audit("webhooks panel with a dead letter")
	tb.phone("webhooks panel")

	// Replay it: pending again, no dead letters.
	click("replay the letter", letter+` button[data-action="replay"]`)
	wait("the letter replayed", `document.querySelector("#dead-status").textContent === "No dead letters." && !document.querySelector("#dead-list li")`)
	wait("the replay notice", `document.querySelector("#notice").textContent.startsWith("Replaying 1 delivery")`)
	if dead, _, err := store.DeadLetters(ctx, "demo", waitroom.Page{}); err != nil || len(dead) != 0 {
		t.Errorf("after the replay the store has dead letters %+v (%v)", dead, err)
	}
	wait("pending again", fmt.Sprintf(`document.querySelector('%s dd[data-stat="pending"]').textContent === "1"`, li))
	wait("the replay in the audit log", `document.querySelector("#audit-list").textContent.includes("1 dead letter replayed")`)
	if !holds(`document.querySelector("#dead-replay-all").hidden`) {
		t.Errorf("Replay all is offered with no dead letters")
	}

	// Replace it, by Edit, with a secret of one's own: confirmed first.
	const mine = "whsec_MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY="
	click("edit", li+` button[data-action="edit"]`)
	wait("the form filled", `document.querySelector("#wh-name").value === "orders" && document.querySelector("#wh-url").value === "https://hooks.example.com/x" &&
		document.querySelector("#wh-ev-session-joined").checked && document.querySelector("#wh-ev-session-ended").checked && !document.querySelector("#wh-all").checked`)
	tb.must("a secret of one's own", chromedp.Evaluate[chromedp.Void](`document.querySelector("#wh-secret").value = "`+mine+`"`))
	click("save the replacement", "#webhook-save")
	confirm("Replace webhook orders of room demo?")
	wait("the secret given", fmt.Sprintf(`!document.querySelector("#webhook-secret-result").hidden && document.querySelector("#webhook-secret").value === %q`, mine))
	waitStore("the new secret", func() bool { l := hookList(); return len(l) == 1 && l[0].Secret == mine })
	if !holds(`document.querySelector("#wh-secret").value === ""`) {
		t.Errorf("the secret entered stays in the form after saving")
	}

	// Delete it: confirmed, gone from the store and the page.
	click("delete", li+` button[data-action="delete"]`)
	confirm("Delete webhook orders of room demo?")
	wait("the webhook gone", `!document.querySelector('#webhooks-list li') && document.querySelector("#webhooks-status").textContent.startsWith("No webhooks")`)
	if l := hookList(); len(l) != 0 {
		t.Errorf("after deleting, the store has %+v", l)
	}
	wait("the deletion in the audit log", `document.querySelector("#audit-list").textContent.includes("webhook orders deleted")`)
	if !holds(`document.activeElement.id === "webhooks-refresh"`) {
		t.Errorf("after deleting, the focus is on %q, want #webhooks-refresh", str(activeJS))
	}
	tb.audit("webhooks panel, emptied")

	for _, p := range tb.ConsoleProblems() {
		// The refused private URL's 400 is expected, and so is the 401 of
		// the check whether the page is signed in, before it is.
		if strings.Contains(p, "status of 400") || (strings.Contains(p, "status of 401") && strings.Contains(p, "/admin/api/session")) {
			continue
		}
		t.Errorf("browser console: %s", p)
	}
}
