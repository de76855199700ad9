package openapitest

import (
	"bufio"
	"bytes"
	"net"
	"net/http"
	"strings"
	"testing"
)

// maxBody is the most of a body a check keeps; a longer body is checked
// for its status, headers and content type only.
const maxBody = 8 << 20

// Handler returns h with every answer it writes checked against the
// document; what does not match fails t. It checks event streams and
// WebSocket messages as they are written, over a hijacked connection too.
// Use it for a test's httptest.Server and for handlers a test calls with a
// recorder.
func Handler(t testing.TB, h http.Handler, opts ...Option) http.Handler {
	t.Helper()
	c := newChecker(t, opts)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := &recorder{ResponseWriter: w, c: c, req: r}
		defer rec.finish()
		h.ServeHTTP(rec, r)
	})
}

// recorder is the ResponseWriter a checked handler writes to.
type recorder struct {
	http.ResponseWriter
	c   *checker
	req *http.Request

	status   int
	body     []byte
	tooLong  bool
	stream   func([]byte) // an event stream's checker, once its head is out
	hijacked bool
	finished bool
}

func (rw *recorder) answer() answer {
	return answer{method: rw.req.Method, path: rw.req.URL.EscapedPath(), status: rw.status, header: rw.Header().Clone(), body: rw.body}
}

// WriteHeader records the status; an event stream is checked from here on.
func (rw *recorder) WriteHeader(code int) {
	if rw.status == 0 && (code >= 200 || code == http.StatusSwitchingProtocols) {
		rw.status = code
		if isStream(rw.Header()) {
			a := rw.answer()
			a.noBody = true
			o := rw.c.check(a)
			rw.stream = rw.c.stream(a, o)
			rw.finished = true
		}
	}
	rw.ResponseWriter.WriteHeader(code)
}

func isStream(h http.Header) bool {
	return strings.HasPrefix(strings.ToLower(h.Get("Content-Type")), "text/event-stream")
}

func (rw *recorder) Write(b []byte) (int, error) {
	if rw.status == 0 {
		rw.WriteHeader(http.StatusOK)
	}
	switch {
	case rw.stream != nil:
		rw.stream(b)
	case rw.finished:
	case len(rw.body)+len(b) > maxBody:
		rw.tooLong = true
	default:
		rw.body = append(rw.body, b...)
	}
	return rw.ResponseWriter.Write(b)
}

// finish checks the answer once the handler returned.
func (rw *recorder) finish() {
	if rw.finished || rw.hijacked {
		return
	}
	rw.finished = true
	if rw.status == 0 {
		rw.status = http.StatusOK // net/http's answer when a handler writes nothing
	}
	a := rw.answer()
	a.noBody = rw.tooLong
	rw.c.check(a)
}

// Flush flushes through to the connection.
func (rw *recorder) Flush() {
	_ = http.NewResponseController(rw.ResponseWriter).Flush()
}

// Unwrap lets http.ResponseController reach the writer underneath (for
// deadlines).
func (rw *recorder) Unwrap() http.ResponseWriter { return rw.ResponseWriter }

// Hijack hands the connection over, watched: what the handler writes on it
// (an event stream's head and events, or a WebSocket's frames after its 101)
// is checked as it goes.
func (rw *recorder) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	conn, brw, err := http.NewResponseController(rw.ResponseWriter).Hijack()
	if err != nil {
		return nil, nil, err
	}
	rw.hijacked = true
	wc := &watchedConn{Conn: conn, rw: rw}
	if rw.status == http.StatusSwitchingProtocols {
		// The 101 is out: check it, then the frames.
		rw.finished = true
		a := rw.answer()
		a.noBody = true
		wc.stream = rw.c.stream(a, rw.c.check(a))
		wc.headDone = true
	}
	brw = bufio.NewReadWriter(brw.Reader, bufio.NewWriterSize(wc, brw.Writer.Size()))
	return wc, brw, nil
}

// watchedConn is a hijacked connection whose writes are checked: first an
// HTTP/1.1 response head written by hand, then its body as a stream.
type watchedConn struct {
	net.Conn
	rw       *recorder
	head     []byte
	headDone bool
	stream   func([]byte)
}

func (wc *watchedConn) Write(b []byte) (int, error) {
	wc.see(b)
	return wc.Conn.Write(b)
}

func (wc *watchedConn) see(b []byte) {
	if wc.headDone {
		if wc.stream != nil {
			wc.stream(b)
		}
		return
	}
	wc.head = append(wc.head, b...)
	i := bytes.Index(wc.head, []byte("\r\n\r\n"))
	if i < 0 {
		if len(wc.head) > 64<<10 {
			wc.headDone = true
		}
		return
	}
	wc.headDone = true
	rest := wc.head[i+4:]
	resp, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(wc.head[:i+4])), wc.rw.req)
	if err != nil {
		wc.rw.c.report(wc.rw.req.Method, wc.rw.req.URL.EscapedPath(), 0, wc.head[:i], []string{"a hijacked connection's answer does not parse: " + err.Error()})
		return
	}
	resp.Body.Close()
	a := answer{method: wc.rw.req.Method, path: wc.rw.req.URL.EscapedPath(), status: resp.StatusCode, header: resp.Header, noBody: true}
	wc.stream = wc.rw.c.stream(a, wc.rw.c.check(a))
	wc.head = nil
	if len(rest) > 0 && wc.stream != nil {
		wc.stream(rest)
	}
}
