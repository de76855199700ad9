package web_test

import (
	"context"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/internal/admit"
	"github.com/waitroom/waitroom/internal/door"
	"github.com/waitroom/waitroom/internal/eta"
	"github.com/waitroom/waitroom/internal/httpapi"
	"github.com/waitroom/waitroom/internal/openapi/openapitest"
	"github.com/waitroom/waitroom/internal/push"
	"github.com/waitroom/waitroom/internal/roomview"
	"github.com/waitroom/waitroom/internal/web"
	"github.com/waitroom/waitroom/memstore"
)

const adminToken = "web-test-admin-token"

// recordingStore is a real store that also records the calls the tests
// need to see: away beacons and presence reads.
type recordingStore struct {
	waitroom.Store
	mu    sync.Mutex
	aways []string
	reads []string
}

func (s *recordingStore) Away(ctx context.Context, room, id string, now time.Time) error {
	s.mu.Lock()
	s.aways = append(s.aways, id)
	s.mu.Unlock()
	return s.Store.Away(ctx, room, id, now)
}

func (s *recordingStore) Session(ctx context.Context, room, id string, now time.Time) (waitroom.Session, error) {
	s.mu.Lock()
	s.reads = append(s.reads, id)
	s.mu.Unlock()
	return s.Store.Session(ctx, room, id, now)
}

// count returns how many aways and reads id has had.
func (s *recordingStore) count(id string) (aways, reads int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, a := range s.aways {
		if a == id {
			aways++
		}
	}
	for _, r := range s.reads {
		if r == id {
			reads++
		}
	}
	return aways, reads
}

// site is the whole server as `waitroom serve` wires it: the JSON API
// (with the push hub and the ETA estimator) and the web handler on its
// prefixes, over a fresh memstore, plus a target page at /target/.
type site struct {
	t     testing.TB
	store *recordingStore
	srv   *httptest.Server
	door  *door.Door

	mu       sync.Mutex
	requests []string // "METHOD /path" of every request, in order
}

type siteOptions struct {
	web web.Config // Store, Rooms, ETA and Admit are filled in
	tls bool
}

// newRooms returns a room view over s, closed when the test ends.
func newRooms(t testing.TB, s waitroom.Store) *roomview.View {
	t.Helper()
	v := roomview.New(roomview.Config{Store: s})
	t.Cleanup(v.Close)
	return v
}

// admits is the admission of a server without a door or limits, for the
// tests of a web handler alone.
func admits(st waitroom.Store) *admit.Admission { return admit.New(admit.Config{Store: st}) }

func newSite(t testing.TB, opt siteOptions) *site {
	t.Helper()
	mem := memstore.New()
	store := &recordingStore{Store: mem}
	est := eta.New(store)
	hub := push.New(store, push.Options{Fill: est.Fill})
	rooms := newRooms(t, store)
	dr := door.New(rooms, []byte("the door secret of the site tests"))
	adm := admit.New(admit.Config{Store: store, Door: dr})
	api := httpapi.NewHandler(httpapi.Config{Store: store, AdminToken: adminToken, Hub: hub, Fill: est.Fill,
		StreamPresence: time.Second, Admit: adm})
	cfg := opt.web
	cfg.Store, cfg.Rooms, cfg.ETA, cfg.Admit = store, rooms, est.Fill, adm
	pages, err := web.New(cfg)
	if err != nil {
		t.Fatalf("web.New: %v", err)
	}
	mux := http.NewServeMux()
	mux.Handle("/", api)
	for _, p := range web.Prefixes(cfg) {
		mux.Handle(p, pages)
	}
	mux.HandleFunc("GET /target/", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		io.WriteString(w, `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><link rel="icon" href="data:,"><title>The shop</title></head>`+
			`<body style="font-family:system-ui;display:grid;place-items:center;min-height:90vh;background:#eef3f1"><h1 id="target">Welcome to the shop</h1></body></html>`)
	})
	mux.HandleFunc("GET /client-test/", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		io.WriteString(w, clientTestPage)
	})
	s := &site{t: t, store: store, door: dr}
	logged := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.requests = append(s.requests, r.Method+" "+r.URL.Path)
		s.mu.Unlock()
		mux.ServeHTTP(w, r)
	})
	// Every answer, to the tests' clients and to the browser alike, is
	// checked against the OpenAPI document; the test's own pages are not
	// the server's.
	h := checked(t, logged, openapitest.Outside("/target/", "/client-test/"))
	if opt.tls {
		s.srv = httptest.NewTLSServer(h)
	} else {
		s.srv = httptest.NewServer(h)
	}
	t.Cleanup(func() {
		s.srv.Close()
		hub.Close()
		est.Close()
		_ = mem.Close()
	})
	return s
}

