package packaging

import (
	"archive/tar"
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"debug/buildinfo"
	"debug/elf"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
)

const repoRoot = "../.."

// need finds a command, or skips the test naming the Debian package that
// provides it; under CI=true a missing command fails the test instead.
func need(t *testing.T, name, debianPackage string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		msg := fmt.Sprintf("%s is not installed (Debian package %s; `make test` installs it)", name, debianPackage)
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return p
}

// make runs a make target in the repository with vars, within a generous
// hang guard, and returns its output.
func runMake(t *testing.T, target string, vars ...string) string {
	t.Helper()
	makeCmd := need(t, "make", "make")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	started := time.Now()
	cmd := exec.CommandContext(ctx, makeCmd, append([]string{"-C", repoRoot, target}, vars...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("make %s %v: %v\n%s", target, vars, err, out)
	}
	t.Logf("make %s took %s", target, time.Since(started).Round(time.Second))
	return string(out)
}

// checkout is what make's stamps should say about the repository: the
// commit, +dirty when git sees changes (as the Makefile computes them).
func checkout(t *testing.T) (revision string, ok bool) {
	t.Helper()
	git, err := exec.LookPath("git")
	if err != nil {
		return "", false
	}
	head, err := exec.Command(git, "-C", repoRoot, "rev-parse", "HEAD").Output()
	if err != nil {
		return "", false
	}
	status, err := exec.Command(git, "-C", repoRoot, "status", "--porcelain").Output()
	if err != nil {
		t.Fatalf("git status: %v", err)
	}
	revision = strings.TrimSpace(string(head))
	if len(bytes.TrimSpace(status)) > 0 {
		revision += "+dirty"
	}
	return revision, true
}

// checkVersion runs bin's version and checks it names the checkout's
// revision and a build time.
func checkVersion(t *testing.T, bin string) {
	t.Helper()
	out, err := exec.Command(bin, "version").CombinedOutput()
	if err != nil {
		t.Fatalf("%s version: %v\n%s", bin, err, out)
	}
	t.Logf("%s version:\n%s", filepath.Base(bin), out)
	if rev, ok := checkout(t); ok && !strings.Contains(string(out), "revision:  "+rev+"\n") {
		t.Errorf("version does not name the revision %s:\n%s", rev, out)
	}
	if !regexp.MustCompile(`(?m)^built: +\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$`).Match(out) {
		t.Errorf("version names no build time:\n%s", out)
	}
	if !regexp.MustCompile(`^waitroom v\d+\.\d+\.\d+`).Match(out) {
		t.Errorf("version names no semantic version (a tag or a pseudo-version):\n%s", out)
	}
}

// checkStatic checks a linux binary needs no dynamic loader and was built
// as make release promises.
func checkStatic(t *testing.T, bin, goos, goarch string) {
	t.Helper()
	info, err := buildinfo.ReadFile(bin)
	if err != nil {
		t.Fatalf("%s: %v", bin, err)
	}
	settings := map[string]string{}
	for _, s := range info.Settings {
		settings[s.Key] = s.Value
	}
	for k, want := range map[string]string{"GOOS": goos, "GOARCH": goarch, "CGO_ENABLED": "0", "-trimpath": "true"} {
		if settings[k] != want {
			t.Errorf("%s: build setting %s=%q, want %q", bin, k, settings[k], want)
		}
	}
	if goos != "linux" {
		return
	}
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatalf("%s: %v", bin, err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP || p.Type == elf.PT_DYNAMIC {
			t.Errorf("%s is dynamically linked (it has a %v program header)", bin, p.Type)
		}
	}
}

// TestRelease runs make release for this machine's platform (the other
// three cross-build the same way; each takes minutes of compiling on a
// small machine, so the test builds one) and checks the binary and
// SHA256SUMS.
func TestRelease(t *testing.T) {
	need(t, "sha256sum", "coreutils")
	dist := t.TempDir()
	platform := runtime.GOOS + "/" + runtime.GOARCH
	runMake(t, "release", "DIST="+dist, "PLATFORMS="+platform)
	name := "waitroom-" + runtime.GOOS + "-" + runtime.GOARCH
	bin := filepath.Join(dist, name)
	checkStatic(t, bin, runtime.GOOS, runtime.GOARCH)
	checkVersion(t, bin)

	sums, err := os.ReadFile(filepath.Join(dist, "SHA256SUMS"))
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(raw)
	if want := hex.EncodeToString(sum[:]) + "  " + name + "\n"; string(sums) != want {
		t.Errorf("SHA256SUMS = %q, want %q (sha256sum's format)", sums, want)
	}
}

// imageConfig is what podman image inspect says (podman puts the health
// check beside the config, docker inside it).
type imageConfig struct {
	Architecture, Os string
	Config           struct {
		User         string
		Entrypoint   []string
		Cmd          []string
		Env          []string
		ExposedPorts map[string]any
		Volumes      map[string]any
		Labels       map[string]string
		Healthcheck  *healthcheck
	}
	Healthcheck *healthcheck
}

type healthcheck struct {
	Test     []string
	Interval time.Duration
}

// TestImage builds the container image with make image into a throwaway
// podman store (vfs, which needs no overlay support from the kernel), checks
// what inspect says, and runs the binary from inside the image on this
// machine: containers cannot run here, but the image's binary can.
func TestImage(t *testing.T) {
	podman := need(t, "podman", "podman")
	dir := t.TempDir()
	flags := []string{"--root", filepath.Join(dir, "store"), "--runroot", filepath.Join(dir, "run"), "--storage-driver", "vfs"}
	const image = "localhost/waitroom-test:latest"
	runMake(t, "image", "DIST="+filepath.Join(dir, "dist"), "IMAGE="+image, "CONTAINER="+podman, "CONTAINER_FLAGS="+strings.Join(flags, " "))
	podmanCmd := func(args ...string) []byte {
		t.Helper()
		out, err := exec.Command(podman, append(slices.Clone(flags), args...)...).Output()
		if err != nil {
			var stderr []byte
			if ee, ok := err.(*exec.ExitError); ok {
				stderr = ee.Stderr
			}
			t.Fatalf("podman %v: %v\n%s", args, err, stderr)
		}
		return out
	}
	t.Cleanup(func() { exec.Command(podman, append(slices.Clone(flags), "rmi", "--all", "--force")...).Run() })

	var inspected []imageConfig
	if err := json.Unmarshal(podmanCmd("image", "inspect", image), &inspected); err != nil || len(inspected) != 1 {
		t.Fatalf("podman image inspect: %v (%d images)", err, len(inspected))
	}
	ic := inspected[0]
	if ic.Os != "linux" || ic.Architecture != runtime.GOARCH {
		t.Errorf("image platform %s/%s, want linux/%s", ic.Os, ic.Architecture, runtime.GOARCH)
	}
	if ic.Config.User != "65532:65532" {
		t.Errorf("image user %q, want 65532:65532 (non-root)", ic.Config.User)
	}
	if !slices.Equal(ic.Config.Entrypoint, []string{"/waitroom"}) {
		t.Errorf("entrypoint %v, want [/waitroom]", ic.Config.Entrypoint)
	}
	if len(ic.Config.Cmd) == 0 || ic.Config.Cmd[0] != "serve" {
		t.Errorf("cmd %v, want serve", ic.Config.Cmd)
	}
	if _, ok := ic.Config.ExposedPorts["8080/tcp"]; !ok || len(ic.Config.ExposedPorts) != 1 {
		t.Errorf("exposed ports %v, want 8080/tcp", ic.Config.ExposedPorts)
	}
	if _, ok := ic.Config.Volumes["/data"]; !ok || len(ic.Config.Volumes) != 1 {
		t.Errorf("volumes %v, want /data", ic.Config.Volumes)
	}
	for _, want := range []string{"WAITROOM_DATA=/data", "WAITROOM_ADDR=:8080"} {
		if !slices.Contains(ic.Config.Env, want) {
			t.Errorf("env %v lacks %s", ic.Config.Env, want)
		}
	}
	if ic.Config.Labels["org.opencontainers.image.licenses"] != "Apache-2.0" {
		t.Errorf("labels %v: no licence", ic.Config.Labels)
	}
	hc := ic.Healthcheck
	if hc == nil {
		hc = ic.Config.Healthcheck
	}
	if hc == nil || !slices.Equal(hc.Test, []string{"CMD", "/waitroom", "healthcheck"}) {
		t.Errorf("health check %+v, want CMD /waitroom healthcheck (an OCI-format build drops it: podman needs --format docker)", hc)
	}

	// The image's files, from podman save's docker archive.
	archive := filepath.Join(dir, "image.tar")
	podmanCmd("save", "--format", "docker-archive", "-o", archive, image)
	files := imageFiles(t, archive)
	bin := files["waitroom"]
	if bin == nil || bin.hdr.Mode&0o111 == 0 {
		t.Fatalf("the image has no executable /waitroom (files: %v)", keys(files))
	}
	for _, name := range []string{"etc/ssl/certs/ca-certificates.crt", "etc/passwd", "etc/group"} {
		if f := files[name]; f == nil || len(f.data) == 0 {
			t.Errorf("the image lacks /%s", name)
		}
	}
	if !bytes.Contains(files["etc/passwd"].data, []byte(":65532:65532:")) {
		t.Errorf("/etc/passwd names no user 65532")
	}
	for _, name := range []string{"data", "data/keys"} {
		f := files[name]
		if f == nil || f.hdr.Typeflag != tar.TypeDir || f.hdr.Uid != 65532 || f.hdr.Gid != 65532 || f.hdr.Mode&0o777 != 0o700 {
			t.Errorf("/%s is not a directory of 65532:65532 with mode 0700 (a new volume would not be writable): %+v", name, f.hdr)
		}
	}

	extracted := filepath.Join(dir, "waitroom")
	if err := os.WriteFile(extracted, bin.data, 0o755); err != nil {
		t.Fatal(err)
	}
	checkStatic(t, extracted, "linux", runtime.GOARCH)
	checkVersion(t, extracted)
	if runtime.GOOS == "linux" {
		serveAndHealthcheck(t, extracted, ic.Config.Cmd[1:])
	}
}

// serveAndHealthcheck runs the image's binary with the image's command and
// environment (the data folder moved to a temporary one, the port to a free
// one) and checks that its healthcheck, as the image's HEALTHCHECK runs it,
// passes once it listens and fails once it is gone.
func serveAndHealthcheck(t *testing.T, bin string, args []string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	env := []string{"WAITROOM_DATA=" + t.TempDir(), "WAITROOM_ADDR=" + addr, "PATH=" + os.Getenv("PATH")}
	srv := exec.Command(bin, append([]string{"serve"}, args...)...)
	srv.Env = env
	var out bytes.Buffer
	srv.Stdout, srv.Stderr = &out, &out
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { srv.Wait(); close(exited) }()
	defer func() { srv.Process.Kill(); <-exited }()

	check := func() ([]byte, error) {
		c := exec.Command(bin, "healthcheck")
		c.Env = env
		return c.CombinedOutput()
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		hc, err := check()
		if err == nil {
			t.Logf("healthcheck: %s", bytes.TrimSpace(hc))
			break
		}
		select {
		case <-exited:
			t.Fatalf("serve exited; output:\n%s", out.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("healthcheck still failing after 60s: %s\nserve output:\n%s", hc, out.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	srv.Process.Kill()
	<-exited
	if hc, err := check(); err == nil {
		t.Errorf("healthcheck passed with the server gone: %s", hc)
	}
}

// file is one file of an image, as its last layer leaves it.
type file struct {
	hdr  *tar.Header
	data []byte
}

func keys(m map[string]*file) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// imageFiles reads a docker-archive: the manifest names the layers in
// order, each a tar whose entries overlay the earlier ones.
func imageFiles(t *testing.T, archive string) map[string]*file {
	t.Helper()
	outer := readTar(t, archive)
	var manifest []struct{ Layers []string }
	if err := json.Unmarshal(outer["manifest.json"].data, &manifest); err != nil || len(manifest) != 1 {
		t.Fatalf("manifest.json: %v", err)
	}
	files := map[string]*file{}
	for _, layer := range manifest[0].Layers {
		l := outer[path.Clean(layer)]
		if l == nil {
			t.Fatalf("layer %s missing from the archive", layer)
		}
		if l.hdr.Typeflag == tar.TypeSymlink {
			l = outer[path.Join(path.Dir(layer), l.hdr.Linkname)]
		}
		tr := tar.NewReader(bytes.NewReader(l.data))
		for {
			h, err := tr.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("layer %s: %v", layer, err)
			}
			data, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			files[strings.TrimSuffix(path.Clean(strings.TrimPrefix(h.Name, "./")), "/")] = &file{hdr: h, data: data}
		}
	}
	return files
}

func readTar(t *testing.T, name string) map[string]*file {
	t.Helper()
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string]*file{}
	tr := tar.NewReader(bufio.NewReader(f))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		out[path.Clean(h.Name)] = &file{hdr: h, data: data}
	}
}

// TestGoInstallable keeps `go install github.com/waitroom/waitroom/cmd/waitroom@latest`
// working: go install of a version refuses a module whose go.mod has
// replace or exclude directives ("must not contain directives that would
// cause it to be interpreted differently than if it were the main module").
func TestGoInstallable(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(repoRoot, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	for i, line := range strings.Split(string(raw), "\n") {
		if f := strings.Fields(line); len(f) > 0 && (f[0] == "replace" || f[0] == "exclude") {
			t.Errorf("go.mod:%d: %s: go install …@latest would refuse the module", i+1, strings.TrimSpace(line))
		}
	}
}
