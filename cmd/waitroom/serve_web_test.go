package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/cookiejar"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/client"
	"github.com/waitroom/waitroom/internal/openapi/openapitest"
)

// browserless is an HTTP client with cookies that does not follow
// redirects, like a browser without JavaScript whose redirects we inspect.
func browserless(t *testing.T) *http.Client {
	t.Helper()
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &http.Client{
		Jar:           jar,
		Timeout:       10 * time.Second,
		Transport:     openapitest.Transport(nil),
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// fetch GETs url with c and returns the status, headers and body.
func fetch(t *testing.T, c *http.Client, url string) (int, http.Header, string) {
	t.Helper()
	res, err := c.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	return res.StatusCode, res.Header, string(b)
}

func TestParseServeWebFlags(t *testing.T) {
	for _, tc := range []struct {
		name          string
		args          []string
		env           map[string]string
		wantTemplates string
		wantDemo      bool
	}{
		{"defaults", nil, nil, "", false},
		{"flags", []string{"--templates", "/flag/tpl", "--demo"}, nil, "/flag/tpl", true},
		{"env", nil, map[string]string{"WAITROOM_TEMPLATES": "/env/tpl", "WAITROOM_DEMO": "true"}, "/env/tpl", true},
		{"env 1", nil, map[string]string{"WAITROOM_DEMO": "1"}, "", true},
		{"flag beats env", []string{"--demo=false", "--templates", "/flag"}, map[string]string{"WAITROOM_TEMPLATES": "/env", "WAITROOM_DEMO": "true"}, "/flag", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stderr bytes.Buffer
			got, err := parseServe(tc.args, env(tc.env), &stderr)
			if err != nil {
				t.Fatalf("parseServe: %v; stderr:\n%s", err, stderr.String())
			}
			if got.cfg.Templates != tc.wantTemplates || got.cfg.Demo != tc.wantDemo {
				t.Errorf("got templates %q demo %v, want %q %v", got.cfg.Templates, got.cfg.Demo, tc.wantTemplates, tc.wantDemo)
			}
		})
	}
	var stderr bytes.Buffer
	_, err := parseServe(nil, env(map[string]string{"WAITROOM_DEMO": "maybe"}), &stderr)
	if code := exitCode(err, io.Discard); code != 2 || !strings.Contains(stderr.String(), `WAITROOM_DEMO must be true or false, not "maybe"`) {
		t.Errorf("WAITROOM_DEMO=maybe: exit code %d, stderr:\n%s", code, stderr.String())
	}
	stderr.Reset()
	if err := run(context.Background(), []string{"serve", "-h"}, env(nil), io.Discard, &stderr); err == nil {
		t.Fatal("serve -h returned nil")
	}
	for _, want := range []string{"--templates folder", "WAITROOM_TEMPLATES", "--demo", "WAITROOM_DEMO"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("serve -h does not mention %q", want)
		}
	}
}

var demoURLRE = regexp.MustCompile(`demo: open (http://\S+/r/demo-room) `)

