package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/client"
)

// syncBuffer collects a command's output while it runs.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// env returns a getenv reading only vars, so the test's own environment
// (a WAITROOM_ADDR on the machine, say) cannot leak in.
func env(vars map[string]string) func(string) string {
	return func(k string) string { return vars[k] }
}

var listeningRE = regexp.MustCompile(`waitroom listening on (\S+)`)

// inProcess is a `waitroom serve` running inside the test process.
type inProcess struct {
	url            string
	stdout, stderr *syncBuffer
	cancel         context.CancelFunc
	done           chan error
}

// startServe runs serve with args and vars and waits for its "listening on"
// line. The server is stopped when the test ends, if stop was not called.
func startServe(t *testing.T, args []string, vars map[string]string) *inProcess {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	s := &inProcess{stdout: new(syncBuffer), stderr: new(syncBuffer), cancel: cancel, done: make(chan error, 1)}
	go func() { s.done <- run(ctx, append([]string{"serve"}, args...), env(vars), s.stdout, s.stderr) }()
	t.Cleanup(func() {
		if s.cancel != nil {
			s.stop(t)
		}
	})
	deadline := time.Now().Add(30 * time.Second)
	for {
		if m := listeningRE.FindStringSubmatch(s.stdout.String()); m != nil {
			s.url = "http://" + m[1]
			watch(t, s.url, args)
			return s
		}
		select {
		case err := <-s.done:
			s.cancel = nil
			t.Fatalf("serve returned %v before listening; stderr:\n%s", err, s.stderr.String())
		case <-time.After(5 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve did not print its address within 30s; stdout:\n%s\nstderr:\n%s", s.stdout.String(), s.stderr.String())
		}
	}
}

// stop cancels serve's context, as SIGINT would, and checks that it returns
// nil promptly.
func (s *inProcess) stop(t *testing.T) {
	t.Helper()
	s.cancel()
	s.cancel = nil
	select {
	case err := <-s.done:
		if err != nil {
			t.Errorf("serve returned %v after its context ended, want nil; stderr:\n%s", err, s.stderr.String())
		}
	case <-time.After(15 * time.Second):
		t.Fatalf("serve did not return within 15s of its context ending")
	}
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return c
}

// TestShortAdminTokenRefused: an admin token set by hand shorter than 16
// characters, by flag or environment, stops serve before it starts: one
// line naming the flag, exit status 2, nothing written to the data folder.
func TestShortAdminTokenRefused(t *testing.T) {
	for name, tc := range map[string]struct {
		args []string
		env  map[string]string
	}{
		"flag": {[]string{"--admin-token", "short"}, nil},
		"env":  {nil, map[string]string{"WAITROOM_ADMIN_TOKEN": "fifteen-chars.."}},
	} {
		t.Run(name, func(t *testing.T) {
			data := filepath.Join(t.TempDir(), "data")
			var stdout, stderr bytes.Buffer
			args := append([]string{"serve", "--addr", "127.0.0.1:0", "--store", "memory", "--data", data}, tc.args...)
			// A hang guard: a serve that accepted the token would serve
			// until its context ends.
			ctx, cancel := context.WithTimeout(t.Context(), 15*time.Second)
			defer cancel()
			err := run(ctx, args, env(tc.env), &stdout, &stderr)
			if code := exitCode(err, &bytes.Buffer{}); code != 2 {
				t.Fatalf("exit code %d (error %v), want 2", code, err)
			}
			if !strings.Contains(stderr.String(), "--admin-token must be at least 16 characters") || strings.Count(stderr.String(), "\n") > 3 {
				t.Errorf("stderr = %q, want the one-line refusal naming --admin-token", stderr.String())
			}
			if _, err := os.Stat(data); !os.IsNotExist(err) {
				t.Errorf("the data folder exists after the refusal (%v), want nothing written", err)
			}
		})
	}
}

func TestParseServeFlagsBeatEnvBeatDefaults(t *testing.T) {
	allEnv := map[string]string{
		"WAITROOM_ADDR":        "127.0.0.1:9000",
		"WAITROOM_DATA":        "/env/data",
		"WAITROOM_STORE":       "memory",
		"WAITROOM_ADMIN_TOKEN": "env-token-0123456789",
		"WAITROOM_LOG_FORMAT":  "json",
	}
	allFlags := []string{"--addr", "127.0.0.1:7000", "--data", "/flag/data", "--store", "", "--admin-token", "flag-token-0123456789", "--log-format", "text"}
	// parsed is what the case checks of serve's options.
	type parsed struct{ addr, data, store, adminToken, logFormat string }
	defaults := parsed{addr: ":8080", data: "./waitroom-data", logFormat: "text"}
	for _, tc := range []struct {
		name string
		args []string
		env  map[string]string
		want parsed
	}{
		{"defaults", nil, nil, defaults},
		{"env beats defaults", nil, allEnv, parsed{addr: "127.0.0.1:9000", data: "/env/data", store: "memory", adminToken: "env-token-0123456789", logFormat: "json"}},
		{"flags beat env", allFlags, allEnv, parsed{addr: "127.0.0.1:7000", data: "/flag/data", store: "", adminToken: "flag-token-0123456789", logFormat: "text"}},
		{"single dash flags", []string{"-addr", "127.0.0.1:1"}, allEnv, parsed{addr: "127.0.0.1:1", data: "/env/data", store: "memory", adminToken: "env-token-0123456789", logFormat: "json"}},
		{"empty env is unset", nil, map[string]string{"WAITROOM_ADDR": "", "WAITROOM_DATA": ""}, defaults},
		{"redis url accepted by the parser", []string{"--store", "rediss://h:6380/0"}, nil, parsed{addr: ":8080", data: "./waitroom-data", store: "rediss://h:6380/0", logFormat: "text"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stderr bytes.Buffer
			o, err := parseServe(tc.args, env(tc.env), &stderr)
			if err != nil {
				t.Fatalf("parseServe(%q): %v; stderr:\n%s", tc.args, err, stderr.String())
			}
			got := parsed{addr: o.addr, data: o.cfg.DataDir, store: o.cfg.StoreURL, adminToken: o.cfg.AdminToken, logFormat: o.logFormat}
			if got != tc.want {
				t.Errorf("parseServe(%q) with env %v:\ngot  %+v\nwant %+v", tc.args, tc.env, got, tc.want)
			}
			// Flags the case does not name keep their defaults, typed.
			if o.cfg.PushRefresh != 5*time.Second || o.cfg.JoinsPerMinute != 120 || o.cfg.MaxSessionsPerRoom != 2_000_000 || o.cfg.Room != "default" {
				t.Errorf("defaults not applied: %+v", o.cfg)
			}
		})
	}
}

func TestBadCommandLinesExitWithStatus2(t *testing.T) {
	for _, tc := range []struct {
		name    string
		args    []string
		env     map[string]string
		message string
	}{
		{"no command", nil, nil, "Usage:"},
		{"unknown command", []string{"frobnicate"}, nil, `unknown command "frobnicate"`},
		{"unknown flag", []string{"serve", "--nope"}, nil, "flag provided but not defined: -nope"},
		{"flag without value", []string{"serve", "--addr"}, nil, "flag needs an argument: -addr"},
		{"bad log format", []string{"serve", "--log-format", "xml"}, nil, `--log-format must be text or json, not "xml"`},
		{"bad log format from env", []string{"serve"}, map[string]string{"WAITROOM_LOG_FORMAT": "yaml"}, `not "yaml"`},
		{"unknown store", []string{"serve", "--store", "postgres://u:hunter2@db/x"}, nil, "--store must be empty"},
		{"stray argument", []string{"serve", "now"}, nil, `unexpected argument "now"`},
		{"metrics address without a port", []string{"serve", "--metrics-addr", "9090"}, nil, "--metrics-addr must be host:port"},
		{"metrics address from env", []string{"serve"}, map[string]string{"WAITROOM_METRICS_ADDR": "localhost"}, `not "localhost"`},
		{"version with argument", []string{"version", "--short"}, nil, "flag provided but not defined"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			err := run(context.Background(), tc.args, env(tc.env), &stdout, &stderr)
			var codeOut bytes.Buffer
			if code := exitCode(err, &codeOut); code != 2 {
				t.Errorf("exit code %d (err %v), want 2", code, err)
			}
			if !strings.Contains(stderr.String(), tc.message) {
				t.Errorf("stderr does not contain %q:\n%s", tc.message, stderr.String())
			}
			// A bad command line is its one line and where the help is, not
			// the whole help; no command at all gets the list of commands.
			if tc.args == nil {
				if !strings.Contains(stderr.String(), "Usage") {
					t.Errorf("stderr does not show the usage:\n%s", stderr.String())
				}
			} else {
				lines := strings.Split(strings.TrimSuffix(stderr.String(), "\n"), "\n")
				if len(lines) > 3 || !strings.Contains(stderr.String(), "see `waitroom ") || strings.Contains(stderr.String(), "Usage") {
					t.Errorf("stderr is %d lines, want at most 3: the error and where the help is:\n%s", len(lines), stderr.String())
				}
			}
			if strings.Contains(stderr.String(), "hunter2") {
				t.Errorf("stderr shows a password from the store URL:\n%s", stderr.String())
			}
			if stdout.Len() != 0 {
				t.Errorf("stdout = %q, want nothing on a bad command line", stdout.String())
			}
		})
	}
}

