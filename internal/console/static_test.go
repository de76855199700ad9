package console_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"regexp"
	"strings"
	"testing"
)

func TestStoreDown(t *testing.T) {
	s := newSite(t, siteOptions{ledger: failing{}})
	a, _ := s.signIn(token)
	if a.status != 503 || a.errorCode() != "unavailable" || a.header.Get("Retry-After") == "" || len(a.cookies) != 0 {
		t.Errorf("sign-in with the store down: %d %s %v, want 503 unavailable with Retry-After, no cookie", a.status, a.body, a.header)
	}
	if strings.Contains(string(a.body), "refused") {
		t.Errorf("the internal cause leaked: %s", a.body)
	}
	if !strings.Contains(s.logs.String(), "connection refused") {
		t.Errorf("the cause is not logged:\n%s", s.logs.String())
	}
}

func TestErrors(t *testing.T) {
	s := newSite(t, siteOptions{})
	big := `{"token":"` + strings.Repeat("a", 5000) + `"}`
	for _, tc := range []struct {
		method, path, body string
		status             int
		code               string
	}{
		{"POST", "/admin/api/session", `{"token":`, 400, "invalid_json"},
		{"POST", "/admin/api/session", `{"token":"a","extra":1}`, 400, "invalid_json"},
		{"POST", "/admin/api/session", `{"token":"a"} {}`, 400, "invalid_json"},
		{"POST", "/admin/api/session", `{"token":7}`, 400, "invalid_json"},
		{"POST", "/admin/api/session", "", 400, "invalid_json"},
		{"POST", "/admin/api/session", big, 413, "body_too_large"},
		{"PUT", "/admin/api/session", "", 405, "method_not_allowed"},
		{"PATCH", "/admin/api/session", "", 405, "method_not_allowed"},
		{"GET", "/admin/api/other", "", 404, "not_found"},
		{"POST", "/admin/api/", "", 404, "not_found"},
		{"GET", "/admin/nothing.js", "", 404, "not_found"},
		{"POST", "/admin/", "", 405, "method_not_allowed"},
		{"DELETE", "/admin/app.js", "", 405, "method_not_allowed"},
	} {
		a := s.do(tc.method, tc.path, tc.body, nil)
		if a.status != tc.status || a.errorCode() != tc.code {
			t.Errorf("%s %s %.40q: %d %s, want %d %s", tc.method, tc.path, tc.body, a.status, a.body, tc.status, tc.code)
			continue
		}
		// The exact shape of the API's errors, and nothing else.
		var shape map[string]map[string]string
		if err := json.Unmarshal(a.body, &shape); err != nil || len(shape) != 1 || len(shape["error"]) != 2 || shape["error"]["message"] == "" {
			t.Errorf("%s %s: body %s, want {\"error\":{\"code\",\"message\"}}", tc.method, tc.path, a.body)
		}
		if ct := a.header.Get("Content-Type"); ct != "application/json; charset=utf-8" {
			t.Errorf("%s %s: Content-Type %q", tc.method, tc.path, ct)
		}
		if tc.status == 405 && a.header.Get("Allow") == "" {
			t.Errorf("%s %s: 405 without Allow", tc.method, tc.path)
		}
	}
}

func TestStaticFiles(t *testing.T) {
	s := newSite(t, siteOptions{})
	page := s.do("GET", "/admin/", "", nil)
	if page.status != 200 || !strings.HasPrefix(page.header.Get("Content-Type"), "text/html") {
		t.Fatalf("GET /admin/: %d %q", page.status, page.header.Get("Content-Type"))
	}
	checkHeaders(t, "/admin/", page.header)
	if got := page.header.Get("Cache-Control"); got != "no-cache" {
		t.Errorf("/admin/ Cache-Control %q, want no-cache", got)
	}
	html := string(page.body)
	for _, bad := range []string{"<script>", " style=", " onclick=", "javascript:", "http://", "https://"} {
		if strings.Contains(html, bad) {
			t.Errorf("index.html contains %q (inline code, or a request elsewhere)", bad)
		}
	}
	if strings.Contains(html, "{{") {
		t.Errorf("index.html links a file the console does not fill in: %s", html)
	}
	// The parts of the page's script define what app.js starts: they
	// must run first.
	parts := []string{"core", "rooms", "room", "charts", "config", "finder", "audit", "invites", "webhooks", "sessions"}
	hashed := regexp.MustCompile(`/admin/(app|`+strings.Join(parts, "|")+`)\.[0-9a-f]{12}\.(js|css)`).FindAllString(html, -1)
	if len(hashed) != len(parts)+2 {
		t.Fatalf("index.html links %v, want the hashed %s.js, app.js and app.css", hashed, strings.Join(parts, ".js, "))
	}
	app := regexp.MustCompile(`/admin/app\.[0-9a-f]{12}\.js`).FindStringIndex(html)
	for _, part := range parts {
		if i := strings.Index(html, "/admin/"+part+"."); app == nil || i < 0 || i > app[0] {
			t.Errorf("index.html loads app.js before %s.js", part)
		}
	}
	for _, p := range hashed {
		a := s.do("GET", p, "", nil)
		if a.status != 200 || a.header.Get("Cache-Control") != "public, max-age=31536000, immutable" {
			t.Errorf("GET %s: %d Cache-Control %q, want 200 immutable", p, a.status, a.header.Get("Cache-Control"))
		}
		checkHeaders(t, p, a.header)
		plain := regexp.MustCompile(`\.[0-9a-f]{12}`).ReplaceAllString(p, "")
		b := s.do("GET", plain, "", nil)
		if b.status != 200 || b.header.Get("Cache-Control") != "no-cache" || !bytes.Equal(a.body, b.body) {
			t.Errorf("GET %s: %d Cache-Control %q, want 200 no-cache, the same file", plain, b.status, b.header.Get("Cache-Control"))
		}
		c := s.do("GET", p, "", map[string]string{"If-None-Match": a.header.Get("ETag")})
		if c.status != 304 {
			t.Errorf("GET %s with its ETag: %d, want 304", p, c.status)
		}
	}
	if a := s.do("GET", "/admin/app.000000000000.js", "", nil); a.status != 404 {
		t.Errorf("a stale hash: %d, want 404", a.status)
	}
	if a := s.do("HEAD", "/admin/index.html", "", nil); a.status != 200 || len(a.body) != 0 {
		t.Errorf("HEAD /admin/index.html: %d with %d bytes", a.status, len(a.body))
	}
	api := s.do("GET", "/admin/api/session", "", nil)
	checkHeaders(t, "/admin/api/session", api.header)
}

func checkHeaders(t *testing.T, path string, h http.Header) {
	t.Helper()
	csp := h.Get("Content-Security-Policy")
	for _, want := range []string{"default-src 'self'", "script-src 'self'", "frame-ancestors 'none'", "object-src 'none'"} {
		if !strings.Contains(csp, want) {
			t.Errorf("%s: Content-Security-Policy %q lacks %q", path, csp, want)
		}
	}
	if strings.Contains(csp, "unsafe-inline") || strings.Contains(csp, "unsafe-eval") {
		t.Errorf("%s: Content-Security-Policy %q allows inline code", path, csp)
	}
	if got := h.Get("X-Content-Type-Options"); got != "nosniff" {
		t.Errorf("%s: X-Content-Type-Options %q", path, got)
	}
	if got := h.Get("Referrer-Policy"); got != "no-referrer" {
		t.Errorf("%s: Referrer-Policy %q", path, got)
	}
}
