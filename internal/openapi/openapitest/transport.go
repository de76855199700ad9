package openapitest

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"net/url"
	"sync"
	"testing"
)

// NewValidatingTransport returns a RoundTripper over base (nil:
// http.DefaultTransport) that checks every answer against the document and
// fails t on a mismatch. A whole body is read before the answer is handed
// on; an event stream's events and a WebSocket's messages are checked as
// the client reads them.
func NewValidatingTransport(t testing.TB, base http.RoundTripper, opts ...Option) http.RoundTripper {
	t.Helper()
	return &transport{base: base, c: newChecker(t, opts)}
}

// Transport returns a RoundTripper over base (nil: http.DefaultTransport)
// that checks the answers of the servers a test Watches, and passes every
// other answer through untouched.
func Transport(base http.RoundTripper) http.RoundTripper {
	return &transport{base: base}
}

var installOnce sync.Once

// Install makes http.DefaultClient check the answers of watched servers
// (Transport). Call it before any test runs, from an init function or
// TestMain; it is idempotent.
func Install() {
	installOnce.Do(func() {
		http.DefaultClient.Transport = Transport(http.DefaultClient.Transport)
	})
}

var (
	watchMu sync.Mutex
	watched = map[string]*checker{} // by host:port
)

// Watch checks, until t ends, every answer from the server at baseURL that
// a client using Transport (http.DefaultClient after Install) receives.
func Watch(t testing.TB, baseURL string, opts ...Option) {
	t.Helper()
	u, err := url.Parse(baseURL)
	if err != nil || u.Host == "" {
		t.Fatalf("openapitest: Watch(%q): not a server URL", baseURL)
	}
	c := newChecker(t, opts)
	watchMu.Lock()
	watched[u.Host] = c
	watchMu.Unlock()
	t.Cleanup(func() {
		watchMu.Lock()
		if watched[u.Host] == c {
			delete(watched, u.Host)
		}
		watchMu.Unlock()
	})
}

type transport struct {
	base http.RoundTripper
	c    *checker // nil: the checker of the watched server, if any
}

func (tr *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	base := tr.base
	if base == nil {
		base = http.DefaultTransport
	}
	c := tr.c
	if c == nil {
		watchMu.Lock()
		c = watched[req.URL.Host]
		watchMu.Unlock()
	}
	resp, err := base.RoundTrip(req)
	if err != nil || c == nil {
		return resp, err
	}
	a := answer{method: req.Method, path: req.URL.EscapedPath(), status: resp.StatusCode, header: resp.Header}
	switch {
	case resp.StatusCode == http.StatusSwitchingProtocols:
		a.noBody = true
		stream := c.stream(a, c.check(a))
		if rwc, ok := resp.Body.(io.ReadWriteCloser); ok && stream != nil {
			resp.Body = &watchedRWC{ReadWriteCloser: rwc, see: stream}
		}
	case isStream(resp.Header):
		a.noBody = true
		if stream := c.stream(a, c.check(a)); stream != nil {
			resp.Body = &watchedBody{ReadCloser: resp.Body, see: stream}
		}
	default:
		b, rerr := io.ReadAll(io.LimitReader(resp.Body, maxBody+1))
		resp.Body.Close()
		if rerr == nil && len(b) <= maxBody {
			a.body = b
			c.check(a)
		} else if rerr == nil {
			a.noBody = true
			c.check(a)
		}
		// A body cut short (the server died) is handed on as it came:
		// its checks are the test's business, the document's are moot.
		resp.Body = &replayBody{r: bytes.NewReader(b), err: rerr}
	}
	return resp, nil
}

// replayBody is a body read ahead: its bytes, then the error it ended with.
type replayBody struct {
	r   *bytes.Reader
	err error
}

func (b *replayBody) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	if errors.Is(err, io.EOF) && b.err != nil {
		return n, b.err
	}
	return n, err
}

func (b *replayBody) Close() error { return nil }

// watchedBody feeds what the client reads of a stream to its checker.
type watchedBody struct {
	io.ReadCloser
	see func([]byte)
}

func (b *watchedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if n > 0 {
		b.see(p[:n])
	}
	return n, err
}

// watchedRWC is a switched protocol's connection whose reads are checked.
type watchedRWC struct {
	io.ReadWriteCloser
	see func([]byte)
}

func (b *watchedRWC) Read(p []byte) (int, error) {
	n, err := b.ReadWriteCloser.Read(p)
	if n > 0 {
		b.see(p[:n])
	}
	return n, err
}
