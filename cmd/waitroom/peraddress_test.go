package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/internal/openapi/openapitest"
)

// TestOneAddressCannotDenyEveryone: a real server, with default caps and
// with --max-connections 100. A client on 127.0.0.2 opens every event
// stream it can (joining again whenever one session is refused another),
// then every idle keep-alive connection it can, until the server refuses
// it; it holds them all while a client on 127.0.0.3 joins, streams, reads
// /healthz and the waiting page, all answered normally. Before the
// per-address caps, the first client took every stream and connection and
// the second was answered 503.
//
// The default case runs the server under an open-file limit of 2048 (the
// auto caps follow it: 1792 connections, 179 an address, 134 streams an
// address), so that the attack stays a few hundred files, and the old
// server's unbounded one under 2,000, well within one process's 20,000.
func TestOneAddressCannotDenyEveryone(t *testing.T) {
	for _, tc := range []struct {
		name  string
		flags []string
		// most bounds what the attacker tries, so a server without caps
		// fails the test instead of exhausting the test's files.
		most int
	}{
		{"defaults", nil, 2100},
		{"max-connections-100", []string{"--max-connections", "100"}, 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bin := limitedBinary(t, buildBinary(t), 2048)
			p, token := startCrashServer(t, bin, filepath.Join(t.TempDir(), "data"), tc.flags)
			addr := strings.TrimPrefix(p.url, "http://")
			attacker := fromAddress(t, "127.0.0.2")
			victim := fromAddress(t, "127.0.0.3")
			createRoom(t, victim, p.url, token, "r")

			a := &attack{t: t, url: p.url, addr: addr, client: attacker}
			defer a.close()
			a.streams(tc.most)
			a.idle(tc.most - len(a.held))
			t.Logf("127.0.0.2 holds %d streams on %d sessions and %d idle connections; refused with %q",
				a.streamsHeld, a.sessions, len(a.held)-a.streamsHeld, a.refusal)
			if a.refusal == "" {
				t.Fatalf("127.0.0.2 opened %d connections and was never refused", len(a.held))
			}

			// Another address is served as usual, with the attacker's
			// streams and connections all still open.
			id := joinAs(t, victim, p.url, "r")
			if status, event := openEvents(t, victim, p.url, "r", id); status != 200 || !strings.Contains(event, "event: session") {
				t.Errorf("127.0.0.3's stream: %d %q, want 200 and a session event", status, event)
			}
			for _, path := range []string{"/healthz", "/r/r"} {
				resp, err := victim.Get(p.url + path)
				if err != nil {
					t.Fatalf("127.0.0.3 GET %s: %v", path, err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 {
					t.Errorf("127.0.0.3 GET %s: %d, want 200", path, resp.StatusCode)
				}
			}
			// The refusals are counted.
			metrics := readMetrics(t, victim, p.url, token)
			for _, series := range []string{`waitroom_stream_refusals_total{reason="per_address"}`, `waitroom_connections_refused_total{reason="per_address"}`} {
				if v := metricValue(metrics, series); v < 1 {
					t.Errorf("%s = %v, want at least 1", series, v)
				}
			}
		})
	}
}

// limitedBinary returns a script that runs bin under an open-file limit of
// n (soft and hard), so the server's auto caps are derived from it.
func limitedBinary(t *testing.T, bin string, n int) string {
	t.Helper()
	script := filepath.Join(t.TempDir(), "waitroom-limited")
	body := fmt.Sprintf("#!/bin/sh\nulimit -n %d || exit 1\nexec %q \"$@\"\n", n, bin)
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	return script
}

// fromAddress is a client whose connections come from the loopback
// address local, one connection per request, its answers checked against
// the OpenAPI document.
func fromAddress(t *testing.T, local string) *http.Client {
	t.Helper()
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(local)}, Timeout: 10 * time.Second}
	return &http.Client{Timeout: 20 * time.Second, Transport: openapitest.Transport(&http.Transport{
		DialContext: d.DialContext, DisableKeepAlives: true,
	})}
}

func createRoom(t *testing.T, c *http.Client, url, token, room string) {
	t.Helper()
	cfg, _ := json.Marshal(waitroom.DefaultConfig())
	req, _ := http.NewRequest("PUT", url+"/v1/rooms/"+room, bytes.NewReader(cfg))
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		t.Fatalf("create room %s: %d", room, resp.StatusCode)
	}
}

// joinAs joins room without a key and returns the session id.
func joinAs(t *testing.T, c *http.Client, url, room string) string {
	t.Helper()
	id, status, err := tryJoin(c, url, room)
	if err != nil || status != 201 {
		t.Fatalf("join %s: %d %v, want 201", room, status, err)
	}
	return id
}

