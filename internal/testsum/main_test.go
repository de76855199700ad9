package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// summarize feeds a recorded stream to run and returns its output and status.
func summarize(t *testing.T, file string) (string, int) {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", file))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var stdout, stderr bytes.Buffer
	code := run(nil, f, &stdout, &stderr)
	if stderr.Len() != 0 {
		t.Errorf("stderr: %q", stderr.String())
	}
	return stdout.String(), code
}

// mustContain checks each want appears in out, in this order.
func mustContain(t *testing.T, out string, wants ...string) {
	t.Helper()
	rest := out
	for _, w := range wants {
		i := strings.Index(rest, w)
		if i < 0 {
			t.Errorf("output lacks %q (after the previous wants); output:\n%s", w, out)
			return
		}
		rest = rest[i+len(w):]
	}
}

func lastLine(out string) string {
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	return lines[len(lines)-1]
}

// testdata/mixed.jsonl is `go test -json ./...` of testdata/fixture: a
// passing package, one with failing tests and subtests, one that does not
// build, one that panics, skips (one for a missing Debian package) and a
// package without tests.
func TestMixedStream(t *testing.T) {
	out, code := summarize(t, "mixed.jsonl")
	if code != 1 {
		t.Errorf("status %d, want 1", code)
	}
	// Failures in full, as they happen.
	mustContain(t, out, "bad_test.go:7: context line\n", "bad_test.go:8: got 1, want 2\n", "--- FAIL: TestWrong")
	mustContain(t, out, "bad_test.go:12: sub failed\n", "--- FAIL: TestSub/broken")
	mustContain(t, out, "broken_test.go:5:40: cannot use", "FAIL example.com/fx/broken\t0.000s [build failed]")
	mustContain(t, out, "p_test.go:7: before the panic", "panic: assignment to entry in nil map", "goroutine ", "FAIL example.com/fx/panicky")
	mustContain(t, out, "ok   example.com/fx/good\t")
	mustContain(t, out, "?    example.com/fx/notests\t[no test files]")
	// Passing tests' logs and -v's RUN lines are not shown.
	for _, no := range []string{"quiet on pass", "=== RUN", "--- PASS"} {
		if strings.Contains(out, no) {
			t.Errorf("output shows %q; output:\n%s", no, out)
		}
	}
	// The summary, after everything else.
	mustContain(t, out, "==> test summary\n",
		"FAIL example.com/fx/bad: TestWrong, TestSub/broken\n",
		"FAIL example.com/fx/broken\n",
		"FAIL example.com/fx/panicky: TestPanics\n",
		"SKIP (CI would fail) example.com/fx/skip TestNeedsRedis: skip_test.go:6: redistest: redis-server not found on PATH; install the Debian package redis-server",
		"SKIP example.com/fx/skip TestShort: skip_test.go:8: builds and kills a real server; skipped with -short\n",
		"SKIP example.com/fx/skip TestSubSkip/x: skip_test.go:11: no sessions yet\n")
	if got, want := lastLine(out), "FAIL: 2 packages passed, 3 failed, 1 without tests; 3 tests skipped (1 CI would fail: missing tools)"; got != want {
		t.Errorf("last line %q, want %q", got, want)
	}
}

func TestPassingStream(t *testing.T) {
	out, code := summarize(t, "passing.jsonl")
	if code != 0 {
		t.Errorf("status %d, want 0; output:\n%s", code, out)
	}
	if got, want := lastLine(out), "PASS: 2 packages passed, 0 failed, 1 without tests; 3 tests skipped (1 CI would fail: missing tools)"; got != want {
		t.Errorf("last line %q, want %q", got, want)
	}
	if strings.Contains(out, "FAIL") {
		t.Errorf("a passing stream printed FAIL:\n%s", out)
	}
}

