package web_test

import (
	"context"
	"io"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/challenge"
)

// TestDoorWithoutJavaScript: a room with a door never joins a visitor on
// a plain visit or a "join again", and the door's form refuses a missing
// or bad invite and a missing challenge on its page, with no session made;
// a good invite joins, into its tier.
func TestDoorWithoutJavaScript(t *testing.T) {
	s := newSite(t, siteOptions{})
	cfg := config(0, "")
	cfg.InviteOnly = true
	cfg.Tiers = []waitroom.Tier{{Name: "presale"}, {Name: "general"}}
	s.room("members", cfg)
	pow := config(0, "")
	pow.Challenge = waitroom.ChallengePoW
	s.room("pow", pow)
	c := s.visitor()
	for _, path := range []string{"/r/members", "/r/pow"} {
		if r := s.get(c, path); r.status != http.StatusOK || !strings.Contains(r.body, `id="waitroom-door"`) {
			t.Fatalf("GET %s: %d, want the door page", path, r.status)
		}
		if r := s.do(c, http.MethodPost, path); r.status != http.StatusSeeOther || r.header.Get("Location") != path {
			t.Fatalf("POST %s (join again): %d to %q, want 303 back to the page", path, r.status, r.header.Get("Location"))
		}
	}
	post := func(room string, form url.Values) reply {
		t.Helper()
		res, err := c.PostForm(s.srv.URL+"/r/"+room+"/join", form)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return reply{status: res.StatusCode, header: res.Header, body: string(b)}
	}
	for _, tc := range []struct {
		room   string
		form   url.Values
		status int
	}{
		{"members", url.Values{}, http.StatusForbidden},
		{"members", url.Values{"invite": {"wr1.junk.junk"}}, http.StatusForbidden},
		{"pow", url.Values{}, http.StatusPreconditionRequired},
		{"pow", url.Values{"challenge": {"e30="}}, http.StatusBadRequest},
	} {
		if r := post(tc.room, tc.form); r.status != tc.status || !strings.Contains(r.body, `data-door="error"`) {
			t.Errorf("door of %s with %v: %d, want %d with the reason on the door", tc.room, tc.form, r.status, tc.status)
		}
	}
	for _, room := range []string{"members", "pow"} {
		if r, _ := s.store.Room(context.Background(), room); r.Waiting != 0 {
			t.Fatalf("room %s: %d waiting, want nobody past the door", room, r.Waiting)
		}
	}
	// A solution in the ALTCHA widget's field name joins too.
	ch, err := s.door.Challenge(context.Background(), "pow", netip.Addr{}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	sol, err := challenge.Solve(context.Background(), ch)
	if err != nil {
		t.Fatal(err)
	}
	if r := post("pow", url.Values{"altcha": {sol}}); r.status != http.StatusSeeOther {
		t.Fatalf("door with an altcha field: %d, want 303 into the line", r.status)
	}
	if r, _ := s.store.Room(context.Background(), "pow"); r.Waiting != 1 {
		t.Fatalf("room pow: %d waiting after a solved join, want 1", r.Waiting)
	}
	toks, err := s.door.Issue(context.Background(), "members", 1, "presale", "", 1, time.Now().Add(time.Hour), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	// Pasting the whole link works as well as the token.
	link := "  " + s.srv.URL + "/r/members#invite=" + toks[0] + "\n"
	if r := post("members", url.Values{"invite": {link}}); r.status != http.StatusSeeOther || r.header.Get("Location") != "/r/members" {
		t.Fatalf("door with a pasted invite link: %d to %q, want 303 to the page", r.status, r.header.Get("Location"))
	}
	if r := s.get(c, "/r/members"); !strings.Contains(r.body, `data-waitroom="tier">You wait in the presale line.`) {
		t.Fatalf("the page after the invite does not show the presale line: %.300s", r.body)
	}
}

// TestDoorKeyedInviteElsewhere: a copy of a keyed invite link, opened by
// someone else, shows the door with 409 and neither hands over the
// holder's place (no cookie with its id, no id on the page) nor ends the
// visitor's own; the holder opening it again is back in its own place.
func TestDoorKeyedInviteElsewhere(t *testing.T) {
	s := newSite(t, siteOptions{})
	s.room("shop", config(0, ""))
	now := time.Now()
	toks, err := s.door.Issue(context.Background(), "shop", 1, "", "alice", 2, now.Add(time.Hour), now)
	if err != nil {
		t.Fatal(err)
	}
	join := func(c *http.Client) reply {
		t.Helper()
		res, err := c.PostForm(s.srv.URL+"/r/shop/join", url.Values{"invite": {toks[0]}})
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return reply{status: res.StatusCode, header: res.Header, body: string(b)}
	}
	sid := func(c *http.Client) string {
		u, _ := url.Parse(s.srv.URL)
		for _, k := range c.Jar.Cookies(u) {
			if k.Name == "waitroom-sid-shop" {
				return k.Value
			}
		}
		return ""
	}
	holder := s.visitor()
	if r := join(holder); r.status != http.StatusSeeOther {
		t.Fatalf("the holder's join: %d, want 303 into the line", r.status)
	}
	alice := sid(holder)
	other := s.visitor()
	s.get(other, "/r/shop") // a place of their own first
	own := sid(other)
	if alice == "" || own == "" || own == alice {
		t.Fatalf("sessions: holder %q, other %q; want two", alice, own)
	}
	r := join(other)
	if r.status != http.StatusConflict || !strings.Contains(r.body, `data-door="error"`) {
		t.Fatalf("someone else with the holder's invite: %d, want 409 on the door", r.status)
	}
	if got := sid(other); got != own || strings.Contains(r.body, alice[11:]) || strings.Contains(r.header.Get("Set-Cookie"), alice[11:]) {
		t.Fatalf("someone else with the holder's invite got cookie %q (holder %q, own %q)", got, alice, own)
	}
	for _, id := range []string{alice, own} {
		if got, err := s.store.Session(context.Background(), "shop", id, time.Now()); err != nil || !got.Status.Live() {
			t.Fatalf("session %s after the refused claim: %v %v, want live", id, got.Status, err)
		}
	}
	// The holder opening its link again stays in its own place.
	if r := join(holder); r.status != http.StatusSeeOther || sid(holder) != alice {
		t.Fatalf("the holder again: %d with cookie %q, want 303 and its place %q", r.status, sid(holder), alice)
	}
}
