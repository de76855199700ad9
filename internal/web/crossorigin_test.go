package web_test

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/internal/admit"
	"github.com/waitroom/waitroom/internal/web"
)

// crossOriginCases are the headers of a POST to a page route and whether
// the page must refuse it (403, nothing changed). self stands for the test
// server's own origin.
var crossOriginCases = []struct {
	name, site, origin string
	refused            bool
}{
	{"cross-site", "cross-site", "https://evil.example", true},
	{"cross-site, no Origin", "cross-site", "", true},
	{"same-site (a sibling host)", "same-site", "", true},
	{"an unknown Sec-Fetch-Site", "somewhere", "", true},
	{"no fetch metadata, another Origin", "", "https://evil.example", true},
	{"no fetch metadata, another port", "", "self:1", true},
	{"no fetch metadata, an Origin that is no origin", "", "javascript:alert(1)", true},
	{"same-origin", "same-origin", "self", false},
	{"same-origin, Origin null (no-referrer)", "same-origin", "null", false},
	{"the visitor's own doing", "none", "", false},
	{"no fetch metadata, own Origin", "", "self", false},
	{"no fetch metadata, Origin null", "", "null", false},
	{"no fetch metadata, the public URL's origin", "", "https://waitroom.example", false},
	{"not a browser", "", "", false},
}

// postAs posts to path as a browser of another site would: no cookie
// (SameSite=Lax withholds it), with the case's headers.
func (s *site) postAs(path, site, origin string) reply {
	s.t.Helper()
	self := s.srv.URL
	switch {
	case origin == "self":
		origin = self
	case strings.HasPrefix(origin, "self:"):
		origin = self + "1" // the same host, another port
	}
	var h []string
	if site != "" {
		h = append(h, "Sec-Fetch-Site", site)
	}
	if origin != "" {
		h = append(h, "Origin", origin)
	}
	h = append(h, "Content-Type", "application/x-www-form-urlencoded")
	return s.do(s.srv.Client(), http.MethodPost, path, h...)
}

// TestCrossOriginPostsChangeNothing: another site's form posted to the
// waiting page's "join again", the door's join or a claim button gets 403
// and the error page: no new session, no cookie, the visitor's place kept
// and a held place left unclaimed. The page's own posts, the visitor's
// own doing and clients that are no browser go through as before.
func TestCrossOriginPostsChangeNothing(t *testing.T) {
	s := newSite(t, siteOptions{web: web.Config{PublicURL: "https://waitroom.example/"}})
	s.room("shop", config(0, "/target/"))
	victim := s.visitor()
	s.get(victim, "/r/shop")
	mine := s.cookie(victim, admit.CookieName("shop"))
	ctx := context.Background()
	waiting := func(room string) int {
		r, err := s.store.Room(ctx, room)
		if err != nil {
			t.Fatal(err)
		}
		return r.Waiting
	}
	for i, tc := range crossOriginCases {
		// A room whose one place is held for someone and now theirs to claim.
		held := "held" + strconv.Itoa(i)
		s.room(held, heldConfig())
		place := s.hold(held, "mailto:ada@example.com")
		if st := s.status(held, place.ID).Status; st != waitroom.StatusInvited {
			t.Fatalf("%s: the held place is %s, want invited", tc.name, st)
		}
		for _, path := range []string{"/r/shop", "/r/shop/join", waitroom.ClaimPath(held, place.ID)} {
			before := waiting("shop")
			r := s.postAs(path, tc.site, tc.origin)
			if !tc.refused {
				if r.status == http.StatusForbidden {
					t.Errorf("%s: POST %s: 403, want it let through", tc.name, path)
				}
				continue
			}
			if r.status != http.StatusForbidden || !strings.Contains(r.body, "Another site sent this form") || r.header.Get("Set-Cookie") != "" {
				t.Errorf("%s: POST %s: %d Set-Cookie %q, want 403 with the error page and no cookie; body:\n%.300s",
					tc.name, path, r.status, r.header.Get("Set-Cookie"), r.body)
			}
			if after := waiting("shop"); after != before {
				t.Errorf("%s: POST %s: %d waiting, then %d: a refused post joined someone", tc.name, path, before, after)
			}
		}
		if st := s.status(held, place.ID).Status; tc.refused && st != waitroom.StatusInvited {
			t.Errorf("%s: the held place is %s after a refused claim, want still invited", tc.name, st)
		}
		if got := s.status("shop", mine); got.Status != waitroom.StatusWaiting || got.Position != 1 {
			t.Errorf("%s: the visitor's session is %s at %d, want waiting first in line", tc.name, got.Status, got.Position)
		}
	}
	// The refusal speaks the visitor's language.
	r := s.do(s.srv.Client(), http.MethodPost, "/r/shop", "Sec-Fetch-Site", "cross-site", "Accept-Language", "de")
	if r.status != http.StatusForbidden || !strings.Contains(r.body, "Eine andere Website") {
		t.Errorf("German refusal: %d %.300s", r.status, r.body)
	}
}
