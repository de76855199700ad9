package main

// Issue 17, part 4: what hostile input, tried from outside on a raw TCP
// connection, found at the transport level of `waitroom serve`.

import (
	"bufio"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/client"
)

const hostileToken = "hostile-test-admin-token"

// rawAnswer is what a raw request got: the first answer, and whether the
// connection was closed after it with nothing more sent.
type rawAnswer struct {
	resp   *http.Response
	body   []byte
	rest   []byte // bytes after the first answer
	closed bool   // the server closed the connection after the answer
	err    error
}

// rawRequest sends raw on a new connection to addr and reads one answer,
// then whatever follows until the server closes or 3s pass.
func rawRequest(t *testing.T, addr, raw string) rawAnswer {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	go func() { _, _ = io.WriteString(c, raw) }() // the server may answer before reading it all
	br := bufio.NewReader(c)
	var a rawAnswer
	a.resp, a.err = http.ReadResponse(br, nil)
	if a.err != nil {
		return a
	}
	a.body, a.err = io.ReadAll(a.resp.Body)
	_ = a.resp.Body.Close()
	if a.err != nil {
		return a
	}
	_ = c.SetReadDeadline(time.Now().Add(3 * time.Second))
	a.rest, err = io.ReadAll(br)
	a.closed = err == nil || !errors.Is(err, os.ErrDeadlineExceeded)
	return a
}

