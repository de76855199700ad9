// Command testsum runs `go test -json` (or reads its output) and prints what
// a plain `go test` would, as it happens, then a summary: packages passed
// and failed, the failed tests, and every skipped test with its reason. It
// exits non-zero when anything failed, so `make test` can end with it:
//
//	go run ./internal/testsum go test -race -count=1 -json ./...
//	go test -json ./... | go run ./internal/testsum
//
// As it goes it prints one line per package (ok, FAIL, or no test files),
// build errors, and the whole output of every failed test (its log lines,
// panics and race reports); a passing test's output is dropped, as go test
// drops it. A skip is listed with the line its t.Skip printed.
//
// A skip "CI would fail" is one for a missing outside tool: by the house
// convention such a skip names the Debian package to install (see
// internal/redistest's lookPath, internal/browsertest.Require) and is a
// failure under CI=true. The summary names those first, so a machine that
// skipped them knows it did not run what CI runs.
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"sort"
	"strings"
	"time"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// run summarizes the events of the command args (when given; its stderr
// passes through) or of stdin, and returns the exit status.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		s := newSummarizer(stdout)
		if err := s.read(stdin); err != nil {
			fmt.Fprintf(stderr, "testsum: reading the events: %v\n", err)
			return 1
		}
		return s.finish(nil)
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stderr = stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		fmt.Fprintf(stderr, "testsum: %v\n", err)
		return 1
	}
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(stderr, "testsum: %v\n", err)
		return 1
	}
	s := newSummarizer(stdout)
	readErr := s.read(out)
	// Drain whatever is left so the command never blocks on a full pipe.
	_, _ = io.Copy(io.Discard, out)
	waitErr := cmd.Wait()
	if readErr != nil {
		fmt.Fprintf(stderr, "testsum: reading the events: %v\n", readErr)
		return 1
	}
	return s.finish(waitErr)
}

// event is one line of `go test -json` (cmd/test2json's TestEvent, with
// the build events of `go test -json`).
type event struct {
	Time        time.Time
	Action      string
	Package     string
	Test        string
	Elapsed     float64
	Output      string
	ImportPath  string
	FailedBuild string
}

// test is one test's output, kept until it ends: printed if it fails.
type test struct {
	lines []string
	done  bool
}

// pkg is one package's state.
type pkg struct {
	name   string
	lines  []string // output not attributed to a test
	tests  map[string]*test
	order  []string
	failed []string // failed tests, in the order they failed
	ended  bool
}

// skip is one skipped test and why.
type skip struct {
	pkg, test, reason string
	ciWouldFail       bool
}

// summarizer turns events into the running output and the summary.
type summarizer struct {
	out                     io.Writer
	pkgs                    map[string]*pkg
	passed, failed, noTests []string
	skips                   []skip
	buildFailed             map[string]bool
	malformed               int
}

func newSummarizer(out io.Writer) *summarizer {
	return &summarizer{out: out, pkgs: make(map[string]*pkg), buildFailed: make(map[string]bool)}
}

