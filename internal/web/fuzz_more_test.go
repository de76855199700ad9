package web_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/internal/admit"
	"github.com/waitroom/waitroom/internal/web"
	"github.com/waitroom/waitroom/memstore"
)

// FuzzPageRequest sends the waiting page any return_to, session cookie,
// Accept-Language and X-Forwarded-Proto. Whatever they hold: no 5xx, an
// admitted visitor is only ever sent to the room's target or an allowed
// origin, and the session cookie always has its flags (HttpOnly,
// SameSite=Lax, Secure over TLS or behind a proxy that says https).
func FuzzPageRequest(f *testing.F) {
	for _, s := range []struct {
		returnTo, cookie, lang, proto string
		live                          bool
	}{
		{"https://shop.example/cart", "", "de", "", true},
		{"https://shop.example.evil.test/", "", "", "https", true},
		{"//evil.test/", "x", "fr;q=0.5", "HTTPS", false},
		{"javascript:alert(1)", "", "*", "", true},
		{"https://user:pw@shop.example/", "AAAAAAAAAAEAAAAAAAAAAAAAAAAAAAAA", "", "http", false},
		{"https:/\\evil.test", "\x00\xff", "\xff", "https, http", true},
		{"", strings.Repeat("A", 4000), strings.Repeat("de,", 200), "", false},
	} {
		f.Add(s.returnTo, s.cookie, s.lang, s.proto, s.live)
	}
	ctx := context.Background()
	st := memstore.New()
	f.Cleanup(func() { _ = st.Close() })
	clock := waitroom.NewManualClock(time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC))
	cfg := waitroom.DefaultConfig()
	cfg.Capacity = 1
	cfg.WaitingTimeout = 0
	cfg.ActiveTimeout = 0
	cfg.TargetURL = "/target/"
	cfg.ReturnOrigins = []string{"https://shop.example"}
	if _, _, err := st.PutRoom(ctx, "shop", cfg, clock.Now()); err != nil {
		f.Fatal(err)
	}
	live, err := st.Join(ctx, "shop", "", clock.Now())
	if err != nil || live.Status != waitroom.StatusActive {
		f.Fatalf("setup join: %+v, %v; want an active session", live, err)
	}
	h := web.NewHandler(web.Config{Store: st, Rooms: newRooms(f, st), Clock: clock, Admit: admits(st)})
	f.Fuzz(func(t *testing.T, returnTo, cookie, lang, proto string, useLive bool) {
		req := httptest.NewRequest("GET", "/r/shop?return_to="+url.QueryEscape(returnTo), nil)
		if useLive {
			cookie = live.ID
		}
		if cookie != "" {
			req.Header.Set("Cookie", admit.CookieName("shop")+"="+cookie)
		}
		if lang != "" {
			req.Header.Set("Accept-Language", lang)
		}
		if proto != "" {
			req.Header.Set("X-Forwarded-Proto", proto)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code >= 500 {
			t.Fatalf("got %d, want below 500; body %.300s", rec.Code, rec.Body.Bytes())
		}
		if loc := rec.Header().Get("Location"); rec.Code == http.StatusSeeOther {
			u, err := url.Parse(loc)
			if err != nil {
				t.Fatalf("redirect to %q, which does not parse", loc)
			}
			if loc != "/target/" && (strings.ToLower(u.Scheme+"://"+u.Host) != "https://shop.example" || u.User != nil) {
				t.Fatalf("return_to %q: redirect to %q, neither the target nor an allowed origin", returnTo, loc)
			}
		}
		for _, c := range rec.Result().Cookies() {
			if c.Name != admit.CookieName("shop") {
				continue
			}
			wantSecure := strings.EqualFold(proto, "https")
			if !c.HttpOnly || c.SameSite != http.SameSiteLaxMode || c.Secure != wantSecure || c.Path != "/" {
				t.Fatalf("X-Forwarded-Proto %q: cookie %+v, want HttpOnly, SameSite=Lax, Path=/, Secure=%v", proto, c, wantSecure)
			}
		}
	})
}

// FuzzClaimRequest sends the claim page any method, session id and
// Accept-Language, for a held place or any id. Whatever they hold: no
// 5xx; a read (GET, HEAD) never changes the place; a claim that succeeds
// sends the browser to the room's page, with the room's cookie (its
// flags set) naming the place, which is active.
func FuzzClaimRequest(f *testing.F) {
	for _, s := range []struct {
		post       bool
		id, lang   string
		held, head bool
	}{
		{false, "", "de", true, false},
		{true, "", "", true, false},
		{false, "", "fr", true, true},
		{true, "AAAAAAAAAAEAAAAAAAAAAAAAAAAAAAAA", "", false, false},
		{false, "%00%ff", "\xff", false, false},
		{true, strings.Repeat("A", 4000), "", false, false},
		{false, "..%2F..%2Fr%2Fh", "*", false, false},
	} {
		f.Add(s.post, s.id, s.lang, s.held, s.head)
	}
	ctx := context.Background()
	st := memstore.New()
	f.Cleanup(func() { _ = st.Close() })
	clock := waitroom.NewManualClock(time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC))
	cfg := waitroom.DefaultConfig()
	cfg.Capacity, cfg.WaitingTimeout, cfg.ActiveTimeout = 1, 0, 0
	cfg.HoldPlaces, cfg.ClaimWindow = true, waitroom.Duration(time.Hour)
	if _, _, err := st.PutRoom(ctx, "h", cfg, clock.Now()); err != nil {
		f.Fatal(err)
	}
	held, err := st.JoinWith(ctx, "h", waitroom.JoinRequest{Contact: "c"}, clock.Now())
	if err != nil || held.Status != waitroom.StatusInvited {
		f.Fatalf("setup: %+v, %v; want an invited place", held, err)
	}
	h := web.NewHandler(web.Config{Store: st, Rooms: newRooms(f, st), Clock: clock, Admit: admits(st)})
	f.Fuzz(func(t *testing.T, post bool, id, lang string, useHeld, head bool) {
		if useHeld {
			id = held.ID
		}
		method := http.MethodGet
		switch {
		case post:
			method = http.MethodPost
		case head:
			method = http.MethodHead
		}
		before, _ := st.Session(ctx, "h", held.ID, clock.Now())
		req, err := http.NewRequest(method, "http://waitroom.test/claim/h/"+id, nil)
		if err != nil {
			return // not a request a server would hand to a handler
		}
		if lang != "" {
			req.Header.Set("Accept-Language", lang)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code >= 500 {
			t.Fatalf("%s %q: got %d, want below 500; body %.300s", method, id, rec.Code, rec.Body.Bytes())
		}
		after, _ := st.Session(ctx, "h", held.ID, clock.Now())
		if !post && after.Status != before.Status {
			t.Fatalf("%s %q changed the place from %s to %s", method, id, before.Status, after.Status)
		}
		if rec.Code == http.StatusSeeOther {
			if loc := rec.Header().Get("Location"); !post || loc != "/r/h" {
				t.Fatalf("%s %q: redirect to %q, want only a claim's, to /r/h", method, id, loc)
			}
			var named bool
			for _, c := range rec.Result().Cookies() {
				if c.Name == admit.CookieName("h") {
					named = c.Value == held.ID && c.HttpOnly && c.SameSite == http.SameSiteLaxMode && c.Path == "/"
				}
			}
			if !named || after.Status != waitroom.StatusActive {
				t.Fatalf("claim %q: cookie %v, place %s; want the flagged cookie naming the active place", id, rec.Result().Cookies(), after.Status)
			}
		}
	})
}
