package connguard_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/connguard"
)

// served is one request a handler saw.
type served struct {
	method, target, body string
	bodyErr              bool
	done                 bool   // its body was read
	from                 string // the client's address
}

// recorder is a handler that records what it serves; /slow takes 200ms
// and checks its context survives, /hijack echoes the connection.
type recorder struct {
	mu   sync.Mutex
	seen []served
	// canceled counts /slow requests whose context ended early.
	canceled int
	// simple: no special paths (for the fuzz test, whose timing must not
	// depend on its input).
	simple bool
}

func (rec *recorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rec.mu.Lock()
	i := len(rec.seen)
	rec.seen = append(rec.seen, served{method: r.Method, target: r.RequestURI, from: r.RemoteAddr})
	rec.mu.Unlock()
	b, err := io.ReadAll(r.Body)
	rec.mu.Lock()
	rec.seen[i].body, rec.seen[i].bodyErr, rec.seen[i].done = string(b), err != nil, true
	rec.mu.Unlock()
	path := r.URL.Path
	if rec.simple {
		path = ""
	}
	switch path {
	case "/slow":
		time.Sleep(200 * time.Millisecond)
		if r.Context().Err() != nil {
			rec.mu.Lock()
			rec.canceled++
			rec.mu.Unlock()
		}
	case "/hijack":
		c, brw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		defer c.Close()
		_, _ = io.WriteString(c, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: echo\r\nConnection: Upgrade\r\n\r\n")
		buf := make([]byte, 256)
		n, _ := brw.Reader.Read(buf)
		_, _ = c.Write(buf[:n])
		return
	}
	fmt.Fprintf(w, "%s %s %d", r.Method, r.RequestURI, len(b))
}

// all returns what was served, without the clients' addresses.
func (rec *recorder) all() []served {
	return rec.from("")
}

// from returns what was served to the client at addr ("": any).
func (rec *recorder) from(addr string) []served {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	var out []served
	for _, s := range rec.seen {
		if addr == "" || s.from == addr {
			s.from = ""
			out = append(out, s)
		}
	}
	return out
}

// start serves rec on a loopback listener, guarded or not.
func start(t testing.TB, rec http.Handler, guarded bool, headTimeout time.Duration) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: rec, MaxHeaderBytes: 4 << 10, ReadHeaderTimeout: headTimeout, IdleTimeout: time.Minute,
		ErrorLog: log.New(io.Discard, "", 0)}
	if guarded {
		ln = connguard.Guard(srv, ln)
	}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return ln.Addr().String()
}

// exchange writes raw in one go and reads everything until the server
// closes or quiet passes without a byte.
func exchange(t testing.TB, addr, raw string, quiet time.Duration) (out string, closed bool) {
	out, closed, _ = exchangeFrom(t, addr, raw, quiet)
	return out, closed
}

// exchangeFrom is exchange, also returning the client's address.
func exchangeFrom(t testing.TB, addr, raw string, quiet time.Duration) (out string, closed bool, from string) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	from = c.LocalAddr().String()
	go func() { _, _ = io.WriteString(c, raw) }()
	var b bytes.Buffer
	buf := make([]byte, 4096)
	for {
		_ = c.SetReadDeadline(time.Now().Add(quiet))
		n, err := c.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			return b.String(), !errors.Is(err, os.ErrDeadlineExceeded), from
		}
	}
}

// answers splits out into its HTTP answers.
func answers(t testing.TB, out string) []*http.Response {
	t.Helper()
	br := bufio.NewReader(strings.NewReader(out))
	var rs []*http.Response
	for {
		if _, err := br.Peek(1); err != nil {
			return rs
		}
		r, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("answer %d of %q: %v", len(rs)+1, out, err)
		}
		b, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(b))
		rs = append(rs, r)
	}
}

func errorCode(t testing.TB, r *http.Response) string {
	t.Helper()
	var v struct {
		Error struct{ Code, Message string } `json:"error"`
	}
	b, _ := io.ReadAll(r.Body)
	if r.Header.Get("Content-Type") != "application/json; charset=utf-8" || json.Unmarshal(b, &v) != nil || v.Error.Message == "" {
		t.Errorf("answer %d %q is not the JSON error shape", r.StatusCode, b)
	}
	return v.Error.Code
}

