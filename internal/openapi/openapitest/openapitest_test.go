package openapitest

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// fakeT records what a checker reports.
type fakeT struct {
	testing.TB
	mu   sync.Mutex
	errs []string
}

func (f *fakeT) Helper() {}

func (f *fakeT) Errorf(format string, args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.errs = append(f.errs, fmt.Sprintf(format, args...))
}

func (f *fakeT) reported() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return strings.Join(f.errs, "\n")
}

const session = `{"id":"AAAAAAAAAAEAAAAAAAAAAAAAAAAAAAAA","room":"r","status":"waiting","ticket":1,"position":1,"ahead":0,"waiting":1,"active":0,"capacity":1,"joined_at":"2030-01-02T03:04:05.000Z"}`

func TestCheckerFindsWhatTheDocumentDoesNotDescribe(t *testing.T) {
	for _, tc := range []struct {
		name, method, path string
		status             int
		ct, body           string
		want               string // in the report; "" for none
	}{
		{"a documented answer", "GET", "/healthz", 200, "application/json; charset=utf-8", `{"status":"ok"}`, ""},
		{"HEAD of a GET", "HEAD", "/healthz", 200, "application/json; charset=utf-8", ``, ""},
		{"an undocumented field", "GET", "/healthz", 200, "application/json; charset=utf-8", `{"status":"ok","uptime":3}`, "uptime"},
		{"an undocumented status", "GET", "/healthz", 418, "application/json; charset=utf-8", `{}`, "status 418 is not documented"},
		{"a code of another status", "GET", "/v1/rooms/r", 404, "application/json; charset=utf-8", `{"error":{"code":"invalid_json","message":"x"}}`, "invalid_json"},
		{"an unknown code", "GET", "/v1/rooms/r", 404, "application/json; charset=utf-8", `{"error":{"code":"nope","message":"x"}}`, "nope"},
		{"a session on a code without one", "GET", "/v1/rooms/r", 404, "application/json; charset=utf-8", `{"error":{"code":"room_not_found","message":"x"},"session":` + session + `}`, "'not' failed"},
		{"a session", "GET", "/v1/rooms/r/sessions/AAAAAAAAAAEAAAAAAAAAAAAAAAAAAAAA", 200, "application/json; charset=utf-8", session, ""},
		{"a waiting session with a pass", "GET", "/v1/rooms/r/sessions/AAAAAAAAAAEAAAAAAAAAAAAAAAAAAAAA", 200, "application/json; charset=utf-8", strings.Replace(session, `}`, `,"pass":"x"}`, 1), "Session"},
		{"an undocumented content type", "GET", "/healthz", 200, "text/plain", `ok`, "Content-Type"},
		{"a 401 without WWW-Authenticate", "GET", "/v1/rooms", 401, "application/json; charset=utf-8", `{"error":{"code":"unauthorized","message":"x"}}`, "WWW-Authenticate"},
		{"an unknown route", "GET", "/v1/nope", 404, "application/json; charset=utf-8", `{"error":{"code":"not_found","message":"x"}}`, ""},
		{"an unknown route, 200", "GET", "/v1/nope", 200, "application/json; charset=utf-8", `{}`, "no operation"},
		{"an unknown method", "POST", "/v1/rooms/r", 405, "application/json; charset=utf-8", `{"error":{"code":"method_not_allowed","message":"x"}}`, "Allow"},
		{"outside the document", "GET", "/target/page", 200, "text/html", `<p>`, ""},
		{"an event stream", "GET", "/v1/rooms/r/sessions/AAAAAAAAAAEAAAAAAAAAAAAAAAAAAAAA/events", 200, "text/event-stream", "retry: 2000\n\nid: 5\nevent: session\ndata: " + session + "\n\n: keep-alive\n\n", ""},
		{"an event stream with a bad event", "GET", "/v1/rooms/r/sessions/AAAAAAAAAAEAAAAAAAAAAAAAAAAAAAAA/events", 200, "text/event-stream", "id: 5\nevent: session\ndata: {\"id\":1}\n\n", "event stream"},
		{"an event stream with an unknown event", "GET", "/v1/rooms/r/sessions/AAAAAAAAAAEAAAAAAAAAAAAAAAAAAAAA/events", 200, "text/event-stream", "id: 5\nevent: other\ndata: " + session + "\n\n", "event stream"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", tc.ct)
				if tc.name == "an unknown method" {
					w.Header().Del("Allow")
				}
				w.WriteHeader(tc.status)
				io.WriteString(w, tc.body)
			})
			for _, via := range []string{"handler", "transport"} {
				ft := &fakeT{TB: t}
				srv := httptest.NewServer(h)
				client := srv.Client()
				if via == "handler" {
					srv.Config.Handler = Handler(ft, h, Outside("/target/"))
				} else {
					client = &http.Client{Transport: NewValidatingTransport(ft, srv.Client().Transport, Outside("/target/"))}
				}
				req, _ := http.NewRequest(tc.method, srv.URL+tc.path, nil)
				resp, err := client.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				srv.Close()
				got := ft.reported()
				switch {
				case tc.want == "" && got != "":
					t.Errorf("%s: reported %s", via, got)
				case tc.want != "" && !strings.Contains(got, tc.want):
					t.Errorf("%s: reported %q, want it to mention %q", via, got, tc.want)
				}
			}
		})
	}
}

