package main

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/crowd"
)

// TestLoadCommand runs `waitroom load` with two worker processes and two
// source addresses against a real server, and checks its report: FIFO
// (Kendall tau 0), capacity respected, nothing lost, positions exact.
func TestLoadCommand(t *testing.T) {
	bin := buildBinary(t)
	dir := t.TempDir()
	// A crowd is many people from a few addresses: no per-address limit.
	p := startProcess(t, bin, filepath.Join(dir, "data"), "--join-limit", "0")
	token, err := os.ReadFile(filepath.Join(dir, "data", "admin-token"))
	if err != nil {
		t.Fatal(err)
	}
	c := newCrashClient(p.url, strings.TrimSpace(string(token)))
	cfg := waitroom.DefaultConfig()
	cfg.Capacity = 10
	if _, _, err := c.PutRoom(t.Context(), "load", cfg); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "load.json")
	cmd := exec.Command(bin, "load", "--target", p.url, "--room", "load", "--users", "300", "--rate", "300",
		"--hold", "300ms", "--quit", "0.02", "--duration", "5s", "--workers", "2", "--sources", "2",
		"--check-every", "2s", "--admin-token", strings.TrimSpace(string(token)), "--json", out)
	b, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("waitroom load: %v\n%s", err, b)
	}
	t.Logf("waitroom load:\n%s", b)
	var rep crowd.Report
	raw, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Joined != 300 || rep.Admitted < 20 {
		t.Errorf("joined %d, admitted %d: want 300 joined and many admitted", rep.Joined, rep.Admitted)
	}
	if rep.KendallTau != 0 || rep.MaxActive > 10 || rep.Lost != 0 || rep.DuplicateTickets != 0 || rep.PositionUps != 0 {
		t.Errorf("tau %.4f, max active %d of 10, lost %d, duplicates %d, positions up %d: want 0, ≤10, 0, 0, 0",
			rep.KendallTau, rep.MaxActive, rep.Lost, rep.DuplicateTickets, rep.PositionUps)
	}
	// The store admits the next in line in the same operation that ends a
	// session, so the server's part of "slot freed to next told" is 0.
	if rep.SlotMillis.N < 10 || rep.SlotServerMillis.P50 != 0 || !strings.Contains(string(b), "slot freed to next told") {
		t.Errorf("slot freed to next told: %d pairs, server part p50 %.1f ms, printed %v; want ≥ 10 pairs, 0 ms, printed",
			rep.SlotMillis.N, rep.SlotServerMillis.P50, strings.Contains(string(b), "slot freed to next told"))
	}
	checkChart(t, filepath.Join(dir, "load.svg"))
	if len(rep.Checks) == 0 {
		t.Fatalf("no position checks ran: %v", rep.Errors)
	}
	for _, ch := range rep.Checks {
		if ch.Wrong != 0 {
			t.Errorf("position check: %d of %d wrong (%s)", ch.Wrong, ch.Compared, ch.FirstDiff)
		}
	}
	if t.Failed() {
		for _, u := range rep.UsersDetail {
			if u.Errors > 0 || u.Reconnects > 0 || (strings.Contains(rep.Checks[len(rep.Checks)-1].FirstDiff, "ticket "+strconv.FormatInt(u.Ticket, 10)+":")) {
				t.Logf("person %+v", u)
			}
		}
	}
}

// checkChart checks that the chart `waitroom load` wrote next to its JSON
// result is well-formed XML with an svg root and the waiting and active
// lines.
func checkChart(t *testing.T, path string) {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Errorf("chart: %v", err)
		return
	}
	d := xml.NewDecoder(bytes.NewReader(raw))
	root, lines := "", 0
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Errorf("chart %s is not well-formed XML: %v", path, err)
			return
		}
		if se, ok := tok.(xml.StartElement); ok {
			if root == "" {
				root = se.Name.Local
			}
			if se.Name.Local == "polyline" {
				lines++
			}
		}
	}
	if root != "svg" || lines != 2 {
		t.Errorf("chart %s: root element %q with %d lines, want svg with 2 (waiting, active)", path, root, lines)
	}
}

func TestChartPath(t *testing.T) {
	for _, c := range []struct{ flag, json, want string }{
		{"", "", ""}, {"", "out/run.json", "out/run.svg"}, {"", "run", "run.svg"},
		{"c.svg", "run.json", "c.svg"}, {"c.svg", "", "c.svg"}, {"none", "run.json", ""},
	} {
		if got := chartPath(c.flag, c.json); got != c.want {
			t.Errorf("chartPath(%q, %q) = %q, want %q", c.flag, c.json, got, c.want)
		}
	}
}
