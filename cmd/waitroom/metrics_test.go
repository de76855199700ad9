package main

import (
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"
)

var metricsLineRE = regexp.MustCompile(`metrics: +(http://\S+/metrics)`)

// TestServeMetricsAddr: WAITROOM_METRICS_ADDR (or --metrics-addr) serves
// /metrics without the token on a listener of its own, announced at start;
// the main listener's /metrics needs the token (issue 26).
func TestServeMetricsAddr(t *testing.T) {
	const token = "serve-metrics-admin-token-0123456789"
	s := startServe(t, []string{"--addr", "127.0.0.1:0", "--store", "memory", "--data", t.TempDir(), "--admin-token", token},
		map[string]string{"WAITROOM_METRICS_ADDR": "127.0.0.1:0"})
	m := metricsLineRE.FindStringSubmatch(s.stdout.String())
	if m == nil {
		t.Fatalf("no metrics line in the announcement:\n%s", s.stdout.String())
	}
	c := &http.Client{Timeout: 10 * time.Second}
	get := func(u, auth string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest("GET", u, nil)
		if auth != "" {
			req.Header.Set("Authorization", "Bearer "+auth)
		}
		res, err := c.Do(req)
		if err != nil {
			t.Fatalf("GET %s: %v", u, err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	if status, body := get(m[1], ""); status != 200 || !strings.Contains(body, "waitroom_") {
		t.Errorf("GET %s without a token: %d %.200q, want the metrics", m[1], status, body)
	}
	if status, body := get(s.url+"/metrics", ""); status != 401 || !strings.Contains(body, `"unauthorized"`) {
		t.Errorf("GET /metrics on --addr without a token: %d %.200q, want 401 unauthorized", status, body)
	}
	if status, body := get(s.url+"/metrics", token); status != 200 || !strings.Contains(body, "waitroom_") {
		t.Errorf("GET /metrics on --addr with the token: %d %.200q, want the metrics", status, body)
	}
}
