package web_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/internal/admit"
)

// TestBrowserClaimHeldPlace: a browser whose cookie names a held place
// waits on the room's page; when the place's turn comes the page turns
// into the claim page by itself, and clicking its button lets the person
// in (to the target). Then the claim link of a second held place, opened
// in another browser and clicked, does the same.
func TestBrowserClaimHeldPlace(t *testing.T) {
	s := newSite(t, siteOptions{})
	cfg := heldConfig()
	cfg.Capacity = 2
	s.room("held", cfg)
	b := newBrowser(t)
	blocker, ada, other := b.person("blocker"), b.person("ada"), b.person("other")
	page := s.srv.URL + "/r/held"

	blocker.navigate(page)
	second := s.hold("held", "second") // takes the other slot: invited at once
	if blocker.path() != "/target/" || second.Status != waitroom.StatusInvited {
		t.Fatalf("setup: blocker on %s, second place %s; want the target and invited", blocker.path(), second.Status)
	}
	held := s.hold("held", "mailto:ada@example.com")
	if held.Status != waitroom.StatusWaiting {
		t.Fatalf("held place: %s, want waiting", held.Status)
	}
	err := ada.do(5*time.Second, chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
		_, err := chromedp.Call(ctx, network.SetCookie, network.SetCookieParams{Name: admit.CookieName("held"), Value: held.ID, URL: s.srv.URL + "/"})
		return err
	}))
	if err != nil {
		t.Fatalf("setting the cookie: %v", err)
	}
	ada.navigate(page)
	if !ada.waitUntil(5*time.Second, `document.getElementById("waitroom") && document.getElementById("waitroom").dataset.live === "sse"`) {
		t.Fatalf("ada: the waiting page did not follow the place live")
	}
	if got := ada.text(`[data-waitroom="position"]`); got != "1" {
		t.Fatalf("ada: position %q, want 1", got)
	}

	// The blocker's slot frees: the page turns into the claim page.
	s.leave("held", blocker.cookie(s.srv.URL, admit.CookieName("held")))
	if !ada.waitUntil(5*time.Second, `!!document.querySelector('[data-claim="button"]')`) {
		t.Fatalf("ada: no claim button within 5s of the turn; page %s: %q", ada.path(), ada.text("main"))
	}
	if got := ada.text("h1"); got != "It’s your turn" {
		t.Errorf("ada: heading %q, want It’s your turn", got)
	}
	if got := s.status("held", held.ID); got.Status != waitroom.StatusInvited {
		t.Fatalf("the page claimed by itself: %s, want invited until the click", got.Status)
	}
	ada.screenshot("1-claim")
	if err := ada.do(5*time.Second, chromedp.Click(chromedp.CSS(`[data-claim="button"]`))); err != nil {
		t.Fatalf("ada: clicking the claim button: %v", err)
	}
	if !ada.waitUntil(5*time.Second, `location.pathname === "/target/"`) {
		t.Fatalf("ada: on %s after the click, want the target", ada.path())
	}
	if got := s.status("held", held.ID); got.Status != waitroom.StatusActive {
		t.Errorf("after the click the place is %s, want active", got.Status)
	}

	// The link itself, opened in a browser that never saw the room.
	other.navigate(s.srv.URL + waitroom.ClaimPath("held", second.ID))
	if got := other.text("h1"); got != "It’s your turn" {
		t.Fatalf("other: heading %q on the claim link, want It’s your turn", got)
	}
	if err := other.do(5*time.Second, chromedp.Click(chromedp.CSS(`[data-claim="button"]`))); err != nil {
		t.Fatalf("other: clicking the claim button: %v", err)
	}
	if !other.waitUntil(5*time.Second, `location.pathname === "/target/"`) {
		t.Fatalf("other: on %s after the click, want the target", other.path())
	}
	if got := other.cookie(s.srv.URL, admit.CookieName("held")); got != second.ID {
		t.Errorf("other: room cookie %q, want the claimed place", got)
	}
	for _, p := range []*person{blocker, ada, other} {
		if msgs := p.consoleProblems(); len(msgs) > 0 {
			t.Errorf("%s: the console has errors or warnings:\n%s", p.name, strings.Join(msgs, "\n"))
		}
	}
}
