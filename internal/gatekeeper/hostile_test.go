package gatekeeper

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
)

// TestProxyAnswersBrokenBodies400: a request body the client breaks on its
// way to the app (not chunks; fewer bytes than its Content-Length) is
// answered 400 invalid_request, not 502 as if the app had failed; an app
// that fails is still 502.
func TestProxyAnswersBrokenBodies400(t *testing.T) {
	e := newEnv(t, envConfig{})
	up := upstream(t, make(chan struct{}))
	u, _ := url.Parse(up.URL)
	srv := e.serve(&ProxyConfig{Upstream: u, Room: "default", Bypass: []string{"/static/"}})
	addr := strings.TrimPrefix(srv.URL, "http://")
	send := func(raw string, halfClose bool) (int, string) {
		t.Helper()
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
		_, _ = io.WriteString(c, raw)
		if halfClose {
			_ = c.(*net.TCPConn).CloseWrite()
		}
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatalf("%q: %v", raw, err)
		}
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for _, tc := range []struct {
		raw       string
		halfClose bool
	}{
		{"POST /static/x HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n", false},
		{"POST /static/x HTTP/1.1\r\nHost: h\r\nContent-Length: 100\r\n\r\nonly ten b", true},
	} {
		if code, body := send(tc.raw, tc.halfClose); code != http.StatusBadRequest || !strings.Contains(body, `"code":"invalid_request"`) {
			t.Errorf("%q: got %d %s, want 400 invalid_request", tc.raw, code, body)
		}
	}
	up.Close()
	if code, body := send("POST /static/x HTTP/1.1\r\nHost: h\r\nContent-Length: 2\r\n\r\nok", false); code != http.StatusBadGateway {
		t.Errorf("app down: got %d %s, want 502", code, body)
	}
}