// read consumes the event stream. A line that is not an event (go test
// writes some errors as plain text) is printed as it is.
func (s *summarizer) read(r io.Reader) error {
	br := bufio.NewReader(r)
	for {
		line, err := br.ReadString('\n')
		if line != "" {
			s.line(line)
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

func (s *summarizer) line(line string) {
	var e event
	if !strings.HasPrefix(line, "{") || json.Unmarshal([]byte(line), &e) != nil || e.Action == "" {
		s.malformed++
		fmt.Fprint(s.out, ensureNewline(line))
		return
	}
	switch e.Action {
	case "build-output":
		// Compiler and vet errors, printed as they come.
		fmt.Fprint(s.out, e.Output)
		return
	case "build-fail":
		s.buildFailed[e.ImportPath] = true
		return
	}
	if e.Package == "" {
		return
	}
	p := s.pkg(e.Package)
	if e.Test == "" {
		s.packageEvent(p, e)
		return
	}
	t := p.tests[e.Test]
	if t == nil {
		t = &test{}
		p.tests[e.Test] = t
		p.order = append(p.order, e.Test)
	}
	switch e.Action {
	case "output":
		t.lines = append(t.lines, e.Output)
	case "pass":
		t.done, t.lines = true, nil
	case "skip":
		t.done = true
		reason := skipReason(t.lines)
		s.skips = append(s.skips, skip{pkg: p.name, test: e.Test, reason: reason, ciWouldFail: ciWouldFail(reason)})
		t.lines = nil
	case "fail":
		t.done = true
		p.failed = append(p.failed, e.Test)
		s.printTest(t)
	}
}

func (s *summarizer) pkg(name string) *pkg {
	p := s.pkgs[name]
	if p == nil {
		p = &pkg{name: name, tests: make(map[string]*test)}
		s.pkgs[name] = p
	}
	return p
}

// packageEvent handles an event of the package itself: its output and its end.
func (s *summarizer) packageEvent(p *pkg, e event) {
	switch e.Action {
	case "output":
		p.lines = append(p.lines, e.Output)
	case "pass":
		p.ended = true
		s.passed = append(s.passed, p.name)
		fmt.Fprintf(s.out, "ok   %s\t%.3fs\n", p.name, e.Elapsed)
	case "skip":
		p.ended = true
		s.noTests = append(s.noTests, p.name)
		fmt.Fprintf(s.out, "?    %s\t[no test files]\n", p.name)
	case "fail":
		p.ended = true
		s.failed = append(s.failed, p.name)
		// Tests still running when the package failed (a panic in another
		// goroutine, a timeout) never got their own fail: show their output.
		for _, name := range p.order {
			if t := p.tests[name]; !t.done && len(t.lines) > 0 {
				p.failed = append(p.failed, name+" (did not finish)")
				s.printTest(t)
			}
		}
		for _, l := range p.lines {
			if strings.HasPrefix(l, "=== ") || l == "FAIL\n" || l == "PASS\n" || strings.HasPrefix(l, "FAIL\t"+p.name) || strings.HasPrefix(l, "ok  \t"+p.name) {
				continue
			}
			fmt.Fprint(s.out, l)
		}
		why := ""
		if e.FailedBuild != "" {
			why = " [build failed]"
		}
		fmt.Fprintf(s.out, "FAIL %s\t%.3fs%s\n", p.name, e.Elapsed, why)
	}
}

// printTest prints a failed test's output as go test would: without the
// === RUN/PAUSE/CONT/NAME lines of -v.
func (s *summarizer) printTest(t *test) {
	for _, l := range t.lines {
		if !strings.HasPrefix(l, "=== ") {
			fmt.Fprint(s.out, ensureNewline(l))
		}
	}
	t.lines = nil
}

// skipReason is what a skipped test printed (its t.Skip message and any
// log lines before it), on one line.
func skipReason(lines []string) string {
	var parts []string
	for _, l := range lines {
		t := strings.TrimSpace(l)
		if t == "" || strings.HasPrefix(t, "=== ") || strings.HasPrefix(t, "--- SKIP") {
			continue
		}
		parts = append(parts, t)
	}
	if len(parts) == 0 {
		return "(no reason given)"
	}
	return strings.Join(parts, " / ")
}

// missingToolRE matches the house's wording for a skip over a missing
// outside tool, which CI=true turns into a failure.
var missingToolRE = regexp.MustCompile(`(?i)Debian package|apt-get install`)

func ciWouldFail(reason string) bool { return missingToolRE.MatchString(reason) }

// finish prints the summary and returns the exit status: 1 if a package
// or build failed, the command failed, or no package reported at all.
func (s *summarizer) finish(cmdErr error) int {
	// A package that started but never ended: the stream was cut short.
	var unfinished []string
	for name, p := range s.pkgs {
		if !p.ended {
			unfinished = append(unfinished, name)
		}
	}
	sort.Strings(unfinished)
	w := s.out
	fmt.Fprintln(w)
	fmt.Fprintln(w, "==> test summary")
	for _, name := range s.failed {
		p := s.pkgs[name]
		if len(p.failed) > 0 {
			fmt.Fprintf(w, "FAIL %s: %s\n", name, strings.Join(leafTests(p.failed), ", "))
		} else {
			fmt.Fprintf(w, "FAIL %s\n", name)
		}
	}
	for _, name := range unfinished {
		fmt.Fprintf(w, "FAIL %s: no result (the test run ended early)\n", name)
	}
	sort.SliceStable(s.skips, func(i, j int) bool { return s.skips[i].ciWouldFail && !s.skips[j].ciWouldFail })
	ciSkips := 0
	for _, k := range s.skips {
		tag := "SKIP"
		if k.ciWouldFail {
			tag = "SKIP (CI would fail)"
			ciSkips++
		}
		fmt.Fprintf(w, "%s %s %s: %s\n", tag, k.pkg, k.test, k.reason)
	}
	failedPkgs := len(s.failed) + len(unfinished)
	status := 0
	var notes []string
	if failedPkgs > 0 {
		status = 1
	}
	if cmdErr != nil {
		status = 1
		// A failed package explains the command's failure; without one,
		// say it (a bad flag, a vet failure that is no package's, a kill).
		if failedPkgs == 0 {
			notes = append(notes, fmt.Sprintf("go test: %v", cmdErr))
		}
	}
	if len(s.pkgs) == 0 {
		status = 1
		notes = append(notes, "no package reported a result")
	}
	skipped := fmt.Sprintf("%d tests skipped", len(s.skips))
	if ciSkips > 0 {
		skipped += fmt.Sprintf(" (%d CI would fail: missing tools)", ciSkips)
	}
	verdict := "PASS"
	if status != 0 {
		verdict = "FAIL"
	}
	line := fmt.Sprintf("%s: %d packages passed, %d failed, %d without tests; %s", verdict, len(s.passed), failedPkgs, len(s.noTests), skipped)
	if len(notes) > 0 {
		line += "; " + strings.Join(notes, "; ")
	}
	fmt.Fprintln(w, line)
	return status
}

// leafTests drops a failed test whose subtest also failed: the subtest
// names the failure more exactly.
func leafTests(names []string) []string {
	var out []string
	for _, n := range names {
		parent := false
		for _, m := range names {
			if strings.HasPrefix(m, n+"/") {
				parent = true
				break
			}
		}
		if !parent {
			out = append(out, n)
		}
	}
	return out
}

func ensureNewline(s string) string {
	if strings.HasSuffix(s, "\n") {
		return s
	}
	return s + "\n"
}
