package server_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/openapi"
	"github.com/waitroom/waitroom/internal/openapi/openapitest"
	"github.com/waitroom/waitroom/server"
)

// contractServer is a whole server (demo on, memory store, webhooks to
// loopback allowed) whose every answer is checked against the document,
// with a session in the default room and a webhook "hook" on it.
type contractServer struct {
	t     *testing.T
	srv   *server.Server
	h     http.Handler // checked
	ts    *httptest.Server
	token string
	id    string // a session of the default room
}

func newContractServer(t *testing.T) *contractServer {
	t.Helper()
	cfg := server.Defaults()
	cfg.DataDir = t.TempDir()
	cfg.StoreURL = "memory"
	cfg.Demo = true
	cfg.WebhookAllowPrivate = true
	srv, err := server.New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	c := &contractServer{t: t, srv: srv, token: srv.AdminToken()}
	c.h = openapitest.Handler(t, srv.Handler())
	c.ts = httptest.NewServer(c.h)
	t.Cleanup(c.ts.Close)
	// What the routes' parameters name: rooms of each kind, a session, a
	// webhook.
	for room, body := range map[string]string{
		"sched": `{"opens_at":"2099-01-01T00:00:00Z"}`,
		"pow":   `{"challenge":"pow"}`,
	} {
		c.mustStatus("PUT", "/v1/rooms/"+room, body, http.StatusCreated)
	}
	var s struct{ ID string }
	if err := json.Unmarshal(c.mustStatus("POST", "/v1/rooms/default/sessions", "", http.StatusCreated), &s); err != nil {
		t.Fatal(err)
	}
	c.id = s.ID
	c.mustStatus("PUT", "/v1/rooms/default/webhooks/hook", `{"url":"http://127.0.0.1:9/hook","events":["*"]}`, http.StatusCreated)
	return c
}

// do sends a request over HTTP with the admin token and returns the answer
// with its body read, at most 64 KiB of it (an event stream is cut there,
// or after 2 seconds).
func (c *contractServer) do(method, path, body string) (int, http.Header, []byte) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.ts.URL+path, rd)
	if err != nil {
		c.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.ts.Client().Do(req)
	if err != nil {
		c.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		return resp.StatusCode, resp.Header, nil // a stream answered: enough
	}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	return resp.StatusCode, resp.Header, b
}

func (c *contractServer) mustStatus(method, path, body string, want int) []byte {
	c.t.Helper()
	st, _, b := c.do(method, path, body)
	if st != want {
		c.t.Fatalf("%s %s: %d, want %d: %s", method, path, st, want, b)
	}
	return b
}

// docPaths returns each path of the document with its documented methods.
func docPaths(t *testing.T) map[string][]string {
	t.Helper()
	var d struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(openapi.JSON(), &d); err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	for p, item := range d.Paths {
		for m := range item {
			switch m {
			case "get", "head", "post", "put", "patch", "delete", "options", "trace":
				out[p] = append(out[p], strings.ToUpper(m))
			}
		}
		sort.Strings(out[p])
	}
	return out
}

// fill puts real values in a path template: the room each route needs to
// answer with something of its own (a draw needs a scheduled room, a
// challenge a room that asks one), the session, the webhook, a file.
func (c *contractServer) fill(tmpl, room string) string {
	if room == "" {
		room = "default"
		switch {
		case strings.HasSuffix(tmpl, "/draw"):
			room = "sched"
		case strings.HasSuffix(tmpl, "/challenge"):
			room = "pow"
		}
	}
	return strings.NewReplacer("{room}", room, "{id}", c.id, "{name}", "hook",
		"{file}", "app.js", "{asset}", "page.css").Replace(tmpl)
}

// allowOf is the Allow a path must answer a method it does not serve with:
// its documented methods, and HEAD with GET.
func allowOf(methods []string) []string {
	out := slices.Clone(methods)
	if slices.Contains(out, "GET") && !slices.Contains(out, "HEAD") {
		out = append(out, "HEAD")
	}
	sort.Strings(out)
	return out
}

