package console_test

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/chromedp"

	"github.com/waitroom/waitroom"
)

// inviteKey is an Ed25519 public key in base64, as invite_keys holds.
const inviteKey = "11qYAYKxCrfVS/7TyWQHOg7hcvPapiMlrwIaaPcHURo="

// tieredConfig gives the fake's room two tiers, weighted, invite-only,
// with an invite key and a proof-of-work challenge.
func tieredConfig(c *waitroom.RoomConfig) {
	c.Tiers = []waitroom.Tier{{Name: "presale", Share: 0.5}, {Name: "general"}}
	c.TierPolicy = waitroom.TierWeighted
	c.InviteOnly = true
	c.InviteKeys = []string{inviteKey}
	c.Challenge = waitroom.ChallengePoW
	c.ChallengeMin = 1000
	c.ChallengeMax = 100000
}

// openSignedIn opens the console at the room demo and signs in.
func (tb *tab) openSignedIn(url string) {
	tb.t.Helper()
	tb.must("opening the console", chromedp.Navigate(url+"/admin/#/rooms/demo"))
	tb.waitFor("the sign-in form", `!document.querySelector("#view-signin").hidden && document.activeElement.id === "token"`)
	tb.must("signing in", chromedp.SendKeys(chromedp.CSS("#token"), token+"\n"))
	tb.waitFor("the live room view", `location.hash === "#/rooms/demo" && document.querySelector("#live-status").textContent === "Live."`)
}

// jsonOf evaluates expr and decodes its JSON into v.
func (tb *tab) jsonOf(what, expr string, v any) {
	tb.t.Helper()
	if err := json.Unmarshal([]byte(tb.str("JSON.stringify("+expr+")")), v); err != nil {
		tb.t.Fatalf("%s: %v", what, err)
	}
}

