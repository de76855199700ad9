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
	"github.com/waitroom/waitroom/internal/crowd"
)

// TestLoadCommand runs `waitroom load` with two worker processes and two
// source addresses against a real server, and checks its report: FIFO
// (Kendall tau 0), capacity respected, nothing lost, positions exact.
func TestLoadCommand(t *testing.T) {
	bin := buildBinary(t)
	dir := t.TempDir()
	// A crowd is many people from a few addresses: no per-address limit.
	p := startProcess(t, bin, filepath.Join(dir, "data"), "--join-limit", "0", "--push-refresh", "300ms")
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
		"--check-every", "2s", "--check-settle", "1500ms", "--admin-token", strings.TrimSpace(string(token)), "--json", out)
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

// TestLoadDrop runs `waitroom load --opens-in` against a real server: 200
// people arrive over the 3 s before the opening the command schedules, in
// two worker processes. Every entrant must see a place in line (0 lost),
// the draw must verify and list every entrant with the ticket its session
// reached, and positions must be exact at the freezes after the draw. The
// delay figures are printed, not asserted: they are a benchmark's.
func TestLoadDrop(t *testing.T) {
	bin := buildBinary(t)
	dir := t.TempDir()
	p := startProcess(t, bin, filepath.Join(dir, "data"), append(noJoinLimitFlags(bin), "--push-refresh", "300ms")...)
	raw, err := os.ReadFile(filepath.Join(dir, "data", "admin-token"))
	if err != nil {
		t.Fatal(err)
	}
	token := strings.TrimSpace(string(raw))
	c := newCrashClient(p.url, token)
	cfg := waitroom.DefaultConfig()
	cfg.Capacity = 10
	if _, _, err := c.PutRoom(t.Context(), "drop", cfg); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "drop.json")
	const users = 200
	cmd := exec.Command(bin, "load", "--target", p.url, "--room", "drop", "--users", strconv.Itoa(users), "--opens-in", "3s",
		"--hold", "300ms", "--duration", "7s", "--workers", "2", "--sources", "2", "--check-every", "2s", "--check-settle", "1500ms",
		"--admin-token", token, "--json", out, "--chart", "none")
	b, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("waitroom load: %v\n%s", err, b)
	}
	t.Logf("waitroom load:\n%s", b)
	var rep crowd.Report
	if raw, err = os.ReadFile(out); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &rep); err != nil {
		t.Fatal(err)
	}
	d := rep.Drop
	if d == nil {
		t.Fatalf("the report has no drop section (errors %v)", rep.Errors)
	}
	for _, want := range []string{"opening to position seen", "verified (as verify-draw)"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("the printed report lacks %q", want)
		}
	}
	// Arrivals end just before the opening: on a busy machine the last few
	// may join after it, first come, first served.
	if rep.Joined != users || d.Entrants+d.Late != users || d.Entrants < users/2 {
		t.Errorf("joined %d: %d entrants, %d late; want all %d joined, nearly all entrants", rep.Joined, d.Entrants, d.Late, users)
	}
	if d.Lost != 0 || d.LeftEarly != 0 || d.PositionMillis.N != d.Entrants {
		t.Errorf("%d lost, %d left early, %d of %d entrants saw a position: want 0, 0, all", d.Lost, d.LeftEarly, d.PositionMillis.N, d.Entrants)
	}
	if !d.Verified || d.DrawEntries != d.Entrants || d.Listed != d.Entrants || d.Missing+d.WrongTicket+d.ListedGone+d.Others != 0 {
		t.Errorf("draw verified %v (%s): %d entries, %d of %d entrants listed with their tickets, %d missing, %d wrong ticket, %d listed after leaving, %d others (%s)",
			d.Verified, d.DrawError, d.DrawEntries, d.Listed, d.Entrants, d.Missing, d.WrongTicket, d.ListedGone, d.Others, d.FirstDiff)
	}
	if rep.KendallTau != 0 || rep.MaxActive > 10 || rep.Lost != 0 || rep.DuplicateTickets != 0 || rep.PositionUps != 0 || rep.Admitted < 10 {
		t.Errorf("tau %.4f, max active %d of 10, lost %d, duplicates %d, positions up %d, admitted %d: want 0, ≤10, 0, 0, 0, ≥10",
			rep.KendallTau, rep.MaxActive, rep.Lost, rep.DuplicateTickets, rep.PositionUps, rep.Admitted)
	}
	if len(rep.Checks) == 0 {
		t.Fatalf("no position checks ran: %v", rep.Errors)
	}
	for _, ch := range rep.Checks {
		if ch.Wrong != 0 || ch.Compared == 0 || ch.At.Before(d.OpensAt) {
			t.Errorf("position check at %v (opening %v): %d of %d wrong (%s); want after the opening, 0 of many", ch.At, d.OpensAt, ch.Wrong, ch.Compared, ch.FirstDiff)
		}
	}
	// The published record passes `waitroom verify-draw` too.
	var vout, verr bytes.Buffer
	if err := verifyDrawCommand(t.Context(), []string{p.url + "/v1/rooms/drop/draw"}, &vout, &verr); err != nil {
		t.Errorf("verify-draw: %v\n%s", err, verr.String())
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
