package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/waitroom/waitroom/internal/bench"
)

// smallBench are the flags of a run with the smallest sizes and times: the
// whole suite, every row, in seconds.
var smallBench = []string{"--quick", "--sizes", "200,1000", "--time", "30ms", "--rounds", "1", "--callers", "4", "--draw-entrants", "500"}

// benchRows are the names every table has, in order, for smallBench.
var benchRows = []string{
	"engine position, 200 waiting", "engine join, 200 waiting", "engine leave, 200 waiting",
	"engine position, 1k waiting", "engine join, 1k waiting", "engine leave, 1k waiting",
	"durable join (sqlitestore, sync=FULL), 4 callers",
	"HTTP position (GET session, sqlitestore), 4 conns", "HTTP durable join (POST, sqlitestore), 4 conns", "HTTP join (POST, memstore), 4 conns",
	"HTTP position (GET session, memstore), 4 conns",
	"redisstore join, 4 callers", "redisstore position, 4 callers",
	"redisstore join, 4 callers, acknowledged by 1 replica", "redisstore position, 4 callers, with 1 replica",
	"redisstore join, 4 callers, the wait for 1 replica alone",
	"draw of 500 entrants (sqlitestore, sync=FULL)", "redisstore draw of 500 entrants",
	"HTTP durable join with a webhook, endpoint answers after 1s, 4 conns",
	"HTTP durable join with a webhook, endpoint answers 503, 4 conns",
	"HTTP durable join with a webhook, endpoint answers 204 (in this process), 4 conns",
	"redisstore join with a webhook (outbox written), 4 callers",
}

// runBench runs `waitroom bench` with args and getenv and returns its
// table, as printed and as JSON.
func runBench(t *testing.T, getenv func(string) string, args ...string) (string, *bench.Table) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "bench.json")
	var stdout, stderr bytes.Buffer
	if err := run(t.Context(), append(append([]string{"bench"}, args...), "--json", out), getenv, &stdout, &stderr); err != nil {
		t.Fatalf("waitroom bench: %v\n%s", err, stderr.String())
	}
	t.Logf("waitroom bench:\n%s", stdout.String())
	raw, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var tab bench.Table
	if err := json.Unmarshal(raw, &tab); err != nil {
		t.Fatalf("--json file: %v", err)
	}
	return stdout.String(), &tab
}

// TestBenchCommand runs the whole suite small and checks the table has
// every row, each with a value, its baseline and a ratio; the Redis rows
// need redis-server on PATH (always under CI=true).
func TestBenchCommand(t *testing.T) {
	redis, _ := exec.LookPath("redis-server")
	if redis == "" && os.Getenv("CI") == "true" {
		t.Fatal("redis-server not found on PATH (Debian package redis-server); CI must have it")
	}
	text, tab := runBench(t, os.Getenv, smallBench...)
	if len(tab.Rows) != len(benchRows) {
		t.Fatalf("%d rows, want %d", len(tab.Rows), len(benchRows))
	}
	lines := strings.Split(text, "\n")
	for i, r := range tab.Rows {
		if r.Name != benchRows[i] {
			t.Errorf("row %d is %q, want %q", i, r.Name, benchRows[i])
		}
		if strings.HasPrefix(r.Name, "redisstore") && redis == "" {
			if r.Skipped != bench.RedisMissing {
				t.Errorf("%s: skipped %q, want %q", r.Name, r.Skipped, bench.RedisMissing)
			}
			continue
		}
		if r.Skipped != "" || r.Value <= 0 || r.BaselineValue <= 0 || r.Ratio <= 0 {
			t.Errorf("%s: value %v, baseline %v, ratio %v, skipped %q; want all measured", r.Name, r.Value, r.BaselineValue, r.Ratio, r.Skipped)
		}
		// The printed line has the row's ratio.
		found := false
		for _, l := range lines {
			if strings.HasPrefix(l, r.Name+" ") && strings.Contains(l, bench.Ratio(r.Ratio)) {
				found = true
			}
		}
		if !found {
			t.Errorf("no printed line for %q with ratio %s", r.Name, bench.Ratio(r.Ratio))
		}
	}
}