// TestEveryDocumentedRouteAnswersAndRefusesOtherMethods walks the document:
// every documented method of every path reaches its route (whatever it
// answers, it is not the answer to an unknown path or method), and every
// other method, TRACE and CONNECT included, is 405 method_not_allowed with
// Allow listing exactly the documented methods (and HEAD with GET), for a
// room that exists and for one that does not. Every answer is checked
// against the document on the way.
func TestEveryDocumentedRouteAnswersAndRefusesOtherMethods(t *testing.T) {
	c := newContractServer(t)
	paths := docPaths(t)
	tmpls := make([]string, 0, len(paths))
	for p := range paths {
		tmpls = append(tmpls, p)
	}
	sort.Strings(tmpls)

	// Documented methods: DELETE last, so that what they remove is there
	// for the rest.
	order := []string{"PUT", "POST", "PATCH", "GET", "HEAD", "OPTIONS", "DELETE"}
	answered, refused := 0, 0
	for _, m := range order {
		for _, tmpl := range tmpls {
			if !slices.Contains(paths[tmpl], m) {
				continue
			}
			path := c.fill(tmpl, "")
			if tmpl == "/v1/rooms/{room}" && m == "DELETE" {
				path = "/v1/rooms/sched"
			}
			st, h, b := c.do(m, path, "")
			answered++
			if st == http.StatusMethodNotAllowed || (st == http.StatusNotFound && noRoute(h, b)) {
				t.Errorf("%s %s (documented as %s %s): %d %.200s, the answer of no route", m, path, m, tmpl, st, b)
			}
		}
	}

	// Every other method: 405 with the documented Allow, in JSON.
	all := []string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "TRACE", "CONNECT"}
	for _, tmpl := range tmpls {
		want := strings.Join(allowOf(paths[tmpl]), ", ")
		for _, room := range []string{"", "nosuchroom"} {
			if room != "" && !strings.Contains(tmpl, "{room}") {
				continue
			}
			path := c.fill(tmpl, room)
			for _, m := range all {
				if slices.Contains(allowOf(paths[tmpl]), m) {
					continue
				}
				rec := httptest.NewRecorder()
				c.h.ServeHTTP(rec, httptest.NewRequest(m, path, nil))
				refused++
				got := strings.Split(rec.Header().Get("Allow"), ",")
				for i := range got {
					got[i] = strings.TrimSpace(got[i])
				}
				sort.Strings(got)
				var body struct {
					Error struct{ Code string } `json:"error"`
				}
				_ = json.Unmarshal(rec.Body.Bytes(), &body)
				if rec.Code != http.StatusMethodNotAllowed || strings.Join(got, ", ") != want || body.Error.Code != "method_not_allowed" {
					t.Errorf("%s %s: %d, Allow %q, body %.200s; want 405 method_not_allowed with Allow %q",
						m, path, rec.Code, rec.Header().Get("Allow"), rec.Body.String(), want)
				}
			}
		}
	}
	if len(tmpls) < 40 || answered < 60 || refused < 200 {
		t.Errorf("walked %d paths, %d documented methods, %d others: the document no longer reads as expected", len(tmpls), answered, refused)
	}
	t.Logf("%d paths: %d documented methods answered, %d other methods refused", len(tmpls), answered, refused)
}

// noRoute says whether a 404 is the answer to a path no route serves: the
// API's, the gate's or the console's "not_found" for an unknown path, or
// the waiting pages' HTML page for one.
func noRoute(h http.Header, b []byte) bool {
	if strings.HasPrefix(h.Get("Content-Type"), "text/html") {
		return true
	}
	var body struct {
		Error struct{ Code, Message string } `json:"error"`
	}
	_ = json.Unmarshal(b, &body)
	return body.Error.Code == "not_found" && (strings.Contains(body.Error.Message, "no such endpoint") ||
		strings.Contains(body.Error.Message, "no such route") || strings.Contains(body.Error.Message, "no console"))
}
