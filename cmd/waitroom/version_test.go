package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
)

func TestVersionPrintsVersionAndGo(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if err := run(context.Background(), []string{"version"}, env(nil), &stdout, &stderr); err != nil {
		t.Fatalf("version: %v; stderr:\n%s", err, stderr.String())
	}
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	if len(lines) < 2 {
		t.Fatalf("version printed %d lines, want at least 2:\n%s", len(lines), stdout.String())
	}
	if !strings.HasPrefix(lines[0], "waitroom ") || len(lines[0]) <= len("waitroom ") {
		t.Errorf("first line %q, want \"waitroom <version>\"", lines[0])
	}
	if !strings.Contains(lines[1], runtime.Version()) {
		t.Errorf("second line %q does not name the Go version %s", lines[1], runtime.Version())
	}
	for _, l := range lines {
		if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(v) == "" {
			t.Errorf("field %q printed empty: unknown fields are left out", k)
		}
	}
	if stderr.Len() != 0 {
		t.Errorf("stderr = %q, want nothing", stderr.String())
	}
}

func TestVersionUsesLinkTimeStamps(t *testing.T) {
	oldV, oldR, oldT := version, revision, buildTime
	version, revision, buildTime = "v9.8.7", "0123456789abcdef0123456789abcdef01234567+dirty", "2026-11-28T08:00:00Z"
	defer func() { version, revision, buildTime = oldV, oldR, oldT }()
	var stdout bytes.Buffer
	if err := run(context.Background(), []string{"version"}, env(nil), &stdout, &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	out := stdout.String()
	if !strings.HasPrefix(out, "waitroom v9.8.7\n") {
		t.Errorf("version output %q, want it to start with the link-time version", out)
	}
	// go test builds without vcs stamping, so the link-time revision shows.
	if !strings.Contains(out, "revision:  0123456789abcdef0123456789abcdef01234567+dirty\n") {
		t.Errorf("version output %q lacks the link-time revision", out)
	}
	if !strings.Contains(out, "built:     2026-11-28T08:00:00Z\n") {
		t.Errorf("version output %q lacks the link-time build time", out)
	}
}

func TestVersionJSON(t *testing.T) {
	oldV, oldT := version, buildTime
	version, buildTime = "v1.2.3", "2026-11-28T08:00:00Z"
	defer func() { version, buildTime = oldV, oldT }()
	var stdout bytes.Buffer
	if err := run(context.Background(), []string{"version", "--json"}, env(nil), &stdout, &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(stdout.Bytes(), &got); err != nil {
		t.Fatalf("version --json printed %q: %v", stdout.String(), err)
	}
	if got["version"] != "v1.2.3" || got["go"] != runtime.Version() || got["build_time"] != "2026-11-28T08:00:00Z" ||
		got["os"] != runtime.GOOS || got["arch"] != runtime.GOARCH {
		t.Errorf("version --json = %v", got)
	}
	for k, v := range got {
		if v == "" {
			t.Errorf("version --json has an empty %q: unknown fields are left out", k)
		}
	}
}

func TestResolveVersion(t *testing.T) {
	vcs := func(rev, tm, modified string) []debug.BuildSetting {
		return []debug.BuildSetting{{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: rev}, {Key: "vcs.time", Value: tm}, {Key: "vcs.modified", Value: modified}}
	}
	const rev = "c1de78f1a2b3c4d5e6f708192a3b4c5d6e7f8091"
	for _, tc := range []struct {
		name          string
		bi            *debug.BuildInfo
		ldV, ldR, ldT string
		want          versionInfo
	}{{
		name: "build in a checkout with changes",
		bi:   &debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20261128074400-c1de78f1a2b3+dirty"}, Settings: vcs(rev, "2026-11-28T07:44:00Z", "true")},
		want: versionInfo{Version: "v0.0.0-20261128074400-c1de78f1a2b3+dirty", Revision: rev, Modified: true, CommitTime: "2026-11-28T07:44:00Z"},
	}, {
		name: "release build: ldflags version and build time, vcs revision wins over ldflags",
		bi:   &debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20261128074400-c1de78f1a2b3"}, Settings: vcs(rev, "2026-11-28T07:44:00Z", "false")},
		ldV:  "v0.1.0", ldR: "ffffffffffffffffffffffffffffffffffffffff", ldT: "2026-11-28T09:00:00Z",
		want: versionInfo{Version: "v0.1.0", Revision: rev, CommitTime: "2026-11-28T07:44:00Z", BuildTime: "2026-11-28T09:00:00Z"},
	}, {
		name: "go install of an untagged commit: the pseudo-version names it",
		bi:   &debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20261128074400-c1de78f1a2b3"}},
		want: versionInfo{Version: "v0.0.0-20261128074400-c1de78f1a2b3", Revision: "c1de78f1a2b3", CommitTime: "2026-11-28T07:44:00Z"},
	}, {
		name: "go install of a pre-release pseudo-version",
		bi:   &debug.BuildInfo{Main: debug.Module{Version: "v1.2.4-0.20261128074400-c1de78f1a2b3"}},
		want: versionInfo{Version: "v1.2.4-0.20261128074400-c1de78f1a2b3", Revision: "c1de78f1a2b3", CommitTime: "2026-11-28T07:44:00Z"},
	}, {
		name: "go install of a tag: only the version is known",
		bi:   &debug.BuildInfo{Main: debug.Module{Version: "v1.2.3"}},
		want: versionInfo{Version: "v1.2.3"},
	}, {
		name: "no vcs info, ldflags revision",
		bi:   &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}},
		ldR:  rev + "+dirty",
		want: versionInfo{Version: "(devel)", Revision: rev, Modified: true},
	}, {
		name: "no build info at all",
		want: versionInfo{Version: "(devel)"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			got := resolveVersion(tc.bi, tc.ldV, tc.ldR, tc.ldT)
			tc.want.Go, tc.want.OS, tc.want.Arch = runtime.Version(), runtime.GOOS, runtime.GOARCH
			if got != tc.want {
				t.Errorf("resolveVersion = %+v\nwant            %+v", got, tc.want)
			}
		})
	}
}