// TestServesChecksOtherPartsAsUnknownRoutes checks that a handler that is
// one part of the server (Serves) has its answers to another part's routes
// checked as the answers to an unknown route, and that without Serves the
// same answer is checked against the other part's route.
func TestServesChecksOtherPartsAsUnknownRoutes(t *testing.T) {
	notFound := `{"error":{"code":"not_found","message":"x"}}`
	for _, tc := range []struct {
		name   string
		opts   []Option
		status int
		body   string
		want   string // in the report; "" for none
	}{
		{"the API's 404 for a page, as the whole server", nil, 404, notFound, "text/html"},
		{"the API's 404 for a page, as the API", []Option{Serves("/v1/", "/healthz")}, 404, notFound, ""},
		{"the API's 200 for a page, as the API", []Option{Serves("/v1/", "/healthz")}, 200, `{}`, "no operation"},
		{"an unknown code, as the API", []Option{Serves("/v1/", "/healthz")}, 404, `{"error":{"code":"nope","message":"x"}}`, "nope"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ft := &fakeT{TB: t}
			h := Handler(ft, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json; charset=utf-8")
				w.WriteHeader(tc.status)
				io.WriteString(w, tc.body)
			}), tc.opts...)
			h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/r/shop", nil))
			got := ft.reported()
			switch {
			case tc.want == "" && got != "":
				t.Errorf("reported %s", got)
			case tc.want != "" && !strings.Contains(got, tc.want):
				t.Errorf("reported %q, want it to mention %q", got, tc.want)
			}
		})
	}
}

func TestWatchChecksOnlyWatchedServers(t *testing.T) {
	bad := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusTeapot) })
	watchedSrv, other := httptest.NewServer(bad), httptest.NewServer(bad)
	defer watchedSrv.Close()
	defer other.Close()
	ft := &fakeT{TB: t}
	Watch(ft, watchedSrv.URL)
	client := &http.Client{Transport: Transport(nil)}
	for _, u := range []string{other.URL + "/healthz", watchedSrv.URL + "/healthz"} {
		resp, err := client.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	if got := ft.reported(); strings.Count(got, "openapi:") != 1 || !strings.Contains(got, "418") {
		t.Errorf("reported %q, want one report, of the watched server's 418", got)
	}
}

// TestValidateRequestBody: request bodies are judged by the document,
// its duration formats included.
func TestValidateRequestBody(t *testing.T) {
	for _, tc := range []struct {
		method, tmpl, body string
		ok                 bool
	}{
		{"PUT", "/v1/rooms/{room}", ``, true},
		{"PUT", "/v1/rooms/{room}", `{"grace":"30s"}`, true},
		{"PUT", "/v1/rooms/{room}", `{"grace":"0"}`, true},
		{"PUT", "/v1/rooms/{room}", `{"grace":"500us"}`, false},
		{"PUT", "/v1/rooms/{room}", `{"grace":"8785h"}`, false},
		{"PUT", "/v1/rooms/{room}", `{"capacity":null}`, false},
		{"PUT", "/v1/rooms/{room}", `null`, false},
		{"POST", "/v1/rooms/{room}/sessions/{id}/extend", `{"by":"10m"}`, true},
		{"POST", "/v1/rooms/{room}/sessions/{id}/extend", `{"by":"0s"}`, false},
		{"POST", "/v1/rooms/{room}/sessions/{id}/extend", `{"by":"1.0005s"}`, false},
		{"POST", "/v1/rooms/{room}/inventory", `{"sold":1,"set":2}`, false},
		{"POST", "/v1/rooms/{room}/inventory", `{}`, false},
		{"POST", "/v1/rooms/{room}/invites", `{"key":"k","count":2}`, false},
		{"POST", "/v1/rooms/{room}/invites", `{"key":"k"}`, true},
		{"PUT", "/v1/rooms/{room}/webhooks/{name}", `{"url":"https://example.com/"}`, false},
		{"POST", "/v1/rooms/{room}/sessions", `{"key":"a\u202eb"}`, false},
		{"POST", "/v1/rooms/{room}/front", `{}`, false}, // no such operation
	} {
		err := ValidateRequestBody(tc.method, tc.tmpl, []byte(tc.body))
		if (err == nil) != tc.ok {
			t.Errorf("%s %s %s: %v, want ok=%v", tc.method, tc.tmpl, tc.body, err, tc.ok)
		}
	}
}