// TestBenchWithoutRedis hides redis-server (an empty PATH): the Redis rows

// TestBenchHTTPAtTwoCallerCounts checks that with two caller counts the
// HTTP group measures the durable join at both, and that --cpuprofile
// writes a profile.
func TestBenchHTTPAtTwoCallerCounts(t *testing.T) {
	prof := filepath.Join(t.TempDir(), "cpu.pprof")
	_, tab := runBench(t, os.Getenv, "--quick", "--only", "http", "--time", "30ms", "--rounds", "1", "--callers", "2,6", "--cpuprofile", prof)
	want := []string{
		"HTTP position (GET session, sqlitestore), 2 conns", "HTTP durable join (POST, sqlitestore), 2 conns",
		"HTTP durable join (POST, sqlitestore), 6 conns", "HTTP join (POST, memstore), 2 conns",
		"HTTP position (GET session, memstore), 2 conns",
	}
	if len(tab.Rows) != len(want) {
		t.Fatalf("%d rows, want %d", len(tab.Rows), len(want))
	}
	for i, r := range tab.Rows {
		if r.Name != want[i] {
			t.Errorf("row %d is %q, want %q", i, r.Name, want[i])
		}
		if r.Skipped != "" || r.Value <= 0 || r.BaselineValue <= 0 {
			t.Errorf("%s: value %v, baseline %v, skipped %q; want both measured", r.Name, r.Value, r.BaselineValue, r.Skipped)
		}
		if strings.Contains(r.Name, "durable join") && r.Goal != 0.5 {
			t.Errorf("%s: goal %v, want 0.5", r.Name, r.Goal)
		}
	}
	st, err := os.Stat(prof)
	if err != nil || st.Size() == 0 {
		t.Errorf("--cpuprofile wrote no profile: %v", err)
	}
}

// are reported as skipped with the reason, and the command succeeds.
func TestBenchWithoutRedis(t *testing.T) {
	noPath := func(k string) string {
		if k == "PATH" {
			return ""
		}
		return os.Getenv(k)
	}
	text, tab := runBench(t, noPath, append(smallBench, "--sizes", "200")...)
	n := 0
	for _, r := range tab.Rows {
		if strings.HasPrefix(r.Name, "redisstore") {
			n++
			if r.Skipped != bench.RedisMissing {
				t.Errorf("%s: skipped %q, want %q", r.Name, r.Skipped, bench.RedisMissing)
			}
		}
	}
	if n != 7 || !strings.Contains(text, "skipped: "+bench.RedisMissing) {
		t.Errorf("%d Redis rows, want 7 reported as skipped: %s", n, bench.RedisMissing)
	}
}

func TestBenchBadFlags(t *testing.T) {
	for _, args := range [][]string{{"--sizes", "10,x"}, {"--callers", "0"}, {"--rounds", "0"}, {"--only", "nothing"}, {"extra"}} {
		var stdout, stderr bytes.Buffer
		err := run(t.Context(), append([]string{"bench"}, args...), os.Getenv, &stdout, &stderr)
		if exitCode(err, &stderr) != 2 {
			t.Errorf("bench %v: %v, want a usage error (exit 2)", args, err)
		}
	}
}

func TestLookPath(t *testing.T) {
	dir := t.TempDir()
	exe := filepath.Join(dir, "prog")
	if err := os.WriteFile(exe, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "plain"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if got := lookPath("prog", "/nonexistent"+string(filepath.ListSeparator)+dir); got != exe {
		t.Errorf("lookPath(prog) = %q, want %q", got, exe)
	}
	if got := lookPath("plain", dir); got != "" {
		t.Errorf("lookPath found a file that is not executable: %q", got)
	}
	if got := lookPath("prog", ""); got != "" {
		t.Errorf("lookPath with an empty PATH = %q, want none", got)
	}
}