func tryJoin(c *http.Client, url, room string) (id string, status int, err error) {
	resp, err := c.Post(url+"/v1/rooms/"+room+"/sessions", "application/json", nil)
	if err != nil {
		return "", 0, err
	}
	defer resp.Body.Close()
	var s struct{ ID string }
	if resp.StatusCode == 201 {
		if err := json.NewDecoder(resp.Body).Decode(&s); err != nil {
			return "", resp.StatusCode, err
		}
	}
	return s.ID, resp.StatusCode, nil
}

// openEvents opens a session's event stream from c and returns the status
// and, on 200, the first event.
func openEvents(t *testing.T, c *http.Client, url, room, id string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", url+"/v1/rooms/"+room+"/sessions/"+id+"/events", nil)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("open the stream: %v", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		return resp.StatusCode, ""
	}
	br := bufio.NewReader(resp.Body)
	var event strings.Builder
	for !strings.Contains(event.String(), "\n\n") || !strings.Contains(event.String(), "event:") {
		line, err := br.ReadString('\n')
		event.WriteString(line)
		if err != nil {
			break
		}
		if line == "\n" && !strings.Contains(event.String(), "event:") {
			event.Reset() // the retry: line
		}
	}
	return resp.StatusCode, event.String()
}

// attack is one address taking all it can.
type attack struct {
	t           *testing.T
	url, addr   string
	client      *http.Client
	held        []net.Conn
	streamsHeld int
	sessions    int
	refusal     string // the status and code that stopped it
}

func (a *attack) close() {
	for _, c := range a.held {
		c.Close()
	}
}

// request opens a raw connection from 127.0.0.2, sends one GET of path
// and reads the answer's head; both are nil when the server closed the
// connection without an answer.
func (a *attack) request(path string) (net.Conn, *http.Response) {
	a.t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.2")}, Timeout: 10 * time.Second}
	c, err := d.Dial("tcp", a.addr)
	if err != nil {
		a.t.Fatalf("after %d connections: dial: %v", len(a.held), err)
	}
	_ = c.SetDeadline(time.Now().Add(20 * time.Second))
	if _, err := fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: %s\r\n\r\n", path, a.addr); err != nil {
		c.Close()
		return nil, nil // closed at once: refused unanswered
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		c.Close()
		return nil, nil
	}
	_ = c.SetDeadline(time.Time{})
	return c, resp
}

// refused records why the attack stopped.
func (a *attack) refused(resp *http.Response) {
	if resp == nil {
		a.refusal = "closed unanswered"
		return
	}
	var body struct {
		Error struct{ Code string } `json:"error"`
	}
	_ = json.NewDecoder(io.LimitReader(resp.Body, 4096)).Decode(&body)
	a.refusal = strconv.Itoa(resp.StatusCode) + " " + body.Error.Code
}

// streams opens event streams, at most most, joining a new session
// whenever one is refused; it stops when a fresh session's stream is
// refused too.
func (a *attack) streams(most int) {
	id, fresh := "", false
	for len(a.held) < most {
		if id == "" {
			var status int
			var err error
			id, status, err = tryJoin(a.client, a.url, "r")
			if err != nil || status != 201 {
				a.t.Fatalf("127.0.0.2 joins session %d: %d %v", a.sessions+1, status, err)
			}
			a.sessions++
			fresh = true
		}
		c, resp := a.request("/v1/rooms/r/sessions/" + id + "/events")
		if resp != nil && resp.StatusCode == 200 {
			a.held = append(a.held, c)
			a.streamsHeld++
			fresh = false
			continue
		}
		if resp != nil && resp.StatusCode == 429 && !fresh {
			id = "" // this session is full: another one
			c.Close()
			continue
		}
		a.refused(resp)
		if c != nil {
			c.Close()
		}
		return
	}
}

// idle opens keep-alive connections, each after one answered request, at
// most most, until one is refused.
func (a *attack) idle(most int) {
	a.refusal = ""
	for range most {
		c, resp := a.request("/healthz")
		if resp != nil && resp.StatusCode == 200 {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			a.held = append(a.held, c)
			continue
		}
		a.refused(resp)
		if c != nil {
			c.Close()
		}
		return
	}
}

func readMetrics(t *testing.T, c *http.Client, url, token string) string {
	t.Helper()
	req, _ := http.NewRequest("GET", url+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("GET /metrics: %d", resp.StatusCode)
	}
	return string(b)
}

// metricValue is the value of one series in a Prometheus text exposition,
// -1 when it is absent.
func metricValue(text, series string) float64 {
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(series) + ` (\S+)$`).FindStringSubmatch(text)
	if m == nil {
		return -1
	}
	v, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		return -1
	}
	return v
}