func TestSmugglingIsRefusedAndTheConnectionClosed(t *testing.T) {
	rec := &recorder{}
	addr := start(t, rec, true, 0)
	smuggled := "DELETE /victim HTTP/1.1\r\nHost: h\r\n\r\n"
	out, closed := exchange(t, addr, "POST /a HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"+smuggled, 2*time.Second)
	rs := answers(t, out)
	if len(rs) != 1 || rs[0].StatusCode != 400 || errorCode(t, rs[0]) != "invalid_request" || !rs[0].Close || !closed {
		t.Errorf("got %q (closed %v), want one 400 invalid_request with Connection: close, then the close", out, closed)
	}
	if seen := rec.all(); len(seen) != 0 {
		t.Errorf("the handler served %+v, want nothing", seen)
	}
}

// TestRefusalWaitsForTheRequestInFlight: a bad head pipelined behind a good
// request is answered after it, in order, and the good request's context
// is not ended by the refusal.
func TestRefusalWaitsForTheRequestInFlight(t *testing.T) {
	rec := &recorder{}
	addr := start(t, rec, true, time.Second)
	out, closed := exchange(t, addr, "GET /slow HTTP/1.1\r\nHost: h\r\n\r\nGET / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: gzip\r\n\r\nGET /after HTTP/1.1\r\nHost: h\r\n\r\n", 2*time.Second)
	rs := answers(t, out)
	if len(rs) != 2 || rs[0].StatusCode != 200 || rs[1].StatusCode != 400 || !closed {
		t.Fatalf("got %q (closed %v), want 200 then 400 and the close", out, closed)
	}
	if errorCode(t, rs[1]) != "invalid_request" {
		t.Errorf("second answer: want invalid_request")
	}
	if seen := rec.all(); len(seen) != 1 || seen[0].target != "/slow" {
		t.Errorf("the handler served %+v, want /slow only", seen)
	}
	if rec.canceled != 0 {
		t.Errorf("the request in flight had its context ended")
	}
}

// TestHijackedConnectionsPassThrough: after a handler takes the connection
// over, bytes that would be a refused head reach it as they are.
func TestHijackedConnectionsPassThrough(t *testing.T) {
	rec := &recorder{}
	addr := start(t, rec, true, time.Second)
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	garbage := "\x81\x05hello\r\n\r\nNOT HTTP\r\n\r\n"
	_, _ = io.WriteString(c, "GET /hijack HTTP/1.1\r\nHost: h\r\nUpgrade: echo\r\nConnection: Upgrade\r\n\r\n"+garbage)
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != 101 {
		t.Fatalf("upgrade: %v %v", resp, err)
	}
	got := make([]byte, len(garbage))
	if _, err := io.ReadFull(br, got); err != nil || string(got) != garbage {
		t.Errorf("echoed %q (%v), want %q", got, err, garbage)
	}
}

// TestSlowHeadsTimeOut: a head must be whole within ReadHeaderTimeout of
// its first bytes, on a new connection and on one kept alive.
func TestSlowHeadsTimeOut(t *testing.T) {
	rec := &recorder{}
	addr := start(t, rec, true, 300*time.Millisecond)
	for _, first := range []string{"", "GET / HTTP/1.1\r\nHost: h\r\n\r\n"} {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		begin := time.Now()
		_, _ = io.WriteString(c, first+"GET /slowloris HTTP/1.1\r\nHost: h\r\n")
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		_, err = io.ReadAll(c)
		c.Close()
		if err != nil || time.Since(begin) > 2*time.Second {
			t.Errorf("after %q and half a head: %v after %v, want the close within about 300ms", first, err, time.Since(begin))
		}
	}
}

// TestOversizedHead: a head over MaxHeaderBytes is 431 header_too_large.
func TestOversizedHead(t *testing.T) {
	addr := start(t, &recorder{}, true, time.Second)
	out, closed := exchange(t, addr, "GET / HTTP/1.1\r\nHost: h\r\nX: "+strings.Repeat("x", 5000)+"\r\n\r\n", 2*time.Second)
	rs := answers(t, out)
	if len(rs) != 1 || rs[0].StatusCode != 431 || errorCode(t, rs[0]) != "header_too_large" || !closed {
		t.Errorf("got %q, want 431 header_too_large and the close", out)
	}
}

