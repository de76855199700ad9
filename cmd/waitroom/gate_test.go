package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/internal/openapi/openapitest"
)

// TestServeUpstreamGatesTheApp runs `waitroom serve --upstream` in front of
// a real app with a room of capacity 1: the first visitor reaches the app
// with a pass, the second is sent to the waiting page and reaches the app
// once the first leaves, waitroom's own paths stay waitroom's, bypassed
// paths need no pass, and the public keys are published.
func TestServeUpstreamGatesTheApp(t *testing.T) {
	app := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "app:"+r.URL.Path+":"+r.Header.Get("Waitroom-Session"))
	}))
	defer app.Close()
	bin := buildBinary(t)
	const token = "gate-admin-token-0123456789"
	p := startProcess(t, bin, filepath.Join(t.TempDir(), "data"), "--admin-token", token,
		"--upstream", app.URL, "--room", "shop", "--bypass", "/static/,*.ico")

	c := newCrashClient(p.url, token)
	cfg := waitroom.DefaultConfig()
	cfg.Capacity = 1
	if _, _, err := c.PutRoom(t.Context(), "shop", cfg); err != nil {
		t.Fatal(err)
	}
	browser := func() *http.Client {
		jar, _ := cookiejar.New(nil)
		return &http.Client{Jar: jar, Timeout: 10 * time.Second, Transport: openapitest.Transport(nil)}
	}
	get := func(hc *http.Client, path string) (*http.Response, string) {
		t.Helper()
		resp, err := hc.Get(p.url + path)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}

	first, second := browser(), browser()
	if resp, body := get(first, "/cart"); resp.StatusCode != 200 || !strings.HasPrefix(body, "app:/cart:") {
		t.Fatalf("first visitor: %d %q, want the app's /cart", resp.StatusCode, body)
	}
	u, _ := url.Parse(p.url)
	var firstID string
	for _, ck := range first.Jar.Cookies(u) {
		switch ck.Name {
		case "waitroom-sid-shop":
			firstID = ck.Value
		}
	}
	if firstID == "" {
		t.Fatal("first visitor has no session cookie")
	}
	if _, body := get(first, "/cart"); body != "app:/cart:"+firstID {
		t.Errorf("the app saw %q, want the visitor's session id in Waitroom-Session", body)
	}

	resp, body := get(second, "/cart")
	if resp.Request.URL.Path != "/r/shop" || !strings.Contains(body, "waitroom") {
		t.Fatalf("second visitor ended at %s (%d), want the waiting page /r/shop", resp.Request.URL, resp.StatusCode)
	}
	if resp, body := get(second, "/static/logo.png"); resp.StatusCode != 200 || body != "app:/static/logo.png:" {
		t.Errorf("bypassed path: %d %q, want the app without a pass", resp.StatusCode, body)
	}
	if resp, _ := get(second, "/v1/rooms/shop"); resp.StatusCode != 200 || !strings.Contains(resp.Header.Get("Content-Type"), "json") {
		t.Errorf("/v1/ in proxy mode: %d %s, want waitroom's API", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	resp, body = get(second, "/.well-known/jwks.json")
	var jwks struct {
		Keys []map[string]any `json:"keys"`
	}
	if resp.StatusCode != 200 || json.Unmarshal([]byte(body), &jwks) != nil || len(jwks.Keys) == 0 || jwks.Keys[0]["kty"] != "OKP" {
		t.Errorf("JWKS: %d %s, want the Ed25519 public key", resp.StatusCode, body)
	}

	// The first leaves; the second's waiting page now sends it on to /cart.
	if _, err := c.Leave(t.Context(), "shop", firstID); err != nil {
		t.Fatal(err)
	}
	if resp, body := get(second, "/r/shop?return_to="+url.QueryEscape(p.url+"/cart")); resp.StatusCode != 200 || !strings.HasPrefix(body, "app:/cart:") {
		t.Errorf("second visitor after the first left: %d %q at %s, want the app's /cart", resp.StatusCode, body, resp.Request.URL)
	}
	// The first's pass was revoked by its leave: back in line.
	if resp, _ := get(first, "/cart"); resp.Request.URL.Path != "/r/shop" {
		t.Errorf("first visitor after leaving ended at %s, want the waiting page", resp.Request.URL)
	}
}
