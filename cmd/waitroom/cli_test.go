package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom"
)

// commandsRE finds the commands the top-level help lists.
var commandsRE = regexp.MustCompile(`(?m)^\t([a-z][a-z-]*)  `)

// helpedCommands are every command line with a help of its own: the
// commands "waitroom help" lists (but help itself), and the commands
// within them.
func helpedCommands(t *testing.T) [][]string {
	t.Helper()
	var out [][]string
	for _, m := range commandsRE.FindAllStringSubmatch(usageText, -1) {
		if m[1] != "help" {
			out = append(out, []string{m[1]})
		}
	}
	if len(out) < 6 {
		t.Fatalf("found %d commands in the usage, want at least 6:\n%s", len(out), usageText)
	}
	return append(out, []string{"invite", "keygen"}, []string{"invite", "mint"}, []string{"load", "--scenario", "attack"})
}

// helpShapeRE is the one shape of a command's help: a usage line, a
// paragraph, the flags (when there are any), each "--name [value]" with
// its defaults in parentheses and its text indented below it, and
// examples.
var helpShapeRE = regexp.MustCompile(`^Usage: waitroom \S.*\n\n(\S.*\n)+(\nFlags:\n(  --[a-z0-9-]+( \S+)?(   \(.*\))?\n(      +\S.*\n)+)+)?(\n[A-Z][a-z]+:\n(  .*\n|      .*\n)+)*\nExamples:\n(  \S.*\n)+$`)

// TestEveryHelpHasOneShape: each command's -h and "waitroom help NAME"
// print the same text, in the one shape, with no internal flag.
func TestEveryHelpHasOneShape(t *testing.T) {
	for _, cmd := range helpedCommands(t) {
		name := strings.Join(cmd, " ")
		t.Run(name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			err := run(t.Context(), append(slices.Clone(cmd), "-h"), env(nil), &stdout, &stderr)
			if code := exitCode(err, &bytes.Buffer{}); !errors.Is(err, flag.ErrHelp) || code != 0 {
				t.Fatalf("%s -h: error %v, exit code %d; want flag.ErrHelp and 0", name, err, code)
			}
			help := stderr.String()
			if stdout.Len() != 0 {
				t.Errorf("%s -h wrote to stdout: %q", name, stdout.String())
			}
			if !helpShapeRE.MatchString(help) {
				t.Errorf("%s -h is not in the one shape (usage line, paragraph, flags with defaults, examples):\n%s", name, help)
			}
			if !strings.HasPrefix(help, "Usage: waitroom "+name) {
				t.Errorf("%s -h does not start with its own usage line:\n%s", name, help)
			}
			if strings.Contains(help, "internal") {
				t.Errorf("%s -h shows an internal flag:\n%s", name, help)
			}

			var helped bytes.Buffer
			err = run(t.Context(), append([]string{"help"}, cmd...), env(nil), &helped, &stderr)
			if code := exitCode(err, &bytes.Buffer{}); code != 0 {
				t.Errorf("help %s: exit code %d (error %v), want 0", name, code, err)
			}
			if helped.String() != help {
				t.Errorf("help %s printed something else than %s -h:\n%s", name, name, helped.String())
			}
		})
	}
	// The internal flags of load's worker processes work, and are not shown.
	var stderr bytes.Buffer
	_ = run(t.Context(), []string{"load", "-h"}, env(nil), &bytes.Buffer{}, &stderr)
	for _, hidden := range []string{"--worker", "--first", "--count"} {
		if regexp.MustCompile(`(?m)^ +` + hidden + `( |$)`).MatchString(stderr.String()) {
			t.Errorf("load -h shows %s:\n%s", hidden, stderr.String())
		}
	}
	for _, shown := range []string{"--users people   (default 1000)", "--create", `--target URLs   (default "http://127.0.0.1:8080")`} {
		if !strings.Contains(stderr.String(), shown) {
			t.Errorf("load -h does not show %q:\n%s", shown, stderr.String())
		}
	}
	err := run(t.Context(), []string{"load", "--worker", "--first", "0", "--count", "0"}, env(map[string]string{"WAITROOM_LOAD_CONFIG": "{"}), &bytes.Buffer{}, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "WAITROOM_LOAD_CONFIG") {
		t.Errorf("load --worker with a bad config: %v, want the worker's own error (the flags parsed)", err)
	}
	// "help" and -h print the list of commands.
	for _, args := range [][]string{{"help"}, {"-h"}, {"--help"}, {"help", "help"}} {
		var out bytes.Buffer
		if err := run(t.Context(), args, env(nil), &out, &bytes.Buffer{}); exitCode(err, &bytes.Buffer{}) != 0 || out.String() != usageText {
			t.Errorf("%v: error %v, printed:\n%s\nwant the list of commands", args, err, out.String())
		}
	}
}

