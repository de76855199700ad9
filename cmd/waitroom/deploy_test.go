package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// The deployment files at the repository root and in deploy/ are checked
// against the real command line: every serve command they hold goes
// through parseServe (the flag table serve itself uses), with the
// environment they give it, so a renamed flag or a bad value fails here.

const repoRoot = "../.."

// containerfile is what the tests read of the Containerfile: each
// instruction's arguments, continuation lines joined.
type containerfile map[string][]string

func readContainerfile(t *testing.T) containerfile {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(repoRoot, "Containerfile"))
	if err != nil {
		t.Fatal(err)
	}
	cf := containerfile{}
	var cur string
	sc := bufio.NewScanner(bytes.NewReader(raw))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if cur == "" && (line == "" || strings.HasPrefix(line, "#")) {
			continue
		}
		cont := strings.HasSuffix(line, "\\")
		cur += strings.TrimSuffix(line, "\\") + " "
		if cont {
			continue
		}
		instr, args, _ := strings.Cut(strings.TrimSpace(cur), " ")
		cf[strings.ToUpper(instr)] = append(cf[strings.ToUpper(instr)], strings.TrimSpace(args))
		cur = ""
	}
	return cf
}

// one returns the single instance of instr.
func (cf containerfile) one(t *testing.T, instr string) string {
	t.Helper()
	if len(cf[instr]) != 1 {
		t.Fatalf("Containerfile has %d %s instructions, want 1", len(cf[instr]), instr)
	}
	return cf[instr][0]
}

// exec parses an exec-form (JSON array) argument.
func execForm(t *testing.T, what, s string) []string {
	t.Helper()
	var v []string
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("%s %s is not in exec form (a JSON array: no shell in the image): %v", what, s, err)
	}
	return v
}

// env returns the image's ENV settings.
func (cf containerfile) env(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, e := range cf["ENV"] {
		for _, kv := range strings.Fields(e) {
			k, v, ok := strings.Cut(kv, "=")
			if !ok {
				t.Fatalf("ENV %q: want KEY=value pairs", e)
			}
			out[k] = v
		}
	}
	return out
}

// mapEnv layers environments: later maps win.
func mapEnv(layers ...map[string]string) func(string) string {
	return func(k string) string {
		v := ""
		for _, l := range layers {
			if x, ok := l[k]; ok {
				v = x
			}
		}
		return v
	}
}

