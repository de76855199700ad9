package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/internal/openapi/openapitest"
	"github.com/waitroom/waitroom/internal/redistest"
)

// TestConsoleAcrossProcesses: two `waitroom serve` processes on one Redis.
// Joins, admissions and leaves made through one show in the console's
// numbers served by the other, counted once; an operator action on one is
// in the audit log the other serves; a sign-in made on one works on the
// other, and signing out on the other ends it on both.
func TestConsoleAcrossProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("runs two servers on one Redis")
	}
	addr := redistest.Server(t)
	bin := buildBinary(t)
	const token = "console-redis-admin-token"
	var urls []string
	for i := range 2 {
		args := append([]string{"--store", "redis://" + addr + "/0", "--admin-token", token}, noJoinLimitFlags(bin)...)
		p := startProcess(t, bin, filepath.Join(t.TempDir(), "data"+strconv.Itoa(i)), args...)
		urls = append(urls, p.url)
	}
	a, b := urls[0], urls[1]
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	browser := &http.Client{Jar: jar, Timeout: 30 * time.Second, Transport: openapitest.Transport(nil)}
	call := func(base, method, path, body, csrf string, bearer bool) (int, []byte) {
		t.Helper()
		req, err := http.NewRequest(method, base+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if csrf != "" {
			req.Header.Set("X-CSRF-Token", csrf)
		}
		if bearer {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		// Both processes listen on 127.0.0.1: one jar serves both, as one
		// browser in front of a load balancer would.
		resp, err := browser.Do(req)
		if err != nil {
			t.Fatalf("%s %s%s: %v", method, base, path, err)
		}
		defer resp.Body.Close()
		out, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, out
	}

	// Sign in on A; the cookie works on B.
	code, out := call(a, "POST", "/admin/api/session", `{"token":"`+token+`"}`, "", false)
	var signin struct {
		CSRF string `json:"csrf"`
	}
	if code != 200 || json.Unmarshal(out, &signin) != nil {
		t.Fatalf("sign in on A: %d %s", code, out)
	}
	u, err := url.Parse(a)
	if err != nil {
		t.Fatal(err)
	}
	cookies := jar.Cookies(u)
	if len(cookies) != 1 {
		t.Fatalf("after signing in, the jar holds %d cookies, want 1", len(cookies))
	}
	signedIn := cookies[0]
	if code, out := call(b, "PUT", "/v1/rooms/shop", `{"capacity":2,"waiting_timeout":"0s","active_timeout":"0s"}`, signin.CSRF, false); code != 201 {
		t.Fatalf("PUT on B with A's sign-in: %d %s", code, out)
	}

	// Six joins through A, one leave each through A and B: 6 joins, 2
	// admissions from the line (the two freed slots), 1 abandon.
	var ids []string
	for range 6 {
		code, out := call(a, "POST", "/v1/rooms/shop/sessions", "", "", false)
		var s waitroom.Session
		if code != 201 || json.Unmarshal(out, &s) != nil {
			t.Fatalf("join: %d %s", code, out)
		}
		ids = append(ids, s.ID)
	}
	if code, _ := call(a, "DELETE", "/v1/rooms/shop/sessions/"+ids[0], "", "", false); code != 200 { // admits #3
		t.Fatalf("leave on A: %d", code)
	}
	if code, _ := call(b, "DELETE", "/v1/rooms/shop/sessions/"+ids[1], "", "", false); code != 200 { // admits #4
		t.Fatalf("leave on B: %d", code)
	}
	if code, _ := call(b, "DELETE", "/v1/rooms/shop/sessions/"+ids[5], "", "", false); code != 200 { // #6 gives up
		t.Fatalf("leave on B: %d", code)
	}
	// Queue-all on A.
	if code, out := call(a, "POST", "/v1/rooms/shop/queue-all", "", signin.CSRF, false); code != 200 {
		t.Fatalf("queue-all on A: %d %s", code, out)
	}

	// Both processes serve the same numbers: each counted its own changes
	// into the same buckets (flushed every quarter second).
	type totals struct{ joins, admissions, abandons int64 }
	read := func(base string) totals {
		t.Helper()
		code, out := call(base, "GET", "/v1/rooms/shop/stats", "", "", false)
		var sum struct {
			Series []struct {
				Joins, Admissions, Abandons int64
			} `json:"series"`
		}
		if code != 200 || json.Unmarshal(out, &sum) != nil {
			t.Fatalf("stats on %s: %d %s", base, code, out)
		}
		var tot totals
		for _, p := range sum.Series {
			tot.joins += p.Joins
			tot.admissions += p.Admissions
			tot.abandons += p.Abandons
		}
		return tot
	}
	want := totals{joins: 6, admissions: 2, abandons: 1}
	deadline := time.Now().Add(20 * time.Second)
	for {
		ta, tb := read(a), read(b)
		if ta == want && tb == want {
			break
		}
		if time.Now().After(deadline) || ta.joins > want.joins || tb.joins > want.joins {
			t.Fatalf("stats: A %+v, B %+v; want both %+v (each change counted once, by the process that made it)", ta, tb, want)
		}
		time.Sleep(100 * time.Millisecond)
	}

	// B's audit log holds the actions done on A and B.
	code, out = call(b, "GET", "/v1/rooms/shop/audit", "", "", true)
	var log struct {
		Entries []waitroom.AuditEntry `json:"entries"`
	}
	if code != 200 || json.Unmarshal(out, &log) != nil || len(log.Entries) != 2 ||
		log.Entries[0].Action != waitroom.AuditQueueAll || log.Entries[1].Action != waitroom.AuditConfig {
		t.Fatalf("audit on B: %d %s; want queue_all then config", code, out)
	}

	// Signing out on B ends the sign-in on A too.
	if code, _ := call(b, "DELETE", "/admin/api/session", "", signin.CSRF, false); code != 204 {
		t.Fatalf("sign out on B: %d", code)
	}
	// The old cookie, sent by hand, is refused by A too.
	req, err := http.NewRequest("GET", a+"/v1/rooms", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.AddCookie(&http.Cookie{Name: signedIn.Name, Value: signedIn.Value})
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("A with the cookie signed out on B: %d, want 401", resp.StatusCode)
	}
}
