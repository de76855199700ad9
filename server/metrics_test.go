package server

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestMetricsNeedTheTokenOrTheirOwnListener is issue 26's public /metrics,
// in reverse-proxy mode where it was on the protected app's host: without
// the admin token it answers 401 unauthorized (and the app never sees the
// request); with it, the metrics. --metrics-addr serves them without a
// token on a listener of its own, which serves nothing else and stops
// with the server.
func TestMetricsNeedTheTokenOrTheirOwnListener(t *testing.T) {
	var mu sync.Mutex
	var upstreamSaw []string
	app := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		upstreamSaw = append(upstreamSaw, r.URL.Path)
		mu.Unlock()
		io.WriteString(w, "the app")
	}))
	defer app.Close()
	const token = "metrics-test-admin-token-0123456789"
	cfg := testConfig(t)
	cfg.Upstream, _ = url.Parse(app.URL)
	cfg.AdminToken = token
	cfg.MetricsAddr = "127.0.0.1:0"
	var stdout bytes.Buffer
	cfg.Stdout = &stdout
	srv, err := New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	srv.Announce(context.Background(), ln.Addr())
	c := &http.Client{Timeout: 10 * time.Second}
	get := func(u, auth string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest("GET", u, nil)
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		res, err := c.Do(req)
		if err != nil {
			t.Fatalf("GET %s: %v", u, err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}

	main := "http://" + ln.Addr().String()
	for _, auth := range []string{"", "Bearer wrong-token-wrong-token", "Basic " + token, token} {
		status, body := get(main+"/metrics", auth)
		var e struct {
			Error struct{ Code string } `json:"error"`
		}
		if status != 401 || json.Unmarshal([]byte(body), &e) != nil || e.Error.Code != "unauthorized" || strings.Contains(body, "waitroom_") {
			t.Errorf("GET /metrics on the app's host with Authorization %q: %d %.200q, want 401 unauthorized", auth, status, body)
		}
	}
	if status, body := get(main+"/metrics", "Bearer "+token); status != 200 || !strings.Contains(body, "waitroom_") {
		t.Errorf("GET /metrics with the token: %d %.200q, want the metrics", status, body)
	}
	if status, body := get(main+"/somewhere", ""); status == 0 || strings.Contains(body, "waitroom_") {
		t.Errorf("the app's path: %d %.200q", status, body)
	}
	mu.Lock()
	for _, p := range upstreamSaw {
		if strings.HasPrefix(p, "/metrics") {
			t.Errorf("the protected app saw %s", p)
		}
	}
	mu.Unlock()

	ma := srv.MetricsAddr()
	if ma == nil {
		t.Fatal("MetricsAddr() = nil with Config.MetricsAddr set")
	}
	side := "http://" + ma.String()
	if status, body := get(side+"/metrics", ""); status != 200 || !strings.Contains(body, "waitroom_http_request_duration_seconds") {
		t.Errorf("GET /metrics on --metrics-addr without a token: %d %.200q, want the metrics", status, body)
	}
	for _, p := range []string{"/", "/v1/rooms", "/healthz", "/admin/", "/metrics/x"} {
		if status, body := get(side+p, "Bearer "+token); status != 404 || !strings.Contains(body, `"not_found"`) {
			t.Errorf("GET %s on --metrics-addr: %d %.200q, want 404 not_found JSON: it serves /metrics alone", p, status, body)
		}
	}
	if resp, err := http.Post(side+"/metrics", "application/json", strings.NewReader("{}")); err != nil {
		t.Error(err)
	} else {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 405 || resp.Header.Get("Allow") == "" || !strings.Contains(string(b), `"method_not_allowed"`) {
			t.Errorf("POST /metrics on --metrics-addr: %d Allow %q %.200q, want 405 method_not_allowed JSON", resp.StatusCode, resp.Header.Get("Allow"), b)
		}
	}
	if want := "metrics:      " + side + "/metrics"; !strings.Contains(stdout.String(), want) {
		t.Errorf("the announcement lacks %q:\n%s", want, stdout.String())
	}

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	srv.Shutdown(ctx)
	srv.Close()
	if conn, err := net.DialTimeout("tcp", ma.String(), 5*time.Second); err == nil {
		conn.Close()
		t.Errorf("the metrics listener %s still accepts after Close", ma)
	}
}

// TestMetricsAddrInUseFailsTheStart: a --metrics-addr that cannot be bound
// refuses the start before anything is written to the data folder.
func TestMetricsAddrInUseFailsTheStart(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	cfg := testConfig(t)
	cfg.StoreURL = "" // SQLite: the store would write the folder first
	cfg.MetricsAddr = taken.Addr().String()
	if _, err := New(context.Background(), cfg); err == nil || !strings.Contains(err.Error(), "--metrics-addr") {
		t.Fatalf("New with --metrics-addr in use: %v, want an error naming --metrics-addr", err)
	}
	if entries, _ := os.ReadDir(cfg.DataDir); len(entries) != 0 {
		t.Errorf("the failed start left %d entries in the data folder", len(entries))
	}
}