func TestContainerfileMatchesTheCommand(t *testing.T) {
	cf := readContainerfile(t)
	if got := cf.one(t, "FROM"); got != "scratch" {
		t.Errorf("FROM %s, want scratch (one static binary, nothing else)", got)
	}
	user := cf.one(t, "USER")
	uid, gid, _ := strings.Cut(user, ":")
	if n, err := strconv.Atoi(uid); err != nil || n == 0 {
		t.Errorf("USER %s, want a numeric non-root user (no passwd lookup needed)", user)
	}
	if n, err := strconv.Atoi(gid); err != nil || n == 0 {
		t.Errorf("USER %s, want a numeric non-root group", user)
	}
	if got := execForm(t, "ENTRYPOINT", cf.one(t, "ENTRYPOINT")); !slices.Equal(got, []string{"/waitroom"}) {
		t.Errorf("ENTRYPOINT %v, want [/waitroom]", got)
	}
	cmd := execForm(t, "CMD", cf.one(t, "CMD"))
	if len(cmd) == 0 || cmd[0] != "serve" {
		t.Fatalf("CMD %v, want serve and its flags", cmd)
	}
	env := cf.env(t)
	o, err := parseServe(cmd[1:], mapEnv(env), io.Discard)
	if err != nil {
		t.Fatalf("the image's serve command %v with ENV %v: %v", cmd, env, err)
	}
	volume := execForm(t, "VOLUME", cf.one(t, "VOLUME"))
	if !slices.Equal(volume, []string{o.cfg.DataDir}) {
		t.Errorf("VOLUME %v, want serve's data folder %q", volume, o.cfg.DataDir)
	}
	_, port, err := net.SplitHostPort(o.addr)
	if err != nil {
		t.Fatalf("serve's address %q: %v", o.addr, err)
	}
	if got := cf.one(t, "EXPOSE"); got != port && got != port+"/tcp" {
		t.Errorf("EXPOSE %s, want serve's port %s", got, port)
	}
	// HEALTHCHECK [options] CMD [...]: the healthcheck's default URL follows
	// WAITROOM_ADDR, so it must find serve's port.
	hc := cf.one(t, "HEALTHCHECK")
	i := strings.Index(hc, "CMD ")
	if i < 0 {
		t.Fatalf("HEALTHCHECK %s has no CMD", hc)
	}
	check := execForm(t, "HEALTHCHECK CMD", hc[i+len("CMD "):])
	if len(check) < 2 || check[0] != "/waitroom" || check[1] != "healthcheck" {
		t.Fatalf("HEALTHCHECK CMD %v, want /waitroom healthcheck", check)
	}
	if got, want := defaultHealthURL(env["WAITROOM_ADDR"]), "http://127.0.0.1:"+port+"/readyz"; len(check) == 2 && got != want {
		t.Errorf("the health check would GET %s, want %s", got, want)
	}
	if !strings.Contains(strings.Join(cf["COPY"], "\n"), "/etc/ssl/certs/ca-certificates.crt") {
		t.Errorf("the image has no CA certificates (webhooks to https endpoints need them)")
	}
}

// composeFile is the part of compose.yaml this repository uses; a strict
// decoding (unknown fields refused) catches a misspelt key.
type composeFile struct {
	Name     string                    `json:"name"`
	Services map[string]composeService `json:"services"`
	Volumes  map[string]any            `json:"volumes"`
}

type composeService struct {
	Image       string            `json:"image"`
	Command     []string          `json:"command"`
	Environment map[string]string `json:"environment"`
	Ports       []string          `json:"ports"`
	Volumes     []string          `json:"volumes"`
	DependsOn   map[string]struct {
		Condition string `json:"condition"`
	} `json:"depends_on"`
	Healthcheck struct {
		Test        []string `json:"test"`
		Interval    string   `json:"interval"`
		Timeout     string   `json:"timeout"`
		StartPeriod string   `json:"start_period"`
		Retries     int      `json:"retries"`
	} `json:"healthcheck"`
	Restart string `json:"restart"`
}

// interpolationRE matches compose's ${VAR}, ${VAR:?message}, ${VAR:-default}.
var interpolationRE = regexp.MustCompile(`\$\{([A-Z_][A-Z0-9_]*)(?::?[-?][^}]*)?\}`)