func TestServeHelpListsFlagsAndEnv(t *testing.T) {
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), []string{"serve", "-h"}, env(nil), &stdout, &stderr)
	if !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("serve -h returned %v, want flag.ErrHelp", err)
	}
	if code := exitCode(err, io.Discard); code != 0 {
		t.Errorf("serve -h exit code %d, want 0", code)
	}
	for _, want := range []string{"--addr", "WAITROOM_ADDR", "--data", "WAITROOM_DATA", "--store", "WAITROOM_STORE", "--admin-token", "WAITROOM_ADMIN_TOKEN", "--log-format", `default ":8080"`} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("serve -h does not mention %q:\n%s", want, stderr.String())
		}
	}
}

func TestHelpCommand(t *testing.T) {
	var stdout bytes.Buffer
	if err := run(context.Background(), []string{"help"}, env(nil), &stdout, io.Discard); err != nil {
		t.Fatalf("help: %v", err)
	}
	if !strings.Contains(stdout.String(), "serve") || !strings.Contains(stdout.String(), "version") {
		t.Errorf("help does not list the commands:\n%s", stdout.String())
	}
}

func TestExitCodeOfOtherErrorsIs1AndPrintsThem(t *testing.T) {
	var stderr bytes.Buffer
	if code := exitCode(errors.New("disk on fire"), &stderr); code != 1 {
		t.Errorf("exit code %d, want 1", code)
	}
	if !strings.Contains(stderr.String(), "disk on fire") {
		t.Errorf("stderr = %q, want the error", stderr.String())
	}
}

