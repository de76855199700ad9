package main

import (
	"net/http"
	"net/http/cookiejar"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/internal/openapi/openapitest"
	"github.com/waitroom/waitroom/internal/redistest"
)

// TestRedisDownFailsClosedOrOpen runs two servers on one real Redis, one
// with each outage policy, and kills Redis under them: the closed one keeps
// its visitor on a "line is paused" page; the open one, after its delay,
// sends the visitor on to the room's target. Both answer API clients 503
// unavailable and /readyz 503, and both carry on when Redis is back.
func TestRedisDownFailsClosedOrOpen(t *testing.T) {
	redis := redistest.Start(t)
	bin := buildBinary(t)
	const token = "outage-admin-token-0123456789"
	store := "redis://" + redis.Addr + "/0"
	closed := startProcess(t, bin, filepath.Join(t.TempDir(), "closed"), "--store", store, "--admin-token", token)
	open := startProcess(t, bin, filepath.Join(t.TempDir(), "open"), "--store", store, "--admin-token", token,
		"--on-store-down", "open", "--fail-open-after", "1s")

	c := newCrashClient(closed.url, token)
	cfg := waitroom.DefaultConfig()
	cfg.Capacity = 0 // nobody gets in while Redis works
	cfg.TargetURL = "https://shop.example/checkout"
	if _, _, err := c.PutRoom(t.Context(), "sale", cfg); err != nil {
		t.Fatal(err)
	}
	visitor := func() *http.Client {
		jar, _ := cookiejar.New(nil)
		return &http.Client{Jar: jar, Timeout: 10 * time.Second, Transport: openapitest.Transport(nil),
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	get := func(hc *http.Client, url string) (int, string, string) {
		t.Helper()
		resp, err := hc.Get(url)
		if err != nil {
			t.Fatalf("GET %s: %v", url, err)
		}
		defer resp.Body.Close()
		var b strings.Builder
		buf := make([]byte, 32<<10)
		for {
			n, err := resp.Body.Read(buf)
			b.Write(buf[:n])
			if err != nil {
				break
			}
		}
		return resp.StatusCode, resp.Header.Get("Location"), b.String()
	}
	vc, vo := visitor(), visitor()
	for _, v := range []struct {
		hc  *http.Client
		url string
	}{{vc, closed.url}, {vo, open.url}} {
		if code, _, _ := get(v.hc, v.url+"/r/sale"); code != http.StatusOK {
			t.Fatalf("waiting page with Redis up: %d, want 200", code)
		}
	}

	redis.Kill()
	// Both monitors ping every second; the open one waits 1s more.
	deadline := time.Now().Add(15 * time.Second)
	var code int
	var loc string
	for time.Now().Before(deadline) {
		code, loc, _ = get(vo, open.url+"/r/sale")
		if code == http.StatusSeeOther {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if code != http.StatusSeeOther || loc != cfg.TargetURL {
		t.Errorf("open policy, Redis down: %d to %q, want 303 to %q", code, loc, cfg.TargetURL)
	}
	if code, _, body := get(vc, closed.url+"/r/sale"); code != http.StatusServiceUnavailable || !strings.Contains(body, "The line is paused") {
		t.Errorf("closed policy, Redis down: %d, want 503 with the paused page", code)
	}
	for _, p := range []*process{closed, open} {
		if code, _, body := get(visitor(), p.url+"/v1/rooms/sale"); code != http.StatusServiceUnavailable || !strings.Contains(body, `"unavailable"`) {
			t.Errorf("API with Redis down: %d %s, want 503 unavailable", code, body)
		}
		if code, _, _ := get(visitor(), p.url+"/readyz"); code != http.StatusServiceUnavailable {
			t.Errorf("/readyz with Redis down: %d, want 503", code)
		}
	}

	redis.Restart()
	deadline = time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if code, _, _ = get(visitor(), open.url+"/readyz"); code == http.StatusOK {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if code != http.StatusOK {
		t.Fatalf("/readyz after Redis came back: %d, want 200", code)
	}
	// Redis lost everything (no persistence): the room is gone, and the
	// pages say so rather than fail open forever.
	deadline = time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if code, _, _ = get(vo, open.url+"/r/sale"); code != http.StatusSeeOther {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if code == http.StatusSeeOther {
		t.Errorf("open policy after Redis came back: still 303 to the target, want the line again")
	}
}
