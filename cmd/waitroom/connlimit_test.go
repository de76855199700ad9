package main

import (
	"bytes"
	"encoding/json"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/internal/openapi/openapitest"
)

// TestMaxConnectionsKeepsTheStore: a real server on its embedded SQLite
// store with --max-connections 6. Idle connections fill it; the next
// request is answered 503 unavailable in JSON, and once connections close,
// the same server joins people into its store again: a flood of
// connections costs answers, never the store.
func TestMaxConnectionsKeepsTheStore(t *testing.T) {
	bin := buildBinary(t)
	p, token := startCrashServer(t, bin, filepath.Join(t.TempDir(), "data"), []string{"--max-connections", "6"})
	plain := &http.Client{Timeout: 10 * time.Second, Transport: openapitest.Transport(&http.Transport{DisableKeepAlives: true})}
	cfg, _ := json.Marshal(waitroom.DefaultConfig())
	req, _ := http.NewRequest("PUT", p.url+"/v1/rooms/r", bytes.NewReader(cfg))
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := plain.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		t.Fatalf("create the room: %d", resp.StatusCode)
	}
	addr := strings.TrimPrefix(p.url, "http://")
	var idle []net.Conn
	for range 6 {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		idle = append(idle, conn)
	}
	defer func() {
		for _, conn := range idle {
			conn.Close()
		}
	}()
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := plain.Post(p.url+"/v1/rooms/r/sessions", "application/json", nil)
		status, code := 0, ""
		if err == nil {
			var body struct {
				Error struct{ Code string } `json:"error"`
			}
			_ = json.NewDecoder(resp.Body).Decode(&body)
			resp.Body.Close()
			status, code = resp.StatusCode, body.Error.Code
		}
		if status == 503 && code == "unavailable" {
			break // the idle connections hold every slot
		}
		if time.Now().After(deadline) {
			t.Fatalf("with 6 idle connections open: %d %q (%v), want 503 unavailable", status, code, err)
		}
		time.Sleep(20 * time.Millisecond) // the server is still accepting the idle ones
	}
	for _, conn := range idle {
		conn.Close()
	}
	idle = nil
	for {
		resp, err := plain.Post(p.url+"/v1/rooms/r/sessions", "application/json", nil)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 201 {
				break
			}
		}
		if time.Now().After(deadline.Add(30 * time.Second)) {
			t.Fatalf("after the idle connections closed: %v, want 201 (joined)", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if !strings.Contains(p.stderr.String(), "connections capped") {
		t.Errorf("the server did not log its cap; stderr:\n%s", p.stderr.String())
	}
}
