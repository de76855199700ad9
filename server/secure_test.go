package server

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"
)

// TestCookiesSecureUnderHTTPSPublicURL: with --public-url https://…, the
// waiting page's session cookie and the console's sign-in are Secure even
// on a request that arrives as plain HTTP from an untrusted peer, without
// X-Forwarded-Proto (a TLS terminator that says nothing); the gate's pass
// cookie already was. Without a public URL they are not, over plain HTTP.
func TestCookiesSecureUnderHTTPSPublicURL(t *testing.T) {
	for _, public := range []string{"https://waitroom.example", ""} {
		cfg := testConfig(t)
		if public != "" {
			cfg.PublicURL, _ = url.Parse(public)
		}
		srv, err := New(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = srv.Close() })
		ts := httptest.NewServer(srv.Handler())
		t.Cleanup(ts.Close)
		c := &http.Client{Timeout: 10 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		want := public != ""
		for _, tc := range []struct{ method, path, body, cookie string }{
			{"GET", "/r/default", "", "waitroom-sid-default"},
			{"POST", "/admin/api/session", `{"token":"` + srv.AdminToken() + `"}`, "waitroom_console"},
		} {
			req, _ := http.NewRequest(tc.method, ts.URL+tc.path, strings.NewReader(tc.body))
			res, err := c.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			var found *http.Cookie
			for _, ck := range res.Cookies() {
				if ck.Name == tc.cookie {
					found = ck
				}
			}
			if found == nil || found.Secure != want {
				t.Errorf("public URL %q, %s %s: %d, cookie %s %+v; want it set with Secure=%v",
					public, tc.method, tc.path, res.StatusCode, tc.cookie, found, want)
			}
		}
	}
}