// jsonError checks a is in the API's error shape with the Connection:
// close header and returns its code.
func (a rawAnswer) jsonError() (waitroom.Code, string) {
	if ct := a.resp.Header.Get("Content-Type"); ct != "application/json; charset=utf-8" {
		return "", "Content-Type " + ct
	}
	var v struct {
		Error struct {
			Code    waitroom.Code `json:"code"`
			Message string        `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(a.body, &v); err != nil || v.Error.Code == "" || v.Error.Message == "" {
		return "", "body " + string(a.body)
	}
	return v.Error.Code, ""
}

func hostileServe(t *testing.T, extra ...string) (*inProcess, string) {
	t.Helper()
	s := startServe(t, append([]string{"--addr", "127.0.0.1:0", "--data", t.TempDir(), "--store", "memory",
		"--admin-token", hostileToken}, extra...), nil)
	u, err := url.Parse(s.url)
	if err != nil {
		t.Fatal(err)
	}
	return s, u.Host
}

// TestServeRefusesSmuggledRequests: a request with both Content-Length and
// Transfer-Encoding (or Transfer-Encoding in HTTP/1.0) is answered 400 in
// JSON before any handler runs, and its connection closed, so bytes after
// it never run as a second request (a DELETE was smuggled that way).
func TestServeRefusesSmuggledRequests(t *testing.T) {
	s, addr := hostileServe(t)
	pub := client.New(s.url)
	sess, err := pub.Join(ctx(t), "default", "")
	if err != nil {
		t.Fatalf("Join: %v", err)
	}
	base := "/v1/rooms/default/sessions/" + sess.ID
	smuggled := "DELETE " + base + " HTTP/1.1\r\nHost: waitroom.test\r\n\r\n"
	for _, tc := range []struct{ name, raw string }{
		{"CL then TE", "POST " + base + "/heartbeat HTTP/1.1\r\nHost: waitroom.test\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n" + smuggled},
		{"TE then CL", "POST " + base + "/heartbeat HTTP/1.1\r\nHost: waitroom.test\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n0\r\n\r\n" + smuggled},
		{"CL covering the smuggled request", "POST " + base + "/heartbeat HTTP/1.1\r\nHost: waitroom.test\r\nContent-Length: " +
			strconv.Itoa(5+len(smuggled)) + "\r\ntransfer-encoding: Chunked\r\n\r\n0\r\n\r\n" + smuggled},
		{"CL of 0", "POST " + base + "/heartbeat HTTP/1.1\r\nHost: waitroom.test\r\nContent-Length: 0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n" + smuggled},
		{"TE in HTTP/1.0", "POST " + base + "/heartbeat HTTP/1.0\r\nHost: waitroom.test\r\nConnection: keep-alive\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n0\r\n\r\n" + smuggled},
		{"TE in HTTP/1.0 without CL", "GET " + base + " HTTP/1.0\r\nHost: waitroom.test\r\nConnection: keep-alive\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n" + smuggled},
		{"after a good request", "GET /healthz HTTP/1.1\r\nHost: waitroom.test\r\n\r\n" +
			"POST " + base + "/heartbeat HTTP/1.1\r\nHost: waitroom.test\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n" + smuggled},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := rawRequest(t, addr, tc.raw)
			if a.err != nil {
				t.Fatalf("reading the answer: %v", a.err)
			}
			if tc.name == "after a good request" {
				// The good request is answered, then the bad one refused.
				if a.resp.StatusCode != http.StatusOK {
					t.Fatalf("the good request: got %d %s, want 200", a.resp.StatusCode, a.body)
				}
				br := bufio.NewReader(strings.NewReader(string(a.rest)))
				a.resp, a.err = http.ReadResponse(br, nil)
				if a.err != nil {
					t.Fatalf("after the good request: %q: %v", a.rest, a.err)
				}
				a.body, _ = io.ReadAll(a.resp.Body)
				a.rest, _ = io.ReadAll(br)
			}
			code, bad := a.jsonError()
			if a.resp.StatusCode != http.StatusBadRequest || code != waitroom.CodeInvalidRequest {
				t.Errorf("got %d %s%s, want 400 %s", a.resp.StatusCode, code, bad, waitroom.CodeInvalidRequest)
			}
			if !a.closed || len(a.rest) > 0 || !a.resp.Close {
				t.Errorf("after the answer: closed %v, Connection: close %v, then %q; want the connection closed with nothing more",
					a.closed, a.resp.Close, a.rest)
			}
			got, err := pub.Session(ctx(t), "default", sess.ID)
			if err != nil || got.Status != waitroom.StatusWaiting && got.Status != waitroom.StatusActive {
				t.Fatalf("the session after the smuggling attempt: %+v, %v; want it live (the DELETE must not run)", got, err)
			}
		})
	}
}

// TestServeAnswersTransportErrorsInJSON: what net/http refuses itself
// (unsupported transfer codings with 501, malformed requests with 400, an
// oversized head with 431, a version it does not serve with 505, an
// unknown Expect with 417), all in plain text or empty, is answered in the
// API's JSON error shape, never with a 5xx, and the connection closed.
func TestServeAnswersTransportErrorsInJSON(t *testing.T) {
	_, addr := hostileServe(t)
	big := strings.Repeat("a", 70<<10)
	for _, tc := range []struct {
		name, raw string
		status    int
		code      waitroom.Code
	}{
		{"transfer coding gzip", "POST /v1/rooms/default/sessions HTTP/1.1\r\nHost: w\r\nTransfer-Encoding: gzip\r\n\r\n", 400, waitroom.CodeInvalidRequest},
		{"transfer coding identity", "POST /v1/rooms/default/sessions HTTP/1.1\r\nHost: w\r\nTransfer-Encoding: identity\r\n\r\n", 400, waitroom.CodeInvalidRequest},
		{"transfer codings gzip, chunked", "POST /v1/rooms/default/sessions HTTP/1.1\r\nHost: w\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n", 400, waitroom.CodeInvalidRequest},
		{"two Transfer-Encoding headers", "POST /v1/rooms/default/sessions HTTP/1.1\r\nHost: w\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400, waitroom.CodeInvalidRequest},
		{"garbage", "GARBAGE\r\n\r\n", 400, waitroom.CodeInvalidRequest},
		{"HTTP/0.9", "GET /\r\n\r\n", 400, waitroom.CodeInvalidRequest},
		{"bad method", "G(T / HTTP/1.1\r\nHost: w\r\n\r\n", 400, waitroom.CodeInvalidRequest},
		{"bad version", "GET / HTTP/1.x\r\nHost: w\r\n\r\n", 400, waitroom.CodeInvalidRequest},
		{"HTTP/2.0 request line", "GET / HTTP/2.0\r\nHost: w\r\n\r\n", 400, waitroom.CodeInvalidRequest},
		{"HTTP/3.0 request line", "GET /healthz HTTP/3.0\r\nHost: w\r\n\r\n", 400, waitroom.CodeInvalidRequest},
		{"bad target", "GET %zz HTTP/1.1\r\nHost: w\r\n\r\n", 400, waitroom.CodeInvalidRequest},
		{"no Host", "GET /healthz HTTP/1.1\r\n\r\n", 400, waitroom.CodeInvalidRequest},
		{"two Hosts", "GET /healthz HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400, waitroom.CodeInvalidRequest},
		{"bad Host", "GET /healthz HTTP/1.1\r\nHost: a b\r\n\r\n", 400, waitroom.CodeInvalidRequest},
		{"header without a colon", "GET /healthz HTTP/1.1\r\nHost: w\r\nNoColon\r\n\r\n", 400, waitroom.CodeInvalidRequest},
		{"NUL in a header name", "GET /healthz HTTP/1.1\r\nHost: w\r\nX\x00: y\r\n\r\n", 400, waitroom.CodeInvalidRequest},
		{"control byte in a header value", "GET /healthz HTTP/1.1\r\nHost: w\r\nX: a\x01b\r\n\r\n", 400, waitroom.CodeInvalidRequest},
		{"space before the colon", "GET /healthz HTTP/1.1\r\nHost: w\r\nX-Y : z\r\n\r\n", 400, waitroom.CodeInvalidRequest},
		{"bad Content-Length", "POST /v1/rooms/default/sessions HTTP/1.1\r\nHost: w\r\nContent-Length: +3\r\n\r\n{} ", 400, waitroom.CodeInvalidRequest},
		{"two Content-Lengths", "POST /v1/rooms/default/sessions HTTP/1.1\r\nHost: w\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{} ", 400, waitroom.CodeInvalidRequest},
		{"head over 64 KiB", "GET /healthz HTTP/1.1\r\nHost: w\r\nX-Big: " + big + "\r\n\r\n", 431, "header_too_large"},
		{"request line over 64 KiB", "GET /" + big + " HTTP/1.1\r\nHost: w\r\n\r\n", 431, "header_too_large"},
		{"unknown Expect", "POST /v1/rooms/default/sessions HTTP/1.1\r\nHost: w\r\nExpect: 200-ok\r\nContent-Length: 2\r\n\r\n{}", 417, "expectation_failed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := rawRequest(t, addr, tc.raw)
			if a.err != nil {
				t.Fatalf("reading the answer: %v", a.err)
			}
			code, bad := a.jsonError()
			if a.resp.StatusCode != tc.status || code != tc.code {
				t.Errorf("got %d %s%s, want %d %s", a.resp.StatusCode, code, bad, tc.status, tc.code)
			}
			if a.resp.StatusCode >= 500 {
				t.Errorf("bad input answered %d: no bad input may get a 5xx", a.resp.StatusCode)
			}
			if !a.closed || len(a.rest) > 0 || !a.resp.Close {
				t.Errorf("after the answer: closed %v, Connection: close %v, then %q; want the connection closed", a.closed, a.resp.Close, a.rest)
			}
		})
	}
}

// TestServeKeepsGoodConnectionsWorking: through the connection guard,
// pipelined requests, chunked bodies with trailers, a body split across
// writes, Expect: 100-continue and leading blank lines after a POST are
// all served as before, on one connection.
func TestServeKeepsGoodConnectionsWorking(t *testing.T) {
	_, addr := hostileServe(t)
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(20 * time.Second))
	br := bufio.NewReader(c)
	expect := func(what string, status int) {
		t.Helper()
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != status {
			t.Fatalf("%s: got %d %s, want %d", what, resp.StatusCode, b, status)
		}
	}
	join := "POST /v1/rooms/default/sessions HTTP/1.1\r\nHost: w\r\nAuthorization: Bearer " + hostileToken + "\r\n"
	// Three pipelined in one write, the middle one chunked with a trailer.
	_, _ = io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: w\r\n\r\n"+
		join+"Transfer-Encoding: chunked\r\n\r\n4\r\n{\"ke\r\n8;ext=1\r\ny\":\"k1\"}\r\n0\r\nX-Trailer: t\r\n\r\n"+
		"GET /readyz HTTP/1.1\r\nHost: w\r\n\r\n")
	expect("pipelined healthz", 200)
	expect("pipelined chunked join", 201)
	expect("pipelined readyz", 200)
	// A head and a body in pieces, then blank lines after the POST.
	body := `{"key":"k2"}`
	for _, part := range []string{join[:10], join[10:] + "Content-Le", "ngth: " + strconv.Itoa(len(body)) + "\r\n\r", "\n" + body[:3], body[3:] + "\r\n\r\n"} {
		_, _ = io.WriteString(c, part)
		time.Sleep(20 * time.Millisecond)
	}
	expect("join in pieces", 201)
	_, _ = io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: w\r\n\r\n")
	expect("healthz after blank lines", 200)
	// Expect: 100-continue: the interim answer, then the body.
	_, _ = io.WriteString(c, join+"Expect: 100-continue\r\nContent-Length: "+strconv.Itoa(len(`{"key":"k3"}`))+"\r\n\r\n")
	expect("100 continue", 100)
	_, _ = io.WriteString(c, `{"key":"k3"}`)
	expect("join after 100-continue", 201)
}

// TestServeGuardsTheProxiedApp: in --upstream mode, a smuggling request to
// the protected app is refused before the gate or the app sees it.
func TestServeGuardsTheProxiedApp(t *testing.T) {
	var hits atomic.Int64
	app := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		_, _ = io.WriteString(w, "app")
	}))
	t.Cleanup(app.Close)
	_, addr := hostileServe(t, "--upstream", app.URL, "--room", "shop", "--bypass", "/static/")
	a := rawRequest(t, addr, "POST /static/x HTTP/1.1\r\nHost: w\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"+
		"GET /static/smuggled HTTP/1.1\r\nHost: w\r\n\r\n")
	if a.err != nil {
		t.Fatalf("reading the answer: %v", a.err)
	}
	if code, bad := a.jsonError(); a.resp.StatusCode != http.StatusBadRequest || code != waitroom.CodeInvalidRequest || !a.closed || len(a.rest) > 0 {
		t.Errorf("smuggling through the proxy: got %d %s%s, closed %v, then %q; want 400 invalid_request and the connection closed",
			a.resp.StatusCode, code, bad, a.closed, a.rest)
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("the app saw %d requests, want none", n)
	}
	// A good request still reaches it.
	if a := rawRequest(t, addr, "GET /static/x HTTP/1.1\r\nHost: w\r\nConnection: close\r\n\r\n"); a.err != nil || a.resp.StatusCode != 200 || string(a.body) != "app" {
		t.Errorf("a bypass path: %v %+v %q, want 200 from the app", a.err, a.resp, a.body)
	}
}

// TestServeProxyRefusesBadBodiesWith4xx: a body the client breaks (chunks
// that are not chunks, or fewer bytes than its Content-Length before it
// stops sending) on its way to the protected app is the client's fault:
// 400 in JSON, not 502 as if the app had failed.
func TestServeProxyRefusesBadBodiesWith4xx(t *testing.T) {
	app := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		_, _ = io.WriteString(w, "app")
	}))
	t.Cleanup(app.Close)
	_, addr := hostileServe(t, "--upstream", app.URL, "--room", "shop", "--bypass", "/static/")
	for _, tc := range []struct{ name, raw string }{
		{"not chunks", "POST /static/x HTTP/1.1\r\nHost: w\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n"},
		{"chunk without its CRLF", "POST /static/x HTTP/1.1\r\nHost: w\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhelloXX0\r\n\r\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := rawRequest(t, addr, tc.raw)
			if a.err != nil {
				t.Fatalf("reading the answer: %v", a.err)
			}
			var v struct{ Error struct{ Code waitroom.Code } }
			if a.resp.StatusCode != http.StatusBadRequest || json.Unmarshal(a.body, &v) != nil || v.Error.Code != waitroom.CodeInvalidRequest {
				t.Errorf("got %d %s, want 400 %s", a.resp.StatusCode, a.body, waitroom.CodeInvalidRequest)
			}
		})
	}
	// A client that stops sending its body half-way and closes its side.
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, _ = io.WriteString(c, "POST /static/x HTTP/1.1\r\nHost: w\r\nContent-Length: 100\r\n\r\nonly ten b")
	_ = c.(*net.TCPConn).CloseWrite()
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("truncated body: %v", err)
	}
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("truncated body: got %d, want 400", resp.StatusCode)
	}
}
