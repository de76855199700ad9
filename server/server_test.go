package server

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/gate"
	"github.com/waitroom/waitroom/memstore"
)

// settle waits (bounded) for the goroutine count to fall to at most n and
// returns the count it saw last.
func settle(n int) int {
	deadline := time.Now().Add(20 * time.Second)
	for {
		got := runtime.NumGoroutine()
		if got <= n || time.Now().After(deadline) {
			return got
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func testConfig(t *testing.T) Config {
	cfg := Defaults()
	cfg.DataDir = t.TempDir()
	cfg.StoreURL = "memory"
	return cfg
}

func TestNewServesAWholeServerAndCloseStopsEverything(t *testing.T) {
	http.DefaultClient.CloseIdleConnections()
	before := runtime.NumGoroutine()
	cfg := testConfig(t)
	cfg.MaxConnections = 100
	srv, err := New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	base := "http://" + ln.Addr().String()
	c := &http.Client{Timeout: 10 * time.Second}
	for _, tc := range []struct {
		method, path string
		status       int
		want         string
	}{
		{"POST", "/v1/rooms/default/sessions", 201, `"status":"active"`},
		{"GET", "/r/default", 200, "<html"},
		{"GET", "/healthz", 200, ""},
		{"GET", "/waitroom.js", 200, ""},
		{"GET", "/.well-known/jwks.json", 200, `"keys"`},
		{"GET", "/admin/", 200, "<html"},
		{"GET", "/metrics", 401, `"unauthorized"`}, // the admin's (issue 26)
		{"GET", "/v1/nowhere", 404, `"not_found"`},
	} {
		req, _ := http.NewRequest(tc.method, base+tc.path, nil)
		res, err := c.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", tc.method, tc.path, err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != tc.status || !strings.Contains(string(b), tc.want) {
			t.Errorf("%s %s: %d %.200q, want %d with %q", tc.method, tc.path, res.StatusCode, b, tc.status, tc.want)
		}
	}
	req, _ := http.NewRequest("GET", base+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+srv.AdminToken())
	if res, err := c.Do(req); err != nil {
		t.Fatal(err)
	} else {
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != 200 || !strings.Contains(string(b), "waitroom_") {
			t.Errorf("GET /metrics with the token: %d %.200q, want 200 with the metrics", res.StatusCode, b)
		}
	}
	// The admin token is generated in the data folder, mode 0600.
	fi, err := os.Stat(filepath.Join(cfg.DataDir, tokenFileName))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("admin token file: %v, mode %v; want 0600", err, fi)
	}
	if srv.AdminToken() == "" {
		t.Error("AdminToken is empty")
	}

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		t.Errorf("Shutdown: %v", err)
	}
	if err := <-served; err != http.ErrServerClosed {
		t.Errorf("Serve returned %v, want http.ErrServerClosed", err)
	}
	if err := srv.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if err := srv.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	c.CloseIdleConnections()
	// Everything New started has stopped: sweeper, deliverer, outage
	// monitor, hub, door, gate, estimator, stats, store subscriptions.
	if got := settle(before); got > before {
		buf := make([]byte, 1<<20)
		t.Errorf("%d goroutines after Close, %d before New:\n%s", got, before, buf[:runtime.Stack(buf, true)])
	}
}

func TestNewLeavesAGivenStoreOpen(t *testing.T) {
	st := memstore.New()
	defer st.Close()
	cfg := testConfig(t)
	cfg.Store, cfg.StoreURL = st, ""
	srv, err := New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if srv.Store() != st {
		t.Error("Store() is not the store given")
	}
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Room(context.Background(), "default"); err != nil {
		t.Errorf("the given store was closed or not set up: %v", err)
	}
}

func TestNewStopsWhatItStartedWhenItFails(t *testing.T) {
	before := runtime.NumGoroutine()
	cfg := testConfig(t)
	cfg.Templates = filepath.Join(t.TempDir(), "missing")
	if _, err := New(context.Background(), cfg); err == nil || !strings.Contains(err.Error(), "--templates") {
		t.Fatalf("New with a missing templates folder: %v, want a --templates error", err)
	}
	if got := settle(before); got > before {
		buf := make([]byte, 1<<20)
		t.Errorf("%d goroutines after a failed New, %d before:\n%s", got, before, buf[:runtime.Stack(buf, true)])
	}
}

func TestHTTPServerLimits(t *testing.T) {
	srv, err := New(context.Background(), testConfig(t))
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	h := srv.http
	if h.ReadHeaderTimeout != 5*time.Second {
		t.Errorf("ReadHeaderTimeout = %v, want 5s", h.ReadHeaderTimeout)
	}
	if h.IdleTimeout <= 0 {
		t.Errorf("IdleTimeout = %v, want a limit", h.IdleTimeout)
	}
	if h.MaxHeaderBytes != 64<<10 {
		t.Errorf("MaxHeaderBytes = %d, want %d", h.MaxHeaderBytes, 64<<10)
	}
	if h.WriteTimeout != 0 {
		t.Errorf("WriteTimeout = %v, want none (event streams stay open)", h.WriteTimeout)
	}
}

