package server

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestWrongAdminTokensShareOneAllowance: wrong tokens at the console's
// sign-in and as the API's bearer token count against one allowance per
// address, so the two ways in do not add up to more guesses; once it is
// used up both refuse the right token from that address, and both accept
// it from another.
func TestWrongAdminTokensShareOneAllowance(t *testing.T) {
	cfg := testConfig(t)
	cfg.AdminToken = "shared-allowance-admin-token"
	srv, err := New(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	h := srv.Handler()
	do := func(addr, method, path, authz, body string) *httptest.ResponseRecorder {
		t.Helper()
		r := httptest.NewRequest(method, path, strings.NewReader(body))
		r.RemoteAddr = addr
		if authz != "" {
			r.Header.Set("Authorization", authz)
		}
		if body != "" {
			r.Header.Set("Content-Type", "application/json")
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		return rec
	}
	const guesser, operator = "203.0.113.5:4000", "198.51.100.2:4000"
	for i := range 3 {
		if rec := do(guesser, "POST", "/admin/api/session", "", `{"token":"wrong-guess-at-the-console"}`); rec.Code != http.StatusUnauthorized {
			t.Fatalf("console guess %d: %d %s, want 401", i+1, rec.Code, rec.Body.Bytes())
		}
	}
	for i := range 2 {
		if rec := do(guesser, "GET", "/v1/rooms", "Bearer wrong-guess-on-the-api", ""); rec.Code != http.StatusUnauthorized {
			t.Fatalf("API guess %d: %d %s, want 401", i+1, rec.Code, rec.Body.Bytes())
		}
	}
	right := "Bearer " + cfg.AdminToken
	if rec := do(guesser, "GET", "/v1/rooms", right, ""); rec.Code != http.StatusTooManyRequests || rec.Header().Get("Retry-After") == "" {
		t.Fatalf("API, right token after five guesses: %d %s, want 429 with Retry-After", rec.Code, rec.Body.Bytes())
	}
	if rec := do(guesser, "POST", "/admin/api/session", "", `{"token":"`+cfg.AdminToken+`"}`); rec.Code != http.StatusTooManyRequests {
		t.Fatalf("console, right token after five guesses: %d %s, want 429", rec.Code, rec.Body.Bytes())
	}
	if rec := do(operator, "GET", "/v1/rooms", right, ""); rec.Code != http.StatusOK {
		t.Fatalf("API, right token from another address: %d %s, want 200", rec.Code, rec.Body.Bytes())
	}
	if rec := do(operator, "POST", "/admin/api/session", "", `{"token":"`+cfg.AdminToken+`"}`); rec.Code != http.StatusOK {
		t.Fatalf("console, right token from another address: %d %s, want 200", rec.Code, rec.Body.Bytes())
	}
}
