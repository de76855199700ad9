package server

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestConsoleHost: with --console-host, the console (its page and its
// sign-in) answers on that host alone, 404 on the app's, and the admin API
// takes the console's cookie on that host alone: a script on the app's
// origin that gets the cookie sent (the same host name on another port)
// reads nothing with it. The bearer token works on every host.
func TestConsoleHost(t *testing.T) {
	cfg := testConfig(t)
	cfg.ConsoleHost = "admin.example"
	srv, err := New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	c := &http.Client{Timeout: 10 * time.Second}
	do := func(method, host, path, body string, h ...string) (*http.Response, string) {
		t.Helper()
		req, _ := http.NewRequest(method, ts.URL+path, strings.NewReader(body))
		req.Host = host
		for i := 0; i+1 < len(h); i += 2 {
			req.Header.Set(h[i], h[i+1])
		}
		res, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res, string(b)
	}
	signIn := `{"token":"` + srv.AdminToken() + `"}`
	for _, host := range []string{"shop.example", "shop.example:8443", "admin.example.evil", "example"} {
		if res, body := do("GET", host, "/admin/", ""); res.StatusCode != 404 || !strings.Contains(body, `"not_found"`) {
			t.Errorf("GET /admin/ on %s: %d %.100s, want 404 not_found", host, res.StatusCode, body)
		}
		if res, _ := do("POST", host, "/admin/api/session", signIn); res.StatusCode != 404 || len(res.Cookies()) != 0 {
			t.Errorf("sign-in on %s: %d cookies %v, want 404 and no cookie", host, res.StatusCode, res.Cookies())
		}
	}
	var cookie *http.Cookie
	for _, host := range []string{"admin.example", "ADMIN.example:8443"} {
		if res, _ := do("GET", host, "/admin/", ""); res.StatusCode != 200 {
			t.Errorf("GET /admin/ on %s: %d, want 200", host, res.StatusCode)
		}
		res, body := do("POST", host, "/admin/api/session", signIn)
		if res.StatusCode != 200 || len(res.Cookies()) != 1 {
			t.Fatalf("sign-in on %s: %d %s, want 200 with the cookie", host, res.StatusCode, body)
		}
		cookie = res.Cookies()[0]
	}
	ck := cookie.Name + "=" + cookie.Value
	if res, body := do("GET", "admin.example", "/v1/rooms", "", "Cookie", ck); res.StatusCode != 200 {
		t.Errorf("admin API with the cookie on the console's host: %d %.100s, want 200", res.StatusCode, body)
	}
	for _, host := range []string{"shop.example", "admin.example.evil"} {
		if res, body := do("GET", host, "/v1/rooms", "", "Cookie", ck); res.StatusCode != 401 || !strings.Contains(body, `"unauthorized"`) {
			t.Errorf("admin API with the console's cookie on %s: %d %.100s, want 401 unauthorized", host, res.StatusCode, body)
		}
		if res, _ := do("GET", host, "/v1/rooms", "", "Authorization", "Bearer "+srv.AdminToken()); res.StatusCode != 200 {
			t.Errorf("admin API with the bearer token on %s: %d, want 200", host, res.StatusCode)
		}
	}
}

func TestConsoleHostCheck(t *testing.T) {
	for _, h := range []string{"admin.example", "admin.example:8443", "127.0.0.1", "[::1]:9000", "[::1]"} {
		cfg := testConfig(t)
		cfg.ConsoleHost = h
		if err := cfg.Check(); err != nil {
			t.Errorf("--console-host %q: %v, want it accepted", h, err)
		}
	}
	for _, h := range []string{"https://admin.example", "admin.example/admin", "a b", "admin.example:", "admin.example:x", "user@admin.example", ":8443", "[]"} {
		cfg := testConfig(t)
		cfg.ConsoleHost = h
		if err := cfg.Check(); err == nil || !strings.Contains(err.Error(), "--console-host") {
			t.Errorf("--console-host %q: %v, want it refused", h, err)
		}
	}
}