func TestServeUnreachableRedisFailsClearly(t *testing.T) {
	var stdout, stderr bytes.Buffer
	// Port 1 on loopback refuses at once.
	err := run(context.Background(), []string{"serve", "--data", t.TempDir(), "--store", "redis://admin:hunter2@127.0.0.1:1/0"}, env(nil), &stdout, &stderr)
	if err == nil {
		t.Fatal("serve with an unreachable Redis returned nil, want an error")
	}
	if code := exitCode(err, io.Discard); code != 1 {
		t.Errorf("exit code %d, want 1", code)
	}
	if !strings.Contains(err.Error(), "open Redis store") {
		t.Errorf("error %q does not say the Redis store could not be opened", err)
	}
	if strings.Contains(err.Error(), "hunter2") {
		t.Errorf("error %q shows the password", err)
	}
}

func TestServeGeneratesAdminTokenFileAndPrintsOnlyItsPath(t *testing.T) {
	data := filepath.Join(t.TempDir(), "data")
	args := []string{"--addr", "127.0.0.1:0", "--data", data, "--store", "memory"}
	s := startServe(t, args, nil)

	path := filepath.Join(data, "admin-token")
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatalf("admin token file: %v", err)
	}
	if perm := fi.Mode().Perm(); perm != 0o600 {
		t.Errorf("admin token file mode %v, want 0600", perm)
	}
	di, err := os.Stat(data)
	if err != nil {
		t.Fatalf("data folder: %v", err)
	}
	if perm := di.Mode().Perm(); perm != 0o700 {
		t.Errorf("data folder mode %v, want 0700", perm)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	token := strings.TrimSpace(string(raw))
	if len(token) != 43 { // 32 bytes, unpadded base64url
		t.Errorf("token is %d characters, want 43 (32 random bytes in base64url)", len(token))
	}
	if !strings.Contains(s.stdout.String(), "admin token written to "+path) {
		t.Errorf("stdout does not give the token's path %s:\n%s", path, s.stdout.String())
	}
	if strings.Contains(s.stdout.String()+s.stderr.String(), token) {
		t.Errorf("the token itself was printed:\nstdout:\n%s\nstderr:\n%s", s.stdout.String(), s.stderr.String())
	}

	// The token in the file is the one the server checks.
	if _, err := client.New(s.url, client.WithAdminToken(token)).Rooms(ctx(t)); err != nil {
		t.Errorf("admin call with the generated token: %v", err)
	}
	_, err = client.New(s.url, client.WithAdminToken("wrong-token-wrong-token")).Rooms(ctx(t))
	if code := waitroom.ErrorCode(err); code != waitroom.CodeUnauthorized {
		t.Errorf("admin call with a wrong token: code %q (%v), want unauthorized", code, err)
	}
	s.stop(t)

	// A restart reuses the token.
	s = startServe(t, args, nil)
	if !strings.Contains(s.stdout.String(), "admin token read from "+path) {
		t.Errorf("after a restart stdout does not say the token was read from %s:\n%s", path, s.stdout.String())
	}
	if _, err := client.New(s.url, client.WithAdminToken(token)).Rooms(ctx(t)); err != nil {
		t.Errorf("admin call with the same token after a restart: %v", err)
	}
	raw2, _ := os.ReadFile(path)
	if string(raw2) != string(raw) {
		t.Errorf("a restart rewrote the token file")
	}
}

