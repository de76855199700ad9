package console_test

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/waitroom/waitroom"
)

// TestHoldsInBrowser drives "hold my place" in a real browser against the
// real API over a memstore: the room editor refuses wrong hold fields with
// messages that name them (and nothing is sent), marks the field the
// API's refusal names, and saves hold_places, claim_window and notify_at;
// the room view shows them; held places are listed with their contact;
// an invited one shows the time it has left to claim, counting down; and
// the history shows it unclaimed once its window passed.
func TestHoldsInBrowser(t *testing.T) {
	store, srv := newLiveSite(t)
	ctx := context.Background()
	tb := newTab(t)
	// Room for a loaded machine: every verdict waits for its condition up
	// to 20 s, none for a fixed time.
	const patience = 20 * time.Second
	tb.EvalTimeout = patience
	wait := func(what, cond string) {
		t.Helper()
		if !tb.WaitUntil(patience, cond) {
			tb.shot("failed")
			t.Fatalf("%s: %s did not hold within 20s (error: %q; lists: %q; found: %q)", what, cond, tb.text("#error"),
				tb.text("#line-list")+" | "+tb.text("#history-list"), tb.text("#found"))
		}
	}
	holds := func(cond string) bool {
		t.Helper()
		ok, err := tb.Holds(cond)
		if err != nil {
			t.Fatalf("evaluating %s: %v", cond, err)
		}
		return ok
	}
	click := func(what, sel string) {
		t.Helper()
		wait(what+": "+sel+" enabled", fmt.Sprintf(`document.querySelector(%q) && !document.querySelector(%q).disabled`, sel, sel))
		tb.must(what, chromedp.Click(chromedp.CSS(sel)))
	}
	set := func(id, value string) {
		t.Helper()
		tb.must("setting "+id, chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`document.querySelector("#%s").value = %q`, id, value)))
	}
	room := func() waitroom.Room {
		t.Helper()
		r, err := store.Room(ctx, "demo")
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	find := func(q string) {
		t.Helper()
		set("find-q", q)
		click("find "+q, "#find-go")
	}

	tb.openSignedIn(srv.URL)
	wait("the held places of a room without them", `document.querySelector("#room-holds").textContent === "Hold placesnoNotify atoff"`)

	// Wrong values: the page names the field, marks it, gives it the
	// focus, and sends nothing.
	click("edit", "#edit")
	wait("the form", `!document.querySelector("#config-form").hidden`)
	if !holds(`!document.querySelector("#cfg-hold_places").checked && document.querySelector("#cfg-claim_window").value === "" &&
		document.querySelector("#cfg-notify_at").value === ""`) {
		t.Errorf("the form of a room without held places is not empty for them")
	}
	click("hold places", "#cfg-hold_places")
	refused := func(field, value, want string) {
		t.Helper()
		set("cfg-"+field, value)
		click("save "+field+" "+value, "#config-save")
		wait("the page's message for "+field, `!document.querySelector("#error-box").hidden`)
		if got := tb.text("#error"); !strings.Contains(got, want) {
			t.Errorf("%s %q: #error reads %q, want %q", field, value, got, want)
		}
		sel := "#cfg-" + field
		wait(field+" marked", fmt.Sprintf(`document.activeElement === document.querySelector(%q) && document.querySelector(%q).getAttribute("aria-invalid") === "true"`, sel, sel))
		if holds(`document.querySelector("#confirm").open`) {
			t.Fatalf("%s %q: the page asked to confirm a configuration it should refuse", field, value)
		}
	}
	refused("claim_window", "soon", "Claim window: \u201csoon\u201d is not a duration")
	// Forms Go's time.ParseDuration reads but the API refuses: the page says so first.
	refused("claim_window", "5.s", "Claim window: \u201c5.s\u201d is not a duration")
	refused("claim_window", ".5m", "Claim window: \u201c.5m\u201d is not a duration")
	refused("claim_window", "500ms", "Claim window: enter at least 1s")
	set("cfg-claim_window", "")
	refused("notify_at", "5000", "Notify at: enter a position from 1 to 1,000")
	refused("notify_at", "two", "Notify at: enter a position from 1 to 1,000")
	// Typing into the field clears its mark.
	set("cfg-notify_at", "")
	tb.must("typing a position", chromedp.SendKeys(chromedp.CSS("#cfg-notify_at"), "2"))
	wait("the mark cleared", `!document.querySelector("#cfg-notify_at").hasAttribute("aria-invalid")`)
	if r := room(); r.HoldPlaces || r.NotifyAt != 0 {
		t.Fatalf("the refused values reached the store: %+v", r.RoomConfig)
	}

	// The API's refusal: the field it names is marked.
	set("cfg-capacity", "-5")
	click("save a negative capacity", "#config-save")
	tb.confirm("capacity: 100 → -5", true)
	wait("the API's message", `!document.querySelector("#error-box").hidden && document.querySelector("#error").textContent.includes("capacity")`)
	wait("capacity marked", `document.activeElement.id === "cfg-capacity" && document.querySelector("#cfg-capacity").getAttribute("aria-invalid") === "true"`)

	// Saved: an empty claim window is the server's 10m.
	set("cfg-capacity", "1")
	click("save held places", "#config-save")
	wait("the confirmation", `document.querySelector("#confirm").open`)
	changes := tb.text("#confirm-changes")
	for _, want := range []string{"hold_places: (none) → true", "notify_at: (none) → 2", "capacity: 100 → 1"} {
		if !strings.Contains(changes, want) {
			t.Errorf("the dialog lists %q, want %q in it", changes, want)
		}
	}
	if strings.Contains(changes, "claim_window") {
		t.Errorf("the dialog lists %q: an empty claim window is not sent", changes)
	}
	tb.confirm("Change the configuration of room demo?", true)
	wait("the form closed", `document.querySelector("#config-form").hidden`)
	if r := room(); !r.HoldPlaces || r.ClaimWindow != waitroom.DefaultClaimWindow || r.NotifyAt != 2 || r.Capacity != 1 {
		t.Fatalf("the store has %+v, want hold_places, claim_window 10m, notify_at 2, capacity 1", r.RoomConfig)
	}
	wait("the held places shown", `document.querySelector("#room-holds").textContent.includes("Claim window10m")`)
	if got := tb.text("#room-holds"); got != "Hold placesyes: backends may join people with a contactClaim window10mNotify atposition 2 (session.near)" {
		t.Errorf("#room-holds reads %q", got)
	}
	click("edit again", "#edit")
	if !holds(`document.querySelector("#cfg-hold_places").checked && document.querySelector("#cfg-claim_window").value === "10m" &&
		document.querySelector("#cfg-notify_at").value === "2" && !document.querySelector("[aria-invalid]")`) {
		t.Errorf("the form does not show the held places saved, unmarked")
	}
	click("cancel", "#config-cancel")

	// A walk-in takes the one slot; two held places wait behind it.
	now := time.Now()
	if s, err := store.Join(ctx, "demo", "walk-in", now); err != nil || s.Status != waitroom.StatusActive {
		t.Fatalf("the walk-in: %+v %v", s, err)
	}
	ana, err := store.JoinWith(ctx, "demo", waitroom.JoinRequest{Contact: "ana@example.com"}, now)
	if err != nil {
		t.Fatal(err)
	}
	bob, err := store.JoinWith(ctx, "demo", waitroom.JoinRequest{Contact: "+15551234567"}, now)
	if err != nil {
		t.Fatal(err)
	}
	click("refresh the lists", "#sessions-refresh")
	anaLine := fmt.Sprintf(`#line-list li[data-session=%q]`, ana.ID)
	bobLine := fmt.Sprintf(`#line-list li[data-session=%q]`, bob.ID)
	wait("the held places in line", fmt.Sprintf(`document.querySelector('%s') && document.querySelector('%s')`, anaLine, bobLine))
	for sel, want := range map[string]string{
		anaLine + " strong":            "position 1",
		anaLine + " .contact":          "ana@example.com",
		anaLine + " .badge[data-held]": "held place",
		bobLine + " strong":            "position 2",
		bobLine + " .contact":          "+15551234567",
		"#line-status":                 "2 waiting.",
	} {
		if got := tb.text(sel); got != want {
			t.Errorf("%s reads %q, want %q", sel, got, want)
		}
	}

	// Open one from the list: found, with the focus on the results.
	click("open ana", anaLine+` button[data-action="open"]`)
	anaFound := fmt.Sprintf(`#found article[data-session=%q]`, ana.ID)
	wait("ana found", fmt.Sprintf(`document.querySelector('%s .badge[data-held]') && document.activeElement.id === "find-title"`, anaFound))
	if got := tb.text(anaFound + ` dd[data-field="contact"]`); got != "ana@example.com" {
		t.Errorf("ana's record shows contact %q", got)
	}

	// The walk-in is revoked: ana's turn comes, and she is invited.
	find("walk-in")
	wait("the walk-in found", `document.querySelector("#found").textContent.includes("walk-in") && !document.querySelector("#session-actions").hidden`)
	click("revoke", "#revoke")
	tb.confirm("Revoke session #1", true)
	wait("the revoke done", `document.querySelector("#notice").textContent.includes("revoked")`)
	find(fmt.Sprint(ana.Ticket))
	badge := anaFound + " .badge[data-invited]"
	wait("ana invited", fmt.Sprintf(`document.querySelector('%s')`, badge))
	first := tb.text(badge)
	if !regexp.MustCompile(`^invited: (9m [0-5]\ds|10m 00s) left to claim$`).MatchString(first) {
		t.Errorf("the invitation reads %q, want the time left of a 10m window", first)
	}
	wait("the time left counting down", fmt.Sprintf(`document.querySelector('%s').textContent !== %q`, badge, first))
	if got := tb.text(anaFound + ` dd[data-field="status"]`); !strings.HasPrefix(got, "invited (its turn came") {
		t.Errorf("ana's status reads %q", got)
	}
	if got := tb.text(anaFound + ` dd[data-field="claim_by"]`); got == "" || strings.Contains(got, "T") {
		t.Errorf("ana's claim_by reads %q, want a local time", got)
	}
	if !holds(`document.querySelector("#extend").disabled`) {
		t.Errorf("an invited session may be extended")
	}
	tb.shot("holds-invited")
	tb.audit("an invited session")

	// Her window passes unclaimed (the store is told the time 11 minutes
	// on): she ends, and bob is invited in her slot.
	if _, err := store.Sweep(ctx, "demo", time.Now().Add(11*time.Minute)); err != nil {
		t.Fatal(err)
	}
	click("refresh the lists", "#sessions-refresh")
	anaGone := fmt.Sprintf(`#history-list li[data-session=%q][data-status="expired"][data-reason="unclaimed"]`, ana.ID)
	wait("ana unclaimed in the history", fmt.Sprintf(`document.querySelector('%s') && !document.querySelector('%s')`, anaGone, bobLine))
	if got := tb.text(anaGone); !strings.Contains(got, fmt.Sprintf("#%d expired · unclaimed (invited, and not claimed within the claim window)", ana.Ticket)) {
		t.Errorf("the history reads %q, want ana expired, unclaimed", got)
	}
	if got := tb.text("#line-status"); got != "Nobody is waiting." {
		t.Errorf("#line-status reads %q", got)
	}
	find(fmt.Sprint(ana.Ticket))
	wait("ana ended", fmt.Sprintf(`document.querySelector('%s dd[data-field="end_reason"]')`, anaFound))
	if got := tb.text(anaFound + ` dd[data-field="end_reason"]`); got != "unclaimed (invited, and not claimed within the claim window)" {
		t.Errorf("ana's end_reason reads %q", got)
	}
	if holds(fmt.Sprintf(`!!document.querySelector('%s .badge')`, anaFound)) {
		t.Errorf("an ended session has a badge: %q", tb.text(anaFound+" .badge"))
	}
	find(fmt.Sprint(bob.Ticket))
	wait("bob invited", fmt.Sprintf(`document.querySelector('#found article[data-session=%q] .badge[data-invited]')`, bob.ID))
	tb.shot("holds-history")
	tb.audit("the line and history")
	tb.phone("the line and history")

	for _, p := range tb.ConsoleProblems() {
		// The refused capacity's 400 is expected, and so is the 401 of the
		// check whether the page is signed in, before it is.
		if strings.Contains(p, "status of 400") || (strings.Contains(p, "status of 401") && strings.Contains(p, "/admin/api/session")) {
			continue
		}
		t.Errorf("browser console: %s", p)
	}
}
