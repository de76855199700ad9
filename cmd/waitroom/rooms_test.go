package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/client"
)

// auditOf returns room's audit log, newest first.
func auditOf(t *testing.T, base, token, room string) []waitroom.AuditEntry {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx(t), "GET", base+"/v1/rooms/"+room+"/audit?limit=50", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET audit of %s: %v", room, err)
	}
	defer res.Body.Close()
	var out struct {
		Entries []waitroom.AuditEntry `json:"entries"`
	}
	if err := json.NewDecoder(res.Body).Decode(&out); err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("GET audit of %s: %d %v", room, res.StatusCode, err)
	}
	return out.Entries
}

// roomOf reads room's whole configuration (admin), or fails the test.
func roomOf(t *testing.T, c *client.Client, room string) waitroom.Room {
	t.Helper()
	rooms, err := c.Rooms(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rooms {
		if r.Name == room {
			return r
		}
	}
	t.Fatalf("no room %s among %+v", room, rooms)
	return waitroom.Room{}
}

func writeRooms(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// hangup sends SIGHUP to p and waits until its log says `msg` one more
// time than before (the file applied, or refused).
func (p *process) hangup(t *testing.T, msg string) {
	t.Helper()
	before := strings.Count(p.stderr.String(), msg)
	if err := p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatalf("SIGHUP: %v", err)
	}
	deadline := time.Now().Add(30 * time.Second) // a hang guard only
	for strings.Count(p.stderr.String(), msg) <= before {
		select {
		case <-p.exited:
			t.Fatalf("waitroom exited after SIGHUP (%v); stderr:\n%s", p.waitErr, p.stderr.String())
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %q in the log 30s after SIGHUP; stderr:\n%s", msg, p.stderr.String())
		}
	}
}

// TestServeRoomsFile runs a real `waitroom serve --rooms` process on a real
// SQLite file: the file's rooms are created at start, a changed file is
// applied on SIGHUP, each change in the audit log as config by file; an
// unchanged room is not written; a bad file on SIGHUP changes nothing; a
// pause made by an operator survives a reload; prune deletes only empty
// rooms the file does not name.
func TestServeRoomsFile(t *testing.T) {
	bin := buildBinary(t)
	data := t.TempDir()
	const token = "rooms-file-admin-token"
	file := filepath.Join(t.TempDir(), "rooms.yaml")
	writeRooms(t, file, `rooms:
  shop:
    capacity: 5
    inventory: 100
    target_url: https://shop.example/checkout
  calm: {}
`)
	p := startProcess(t, bin, data, "--admin-token", token, "--rooms", file)
	c := client.New(p.url, client.WithAdminToken(token))
	shop := roomOf(t, c, "shop")
	if shop.Capacity != 5 || shop.Inventory == nil || *shop.Inventory != 100 || shop.TargetURL != "https://shop.example/checkout" {
		t.Fatalf("shop after start: %+v, want capacity 5, inventory 100 and the target", shop)
	}
	if e := auditOf(t, p.url, token, "shop"); len(e) != 1 || e[0].Actor != waitroom.AuditActorFile || e[0].Action != waitroom.AuditConfig || !strings.Contains(string(e[0].Detail), `"created"`) {
		t.Fatalf("shop's audit after start: %+v, want one config entry by file that created it", e)
	}
	if !strings.Contains(p.stderr.String(), "rooms file applied") || !strings.Contains(p.stderr.String(), "created=\"[calm shop]\"") {
		t.Errorf("no summary of the start's application in the log:\n%s", p.stderr.String())
	}

	// An operator pauses shop; the file changes capacity only.
	paused := shop.RoomConfig
	paused.Paused = true
	if _, _, err := c.PutRoom(ctx(t), "shop", paused); err != nil {
		t.Fatal(err)
	}
	writeRooms(t, file, `rooms:
  shop:
    capacity: 7
    inventory: 100
    target_url: https://shop.example/checkout
  calm: {}
`)
	p.hangup(t, "rooms file applied")
	shop = roomOf(t, c, "shop")
	if shop.Capacity != 7 || !shop.Paused || shop.Inventory == nil || *shop.Inventory != 100 {
		t.Errorf("shop after SIGHUP: capacity %d paused %v inventory %v; want 7, still paused, 100", shop.Capacity, shop.Paused, shop.Inventory)
	}
	e := auditOf(t, p.url, token, "shop")
	if len(e) != 3 || e[0].Actor != waitroom.AuditActorFile || e[0].Action != waitroom.AuditConfig || string(e[0].Detail) != `{"changed":{"capacity":[5,7]}}` {
		t.Errorf("shop's audit after SIGHUP: %+v, want a config entry by file changing capacity 5 to 7 on top", e)
	}
	if e := auditOf(t, p.url, token, "calm"); len(e) != 1 {
		t.Errorf("calm's audit after a SIGHUP that left it as it was: %d entries, want only its creation", len(e))
	}

	// A bad file changes nothing, and the process goes on.
	writeRooms(t, file, "rooms:\n  shop:\n    capacity: -1\n  calm:\n    capacity: 9\n")
	p.hangup(t, "rooms file refused")
	if !strings.Contains(p.stderr.String(), `room \"shop\": capacity: must be between`) {
		t.Errorf("the refusal does not name the room and the setting:\n%s", p.stderr.String())
	}
	if calm := roomOf(t, c, "calm"); calm.Capacity != waitroom.DefaultConfig().Capacity {
		t.Errorf("calm after a bad file: capacity %d, want it unchanged (the whole file is refused)", calm.Capacity)
	}
	if len(auditOf(t, p.url, token, "shop")) != 3 {
		t.Error("a bad file added audit entries")
	}

	// prune: true deletes the empty rooms the file does not name, keeps the
	// one with a person in line and the default room.
	for _, room := range []string{"old", "busy"} {
		if _, _, err := c.PutRoom(ctx(t), room, waitroom.DefaultConfig()); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.Join(ctx(t), "busy", ""); err != nil {
		t.Fatal(err)
	}
	writeRooms(t, file, "prune: true\nrooms:\n  shop:\n    capacity: 7\n    inventory: 100\n    target_url: https://shop.example/checkout\n")
	p.hangup(t, "rooms file applied")
	rooms, err := c.Rooms(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, r := range rooms {
		names = append(names, r.Name)
	}
	if strings.Join(names, " ") != "busy default shop" {
		t.Errorf("rooms after prune: %v, want busy (a person in line), default (the server's own) and shop", names)
	}
	// A deleted room's audit log is read once a room of its name exists
	// again (as after the API's DELETE).
	if _, _, err := c.PutRoom(ctx(t), "old", waitroom.DefaultConfig()); err != nil {
		t.Fatal(err)
	}
	if e := auditOf(t, p.url, token, "old"); len(e) != 3 || e[1].Actor != waitroom.AuditActorFile || e[1].Action != waitroom.AuditDelete {
		t.Errorf("old's audit after prune and a new PUT: %+v, want the delete by file between the two PUTs", e)
	}
	if !strings.Contains(p.stderr.String(), `kept=[busy]`) {
		t.Errorf("the log does not name the room prune kept:\n%s", p.stderr.String())
	}
}

// TestServeRoomsFileRefusedAtStart: a bad rooms file refuses the start with
// one line naming the file, the room and the setting, before anything is
// written to the data folder.
func TestServeRoomsFileRefusedAtStart(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "rooms.yaml")
	for name, tc := range map[string]struct{ text, want string }{
		"bad value":   {"rooms:\n  shop:\n    capacity: -1\n", `rooms.yaml: room "shop": capacity: must be between`},
		"unknown key": {"rooms:\n  shop:\n    capacty: 5\n", `rooms.yaml: room "shop": capacty: unknown setting`},
		"top key":     {"room:\n  shop: {}\n", `rooms.yaml: unknown key "room"`},
		"no file":     {"", "--rooms: open "},
	} {
		t.Run(name, func(t *testing.T) {
			os.Remove(file)
			if tc.text != "" {
				writeRooms(t, file, tc.text)
			}
			data := filepath.Join(t.TempDir(), "data")
			var stdout, stderr bytes.Buffer
			err := run(context.Background(), []string{"serve", "--addr", "127.0.0.1:0", "--data", data, "--rooms", file}, env(nil), &stdout, &stderr)
			var out bytes.Buffer
			code := exitCode(err, &out)
			msg := strings.TrimSpace(out.String())
			if code == 0 || !strings.Contains(msg, tc.want) || strings.Count(msg, "\n") > 0 {
				t.Errorf("serve with %s: exit %d, message %q; want non-zero and one line with %q", name, code, msg, tc.want)
			}
			if strings.Contains(stdout.String(), "listening") {
				t.Error("serve listened despite a bad rooms file")
			}
			if _, err := os.Stat(data); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("the data folder exists after a refused start (%v)", err)
			}
		})
	}
	// WAITROOM_ROOMS is --rooms' environment variable.
	o, err := parseServe(nil, env(map[string]string{"WAITROOM_ROOMS": "/etc/waitroom/rooms.yaml"}), io.Discard)
	if err != nil || o.cfg.RoomsFile != "/etc/waitroom/rooms.yaml" {
		t.Errorf("WAITROOM_ROOMS: RoomsFile %q, err %v", o.cfg.RoomsFile, err)
	}
}

var homeLinkRE = regexp.MustCompile(`href="(/[^"]*)"`)

// TestServeHomePage: GET / is a page that links the console, the default
// room's waiting page, the demo, the API document and the health endpoints,
// each of which answers; the start-up lines print them.
func TestServeHomePage(t *testing.T) {
	const token = "home-admin-token-0123"
	s := startServe(t, []string{"--addr", "127.0.0.1:0", "--store", "memory", "--data", t.TempDir(), "--admin-token", token, "--demo"}, nil)
	for _, want := range []string{
		"home:         " + s.url + "/\n",
		"console:      " + s.url + "/admin/\n",
		"waiting page: " + s.url + "/r/default\n",
		"health:       " + s.url + "/healthz " + s.url + "/readyz " + s.url + "/metrics\n",
	} {
		if !strings.Contains(s.stdout.String(), want) {
			t.Errorf("start-up lines lack %q:\n%s", want, s.stdout.String())
		}
	}
	status, h, body := fetch(t, browserless(t), s.url+"/")
	if status != http.StatusOK || !strings.HasPrefix(h.Get("Content-Type"), "text/html") {
		t.Fatalf("GET /: %d %q, want 200 HTML", status, h.Get("Content-Type"))
	}
	var links []string
	for _, m := range homeLinkRE.FindAllStringSubmatch(body, -1) {
		links = append(links, m[1])
	}
	// /metrics is named, not linked: it needs the admin token (issue 26).
	if !strings.Contains(body, "<code>/metrics</code>") || strings.Contains(body, `href="/metrics"`) {
		t.Errorf("GET / should name /metrics without linking it:\n%s", body)
	}
	for _, want := range []string{"/admin/", "/r/default", "/demo/", "/v1/openapi.json", "/healthz", "/readyz"} {
		if !strings.Contains(strings.Join(links, " ")+" ", want+" ") {
			t.Errorf("GET / does not link %s (links %v)", want, links)
		}
	}
	for _, l := range links {
		if strings.HasPrefix(l, "/waitroom/") {
			continue // the style sheet
		}
		if status, _, _ := fetch(t, browserless(t), s.url+l); status != http.StatusOK && status != http.StatusSeeOther {
			t.Errorf("GET %s (linked from /): %d", l, status)
		}
	}
	res, err := http.Head(s.url + "/")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Errorf("HEAD /: %d, want 200", res.StatusCode)
	}
	res, err = http.Post(s.url+"/", "text/plain", strings.NewReader("x"))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusMethodNotAllowed || !strings.Contains(res.Header.Get("Allow"), "GET") {
		t.Errorf("POST /: %d Allow %q, want 405 with GET allowed", res.StatusCode, res.Header.Get("Allow"))
	}
	// Paths other than / are still the API's JSON 404.
	if status, h, _ := fetch(t, browserless(t), s.url+"/nothing"); status != http.StatusNotFound || !strings.HasPrefix(h.Get("Content-Type"), "application/json") {
		t.Errorf("GET /nothing: %d %q, want the API's JSON 404", status, h.Get("Content-Type"))
	}

	// Without the default room, / does not link a page that is not there.
	c := client.New(s.url, client.WithAdminToken(token))
	if err := c.DeleteRoom(ctx(t), "default", true); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second) // the room view learns of the deletion by event
	for {
		_, _, body = fetch(t, browserless(t), s.url+"/")
		if !strings.Contains(body, `href="/r/default"`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("GET / still links /r/default 10s after the room was deleted")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestServeHangupWithoutRoomsFile: SIGHUP (systemctl reload, a closing
// terminal) must not end a server that has no rooms file to reload: Go's
// default for SIGHUP would end it at once, without the graceful stop.
func TestServeHangupWithoutRoomsFile(t *testing.T) {
	bin := buildBinary(t)
	p := startProcess(t, bin, t.TempDir(), "--admin-token", "hangup-admin-token-0123")
	p.hangup(t, "no --rooms file to apply")
	resp, err := http.Get(p.url + "/healthz")
	if err != nil {
		t.Fatalf("after SIGHUP the server does not answer: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("after SIGHUP /healthz answered %d, want 200", resp.StatusCode)
	}
}