func TestServeAdminTokenFromFlagOrEnvWritesNoFile(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		env  map[string]string
	}{
		{"flag", []string{"--admin-token", "flag-token-0123456789"}, map[string]string{"WAITROOM_ADMIN_TOKEN": "env-token-0123456789"}},
		{"env", nil, map[string]string{"WAITROOM_ADMIN_TOKEN": "env-token-0123456789"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := t.TempDir()
			args := append([]string{"--addr", "127.0.0.1:0", "--data", data, "--store", "memory"}, tc.args...)
			s := startServe(t, args, tc.env)
			want := tc.env["WAITROOM_ADMIN_TOKEN"]
			if len(tc.args) > 0 {
				want = tc.args[1]
			}
			if _, err := client.New(s.url, client.WithAdminToken(want)).Rooms(ctx(t)); err != nil {
				t.Errorf("admin call with %q: %v", want, err)
			}
			if want != tc.env["WAITROOM_ADMIN_TOKEN"] {
				_, err := client.New(s.url, client.WithAdminToken(tc.env["WAITROOM_ADMIN_TOKEN"])).Rooms(ctx(t))
				if code := waitroom.ErrorCode(err); code != waitroom.CodeUnauthorized {
					t.Errorf("the env token still works next to a flag: code %q, want unauthorized", code)
				}
			}
			if _, err := os.Stat(filepath.Join(data, "admin-token")); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("an admin-token file exists (%v), want none when the token is given", err)
			}
			if strings.Contains(s.stdout.String(), "admin token") {
				t.Errorf("stdout mentions an admin token file:\n%s", s.stdout.String())
			}
		})
	}
}

func TestServeTakesAddrFromEnvAndFlagBeatsIt(t *testing.T) {
	data := t.TempDir()
	vars := map[string]string{"WAITROOM_ADDR": "127.0.0.1:0", "WAITROOM_DATA": data, "WAITROOM_STORE": "memory", "WAITROOM_LOG_FORMAT": "json"}
	s := startServe(t, nil, vars)
	if !strings.HasPrefix(s.url, "http://127.0.0.1:") || strings.HasSuffix(s.url, ":0") {
		t.Errorf("listening on %s, want 127.0.0.1 with a real port", s.url)
	}
	if err := client.New(s.url).Healthz(ctx(t)); err != nil {
		t.Errorf("healthz: %v", err)
	}
	if !strings.Contains(s.stderr.String(), `"msg":"serving"`) {
		t.Errorf("WAITROOM_LOG_FORMAT=json did not give JSON logs:\n%s", s.stderr.String())
	}
	s.stop(t)

	// An address in the environment that cannot work is overridden by the flag.
	vars["WAITROOM_ADDR"] = "256.0.0.1:99999"
	s = startServe(t, []string{"--addr", "127.0.0.1:0"}, vars)
	if err := client.New(s.url).Healthz(ctx(t)); err != nil {
		t.Errorf("healthz with --addr beating WAITROOM_ADDR: %v", err)
	}
}