func TestServeDemoMountsPagesNextToTheAPI(t *testing.T) {
	s := startServe(t, []string{"--addr", "127.0.0.1:0", "--store", "memory", "--data", t.TempDir(), "--admin-token", "test-admin-token-123", "--demo"}, nil)
	m := demoURLRE.FindStringSubmatch(s.stdout.String())
	if m == nil || m[1] != s.url+"/r/demo-room" {
		t.Fatalf("stdout does not print the demo URL %s/r/demo-room:\n%s", s.url, s.stdout.String())
	}
	rooms, err := client.New(s.url, client.WithAdminToken("test-admin-token-123")).Rooms(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	var demo *waitroom.Room
	for i := range rooms {
		if rooms[i].Name == "demo-room" {
			demo = &rooms[i]
		}
	}
	if demo == nil || demo.Capacity != 3 || demo.TargetURL != "/demo/app/" {
		t.Fatalf("rooms %+v: want room demo-room with capacity 3 and target /demo/app/", rooms)
	}

	// Three people get in, the fourth waits.
	var people []*http.Client
	for i := range 4 {
		c := browserless(t)
		people = append(people, c)
		status, h, body := fetch(t, c, s.url+"/r/demo-room")
		if i < 3 && (status != http.StatusSeeOther || h.Get("Location") != "/demo/app/") {
			t.Errorf("person %d: %d Location %q, want 303 to /demo/app/", i+1, status, h.Get("Location"))
		}
		if i == 3 && (status != http.StatusOK || !strings.Contains(body, `data-waitroom="position">1<`)) {
			t.Errorf("person 4: %d, want the waiting page at position 1", status)
		}
	}
	status, _, body := fetch(t, people[0], s.url+"/demo/app/")
	if status != http.StatusOK || !strings.Contains(body, "You are in") || !strings.Contains(body, "Leave") {
		t.Errorf("demo app for person 1: %d, want 200 with \"You are in\" and Leave", status)
	}
	if status, h, _ := fetch(t, people[3], s.url+"/demo/app/"); status != http.StatusSeeOther || h.Get("Location") != "/r/demo-room" {
		t.Errorf("demo app for the waiting person: %d Location %q, want 303 to /r/demo-room", status, h.Get("Location"))
	}
	if status, h, body := fetch(t, browserless(t), s.url+"/waitroom.js"); status != http.StatusOK || !strings.HasPrefix(h.Get("Content-Type"), "text/javascript") || !strings.Contains(body, "Waitroom") {
		t.Errorf("GET /waitroom.js: %d %q", status, h.Get("Content-Type"))
	}
	if status, _, body := fetch(t, browserless(t), s.url+"/demo/"); status != http.StatusOK || !strings.Contains(body, "waitroom.js") {
		t.Errorf("GET /demo/: %d", status)
	}
	// The API is still there, with its JSON errors.
	if err := client.New(s.url).Healthz(ctx(t)); err != nil {
		t.Errorf("healthz: %v", err)
	}
	if status, h, body := fetch(t, browserless(t), s.url+"/v1/nothing"); status != http.StatusNotFound || !strings.HasPrefix(h.Get("Content-Type"), "application/json") || !strings.Contains(body, `"not_found"`) {
		t.Errorf("GET /v1/nothing: %d %q %s, want the API's JSON 404", status, h.Get("Content-Type"), body)
	}
}

func TestServeWithoutDemoHasPagesButNoDemo(t *testing.T) {
	s := startServe(t, []string{"--addr", "127.0.0.1:0", "--store", "memory", "--data", t.TempDir()}, nil)
	if strings.Contains(s.stdout.String(), "demo:") {
		t.Errorf("stdout mentions the demo without --demo:\n%s", s.stdout.String())
	}
	if status, h, _ := fetch(t, browserless(t), s.url+"/r/default"); status != http.StatusSeeOther && status != http.StatusOK {
		t.Errorf("GET /r/default: %d %v", status, h)
	}
	if status, _, body := fetch(t, browserless(t), s.url+"/r/nosuch"); status != http.StatusNotFound || !strings.Contains(body, "<html") {
		t.Errorf("GET /r/nosuch: %d, want the 404 page", status)
	}
	if status, _, _ := fetch(t, browserless(t), s.url+"/demo/app/"); status != http.StatusNotFound {
		t.Errorf("GET /demo/app/ without --demo: %d, want 404", status)
	}
	if _, err := client.New(s.url).Room(ctx(t), "demo-room"); waitroom.ErrorCode(err) != waitroom.CodeRoomNotFound {
		t.Errorf("room demo-room without --demo: %v, want room_not_found", err)
	}
}

// TestServeDemoLeavesAnExistingRoomAlone: --demo creates its room once,
// audited as created by actor demo; a room of that name that exists is
// never changed (and that is logged), and the walkthrough's room "demo"
// is not the demo's.
func TestServeDemoLeavesAnExistingRoomAlone(t *testing.T) {
	data := t.TempDir()
	const token = "test-admin-token-123"
	args := []string{"--addr", "127.0.0.1:0", "--data", data, "--admin-token", token}
	s := startServe(t, args, map[string]string{"WAITROOM_DEMO": "true"})
	c := client.New(s.url, client.WithAdminToken(token))
	entries := auditOf(t, s.url, token, "demo-room")
	if len(entries) != 1 || entries[0].Actor != waitroom.AuditActorDemo || entries[0].Action != waitroom.AuditConfig || !strings.Contains(string(entries[0].Detail), `"created"`) {
		t.Errorf("audit of demo-room after --demo created it: %+v, want one config entry by demo", entries)
	}
	if _, err := c.Room(ctx(t), "demo"); waitroom.ErrorCode(err) != waitroom.CodeRoomNotFound {
		t.Errorf("room demo after --demo: %v, want room_not_found (the walkthrough's room is not the demo's)", err)
	}
	cfg := waitroom.DefaultConfig()
	cfg.Capacity = 50
	cfg.Grace = waitroom.Duration(7 * time.Second)
	for _, room := range []string{"demo", "demo-room"} {
		if _, _, err := c.PutRoom(ctx(t), room, cfg); err != nil {
			t.Fatal(err)
		}
	}
	s.stop(t)

	s = startServe(t, args, map[string]string{"WAITROOM_DEMO": "true"})
	c = client.New(s.url, client.WithAdminToken(token))
	for _, room := range []string{"demo", "demo-room"} {
		if r := roomOf(t, c, room); r.Capacity != 50 || r.TargetURL != "" || r.Grace != cfg.Grace {
			t.Errorf("room %s after --demo: capacity %d target %q grace %s; want it as it was (50, no target, %s)", room, r.Capacity, r.TargetURL, r.Grace, cfg.Grace)
		}
	}
	if e := auditOf(t, s.url, token, "demo-room"); len(e) != 2 || e[0].Actor != waitroom.AuditActorAPI {
		t.Errorf("audit of demo-room after a second --demo: %+v, want the demo's creation and the API's change only", e)
	}
	if !strings.Contains(s.stderr.String(), "the demo room exists; left as it is") {
		t.Errorf("the log does not say the existing demo room was left alone:\n%s", s.stderr.String())
	}
}

func TestServeTemplates(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "page.html"), []byte(`<!doctype html><title>{{.T.Title}}</title><h1>Custom line for {{.Room}}</h1><p>{{.Position}}</p>`), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := waitroom.DefaultConfig()
	cfg.Capacity = 0
	s := startServe(t, []string{"--addr", "127.0.0.1:0", "--store", "memory", "--data", t.TempDir(), "--admin-token", "test-admin-token-123"}, map[string]string{"WAITROOM_TEMPLATES": dir})
	if _, _, err := client.New(s.url, client.WithAdminToken("test-admin-token-123")).PutRoom(ctx(t), "shop", cfg); err != nil {
		t.Fatal(err)
	}
	if status, _, body := fetch(t, browserless(t), s.url+"/r/shop"); status != http.StatusOK || !strings.Contains(body, "<h1>Custom line for shop</h1><p>1</p>") {
		t.Errorf("GET /r/shop with --templates: %d\n%s", status, body)
	}

	bad := t.TempDir()
	if err := os.WriteFile(filepath.Join(bad, "page.html"), []byte("<p>\n{{.Position</p>"), 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), []string{"serve", "--addr", "127.0.0.1:0", "--store", "memory", "--data", t.TempDir(), "--templates", bad}, env(nil), &stdout, &stderr)
	var out bytes.Buffer
	if code := exitCode(err, &out); code != 1 || !strings.Contains(out.String(), filepath.Join(bad, "page.html")) || !strings.Contains(out.String(), "page.html:2") {
		t.Errorf("serve with a broken template: exit %d, message %q; want 1 and a message naming the file and line", code, out.String())
	}
	if strings.Contains(stdout.String(), "listening") {
		t.Errorf("serve started listening despite a broken template")
	}
}