func TestComposeRunsTwoServersOnOneRedis(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(repoRoot, "compose.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var c composeFile
	if err := yaml.UnmarshalStrict(raw, &c); err != nil {
		t.Fatalf("compose.yaml: %v", err)
	}
	redis, ok := c.Services["redis"]
	if !ok {
		t.Fatal("compose.yaml has no redis service")
	}
	redisArgs := strings.Join(redis.Command, " ")
	for _, want := range []string{"redis-server", "--appendonly yes", "--maxmemory-policy noeviction"} {
		if !strings.Contains(redisArgs, want) {
			t.Errorf("redis command %q lacks %q", redisArgs, want)
		}
	}
	imageEnv := readContainerfile(t).env(t)
	var servers []string
	var keyDirs, stores, tokens []string
	for name, s := range c.Services {
		if name == "redis" {
			continue
		}
		servers = append(servers, name)
		if s.Image != "localhost/waitroom:latest" {
			t.Errorf("%s: image %q, want make image's localhost/waitroom:latest", name, s.Image)
		}
		if len(s.Command) == 0 || s.Command[0] != "serve" {
			t.Fatalf("%s: command %v, want serve", name, s.Command)
		}
		// Compose substitutes ${…} from .env; any value will do here.
		env := map[string]string{}
		for k, v := range s.Environment {
			env[k] = interpolationRE.ReplaceAllString(v, "token-from-dot-env-0123456789abcdef")
		}
		o, err := parseServe(s.Command[1:], mapEnv(imageEnv, env), io.Discard)
		if err != nil {
			t.Fatalf("%s: serve %v: %v", name, s.Command[1:], err)
		}
		u, err := url.Parse(o.cfg.StoreURL)
		if err != nil || u.Scheme != "redis" || u.Hostname() != "redis" {
			t.Errorf("%s: store %q, want redis://redis:…", name, o.cfg.StoreURL)
		}
		if o.cfg.AdminToken == "" {
			t.Errorf("%s: no admin token: each would make its own", name)
		}
		stores, tokens = append(stores, o.cfg.StoreURL), append(tokens, s.Environment["WAITROOM_ADMIN_TOKEN"])
		keys := cmpOr(o.cfg.PassKeysDir, filepath.Join(o.cfg.DataDir, "keys"))
		keyDirs = append(keyDirs, keys)
		shared := false
		for _, v := range s.Volumes {
			vol, mount, _ := strings.Cut(v, ":")
			if mount == keys {
				shared = true
				if _, ok := c.Volumes[vol]; !ok {
					t.Errorf("%s: volume %q is not declared", name, vol)
				}
			}
		}
		if !shared {
			t.Errorf("%s: no shared volume on the pass keys folder %s", name, keys)
		}
		_, port, _ := net.SplitHostPort(o.addr)
		for _, p := range s.Ports {
			if !strings.HasSuffix(p, ":"+port) {
				t.Errorf("%s: port %q does not reach serve's port %s", name, p, port)
			}
		}
		if !slices.Equal(s.Healthcheck.Test, []string{"CMD", "/waitroom", "healthcheck"}) {
			t.Errorf("%s: healthcheck %v, want [CMD /waitroom healthcheck]", name, s.Healthcheck.Test)
		}
		if s.DependsOn["redis"].Condition != "service_healthy" {
			t.Errorf("%s: does not wait for a healthy redis", name)
		}
	}
	if len(servers) != 2 {
		t.Fatalf("compose.yaml has waitroom services %v, want two", servers)
	}
	for _, list := range [][]string{stores, tokens, keyDirs} {
		if list[0] != list[1] {
			t.Errorf("the two servers differ: %q", list)
		}
	}
	// The keys are made once: one server starts after the other is healthy.
	a, b := c.Services[servers[0]], c.Services[servers[1]]
	if a.DependsOn[servers[1]].Condition != "service_healthy" && b.DependsOn[servers[0]].Condition != "service_healthy" {
		t.Errorf("both servers start at once and may each make their own pass keys")
	}
	// Where a compose implementation is installed, it must accept the file.
	for _, tool := range [][]string{{"docker", "compose"}, {"podman-compose"}, {"docker-compose"}} {
		p, err := exec.LookPath(tool[0])
		if err != nil {
			continue
		}
		if exec.Command(p, append(tool[1:], "version")...).Run() != nil {
			continue // a docker CLI without the compose plugin
		}
		args := append(tool[1:], "-f", filepath.Join(repoRoot, "compose.yaml"), "config")
		cmd := exec.Command(p, args...)
		cmd.Env = append(os.Environ(), "WAITROOM_ADMIN_TOKEN=compose-config-test-token")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Errorf("%s config: %v\n%s", strings.Join(tool, " "), err, out)
		}
	}
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// unitDirectives reads a systemd unit's [Service] directives (a key may repeat).
func unitDirectives(t *testing.T, raw []byte) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	section := ""
	for _, line := range strings.Split(string(raw), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if strings.HasPrefix(line, "[") {
			section = line
			continue
		}
		if section != "[Service]" {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			t.Fatalf("unit line %q is not key=value", line)
		}
		out[k] = append(out[k], v)
	}
	return out
}