// TestFramingMatchesNetHTTP: random sequences of good requests (bodies by
// Content-Length or in chunks, with extensions and trailers, blank lines
// after POSTs), sent pipelined in random pieces, are all served, exactly
// as without the guard.
func TestFramingMatchesNetHTTP(t *testing.T) {
	for seed := range uint64(60) {
		rng := rand.New(rand.NewPCG(seed, 17))
		var raw strings.Builder
		var want []served
		for i := range 1 + rng.IntN(6) {
			method := []string{"GET", "POST", "PUT", "DELETE"}[rng.IntN(4)]
			target := fmt.Sprintf("/r%d?s=%d", i, seed)
			body := strings.Repeat(string(rune('a'+i)), rng.IntN(3000))
			if method == "GET" && rng.IntN(2) == 0 {
				body = ""
			}
			raw.WriteString(method + " " + target + " HTTP/1.1\r\nHost: h\r\n")
			if rng.IntN(2) == 0 {
				fmt.Fprintf(&raw, "Content-Length: %d\r\n\r\n%s", len(body), body)
			} else {
				raw.WriteString("Transfer-Encoding: chunked\r\n\r\n")
				for rest := body; len(rest) > 0; {
					n := min(len(rest), 1+rng.IntN(700))
					ext := ""
					if rng.IntN(3) == 0 {
						ext = ";x=y"
					}
					fmt.Fprintf(&raw, "%x%s\r\n%s\r\n", n, ext, rest[:n])
					rest = rest[n:]
				}
				raw.WriteString("0\r\n")
				if rng.IntN(3) == 0 {
					raw.WriteString("X-Trailer: t\r\n")
				}
				raw.WriteString("\r\n")
			}
			if method == "POST" && rng.IntN(3) == 0 {
				raw.WriteString("\r\n")
			}
			want = append(want, served{method: method, target: target, body: body, done: true})
		}
		raw.WriteString("GET /last HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n")
		want = append(want, served{method: "GET", target: "/last", done: true})

		for _, guarded := range []bool{false, true} {
			rec := &recorder{}
			addr := start(t, rec, guarded, time.Second)
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			// The writer has its own generator, and is waited for, so it
			// never races the loop's.
			wrng := rand.New(rand.NewPCG(rng.Uint64(), rng.Uint64()))
			wrote := make(chan struct{})
			go func() {
				defer close(wrote)
				s := raw.String()
				for len(s) > 0 {
					n := min(len(s), 1+wrng.IntN(900))
					if _, err := io.WriteString(c, s[:n]); err != nil {
						return
					}
					s = s[n:]
					if wrng.IntN(4) == 0 {
						time.Sleep(time.Millisecond)
					}
				}
			}()
			_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
			out, err := io.ReadAll(c)
			c.Close()
			<-wrote
			rs := answers(t, string(out))
			if err != nil || len(rs) != len(want) {
				t.Fatalf("seed %d guarded %v: %d answers (%v), want %d", seed, guarded, len(rs), err, len(want))
			}
			if got := rec.all(); fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("seed %d guarded %v: served %+v, want %+v", seed, guarded, got, want)
			}
		}
	}
}

