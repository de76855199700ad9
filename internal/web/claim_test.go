package web_test

import (
	"context"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/internal/admit"
	"github.com/waitroom/waitroom/internal/web"
)

// heldConfig is a room of one slot, with a target, that holds places for
// ten minutes.
func heldConfig() waitroom.RoomConfig {
	c := config(1, "/target/")
	c.HoldPlaces, c.ClaimWindow = true, waitroom.Duration(10*time.Minute)
	return c
}

// hold joins a held place in room as a trusted backend would.
func (s *site) hold(room, contact string) waitroom.Session {
	s.t.Helper()
	h, err := s.store.JoinWith(context.Background(), room, waitroom.JoinRequest{Contact: contact}, time.Now())
	if err != nil {
		s.t.Fatalf("held join: %v", err)
	}
	return h
}

// status reads a session without the page (the store, as the API would).
func (s *site) status(room, id string) waitroom.Session {
	s.t.Helper()
	got, err := s.store.Store.Session(context.Background(), room, id, time.Now())
	if err != nil {
		s.t.Fatalf("reading session: %v", err)
	}
	return got
}

// claimForm is the claim button's form as the page renders it.
func claimForm(room, id string) string {
	return `<form method="post" action="` + waitroom.ClaimPath(room, id) + `"`
}

func TestClaimPrefix(t *testing.T) {
	if p := waitroom.ClaimPath("shop", "abc"); !strings.HasPrefix(p, web.ClaimPrefix) {
		t.Fatalf("waitroom.ClaimPath = %q, want it under web.ClaimPrefix %q", p, web.ClaimPrefix)
	}
	if !slices.Contains(web.Prefixes(web.Config{}), web.ClaimPrefix) {
		t.Fatalf("web.Prefixes = %v, want it to route %s to the handler", web.Prefixes(web.Config{}), web.ClaimPrefix)
	}
}

// TestClaimFlow follows a held place through its claim page: while it
// waits the page shows its position and no button; when its turn comes
// the page offers the button, and reading the page (as a mail scanner
// would) claims nothing; the button's POST claims it, sets the room's
// cookie and sends the browser to the waiting page, which sends it to the
// target.
func TestClaimFlow(t *testing.T) {
	s := newSite(t, siteOptions{})
	s.room("h", heldConfig())
	first := s.visitor()
	if r := s.get(first, "/r/h"); r.status != http.StatusSeeOther {
		t.Fatalf("first visitor: %d, want 303 to the target", r.status)
	}
	held := s.hold("h", "mailto:ada@example.com")
	path := waitroom.ClaimPath("h", held.ID)
	person := s.visitor() // the browser the link is opened in: no cookie yet

	// Waiting: its position, no button, a page that reloads to catch the turn.
	r := s.get(person, path)
	if r.status != http.StatusOK || !strings.Contains(r.body, "It’s not your turn yet") || between(r.body, `data-claim="position">`, "<") != "1" {
		t.Fatalf("claim page while waiting: %d, want 200 with the position 1 and \"not your turn yet\":\n%s", r.status, r.body)
	}
	if strings.Contains(r.body, "<form") || !strings.Contains(r.body, `<meta http-equiv="refresh" content="30">`) {
		t.Errorf("claim page while waiting: want no form and a reload every 30s:\n%s", r.body)
	}
	if !strings.Contains(r.body, "You are number 1 in line.") {
		t.Errorf("claim page while waiting lacks the position sentence:\n%s", r.body)
	}
	r = s.do(person, http.MethodPost, path)
	if r.status != http.StatusConflict || !strings.Contains(r.body, "It’s not your turn yet") {
		t.Fatalf("claim of a waiting place: %d, want 409 with the waiting page:\n%s", r.status, r.body)
	}
	if r.header.Get("Set-Cookie") != "" || s.status("h", held.ID).Status != waitroom.StatusWaiting {
		t.Fatalf("a refused claim set a cookie (%q) or changed the place (%s)", r.header.Get("Set-Cookie"), s.status("h", held.ID).Status)
	}

	// Its turn: the button.
	s.leave("h", s.cookie(first, admit.CookieName("h")))
	inv := s.status("h", held.ID)
	if inv.Status != waitroom.StatusInvited {
		t.Fatalf("held place after the slot freed: %s, want invited", inv.Status)
	}
	for range 3 { // a mail scanner, a chat preview, the person
		r = s.get(person, path)
		if r.status != http.StatusOK || !strings.Contains(r.body, "<h1>It’s your turn</h1>") || !strings.Contains(r.body, claimForm("h", held.ID)) ||
			!strings.Contains(r.body, ">Claim my place</button>") {
			t.Fatalf("claim page of an invited place: %d, want 200 with the heading and the button:\n%s", r.status, r.body)
		}
	}
	if got := s.status("h", held.ID); got.Status != waitroom.StatusInvited {
		t.Fatalf("reading the claim page claimed the place: %s, want invited still", got.Status)
	}
	if r.header.Get("Set-Cookie") != "" {
		t.Errorf("reading the claim page set a cookie: %q", r.header.Get("Set-Cookie"))
	}
	if got := between(r.body, `<time datetime="`, `"`); got != inv.ClaimBy.UTC().Format(time.RFC3339) {
		t.Errorf("claim page: <time datetime=%q>, want claim_by %s", got, inv.ClaimBy.UTC().Format(time.RFC3339))
	}
	if !strings.Contains(r.body, "Your place is held for you for 10 minutes.") {
		t.Errorf("claim page lacks the time left (10 minutes):\n%s", r.body)
	}
	for k, want := range map[string]string{"Cache-Control": "no-store", "Referrer-Policy": "no-referrer", "X-Frame-Options": "DENY", "Content-Type": "text/html; charset=utf-8"} {
		if got := r.header.Get(k); got != want {
			t.Errorf("claim page: %s %q, want %q", k, got, want)
		}
	}
	if csp := r.header.Get("Content-Security-Policy"); !strings.Contains(csp, "form-action 'self'") {
		t.Errorf("claim page: CSP %q, want form-action 'self' (the button posts to this origin)", csp)
	}

	// The button: claimed, the cookie names it, off to the waiting page.
	r = s.do(person, http.MethodPost, path)
	if r.status != http.StatusSeeOther || r.header.Get("Location") != "/r/h" {
		t.Fatalf("claim: %d Location %q, want 303 to /r/h", r.status, r.header.Get("Location"))
	}
	if got := s.cookie(person, admit.CookieName("h")); got != held.ID {
		t.Fatalf("after the claim the room's cookie is %q, want the held session", got)
	}
	if got := s.status("h", held.ID); got.Status != waitroom.StatusActive {
		t.Fatalf("after the claim the place is %s, want active", got.Status)
	}
	// The waiting page's own logic sends an active session to the target.
	if r = s.get(person, "/r/h"); r.status != http.StatusSeeOther || r.header.Get("Location") != "/target/" {
		t.Fatalf("waiting page after the claim: %d Location %q, want 303 to /target/", r.status, r.header.Get("Location"))
	}

	// Claimed: the page says so, and its button goes on again.
	r = s.get(s.visitor(), path)
	if r.status != http.StatusOK || !strings.Contains(r.body, "<h1>You’re in</h1>") || !strings.Contains(r.body, claimForm("h", held.ID)) || !strings.Contains(r.body, ">Continue</button>") {
		t.Fatalf("claim page of a claimed place: %d, want 200 \"You're in\" with a Continue button:\n%s", r.status, r.body)
	}
	again := s.visitor()
	if r = s.do(again, http.MethodPost, path); r.status != http.StatusSeeOther || s.cookie(again, admit.CookieName("h")) != held.ID {
		t.Fatalf("claim of a claimed place: %d, cookie %q; want 303 and the cookie", r.status, s.cookie(again, admit.CookieName("h")))
	}
}