// TestStoreAndTemplatesHelp: --store lists every form redisstore takes,
// and --templates points at the README's section.
func TestStoreAndTemplatesHelp(t *testing.T) {
	var stderr bytes.Buffer
	_ = run(t.Context(), []string{"serve", "-h"}, env(nil), &bytes.Buffer{}, &stderr)
	for _, want := range []string{"(empty)", "memory", "redis://[user:password@]host:port[/db][?options]", "rediss://",
		"redis+sentinel://[user:password@]host:port[,host:port…]/master[/db][?options]", "rediss+sentinel://",
		"sentinel_username", "redis+cluster://[user:password@]host:port[,host:port…][?options]", "rediss+cluster://",
		`README's "Waiting page" section`} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("serve -h does not say %q", want)
		}
	}
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`(?m)^#+ Waiting page`).Match(readme) {
		t.Log(`the README has no "Waiting page" section yet (issue 24 adds it with the docs)`)
	}
}

// TestBadFlagIsOneLine: a bad flag of any command is its error and where
// the help is, at most three lines on stderr, nothing on stdout, and exit
// status 2; so is an unknown command.
func TestBadFlagIsOneLine(t *testing.T) {
	cases := [][]string{{"frobnicate"}, {"help", "frobnicate"}}
	for _, cmd := range helpedCommands(t) {
		cases = append(cases, append(slices.Clone(cmd), "--no-such-flag"))
	}
	for _, args := range cases {
		name := strings.Join(args, " ")
		t.Run(name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			err := run(t.Context(), args, env(nil), &stdout, &stderr)
			if code := exitCode(err, &bytes.Buffer{}); code != 2 {
				t.Errorf("exit code %d (error %v), want 2", code, err)
			}
			lines := strings.Split(strings.TrimSuffix(stderr.String(), "\n"), "\n")
			bad := strings.TrimLeft(args[len(args)-1], "-")
			if len(lines) > 3 || !strings.Contains(stderr.String(), bad) || !strings.Contains(stderr.String(), "see `waitroom ") {
				t.Errorf("stderr is %d lines; want at most 3, naming %s and where the help is:\n%s", len(lines), args[len(args)-1], stderr.String())
			}
			if stdout.Len() != 0 {
				t.Errorf("stdout = %q, want nothing", stdout.String())
			}
		})
	}
	// The binary exits with status 2 and the same two lines.
	bin := buildBinary(t)
	out, err := exec.Command(bin, "load", "--usres", "5").CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 {
		t.Errorf("waitroom load --usres 5: %v, want exit status 2", err)
	}
	if want := "waitroom load: flag provided but not defined: -usres\nsee `waitroom load -h`\n"; string(out) != want {
		t.Errorf("waitroom load --usres 5 printed:\n%s\nwant:\n%s", out, want)
	}
}

// closedPort returns a loopback port nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// runBinary runs bin with args, as a process of its own without the
// machine's WAITROOM_* settings, and returns its exit code, stdout and
// stderr, and how long it took. A run that outlasts a minute is killed.
func runBinary(t *testing.T, bin string, args ...string) (code int, stdout, stderr string, took time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute) // a hang guard, not a verdict
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "WAITROOM_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	began := time.Now()
	err := cmd.Run()
	took = time.Since(began)
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		code = ee.ExitCode()
	default:
		t.Fatalf("run %s %v: %v", bin, args, err)
	}
	if ctx.Err() != nil {
		t.Fatalf("%s %v still running after a minute:\n%s\n%s", bin, args, out.String(), errOut.String())
	}
	return code, out.String(), errOut.String(), took
}

// TestLoadAgainstAClosedPort: nothing listens, so the load ends at once,
// exit status 1, with one line that names the server and the cause.
func TestLoadAgainstAClosedPort(t *testing.T) {
	bin := buildBinary(t)
	addr := closedPort(t)
	code, stdout, stderr, took := runBinary(t, bin, "load", "--target", "http://"+addr, "--users", "100", "--duration", "1m")
	t.Logf("waitroom load against a closed port: exit %d after %s: %s", code, took.Round(time.Millisecond), stderr)
	if code == 0 {
		t.Errorf("exit code 0, want non-zero")
	}
	if want := "waitroom: cannot reach http://" + addr + ": connection refused\n"; stderr != want || stdout != "" {
		t.Errorf("stdout %q, stderr %q; want nothing and %q", stdout, stderr, want)
	}
}