func TestServeCreatesDefaultRoomOnceAndKeepsItsConfig(t *testing.T) {
	data := t.TempDir()
	args := []string{"--addr", "127.0.0.1:0", "--data", data, "--admin-token", "test-admin-token-123"}
	s := startServe(t, args, nil)
	c := client.New(s.url, client.WithAdminToken("test-admin-token-123"))
	rooms, err := c.Rooms(ctx(t))
	if err != nil {
		t.Fatalf("Rooms: %v", err)
	}
	if len(rooms) != 1 || rooms[0].Name != waitroom.DefaultRoom || !rooms[0].RoomConfig.Equal(waitroom.DefaultConfig()) {
		t.Fatalf("rooms on first start: got %+v, want only %q with the default config", rooms, waitroom.DefaultRoom)
	}
	if _, err := os.Stat(filepath.Join(data, "waitroom.db")); err != nil {
		t.Errorf("the embedded store's file: %v", err)
	}

	cfg := waitroom.DefaultConfig()
	cfg.Capacity = 3
	cfg.Mode = waitroom.ModeManual
	if _, _, err := c.PutRoom(ctx(t), waitroom.DefaultRoom, cfg); err != nil {
		t.Fatalf("PutRoom: %v", err)
	}
	joined, err := c.Join(ctx(t), waitroom.DefaultRoom, "")
	if err != nil {
		t.Fatalf("Join: %v", err)
	}
	s.stop(t)

	s = startServe(t, args, nil)
	c = client.New(s.url, client.WithAdminToken("test-admin-token-123"))
	rooms, err = c.Rooms(ctx(t))
	if err != nil {
		t.Fatalf("Rooms after restart: %v", err)
	}
	if len(rooms) != 1 || !rooms[0].RoomConfig.Equal(cfg) {
		t.Errorf("after a restart: got %+v, want only %q with capacity 3 and manual mode", rooms, waitroom.DefaultRoom)
	}
	got, err := c.Session(ctx(t), waitroom.DefaultRoom, joined.ID)
	if err != nil || got.Ticket != joined.Ticket || got.Status != waitroom.StatusWaiting {
		t.Errorf("session after restart: got %+v, %v; want ticket %d waiting", got, err, joined.Ticket)
	}
}

func TestServeMemoryStoreWarnsItLosesData(t *testing.T) {
	s := startServe(t, []string{"--addr", "127.0.0.1:0", "--data", t.TempDir(), "--store", "memory"}, nil)
	if !strings.Contains(s.stderr.String(), "lost when the process stops") {
		t.Errorf("the memory store's warning is missing:\n%s", s.stderr.String())
	}
	st, err := client.New(s.url).Room(ctx(t), waitroom.DefaultRoom)
	if err != nil || st.Capacity != waitroom.DefaultConfig().Capacity {
		t.Errorf("default room on the memory store: got %+v, %v", st, err)
	}
}

func TestServeSecondServerOnSameDataFails(t *testing.T) {
	data := t.TempDir()
	startServe(t, []string{"--addr", "127.0.0.1:0", "--data", data}, nil)
	c, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var stdout, stderr bytes.Buffer
	err := run(c, []string{"serve", "--addr", "127.0.0.1:0", "--data", data}, env(nil), &stdout, &stderr)
	if err == nil {
		t.Fatal("a second server on the same data folder returned nil, want an error")
	}
	if strings.Contains(stdout.String(), "listening on") {
		t.Errorf("the second server listened:\n%s", stdout.String())
	}
}

func TestServeRefusesEmptyTokenFile(t *testing.T) {
	data := t.TempDir()
	if err := os.WriteFile(filepath.Join(data, "admin-token"), []byte("\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), []string{"serve", "--addr", "127.0.0.1:0", "--data", data, "--store", "memory"}, env(nil), &stdout, &stderr)
	if err == nil || !strings.Contains(err.Error(), "is empty") {
		t.Errorf("serve with an empty token file: got %v, want an error saying it is empty", err)
	}
}
