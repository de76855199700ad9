package web_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/internal/admit"
)

// TestBrowserCrossSitePostRefused: a visitor waiting in line opens another
// site (localhost, where the waiting room is 127.0.0.1: another site to the
// browser), whose page posts a form to the waiting page's "join again" at
// once. Chromium sends it without the visitor's cookie (SameSite=Lax); the
// page refuses it with 403, so the visitor keeps their cookie and their
// place instead of joining anew at the back.
func TestBrowserCrossSitePostRefused(t *testing.T) {
	s := newSite(t, siteOptions{})
	s.room("shop", config(0, "/target/"))
	b := newBrowser(t)
	v := b.person("visitor")
	v.navigate(s.srv.URL + "/r/shop")
	mine := v.cookie(s.srv.URL, admit.CookieName("shop"))
	if mine == "" || s.status("shop", mine).Position != 1 {
		t.Fatalf("setup: cookie %q, want a session first in line", mine)
	}
	evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		io.WriteString(w, `<!doctype html><html lang="en"><head><meta charset="utf-8"><link rel="icon" href="data:,"><title>win a prize</title></head><body>`+
			`<form method="post" action="`+s.srv.URL+`/r/shop"><button>Win</button></form>`+
			`<script>document.forms[0].submit()</script></body></html>`)
	}))
	t.Cleanup(evil.Close)
	v.navigate(strings.Replace(evil.URL, "127.0.0.1", "localhost", 1) + "/prize")
	if !v.waitUntil(10*time.Second, `location.pathname === "/r/shop" && document.body.innerText.includes("Another site sent this form")`) {
		t.Fatalf("the cross-site post: the browser is at %s showing %q, want the refusal at /r/shop", v.path(), v.text("body"))
	}
	if got := v.cookie(s.srv.URL, admit.CookieName("shop")); got != mine {
		t.Errorf("the visitor's cookie changed from %q to %q", mine, got)
	}
	if got := s.status("shop", mine); got.Status != waitroom.StatusWaiting || got.Position != 1 {
		t.Errorf("the visitor's session: %s at %d, want waiting first in line", got.Status, got.Position)
	}
	r, err := s.store.Room(t.Context(), "shop")
	if err != nil || r.Waiting != 1 {
		t.Errorf("room: %d waiting (err %v), want the visitor alone", r.Waiting, err)
	}
}