// TestTiersAndInvitesInBrowser checks, in a real browser, what the page
// shows of a room with tiers (its door settings, the tier of a session,
// a move told from a tiered place), that the Invites panel makes invites
// and shows their links and the API's errors, and that saving the
// configuration keeps the door's fields.
func TestTiersAndInvitesInBrowser(t *testing.T) {
	_, api, srv := newPageSite(t)
	api.configure(tieredConfig)
	tb := newTab(t)
	var made int // requests the page made so far
	nextCall := func(what string) call {
		t.Helper()
		made++
		deadline := time.Now().Add(5 * time.Second)
		for {
			if calls := api.callsSoFar(); len(calls) >= made {
				return calls[made-1]
			}
			if time.Now().After(deadline) {
				tb.shot("failed")
				t.Fatalf("%s: the page did not make request %d (errors: %q)", what, made, tb.text("#error"))
			}
			time.Sleep(25 * time.Millisecond)
		}
	}

	tb.openSignedIn(srv.URL)
	tb.waitFor("the door settings", `document.querySelector("#room-door").textContent.includes("presale")`)
	door := tb.text("#room-door")
	for _, want := range []string{"presale (50%) › general", "weighted by share", "Invite onlyyes", "Invite keys1 key",
		"proof of work, difficulty 1,000 to 100,000"} {
		if !strings.Contains(door, want) {
			t.Errorf("#room-door reads %q, want %q in it", door, want)
		}
	}

	// The tier of each session found; a move only where place < 0.
	tb.must("find the tiered sessions", chromedp.SendKeys(chromedp.CSS("#find-q"), "tier\n"))
	seven := `#found article[data-session="AAAAAAAAAAcsessionidforseven"]`
	eight := `#found article[data-session="AAAAAAAAAAgsessionidforeight"]`
	tb.waitFor("the found sessions", fmt.Sprintf(`document.querySelector('%s') && document.querySelector('%s')`, seven, eight))
	for _, c := range []struct{ sel, want string }{
		{seven + ` .badge[data-tier="presale"]`, "tier presale"},
		{eight + ` .badge[data-tier="general"]`, "tier general"},
		{eight + ` .badge[data-moved]`, "moved by an operator"},
	} {
		if got := tb.text(c.sel); got != c.want {
			t.Errorf("%s reads %q, want %q", c.sel, got, c.want)
		}
	}
	if ok, _ := tb.eval(`!!document.querySelector('` + seven + ` .badge[data-moved]')`); ok {
		t.Errorf("the session with place 7 (its tier's place) is shown as moved")
	}
	tb.shot("tiers-found")

	// The tier select offers the room's tiers, the lowest by default.
	var options []string
	tb.jsonOf("the tier options", `[...document.querySelectorAll("#inv-tier option")].map(o => o.value + "=" + o.textContent)`, &options)
	if want := []string{"=lowest tier (general)", "presale=presale", "general=general"}; !reflect.DeepEqual(options, want) {
		t.Errorf("the tier select offers %q, want %q", options, want)
	}
	if ok, _ := tb.eval(`document.querySelector("#inv-tier-field").hidden`); ok {
		t.Errorf("the tier select is hidden in a room with tiers")
	}

	// Make three presale invites, two joins each, for 72 hours.
	tb.must("filling the invites form", chromedp.Evaluate[chromedp.Void](`(() => {
		document.querySelector("#inv-count").value = "3";
		document.querySelector("#inv-tier").value = "presale";
		document.querySelector("#inv-uses").value = "2";
		document.querySelector("#inv-expiry").value = "72h";
	})()`))
	tb.click("make invites", "#invites-make")
	c := nextCall("make invites")
	if c.method != "POST" || c.path != "/v1/rooms/demo/invites" ||
		!reflect.DeepEqual(c.body, map[string]any{"count": 3.0, "tier": "presale", "uses": 2.0, "expiry": "72h"}) {
		t.Errorf("make invites sent %s %s %v, want POST /v1/rooms/demo/invites {count 3, tier presale, uses 2, expiry 72h}", c.method, c.path, c.body)
	}
	tb.waitFor("the links", `!document.querySelector("#invites-result").hidden`)
	var links []string
	tb.jsonOf("the links", `document.querySelector("#invites-links").value.split("\n")`, &links)
	if len(links) != 3 {
		t.Errorf("the links box holds %q, want 3 links", links)
	}
	for i, l := range links {
		if want := fmt.Sprintf("%s/r/demo#invite=wr1.fake%04d", srv.URL, i+1); l != want {
			t.Errorf("link %d is %q, want %q (absolute)", i+1, l, want)
		}
	}
	if ok, _ := tb.eval(`document.activeElement.id === "invites-links" && document.querySelector("#invites-links").readOnly`); !ok {
		t.Errorf("after making invites the focus is not on the read-only links box")
	}
	if got := tb.text("#invites-summary"); !strings.Contains(got, "3 invites for tier presale, good for 2 joins each until") {
		t.Errorf("#invites-summary reads %q", got)
	}
	tb.waitFor("the invites in the audit log", `document.querySelector("#audit-list").textContent.includes("3 presale invites, 2 uses each, until")`)
	if ok, _ := tb.eval(`document.querySelector("#audit-list li").querySelector("code.detail") === null`); !ok {
		t.Errorf("the invites entry shows its detail as JSON too: %q", tb.text("#audit-list li"))
	}
	tb.shot("invites")

	// Copy: the clipboard holds the links.
	if _, err := chromedp.CallBrowser(tb.Ctx, browser.SetPermission, browser.SetPermissionParams{
		Permission: &browser.PermissionDescriptor{Name: "clipboard-read"}, Setting: browser.PermissionSettingGranted, Origin: srv.URL}); err != nil {
		t.Fatalf("granting clipboard-read: %v", err)
	}
	tb.click("copy", "#invites-copy")
	tb.waitFor("the copy notice", `document.querySelector("#notice").textContent === "Copied 3 links."`)
	if ok, err := tb.eval(`navigator.clipboard.readText().then(t => t === document.querySelector("#invites-links").value)`); !ok {
		t.Errorf("the clipboard does not hold the links (%v)", err)
	}

	// The lowest tier: no tier sent; the API's own defaults.
	tb.must("one invite, lowest tier", chromedp.Evaluate[chromedp.Void](`(() => {
		document.querySelector("#inv-count").value = "1";
		document.querySelector("#inv-tier").value = "";
		document.querySelector("#inv-uses").value = "1";
		document.querySelector("#inv-expiry").value = "";
	})()`))
	tb.click("make one invite", "#invites-make")
	if c := nextCall("one invite"); !reflect.DeepEqual(c.body, map[string]any{"count": 1.0, "uses": 1.0}) {
		t.Errorf("one invite for the lowest tier sent %v, want {count 1, uses 1}", c.body)
	}
	tb.waitFor("one link", `document.querySelector("#invites-summary").textContent.startsWith("1 invite for the lowest tier, good for 1 join until")`)
	tb.waitFor("its audit entry", `document.querySelector("#audit-list li").textContent.includes("1 lowest-tier invite, 1 use, until")`)

	// The API refuses: its message is shown.
	tb.must("a bad expiry", chromedp.Evaluate[chromedp.Void](`document.querySelector("#inv-expiry").value = "soon"`))
	tb.click("make an invite with a bad expiry", "#invites-make")
	nextCall("bad expiry")
	tb.waitFor("the API's message", `!document.querySelector("#error-box").hidden`)
	if got := tb.text("#error"); !strings.Contains(got, `expiry is a duration such as "72h"`) {
		t.Errorf("#error reads %q, want the API's message about expiry", got)
	}

	// A configuration save keeps the door's fields it did not change.
	tb.must("edit the capacity", chromedp.Click(chromedp.CSS("#edit")),
		chromedp.Evaluate[chromedp.Void](`document.querySelector("#cfg-capacity").value = "4"`), chromedp.Click(chromedp.CSS("#config-save")))
	tb.confirm("capacity: 3 → 4", true)
	if got := tb.text("#confirm-changes"); strings.Contains(got, "tier") || strings.Contains(got, "invite") || strings.Contains(got, "challenge") {
		t.Errorf("the capacity change lists %q, want the capacity alone", got)
	}
	// A PATCH of the capacity alone: the API keeps the rest.
	c = nextCall("save the capacity")
	if c.method != "PATCH" || !reflect.DeepEqual(c.body, map[string]any{"capacity": 4.0}) {
		t.Errorf("the capacity change sent %s %v, want a PATCH of {capacity 4}", c.method, c.body)
	}
	api.mu.Lock()
	kept := api.room.RoomConfig
	api.mu.Unlock()
	if kept.Capacity != 4 || len(kept.Tiers) != 2 || kept.TierPolicy != waitroom.TierWeighted || !kept.InviteOnly ||
		len(kept.InviteKeys) != 1 || kept.Challenge != "pow" || kept.ChallengeMin != 1000 || kept.ChallengeMax != 100000 {
		t.Errorf("the room after the capacity change: %+v, want the door's fields kept", kept)
	}
	tb.waitFor("the form to close", `document.querySelector("#config-form").hidden`)

	// Editing the tiers: a new highest tier with a share in percent.
	tb.must("edit the tiers", chromedp.Click(chromedp.CSS("#edit")),
		chromedp.Evaluate[chromedp.Void](`document.querySelector("#cfg-tiers").value = "vip 20%\npresale 0.5\ngeneral"`))
	tb.shot("tiers-config")
	tb.must("save the tiers", chromedp.Click(chromedp.CSS("#config-save")))
	tb.confirm(`tiers: [{"name":"presale","share":0.5},{"name":"general"}] → [{"name":"vip","share":0.2},{"name":"presale","share":0.5},{"name":"general"}]`, true)
	c = nextCall("save the tiers")
	if got, _ := json.Marshal(c.body["tiers"]); string(got) != `[{"name":"vip","share":0.2},{"name":"presale","share":0.5},{"name":"general"}]` {
		t.Errorf("the saved tiers are %s", got)
	}
	tb.waitFor("the new tier offered for invites", `document.querySelector('#inv-tier option[value="vip"]')`)
	tb.waitFor("the new tier shown", `document.querySelector("#room-door").textContent.includes("vip (20%) › presale (50%) › general")`)

	for _, p := range tb.ConsoleProblems() {
		// The refused expiry's 400 is expected, and so is the 401 of the
		// check whether the page is signed in, before it is.
		if strings.Contains(p, "status of 400") || (strings.Contains(p, "status of 401") && strings.Contains(p, "/admin/api/session")) {
			continue
		}
		t.Errorf("browser console: %s", p)
	}
}