func TestConfigCheck(t *testing.T) {
	up, _ := url.Parse("ftp://x")
	for _, tc := range []struct {
		name string
		edit func(*Config)
		want string
	}{
		{"no data folder", func(c *Config) { c.DataDir = "" }, "--data must not be empty"},
		{"unknown store", func(c *Config) { c.StoreURL = "postgres://u:hunter2@db/x" }, "--store must be empty"},
		{"redis store", func(c *Config) { c.StoreURL = "redis+sentinel://a:1,b:2/m" }, ""},
		{"push refresh too short", func(c *Config) { c.PushRefresh = time.Millisecond }, "--push-refresh"},
		{"push front too large", func(c *Config) { c.PushFront = 2_000_000 }, "--push-front"},
		{"negative join limit", func(c *Config) { c.JoinsPerMinute = -1 }, "--join-limit"},
		{"lease too short", func(c *Config) { c.WebhookLease = time.Second }, "--webhook-lease"},
		{"bad algorithm", func(c *Config) { c.PassAlg = "RS256" }, "--pass-alg"},
		{"bad room", func(c *Config) { c.Room = "Bad Room" }, "--room"},
		{"bad upstream", func(c *Config) { c.Upstream = up }, "--upstream"},
		{"a trusted prefix", func(c *Config) { c.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")} }, ""},
		{"per-address connections below auto", func(c *Config) { c.MaxConnectionsPerAddress = -2 }, "--max-connections-per-address"},
		{"per-address streams below auto", func(c *Config) { c.MaxStreamsPerAddress = -2 }, "--max-streams-per-address"},
		{"negative per-session streams", func(c *Config) { c.MaxStreamsPerSession = -1 }, "--max-streams-per-session"},
		{"zero values take defaults", func(c *Config) { *c = Config{DataDir: "x"} }, ""},
		{"short admin token", func(c *Config) { c.AdminToken = "fifteen-chars.." }, "--admin-token must be at least 16 characters, not 15"},
		{"short in characters, long in bytes", func(c *Config) { c.AdminToken = "ééééééééééééééé" }, "--admin-token must be at least 16"},
		{"admin token of 16", func(c *Config) { c.AdminToken = "sixteen-chars..." }, ""},
	} {
		cfg := testConfig(t)
		tc.edit(&cfg)
		err := cfg.Check()
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v, want nil", tc.name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: %v, want an error with %q", tc.name, err, tc.want)
		case err != nil && strings.Contains(err.Error(), "hunter2"):
			t.Errorf("%s: %v shows a password", tc.name, err)
		}
	}
}

// TestShortTokenFileRefused: a token file written by hand with fewer than
// 16 characters stops the start, as a short --admin-token does.
func TestShortTokenFileRefused(t *testing.T) {
	cfg := testConfig(t)
	if err := os.WriteFile(filepath.Join(cfg.DataDir, "admin-token"), []byte("short-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	srv, err := New(t.Context(), cfg)
	if err == nil {
		srv.Close()
		t.Fatal("New with an 11-character token file succeeded, want an error")
	}
	if !strings.Contains(err.Error(), "holds 11 characters, want at least 16") {
		t.Fatalf("New: %v, want the token file's length refused", err)
	}
}

func TestMiddlewareAdmitsWithAPassAndSendsOthersToWait(t *testing.T) {
	srv, err := New(context.Background(), testConfig(t))
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	ctx := context.Background()
	cfg := waitroom.DefaultConfig()
	cfg.Capacity = 1
	if _, _, err := srv.Store().PutRoom(ctx, "shop", cfg, time.Now()); err != nil {
		t.Fatal(err)
	}
	app := srv.Middleware("shop")(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, ok := gate.ClaimsFrom(r.Context())
		if !ok {
			http.Error(w, "no claims", 500)
			return
		}
		io.WriteString(w, "hello "+c.Room)
	}))
	browse := func() *http.Response {
		r := httptest.NewRequest("GET", "http://shop.test/buy", nil)
		r.Header.Set("Accept", "text/html")
		w := httptest.NewRecorder()
		app.ServeHTTP(w, r)
		return w.Result()
	}
	// The first visitor takes the one slot and goes straight through.
	first := browse()
	if b, _ := io.ReadAll(first.Body); first.StatusCode != 200 || string(b) != "hello shop" {
		t.Fatalf("first visitor: %d %q, want 200 hello shop", first.StatusCode, b)
	}
	// The second waits: sent to the waiting page.
	second := browse()
	if loc := second.Header.Get("Location"); second.StatusCode != http.StatusSeeOther || !strings.Contains(loc, "/r/shop") {
		t.Fatalf("second visitor: %d to %q, want 303 to the waiting page", second.StatusCode, loc)
	}
}
