package openapitest

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
)

// Option changes what a checker checks.
type Option func(*checker)

// Outside lists path prefixes that are not the server's own routes: the
// answers to a request whose path starts with one of them and matches no
// route of the document are not checked. Tests that mount their own pages
// next to the server, or an app behind the gate's reverse proxy, name them
// here.
func Outside(prefixes ...string) Option {
	return func(c *checker) { c.outside = append(c.outside, prefixes...) }
}

// Serves says the handler under test serves only the document's routes
// under these path prefixes: it is one part of the server (the API without
// the pages, say), and a request for another part's route is checked as
// the whole server would answer an unknown route (NoRoute, NoMethod or
// CleanPath) rather than as that other route.
func Serves(prefixes ...string) Option {
	return func(c *checker) { c.serves = append(c.serves, prefixes...) }
}

// App lists exact paths that the document describes but that belong to
// the protected app in the tested set-up: under --upstream, `/` is the
// app's, not the server's home page. Their answers are not checked.
func App(paths ...string) Option {
	return func(c *checker) { c.app = append(c.app, paths...) }
}

// checker checks answers and reports their problems to one test.
type checker struct {
	spec    *spec
	outside []string
	serves  []string
	app     []string

	mu   sync.Mutex
	t    testing.TB
	done bool // the test is over: later problems have no one to tell
}

// newChecker returns a checker reporting to t, which fails at once if the
// document does not load.
func newChecker(t testing.TB, opts []Option) *checker {
	t.Helper()
	s, err := load()
	if err != nil {
		t.Fatalf("openapitest: %v", err)
	}
	c := &checker{spec: s, t: t}
	for _, o := range opts {
		o(c)
	}
	t.Cleanup(func() {
		c.mu.Lock()
		c.done = true
		c.mu.Unlock()
	})
	return c
}

// report fails the test with the problems of one answer.
func (c *checker) report(method, path string, status int, body []byte, problems []string) {
	if len(problems) == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done {
		return
	}
	if len(path) > 200 {
		path = path[:200] + "…"
	}
	excerpt := ""
	if len(body) > 0 {
		excerpt = fmt.Sprintf("\n\tbody: %.400s", body)
	}
	msg := fmt.Sprintf("openapi: %s %s answered %d, which the document (openapi/openapi.json) does not describe:\n\t%s%s",
		method, path, status, strings.Join(problems, "\n\t"), excerpt)
	if _, fuzz := c.t.(*testing.F); fuzz {
		// A fuzz target's inputs run as tests of their own, and the F may
		// not be told of a failure from inside one: panic, so the fuzzer
		// still records the input as failing. Fuzz targets should check
		// with a Handler made from each input's t instead.
		panic(msg)
	}
	c.t.Errorf("%s", msg)
}

// check checks one whole answer and reports what is wrong; it returns the
// outcome for the callers that go on checking a stream.
func (c *checker) check(a answer) outcome {
	if slices.Contains(c.app, a.path) {
		return outcome{skipped: true}
	}
	o := c.spec.check(a, c.outside, c.serves)
	c.report(a.method, a.path, a.status, a.body, o.problems)
	return o
}

// stream returns the checker of the body of an answer checked without its
// body: the events of an event stream, or the messages of a WebSocket. It
// returns nil when there is nothing to check as the body goes.
func (c *checker) stream(a answer, o outcome) func([]byte) {
	if o.skipped || o.response == "" {
		return nil
	}
	report := func(problems []string) { c.report(a.method, a.path, a.status, nil, problems) }
	if a.status == http.StatusSwitchingProtocols {
		f, problem := c.spec.newFrames(o.response)
		if f == nil {
			report([]string{problem})
			return nil
		}
		return func(b []byte) { report(f.feed(b)) }
	}
	ct := strings.ToLower(a.header.Get("Content-Type"))
	if !strings.HasPrefix(ct, "text/event-stream") {
		return nil
	}
	e := c.spec.newEvents(o.response + "/content/text~1event-stream/schema")
	return func(b []byte) { report(e.feed(b)) }
}