// TestLoadRoom: a room that does not exist is one line saying so (and
// suggesting --create) before any load; --create makes it with the
// capacity asked, once.
func TestLoadRoom(t *testing.T) {
	bin := buildBinary(t)
	p, token := startCrashServer(t, bin, filepath.Join(t.TempDir(), "data"), []string{"--join-limit", "0"})
	code, stdout, stderr, _ := runBinary(t, bin, "load", "--target", p.url, "--room", "nope", "--users", "20", "--duration", "1m")
	if code == 0 || stdout != "" || strings.Count(stderr, "\n") != 1 ||
		!strings.Contains(stderr, `room "nope" does not exist on `+p.url) || !strings.Contains(stderr, "--create") {
		t.Errorf("load against a missing room: exit %d, stdout %q, stderr %q; want non-zero and one line that says so and suggests --create", code, stdout, stderr)
	}
	c := newCrashClient(p.url, token)
	if _, err := c.Room(t.Context(), "nope"); waitroom.ErrorCode(err) != waitroom.CodeRoomNotFound {
		t.Errorf("room nope after a load without --create: %v, want it still missing", err)
	}

	args := []string{"load", "--target", p.url, "--room", "made", "--create", "--capacity", "7", "--users", "20", "--hold", "200ms", "--duration", "2s", "--chart", "none"}
	code, stdout, stderr, _ = runBinary(t, bin, append(args, "--admin-token", token)...)
	if code != 0 || !regexp.MustCompile(`(?m)^room +"made", created for this run`).MatchString(stdout) || !strings.Contains(stdout, "20 joined, 0 failed to join") {
		t.Fatalf("load --create: exit %d\n%s\n%s", code, stdout, stderr)
	}
	room, err := c.Room(t.Context(), "made")
	if err != nil || room.Capacity != 7 {
		t.Fatalf("room made: %+v, %v; want capacity 7", room, err)
	}
	// A room that exists is left as it is.
	cfg := waitroom.DefaultConfig()
	cfg.Capacity = 3
	if _, _, err := c.PutRoom(t.Context(), "made", cfg); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr, _ = runBinary(t, bin, append(args, "--admin-token", token)...)
	if code != 0 || strings.Contains(stdout, "created for this run") {
		t.Errorf("load --create on a room that exists: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if room, err := c.Room(t.Context(), "made"); err != nil || room.Capacity != 3 {
		t.Errorf("room made after a second --create: %+v, %v; want its capacity 3 kept", room, err)
	}
	// --create without the token is refused before anything is asked.
	code, _, stderr, _ = runBinary(t, bin, append(args[:len(args):len(args)], "--room", "other")...)
	if code != 2 || !strings.Contains(stderr, "--create needs the admin token") {
		t.Errorf("load --create without a token: exit %d, %s", code, stderr)
	}
}

// TestLoadStopsWhenMostJoinsFail: against a server that limits joins per
// address (the default), most of 400 joins at once are refused: the load
// stops early, exits non-zero and counts the refusals by their code once,
// instead of printing each.
func TestLoadStopsWhenMostJoinsFail(t *testing.T) {
	bin := buildBinary(t)
	p, token := startCrashServer(t, bin, filepath.Join(t.TempDir(), "data"), nil)
	code, stdout, stderr, took := runBinary(t, bin, "load", "--target", p.url, "--room", "limited", "--create", "--admin-token", token,
		"--users", "400", "--duration", "50s", "--chart", "none")
	t.Logf("exit %d after %s\n%s\n%s", code, took.Round(time.Millisecond), stdout, stderr)
	if code == 0 {
		t.Errorf("exit code 0, want non-zero")
	}
	m := regexp.MustCompile(`(?m)^join failures +(\d+) × 429 rate_limited$`).FindStringSubmatch(stdout)
	if m == nil {
		t.Fatalf("no line counting the 429 rate_limited refusals in the report:\n%s", stdout)
	}
	if n, _ := strconv.Atoi(m[1]); n < 200 {
		t.Errorf("%d joins refused, want most of 400", n)
	}
	if n := strings.Count(stdout+stderr, "rate_limited"); n > 3 {
		t.Errorf("rate_limited appears %d times, want it counted once (and in the reason for stopping)", n)
	}
	if !strings.Contains(stderr, "waitroom: load stopped early: ") || !strings.Contains(stderr, "--join-limit 0") {
		t.Errorf("stderr does not say the load stopped early, and why:\n%s", stderr)
	}
}

// TestLoadStopsWhenTheServerGoes: the only server is killed mid-run; the
// load stops early and exits non-zero, naming the cause.
func TestLoadStopsWhenTheServerGoes(t *testing.T) {
	bin := buildBinary(t)
	p, token := startCrashServer(t, bin, filepath.Join(t.TempDir(), "data"), []string{"--join-limit", "0"})
	cmd := exec.Command(bin, "load", "--target", p.url, "--room", "gone", "--create", "--admin-token", token,
		"--users", "50", "--hold", "1h", "--duration", "50s", "--chart", "none")
	var stdout, stderr syncBuffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	var err error
	go func() { err = cmd.Wait(); close(done) }()
	t.Cleanup(func() { cmd.Process.Kill(); <-done })
	for !strings.Contains(stderr.String(), "joined 50/50") {
		select {
		case <-done:
			t.Fatalf("load ended before everyone joined: %v\n%s\n%s", err, stdout.String(), stderr.String())
		case <-time.After(100 * time.Millisecond):
		}
	}
	p.kill(t)
	select {
	case <-done:
	case <-time.After(45 * time.Second): // a hang guard: the run alone lasts 50s
		t.Fatalf("load still running 45s after its server was killed:\n%s", stderr.String())
	}
	t.Logf("waitroom load:\n%s\n%s", stdout.String(), stderr.String())
	if err == nil {
		t.Errorf("load exited 0 after its server was killed, want non-zero")
	}
	if !strings.Contains(stderr.String(), "waitroom: load stopped early: no server could be reached") || !strings.Contains(stderr.String(), "connection refused") {
		t.Errorf("stderr does not say no server could be reached and why:\n%s", stderr.String())
	}
}

// TestFailedStartLeavesNothing: serve on a busy port, on a bogus address,
// or with a bad templates folder, writes nothing to its data folder: a
// fresh path stays absent, an empty folder stays empty.
func TestFailedStartLeavesNothing(t *testing.T) {
	bin := buildBinary(t)
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"busy port", []string{"--addr", busy.Addr().String()}, "address already in use"},
		{"bogus address", []string{"--addr", "bogus"}, "listen on bogus"},
		{"bad templates", []string{"--addr", "127.0.0.1:0", "--templates", filepath.Join(t.TempDir(), "none")}, "--templates"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fresh := filepath.Join(t.TempDir(), "data")
			empty := t.TempDir()
			for _, data := range []string{fresh, empty} {
				code, stdout, stderr, _ := runBinary(t, bin, append([]string{"serve", "--data", data}, tc.args...)...)
				if code != 1 || !strings.Contains(stderr, tc.want) {
					t.Errorf("serve %v: exit %d, stderr %q; want 1 and %q", tc.args, code, stderr, tc.want)
				}
				if strings.Contains(stdout, "admin token") {
					t.Errorf("a failed start printed where its token is:\n%s", stdout)
				}
			}
			if _, err := os.Stat(fresh); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("the fresh data folder exists after a failed start (%v)", err)
			}
			if entries, err := os.ReadDir(empty); err != nil || len(entries) != 0 {
				t.Errorf("the empty data folder holds %v after a failed start (%v)", entries, err)
			}
		})
	}
}

// TestUnreachableRedisIsOneLine: a Redis that cannot be reached at start
// is one line naming the URL without its password and the cause, exit
// status 1, no line of go-redis' own log, and nothing written.
func TestUnreachableRedisIsOneLine(t *testing.T) {
	bin := buildBinary(t)
	addr := closedPort(t)
	data := filepath.Join(t.TempDir(), "data")
	code, stdout, stderr, _ := runBinary(t, bin, "serve", "--addr", "127.0.0.1:0", "--data", data, "--store", "redis://admin:hunter2@"+addr+"/0")
	want := "waitroom: open Redis store redis://admin:xxxxx@" + addr + "/0: cannot reach it: dial tcp " + addr + ": connect: connection refused\n"
	if code != 1 || stderr != want || stdout != "" {
		t.Errorf("serve with an unreachable Redis: exit %d, stdout %q, stderr:\n%s\nwant exit 1, nothing and:\n%s", code, stdout, stderr, want)
	}
	if _, err := os.Stat(data); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the data folder exists after a failed start (%v)", err)
	}
}
