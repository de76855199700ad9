package main

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/openapi/openapitest"
)

// jsTestDir holds the Node tests of /waitroom.js and its declarations.
var jsTestDir = filepath.Join("..", "..", "internal", "web", "jstest")

// needNode returns the path of node (18 or later, for its test runner).
// Without it the test is skipped, except under CI=true, where that is a
// failure.
func needNode(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("node")
	if err != nil {
		msg := "node is not installed (Debian package nodejs; `make test` installs it)"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	out, err := exec.Command(p, "--version").Output()
	if err != nil {
		t.Fatalf("node --version: %v", err)
	}
	m := regexp.MustCompile(`^v(\d+)\.`).FindStringSubmatch(strings.TrimSpace(string(out)))
	if m == nil {
		t.Fatalf("node --version printed %q", out)
	}
	if major, _ := strconv.Atoi(m[1]); major < 18 {
		t.Fatalf("node %s is too old: the tests need node 18 or later (node --test)", strings.TrimSpace(string(out)))
	}
	return p
}

// checkedProxy starts a reverse proxy to the server at target whose
// answers are checked against the OpenAPI document (failing t), and
// returns its URL. Event streams are flushed as they come.
func checkedProxy(t *testing.T, target string) string {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	rp := &httputil.ReverseProxy{
		Rewrite:       func(r *httputil.ProxyRequest) { r.SetURL(u); r.Out.Host = r.In.Host },
		Transport:     openapitest.NewValidatingTransport(t, nil),
		FlushInterval: -1,
	}
	p := httptest.NewServer(rp)
	t.Cleanup(p.Close)
	return p.URL
}

// TestWaitroomJS runs `node --test` on web/jstest against a real `waitroom
// serve`: the tests load /waitroom.js into a stand-in browser window and
// follow sessions over real HTTP (join, positions over Server-Sent Events
// and by polling, heartbeats, leave, resume, pagehide/pageshow, a held
// place's onInvited and claim, invites, proof of work), and check
// waitroom.d.ts against the script, its callbacks' real arguments and the
// server's answers.
func TestWaitroomJS(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(jsTestDir, "*.test.mjs"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no Node tests in %s (%v)", jsTestDir, err)
	}
	bin := buildBinary(t)
	srv, token := startCrashServer(t, bin, t.TempDir(), noJoinLimitFlags(bin))

	// The declarations are served beside the script, as they are on disk.
	want, err := os.ReadFile(filepath.Join("..", "..", "internal", "web", "assets", "waitroom.d.ts"))
	if err != nil {
		t.Fatal(err)
	}
	res, err := http.Get(srv.url + "/waitroom.d.ts")
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusOK || res.Header.Get("Content-Type") != "application/typescript; charset=utf-8" || string(got) != string(want) {
		t.Fatalf("GET /waitroom.d.ts: %d %q, %d bytes; want 200 application/typescript with web/assets/waitroom.d.ts (%d bytes)",
			res.StatusCode, res.Header.Get("Content-Type"), len(got), len(want))
	}

	// The tests talk to the server through a reverse proxy whose transport
	// checks every answer, event and message the script receives against
	// the OpenAPI document: what waitroom.js is answered is what the
	// document says.
	checked := checkedProxy(t, srv.url)

	node := needNode(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, append([]string{"--test", "--test-reporter=spec"}, files...)...)
	cmd.Env = append(os.Environ(), "WAITROOM_JSTEST_URL="+checked, "WAITROOM_JSTEST_ADMIN_TOKEN="+token, "NO_COLOR=1")
	cmd.WaitDelay = 10 * time.Second
	start := time.Now()
	out, err := cmd.CombinedOutput()
	took := time.Since(start).Round(100 * time.Millisecond)
	if err != nil {
		t.Fatalf("node --test (%v): %v\n%s\nserver stderr:\n%s", took, err, out, srv.stderr.String())
	}
	// The run must have counted tests and passed them all: an empty run
	// (no test found, a file that failed to load) is no pass.
	count := func(what string) int {
		m := regexp.MustCompile(`(?m)^ℹ ` + what + ` (\d+)$`).FindSubmatch(out)
		if m == nil {
			t.Fatalf("node --test printed no %q count:\n%s", what, out)
		}
		n, _ := strconv.Atoi(string(m[1]))
		return n
	}
	tests, pass, fail := count("tests"), count("pass"), count("fail")
	if tests < 20 || fail != 0 || pass+count("skipped") != tests {
		t.Fatalf("node --test: %d tests, %d passed, %d failed; want at least 20, all passing:\n%s", tests, pass, fail, out)
	}
	if testing.Verbose() {
		t.Logf("node --test (%v):\n%s", took, out)
	} else {
		t.Logf("node --test: %d tests, %d passed in %v", tests, pass, took)
	}
}