// TestClaimEnded: a place whose time to claim passed, and one that left,
// answer 410 with the page that says so, to a read and to the button.
func TestClaimEnded(t *testing.T) {
	s := newSite(t, siteOptions{})
	s.room("h", heldConfig())
	late := s.hold("h", "late")
	gone := s.hold("h", "gone")
	if late.Status != waitroom.StatusInvited || gone.Status != waitroom.StatusWaiting {
		t.Fatalf("setup: %s and %s, want invited and waiting", late.Status, gone.Status)
	}
	s.leave("h", gone.ID)
	// The window passes (the store's clock moves on with the call).
	if got, err := s.store.Store.Session(context.Background(), "h", late.ID, time.Now().Add(11*time.Minute)); err != nil || got.EndReason != waitroom.ReasonUnclaimed {
		t.Fatalf("after the window: %+v, %v; want ended unclaimed", got, err)
	}
	for _, tc := range []struct {
		name, id, body string
	}{
		{"unclaimed", late.ID, "The time to claim this place has passed, so it went to the next person in line."},
		{"left", gone.ID, "This place in line has ended, so there is nothing left to claim."},
	} {
		for _, method := range []string{http.MethodGet, http.MethodPost} {
			r := s.do(s.visitor(), method, waitroom.ClaimPath("h", tc.id))
			if r.status != http.StatusGone || !strings.Contains(r.body, "This invitation has expired") || !strings.Contains(r.body, tc.body) {
				t.Errorf("%s %s: %d, want 410 saying the invitation expired and %q:\n%s", method, tc.name, r.status, tc.body, r.body)
			}
			if strings.Contains(r.body, "<form") || strings.Contains(r.body, "http-equiv=\"refresh\"") || r.header.Get("Set-Cookie") != "" {
				t.Errorf("%s %s: an ended place's page has a form, a reload or a cookie:\n%s", method, tc.name, r.body)
			}
		}
	}
}

