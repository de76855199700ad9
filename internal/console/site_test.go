package console_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/internal/apierror"
	"github.com/waitroom/waitroom/internal/clientaddr"
	"github.com/waitroom/waitroom/internal/console"
	"github.com/waitroom/waitroom/memstore"
)

const token = "s3cret-admin-token-for-tests"

var start = time.Date(2030, 6, 1, 12, 0, 0, 0, time.UTC)

// The console's store is any waitroom.Ledger; the real one is used.
var _ console.Sessions = waitroom.Ledger(nil)

// site is one server process: a console and a stand-in for an admin route
// of httpapi, which lets a request in when Authorize does.
type site struct {
	t       *testing.T
	console *console.Console
	srv     *httptest.Server
	client  *http.Client
	logs    *syncBuffer
	token   string
}

type siteOptions struct {
	ledger  console.Sessions
	clock   waitroom.Clock
	tls     bool
	token   string
	proxies string
}

func newSite(t *testing.T, o siteOptions) *site {
	t.Helper()
	if o.ledger == nil {
		o.ledger = memstore.New()
	}
	if o.clock == nil {
		o.clock = waitroom.NewManualClock(start)
	}
	if o.token == "" {
		o.token = token
	}
	trusted, err := clientaddr.Parse(o.proxies)
	if err != nil {
		t.Fatal(err)
	}
	logs := &syncBuffer{}
	c := console.New(console.Options{
		AdminToken:     o.token,
		Ledger:         o.ledger,
		Clock:          o.clock,
		TrustedProxies: trusted,
		Logger:         slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	})
	mux := http.NewServeMux()
	mux.Handle(console.Prefix, c.Handler())
	mux.HandleFunc("/v1/probe", func(w http.ResponseWriter, r *http.Request) {
		if err := c.Authorize(r); err != nil {
			w.WriteHeader(apierror.Status(waitroom.ErrorCode(err)))
			_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{
				"code": waitroom.ErrorCode(err), "message": waitroom.ErrorMessage(err)}})
			return
		}
		_, _ = io.WriteString(w, "ok")
	})
	var srv *httptest.Server
	if o.tls {
		srv = httptest.NewTLSServer(mux)
	} else {
		srv = httptest.NewServer(mux)
	}
	t.Cleanup(srv.Close)
	client := srv.Client()
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	client.Jar = jar
	t.Cleanup(func() {
		if strings.Contains(logs.String(), token) {
			t.Errorf("the admin token appears in the log:\n%s", logs.String())
		}
	})
	return &site{t: t, console: c, srv: srv, client: client, logs: logs, token: o.token}
}

// answer is one HTTP exchange's result.
type answer struct {
	status  int
	header  http.Header
	body    []byte
	cookies []*http.Cookie
}

func (a answer) errorCode() string {
	var e struct {
		Error struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	_ = json.Unmarshal(a.body, &e)
	return e.Error.Code
}

func (s *site) do(method, path, body string, header map[string]string) answer {
	s.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, s.srv.URL+path, rd)
	if err != nil {
		s.t.Fatal(err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	res, err := s.client.Do(req)
	if err != nil {
		s.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		s.t.Fatalf("%s %s: reading the body: %v", method, path, err)
	}
	if bytes.Contains(b, []byte(token)) {
		s.t.Errorf("%s %s: the admin token appears in the answer", method, path)
	}
	return answer{status: res.StatusCode, header: res.Header, body: b, cookies: res.Cookies()}
}

type session struct {
	CSRF      string `json:"csrf"`
	ExpiresAt string `json:"expires_at"`
}

// signIn signs in with tok and returns the answer and its session.
func (s *site) signIn(tok string) (answer, session) {
	s.t.Helper()
	b, _ := json.Marshal(map[string]string{"token": tok})
	a := s.do("POST", "/admin/api/session", string(b), map[string]string{"Content-Type": "application/json"})
	var sess session
	if a.status == 200 {
		if err := json.Unmarshal(a.body, &sess); err != nil {
			s.t.Fatalf("sign-in answer %s: %v", a.body, err)
		}
	}
	return a, sess
}

func (s *site) mustSignIn() session {
	s.t.Helper()
	a, sess := s.signIn(s.token)
	if a.status != 200 {
		s.t.Fatalf("sign-in: status %d %s, want 200", a.status, a.body)
	}
	return sess
}

func (s *site) consoleCookie() *http.Cookie {
	u, _ := url.Parse(s.srv.URL)
	for _, c := range s.client.Jar.Cookies(u) {
		if c.Name == console.CookieName {
			return c
		}
	}
	return nil
}

var cookieValue = regexp.MustCompile(`^[A-Za-z0-9_-]{32}\.[A-Za-z0-9_-]{43}$`)

func mustTrust(t *testing.T, list string) clientaddr.Trusted {
	t.Helper()
	tr, err := clientaddr.Parse(list)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// failing is a store that cannot be reached.
type failing struct{}

var errDown = errors.New("connection refused")

func (failing) PutConsoleSession(context.Context, string, time.Time) error { return errDown }
func (failing) ConsoleSession(context.Context, string, time.Time) (bool, error) {
	return false, errDown
}
func (failing) DeleteConsoleSession(context.Context, string) error { return errDown }

// syncBuffer is a log destination safe for the server's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