// FuzzGuardNeverServesMore: whatever the bytes, the guarded server serves a
// prefix of what the same server serves unguarded (less when it refuses),
// and never answers 5xx.
func FuzzGuardNeverServesMore(f *testing.F) {
	for _, s := range []string{
		"GET / HTTP/1.1\r\nHost: h\r\n\r\n",
		"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\n\r\nabcGET /2 HTTP/1.1\r\nHost: h\r\n\r\n",
		"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\nGET /2 HTTP/1.1\r\nHost: h\r\n\r\n",
		"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nDELETE /x HTTP/1.1\r\nHost: h\r\n\r\n",
		"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nT: v\r\n\r\n\r\nGET /2 HTTP/1.0\r\n\r\n",
		"GET / HTTP/1.1\nHost: h\n\nGET /2 HTTP/1.1\r\nHost: h\r\nX: a\r\n b\r\n\r\n",
		"POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\nabc",
		"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n",
	} {
		f.Add(s)
	}
	plain := &recorder{simple: true}
	guarded := &recorder{simple: true}
	plainAddr := start(f, plain, false, time.Second)
	guardedAddr := start(f, guarded, true, time.Second)
	f.Fuzz(func(t *testing.T, raw string) {
		raw += "\r\n\r\n" // so that a head the input leaves open does not wait for the timeout
		// What earlier inputs were served is forgotten; the client's
		// address tells this input's from any that comes late.
		for _, rec := range []*recorder{plain, guarded} {
			rec.mu.Lock()
			rec.seen = nil
			rec.mu.Unlock()
		}
		_, _, pFrom := exchangeFrom(t, plainAddr, raw, 150*time.Millisecond)
		out, _, gFrom := exchangeFrom(t, guardedAddr, raw, 150*time.Millisecond)
		time.Sleep(20 * time.Millisecond) // bodies cut by the close
		p, g := plain.from(pFrom), guarded.from(gFrom)
		if len(g) > len(p) {
			t.Fatalf("guarded served %+v, unguarded only %+v", g, p)
		}
		for i := range g {
			same := g[i].method == p[i].method && g[i].target == p[i].target
			if g[i].done && p[i].done && !(i == len(g)-1 && g[i].bodyErr) {
				same = same && g[i] == p[i]
			}
			if !same {
				t.Fatalf("request %d: guarded served %+v, unguarded %+v", i, g[i], p[i])
			}
		}
		for _, line := range strings.Split(out, "\r\n") {
			if strings.HasPrefix(line, "HTTP/1.1 5") {
				t.Fatalf("guarded answered %q to %q", line, raw)
			}
		}
	})
}

// BenchmarkKeepAlive: one client's GETs on a kept-alive connection, with
// and without the guard.
func BenchmarkKeepAlive(b *testing.B) {
	for _, guarded := range []bool{false, true} {
		b.Run(fmt.Sprintf("guarded=%v", guarded), func(b *testing.B) {
			addr := start(b, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.WriteString(w, "ok")
			}), guarded, time.Second)
			c, err := net.Dial("tcp", addr)
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			br := bufio.NewReader(c)
			req := []byte("GET /v1/rooms/default/sessions/AAAAAAAAAAJn7rTY6nTiOoo45WfgLSWk HTTP/1.1\r\nHost: waitroom.example\r\n" +
				"User-Agent: Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0 Safari/537.36\r\n" +
				"Accept: application/json\r\nAccept-Language: en-US,en;q=0.9\r\nCookie: waitroom-default=eyJhbGciOiJFZERTQSJ9.eyJpc3MiOiJ3YWl0cm9vbSJ9.c2ln\r\n\r\n")
			b.ResetTimer()
			for range b.N {
				if _, err := c.Write(req); err != nil {
					b.Fatal(err)
				}
				resp, err := http.ReadResponse(br, nil)
				if err != nil {
					b.Fatal(err)
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		})
	}
}

// TestHugeChunkSizes: a chunk size over what an int64 holds cuts the body
// (the handler's read fails) without harm to the server.
func TestHugeChunkSizes(t *testing.T) {
	rec := &recorder{}
	addr := start(t, rec, true, time.Second)
	for _, size := range []string{"ffffffffffffffff", "8000000000000000", "7fffffffffffffff"} {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		// The data comes after the size line, so that it is read straight
		// into net/http's buffer.
		_, _ = io.WriteString(c, "POST /c HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"+size+"\r\n")
		time.Sleep(50 * time.Millisecond)
		_, _ = io.WriteString(c, "abc")
		_ = c.(*net.TCPConn).CloseWrite()
		_ = c.SetReadDeadline(time.Now().Add(2 * time.Second))
		out, _ := io.ReadAll(c)
		c.Close()
		if !strings.HasPrefix(string(out), "HTTP/1.1 200") {
			t.Errorf("chunk size %s: got %q, want the handler's answer", size, out)
		}
	}
	if out, _ := exchange(t, addr, "GET / HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n", time.Second); !strings.HasPrefix(out, "HTTP/1.1 200") {
		t.Errorf("after them: %q, want 200", out)
	}
	for _, s := range rec.all() {
		if s.target == "/c" && (!s.done || !s.bodyErr) {
			t.Errorf("served %+v, want its body read to fail", s)
		}
	}
}