func TestSystemdUnit(t *testing.T) {
	path := filepath.Join(repoRoot, "deploy", "waitroom.service")
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	d := unitDirectives(t, raw)
	for k, want := range map[string]string{
		"DynamicUser": "yes", "StateDirectory": "waitroom", "ProtectSystem": "strict", "NoNewPrivileges": "yes",
		"ProtectHome": "yes", "PrivateTmp": "yes", "CapabilityBoundingSet": "", "ExecReload": "/bin/kill -HUP $MAINPID",
	} {
		if !slices.Contains(d[k], want) {
			t.Errorf("%s=%v, want %q", k, d[k], want)
		}
	}
	for _, k := range []string{"RestrictAddressFamilies", "SystemCallFilter", "EnvironmentFile"} {
		if len(d[k]) == 0 {
			t.Errorf("the unit sets no %s", k)
		}
	}
	if !slices.Contains(d["SystemCallFilter"], "@system-service") {
		t.Errorf("SystemCallFilter=%v, want @system-service", d["SystemCallFilter"])
	}
	// ExecStart's serve, with the unit's Environment= (%S is /var/lib for a
	// system service), is a command line serve accepts, and its data folder
	// is the StateDirectory.
	env := map[string]string{}
	for _, e := range d["Environment"] {
		k, v, _ := strings.Cut(e, "=")
		env[k] = strings.ReplaceAll(v, "%S", "/var/lib")
	}
	if len(d["ExecStart"]) != 1 {
		t.Fatalf("ExecStart=%v, want one", d["ExecStart"])
	}
	exec0 := strings.Fields(d["ExecStart"][0])
	if len(exec0) < 2 || exec0[1] != "serve" {
		t.Fatalf("ExecStart=%s, want <binary> serve …", d["ExecStart"][0])
	}
	o, err := parseServe(exec0[2:], mapEnv(env), io.Discard)
	if err != nil {
		t.Fatalf("ExecStart %v with Environment %v: %v", exec0, env, err)
	}
	if o.cfg.DataDir != "/var/lib/waitroom" {
		t.Errorf("the data folder is %q, want the StateDirectory /var/lib/waitroom", o.cfg.DataDir)
	}

	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		msg := "systemd-analyze is not installed (Debian package systemd; `make test` installs it)"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	// verify needs ExecStart's binary to exist: this test's own binary
	// stands in for it.
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	copyPath := filepath.Join(t.TempDir(), "waitroom.service")
	unit := strings.Replace(string(raw), "ExecStart="+exec0[0], "ExecStart="+self, 1)
	if err := os.WriteFile(copyPath, []byte(unit), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(analyze, "verify", copyPath).CombinedOutput()
	// verify exits 0 on an unknown key or a bad value, only saying so:
	// anything it says about the unit is a failure.
	if err != nil || bytes.Contains(out, []byte("waitroom.service")) {
		t.Errorf("systemd-analyze verify: %v\n%s", err, out)
	}
	// The exposure score (0 safest, 10 unprotected), where this systemd can
	// rate a unit file offline (252 and later).
	out, err = exec.Command(analyze, "security", "--offline=true", copyPath).CombinedOutput()
	if err != nil {
		t.Logf("systemd-analyze security --offline (not in this systemd?): %v", err)
		return
	}
	m := regexp.MustCompile(`Overall exposure level for waitroom.service: ([0-9.]+)`).FindSubmatch(out)
	if m == nil {
		t.Fatalf("systemd-analyze security printed no exposure level:\n%s", out)
	}
	score, _ := strconv.ParseFloat(string(m[1]), 64)
	t.Logf("systemd-analyze security: exposure %.1f", score)
	if score > 2.0 {
		t.Errorf("exposure level %.1f, want at most 2.0 (the unit as written scores 1.2):\n%s", score, out)
	}
}
