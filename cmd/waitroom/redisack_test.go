package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/redistest"
	"github.com/waitroom/waitroom/redisstore"
)

// TestParseRedisAckFlags checks --redis-ack-replicas and
// --redis-ack-timeout: their defaults, the environment, and bad values.
func TestParseRedisAckFlags(t *testing.T) {
	for _, tc := range []struct {
		name     string
		args     []string
		vars     map[string]string
		replicas int
		timeout  time.Duration
	}{
		{"defaults", nil, nil, redisstore.AckAuto, time.Second},
		{"a count", []string{"--redis-ack-replicas", "2", "--redis-ack-timeout", "250ms"}, nil, 2, 250 * time.Millisecond},
		{"none from the environment", nil, map[string]string{"WAITROOM_REDIS_ACK_REPLICAS": "0", "WAITROOM_REDIS_ACK_TIMEOUT": "2s"}, 0, 2 * time.Second},
		{"auto by name", []string{"--redis-ack-replicas", "auto"}, map[string]string{"WAITROOM_REDIS_ACK_REPLICAS": "3"}, redisstore.AckAuto, time.Second},
	} {
		var stderr bytes.Buffer
		o, err := parseServe(tc.args, env(tc.vars), &stderr)
		if err != nil {
			t.Fatalf("%s: parseServe: %v\n%s", tc.name, err, stderr.String())
		}
		if o.cfg.RedisAckReplicas != tc.replicas || o.cfg.RedisAckTimeout != tc.timeout {
			t.Errorf("%s: replicas %d, timeout %s; want %d, %s", tc.name, o.cfg.RedisAckReplicas, o.cfg.RedisAckTimeout, tc.replicas, tc.timeout)
		}
	}
	for _, bad := range [][]string{
		{"--redis-ack-replicas", "-1"}, {"--redis-ack-replicas", "some"}, {"--redis-ack-timeout", "0s"}, {"--redis-ack-timeout", "1"},
	} {
		var stdout, stderr bytes.Buffer
		err := run(t.Context(), append([]string{"serve"}, bad...), env(nil), &stdout, &stderr)
		if code := exitCode(err, io.Discard); code != 2 || !strings.Contains(stderr.String(), bad[0]+" must be") {
			t.Errorf("serve %q: exit %d, stderr %q; want 2 and what %s must be", bad, code, stderr.String(), bad[0])
		}
	}
}

// TestServeRedisAck serves on a primary with one replica: joins are
// answered 201 while the replica keeps up; with the replica frozen, a join
// answers 503 unavailable as JSON with Retry-After within about the ack
// timeout, and the metric counts it.
func TestServeRedisAck(t *testing.T) {
	primary := redistest.Server(t)
	replica := redistest.Replica(t, primary)
	const token = "redis-ack-admin-token"
	s := startServe(t, []string{"--addr", "127.0.0.1:0", "--data", t.TempDir(), "--store", "redis://" + primary,
		"--admin-token", token, "--redis-ack-timeout", "300ms"}, nil)
	hc := &http.Client{Timeout: 10 * time.Second}
	do := func(method, path, body string, admin bool) (*http.Response, string) {
		t.Helper()
		req, err := http.NewRequestWithContext(t.Context(), method, s.url+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		if admin {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v (a hang past the client's 10 s?)", method, path, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}
	if resp, body := do("PUT", "/v1/rooms/acked", `{"capacity": 0}`, true); resp.StatusCode/100 != 2 {
		t.Fatalf("PUT room: %d %s", resp.StatusCode, body)
	}
	for range 5 {
		if resp, body := do("POST", "/v1/rooms/acked/sessions", `{}`, false); resp.StatusCode != 201 {
			t.Fatalf("join with the replica up: %d %s", resp.StatusCode, body)
		}
	}
	replica.Freeze()
	resp, body := do("POST", "/v1/rooms/acked/sessions", `{}`, false)
	var e struct {
		Error struct{ Code, Message string } `json:"error"`
	}
	if resp.StatusCode != 503 || json.Unmarshal([]byte(body), &e) != nil || e.Error.Code != "unavailable" {
		t.Fatalf("join with the replica frozen: %d %s; want 503 unavailable", resp.StatusCode, body)
	}
	if resp.Header.Get("Retry-After") == "" {
		t.Errorf("503 without Retry-After")
	}
	if !strings.Contains(e.Error.Message, "may or may not") {
		t.Errorf("message %q does not say the join may have been made", e.Error.Message)
	}
	_, metrics := do("GET", "/metrics", "", true)
	if !strings.Contains(metrics, "waitroom_redis_ack_timeouts_total 1") && !strings.Contains(metrics, "waitroom_redis_ack_timeouts_total 2") {
		t.Errorf("metrics do not count the unconfirmed join:\n%s", grepLines(metrics, "ack_timeouts"))
	}
	if !strings.Contains(s.stderr.String(), "replicas confirmed") {
		t.Errorf("the log does not say why the join failed:\n%s", s.stderr.String())
	}
	replica.Thaw()
}

// grepLines returns the lines of s that contain sub.
func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