// A stream cut short (go test killed, a crash of the tool) fails, naming
// the package that never reported, and so does an empty one.
func TestTruncatedAndEmptyStreamsFail(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("testdata", "passing.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var kept []string
	for _, l := range strings.SplitAfter(string(raw), "\n") {
		// Drop the good package's end.
		if strings.Contains(l, `"Action":"pass","Package":"example.com/fx/good","Elapsed"`) {
			continue
		}
		kept = append(kept, l)
	}
	var stdout bytes.Buffer
	if code := run(nil, strings.NewReader(strings.Join(kept, "")), &stdout, &bytes.Buffer{}); code != 1 {
		t.Errorf("truncated stream: status %d, want 1", code)
	}
	mustContain(t, stdout.String(), "FAIL example.com/fx/good: no result (the test run ended early)\n", "FAIL: 1 packages passed, 1 failed")

	stdout.Reset()
	if code := run(nil, strings.NewReader(""), &stdout, &bytes.Buffer{}); code != 1 {
		t.Errorf("empty stream: status %d, want 1", code)
	}
	if !strings.Contains(lastLine(stdout.String()), "no package reported a result") {
		t.Errorf("empty stream: last line %q", lastLine(stdout.String()))
	}
}

// Lines that are not events (go test prints some errors as text) pass
// through unchanged.
func TestPlainLinesPassThrough(t *testing.T) {
	in := "go: warning: something odd\n" + `{"Action":"start","Package":"p"}` + "\n" + `{"Action":"pass","Package":"p","Elapsed":0.5}` + "\nno newline at the end"
	var stdout bytes.Buffer
	if code := run(nil, strings.NewReader(in), &stdout, &bytes.Buffer{}); code != 0 {
		t.Errorf("status %d, want 0; output:\n%s", code, stdout.String())
	}
	mustContain(t, stdout.String(), "go: warning: something odd\n", "ok   p\t0.500s\n", "no newline at the end\n", "PASS: 1 packages passed")
}

// In command mode the command's exit status counts: a go test that failed
// without a failed package (a bad flag, say) fails the run.
func TestCommandExitStatusCounts(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	passing, _ := filepath.Abs(filepath.Join("testdata", "passing.jsonl"))
	var stdout, stderr bytes.Buffer
	if code := run([]string{sh, "-c", "cat " + passing}, nil, &stdout, &stderr); code != 0 {
		t.Errorf("cat of a passing stream: status %d, want 0; output:\n%s", code, stdout.String())
	}
	stdout.Reset()
	if code := run([]string{sh, "-c", "cat " + passing + "; echo 'go: bad flag' >&2; exit 2"}, nil, &stdout, &stderr); code != 1 {
		t.Errorf("a command that exits 2: status %d, want 1", code)
	}
	if !strings.Contains(stderr.String(), "go: bad flag") {
		t.Errorf("the command's stderr did not pass through: %q", stderr.String())
	}
	if !strings.Contains(lastLine(stdout.String()), "go test: exit status 2") {
		t.Errorf("last line %q does not say the command failed", lastLine(stdout.String()))
	}
	if code := run([]string{filepath.Join(t.TempDir(), "no-such-command")}, nil, &stdout, &stderr); code != 1 {
		t.Errorf("a missing command: status %d, want 1", code)
	}
}

// TestLiveGoTest runs go test -json on the fixture with this Go, so a
// change in the event format shows here and not first in CI.
func TestLiveGoTest(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go test on the fixture module; skipped with -short")
	}
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("go not on PATH: %v", err)
	}
	dir, _ := filepath.Abs(filepath.Join("testdata", "fixture"))
	var stdout, stderr bytes.Buffer
	code := run([]string{goCmd, "-C", dir, "test", "-count=1", "-json", "./..."}, nil, &stdout, &stderr)
	if code != 1 {
		t.Errorf("status %d, want 1", code)
	}
	if got, want := lastLine(stdout.String()), "FAIL: 2 packages passed, 3 failed, 1 without tests; 3 tests skipped (1 CI would fail: missing tools)"; got != want {
		t.Errorf("last line %q, want %q; output:\n%s\nstderr:\n%s", got, want, stdout.String(), stderr.String())
	}
}