// TestClaimBadLinks: links that name no place, or no room.
func TestClaimBadLinks(t *testing.T) {
	s := newSite(t, siteOptions{})
	s.room("h", heldConfig())
	held := s.hold("h", "c")
	id, _ := waitroom.ParseSessionID(held.ID)
	id.Secret[0] ^= 1
	for _, tc := range []struct {
		name, method, path string
		status             int
		text               string
	}{
		{"unknown session", "GET", waitroom.ClaimPath("h", waitroom.NewSessionID(999).String()), 404, "There is no place in line behind this link."},
		{"forged session", "GET", waitroom.ClaimPath("h", id.String()), 404, "There is no place in line behind this link."},
		{"forged session, posted", "POST", waitroom.ClaimPath("h", id.String()), 404, "There is no place in line behind this link."},
		{"malformed id", "GET", "/claim/h/not-an-id", 404, "There is no place in line behind this link."},
		{"malformed id, posted", "POST", "/claim/h/" + strings.Repeat("x", 5000), 404, "There is no place in line behind this link."},
		{"another room's session", "GET", waitroom.ClaimPath("nope", held.ID), 404, "There is no waiting room called “nope”."},
		{"bad room name", "GET", "/claim/" + url.PathEscape("<b>") + "/" + held.ID, 400, "cannot be the name of a waiting room"},
		{"bad room name, posted", "POST", "/claim/A/" + held.ID, 400, "cannot be the name of a waiting room"},
		{"no id", "GET", "/claim/h/", 404, "There is nothing at this address."},
		{"a path below", "GET", waitroom.ClaimPath("h", held.ID) + "/x", 404, "There is nothing at this address."},
	} {
		r := s.do(s.visitor(), tc.method, tc.path)
		if r.status != tc.status || !strings.Contains(r.body, tc.text) {
			t.Errorf("%s: %d, want %d with %q:\n%.600s", tc.name, r.status, tc.status, tc.text, r.body)
		}
	}
	if r := s.do(s.visitor(), http.MethodPut, waitroom.ClaimPath("h", held.ID)); r.status != http.StatusMethodNotAllowed {
		t.Errorf("PUT on the claim page: %d, want 405", r.status)
	}
	if got := s.status("h", held.ID); got.Status != waitroom.StatusInvited {
		t.Errorf("after the bad links the held place is %s, want invited still", got.Status)
	}
}

// TestClaimPageLanguage: the claim page speaks the visitor's language.
func TestClaimPageLanguage(t *testing.T) {
	s := newSite(t, siteOptions{})
	s.room("h", heldConfig())
	held := s.hold("h", "c")
	for lang, want := range map[string][]string{
		"de": {"Sie sind an der Reihe", "Ihr Platz wird noch 10 Minuten für Sie freigehalten.", ">Platz einnehmen</button>"},
		"fr": {"C’est votre tour", "Votre place vous est réservée encore 10 minutes.", ">Prendre ma place</button>"},
	} {
		r := s.get(s.visitor(), waitroom.ClaimPath("h", held.ID), "Accept-Language", lang)
		if r.header.Get("Content-Language") != lang || !strings.Contains(r.body, `<html lang="`+lang+`">`) {
			t.Errorf("%s: Content-Language %q, want %s", lang, r.header.Get("Content-Language"), lang)
		}
		for _, w := range want {
			if !strings.Contains(r.body, w) {
				t.Errorf("%s: the claim page lacks %q:\n%s", lang, w, r.body)
			}
		}
	}
}

// TestWaitingPageOffersTheClaim: the room's own page, opened by a browser
// whose cookie names an invited place, shows the claim button instead of
// a position, and claims nothing; its button claims and the page then
// sends the browser on to the target.
func TestWaitingPageOffersTheClaim(t *testing.T) {
	s := newSite(t, siteOptions{})
	s.room("h", heldConfig())
	held := s.hold("h", "c")
	c := s.visitor()
	u, _ := url.Parse(s.srv.URL)
	c.Jar.SetCookies(u, []*http.Cookie{{Name: admit.CookieName("h"), Value: held.ID, Path: "/"}})
	r := s.get(c, "/r/h")
	if r.status != http.StatusOK || !strings.Contains(r.body, "<h1>It’s your turn</h1>") || !strings.Contains(r.body, claimForm("h", held.ID)) {
		t.Fatalf("waiting page of an invited place: %d, want 200 with the claim button:\n%s", r.status, r.body)
	}
	if strings.Contains(r.body, `data-waitroom="position"`) {
		t.Errorf("waiting page of an invited place shows a position:\n%s", r.body)
	}
	if got := s.status("h", held.ID); got.Status != waitroom.StatusInvited {
		t.Fatalf("the waiting page claimed the place: %s, want invited", got.Status)
	}
	if r = s.do(c, http.MethodPost, waitroom.ClaimPath("h", held.ID)); r.status != http.StatusSeeOther {
		t.Fatalf("the button: %d, want 303", r.status)
	}
	if r = s.get(c, "/r/h"); r.status != http.StatusSeeOther || r.header.Get("Location") != "/target/" {
		t.Fatalf("waiting page after the claim: %d Location %q, want 303 to /target/", r.status, r.header.Get("Location"))
	}
}