// TestVersionOfBuiltBinaryNamesItsRevision builds the command as a user
// would in a git checkout (-buildvcs=true, whatever GOFLAGS says) and checks
// that `version` names the checkout's commit, with +dirty exactly when git
// sees uncommitted changes. Go records no VCS information in a git worktree
// (.git is a file there) or outside a checkout; make release's -ldflags
// stamps cover those (internal/packaging checks them).
func TestVersionOfBuiltBinaryNamesItsRevision(t *testing.T) {
	git, err := exec.LookPath("git")
	if err != nil {
		t.Skip("git is not on PATH")
	}
	head, err := exec.Command(git, "rev-parse", "HEAD").Output()
	if err != nil {
		t.Skipf("not a git checkout: %v", err)
	}
	bin := filepath.Join(t.TempDir(), "waitroom")
	if out, err := exec.Command(goTool(t), "build", "-buildvcs=true", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	if out, _ := exec.Command(goTool(t), "version", "-m", bin).Output(); !bytes.Contains(out, []byte("vcs.revision=")) {
		t.Skip("go recorded no VCS information (a git worktree, whose .git is a file?); internal/packaging checks the -ldflags stamps")
	}
	status, err := exec.Command(git, "status", "--porcelain").Output()
	if err != nil {
		t.Fatalf("git status: %v", err)
	}
	out, err := exec.Command(bin, "version").CombinedOutput()
	if err != nil {
		t.Fatalf("waitroom version: %v\n%s", err, out)
	}
	want := "revision:  " + strings.TrimSpace(string(head))
	if len(bytes.TrimSpace(status)) > 0 {
		want += "+dirty"
	}
	if !strings.Contains(string(out), want+"\n") {
		t.Errorf("version of a build in this checkout:\n%s\nwant a line %q", out, want)
	}
	if !strings.Contains(string(out), "committed: ") {
		t.Errorf("version of a build in this checkout lacks the commit time:\n%s", out)
	}
}