// checked wraps a handler of the server so that every answer it writes is
// checked against the OpenAPI document (openapi/openapi.json): a status,
// header or field it does not describe fails t.
func checked(t testing.TB, h http.Handler, opts ...openapitest.Option) http.Handler {
	t.Helper()
	return openapitest.Handler(t, h, opts...)
}

// clientTestPage uses /waitroom.js as an app would and records every
// callback in window.calls. Its fragment picks a variant: #noes hides
// EventSource (the client must poll).
const clientTestPage = `<!doctype html><html lang="en"><head><meta charset="utf-8"><link rel="icon" href="data:,"><title>client test</title>
<script src="/waitroom.js"></script></head><body><p id="out">client test</p><script>
window.calls = [];
var opts = {
  room: "api",
  poll: 300,
  onPosition: function (s) { calls.push(["position", s.status, s.position]); },
  onAdmitted: function (s) { calls.push(["admitted", s.status]); },
  onEnded: function (s) { calls.push(["ended", s.status, s.end_reason]); },
  onError: function (e) { calls.push(["error", String(e && e.message)]); },
};
if (location.hash === "#noes") { window.EventSource = undefined; }
var rm = /room=([^&]+)/.exec(location.hash); if (rm) { opts.room = rm[1]; opts.storage = "none"; }
var inv = /invite=([^&]+)/.exec(location.hash); if (inv) { opts.invite = decodeURIComponent(inv[1]); }
opts.onSolving = function (f) { if (f === 1) calls.push(["solved"]); };
opts.onUpdate = function (s) { if (s.tier) calls.push(["tier", s.tier]); };
window.line = Waitroom.join(opts);
</script></body></html>`

// seen returns the requests logged since index from, and the new index.
func (s *site) seen(from int) ([]string, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.requests[min(from, len(s.requests)):]...), len(s.requests)
}

// room creates or replaces a room.
func (s *site) room(name string, cfg waitroom.RoomConfig) {
	s.t.Helper()
	if _, _, err := s.store.PutRoom(context.Background(), name, cfg, time.Now()); err != nil {
		s.t.Fatalf("PutRoom %s: %v", name, err)
	}
}

// visitor is a browser without JavaScript: a cookie jar that does not
// follow redirects.
func (s *site) visitor() *http.Client {
	jar, err := cookiejar.New(nil)
	if err != nil {
		s.t.Fatal(err)
	}
	c := *s.srv.Client()
	c.Jar = jar
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &c
}

// reply is one answer, read whole.
type reply struct {
	status int
	header http.Header
	body   string
}

// get fetches path with c and optional headers (name, value pairs).
func (s *site) get(c *http.Client, path string, headers ...string) reply {
	s.t.Helper()
	return s.do(c, http.MethodGet, path, headers...)
}

func (s *site) do(c *http.Client, method, path string, headers ...string) reply {
	s.t.Helper()
	req, err := http.NewRequest(method, s.srv.URL+path, nil)
	if err != nil {
		s.t.Fatal(err)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	res, err := c.Do(req)
	if err != nil {
		s.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		s.t.Fatalf("%s %s: reading the body: %v", method, path, err)
	}
	return reply{status: res.StatusCode, header: res.Header, body: string(b)}
}

// cookie returns the value of c's cookie name for the site ("" if none).
func (s *site) cookie(c *http.Client, name string) string {
	req, _ := http.NewRequest(http.MethodGet, s.srv.URL+"/", nil)
	for _, k := range c.Jar.Cookies(req.URL) {
		if k.Name == name {
			return k.Value
		}
	}
	return ""
}

// leave ends a session through the public API, as its holder would.
func (s *site) leave(room, id string) waitroom.Session {
	s.t.Helper()
	req, _ := http.NewRequest(http.MethodDelete, s.srv.URL+"/v1/rooms/"+room+"/sessions/"+id, nil)
	res, err := s.srv.Client().Do(req)
	if err != nil {
		s.t.Fatalf("DELETE session: %v", err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusOK {
		s.t.Fatalf("DELETE session: status %d, body %s", res.StatusCode, b)
	}
	var got waitroom.Session
	if err := got.UnmarshalJSON(b); err != nil {
		s.t.Fatalf("DELETE session: %v in %s", err, b)
	}
	return got
}

// config returns a room configuration of the given capacity and target.
func config(capacity int, target string) waitroom.RoomConfig {
	c := waitroom.DefaultConfig()
	c.Capacity = capacity
	c.TargetURL = target
	return c
}

// between returns the text of body between the first start and the next end.
func between(body, start, end string) string {
	_, after, ok := strings.Cut(body, start)
	if !ok {
		return ""
	}
	v, _, _ := strings.Cut(after, end)
	return v
}
