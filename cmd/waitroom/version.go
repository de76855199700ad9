package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"regexp"
	"runtime"
	"runtime/debug"
	"strings"
	"time"
)

// Link-time stamps, set by `make release` (and `make image`) with
// -ldflags "-X main.version=v1.2.3 -X main.revision=<commit>[+dirty]
// -X main.buildTime=<RFC 3339>". Each is a fallback: what the Go toolchain
// recorded in the binary (the module version, vcs.revision, vcs.time) wins
// where it exists, since it cannot disagree with the code it describes.
var (
	// version is the release version. When empty, the main module's
	// version from the build information is used: a tag or pseudo-version
	// for a `go install`ed binary or a build in a checkout, "(devel)" else.
	version string
	// revision is the VCS revision the binary was built from, used when the
	// build recorded none (-buildvcs=false, or a source tree without .git).
	revision string
	// buildTime is when the binary was built.
	buildTime string
)

// versionInfo is what `waitroom version` knows about the binary. Empty
// fields are unknown, and neither printed nor encoded.
type versionInfo struct {
	Version    string `json:"version"`
	Go         string `json:"go"`
	OS         string `json:"os"`
	Arch       string `json:"arch"`
	Revision   string `json:"revision,omitempty"`
	Modified   bool   `json:"modified,omitempty"`
	CommitTime string `json:"commit_time,omitempty"`
	BuildTime  string `json:"build_time,omitempty"`
}

// pseudoVersionRE matches the tail of a Go pseudo-version
// (v0.0.0-20261128074400-c1de78f1a2b3, v1.2.4-0.2026…-…, with an optional
// +dirty or +incompatible): a `go install …@latest` of an untagged commit
// has one, and it names the commit and its time even without vcs settings.
var pseudoVersionRE = regexp.MustCompile(`(?:^|[-.])(\d{14})-([0-9a-f]{12})(?:\+[0-9A-Za-z.]+)?$`)

// resolveVersion combines the build information (nil when the binary has
// none) with the link-time stamps into what is known.
func resolveVersion(bi *debug.BuildInfo, ldVersion, ldRevision, ldBuildTime string) versionInfo {
	v := versionInfo{Version: ldVersion, Go: runtime.Version(), OS: runtime.GOOS, Arch: runtime.GOARCH}
	var vcsRevision, vcsTime string
	var vcsModified bool
	if bi != nil {
		if v.Version == "" && bi.Main.Version != "" {
			v.Version = bi.Main.Version
		}
		if bi.GoVersion != "" {
			v.Go = bi.GoVersion
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				vcsRevision = s.Value
			case "vcs.time":
				vcsTime = s.Value
			case "vcs.modified":
				vcsModified = s.Value == "true"
			case "GOOS":
				v.OS = s.Value
			case "GOARCH":
				v.Arch = s.Value
			}
		}
	}
	if v.Version == "" {
		v.Version = "(devel)"
	}
	switch {
	case vcsRevision != "":
		v.Revision, v.Modified, v.CommitTime = vcsRevision, vcsModified, vcsTime
	case ldRevision != "":
		v.Revision, v.Modified = strings.TrimSuffix(ldRevision, "+dirty"), strings.HasSuffix(ldRevision, "+dirty")
	default:
		// A `go install …@<commit>` binary: the proxy's module has no .git,
		// but its pseudo-version carries a 12-digit commit prefix and the
		// commit's time.
		if m := pseudoVersionRE.FindStringSubmatch(v.Version); m != nil {
			v.Revision = m[2]
			if t, err := time.Parse("20060102150405", m[1]); err == nil {
				v.CommitTime = t.UTC().Format(time.RFC3339)
			}
		}
	}
	v.BuildTime = ldBuildTime
	return v
}

// String renders v as `waitroom version` prints it, one known fact a line.
func (v versionInfo) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "waitroom %s\n", v.Version)
	fmt.Fprintf(&b, "go:        %s %s/%s\n", v.Go, v.OS, v.Arch)
	if v.Revision != "" {
		rev := v.Revision
		if v.Modified {
			rev += "+dirty"
		}
		fmt.Fprintf(&b, "revision:  %s\n", rev)
	}
	if v.CommitTime != "" {
		fmt.Fprintf(&b, "committed: %s\n", v.CommitTime)
	}
	if v.BuildTime != "" {
		fmt.Fprintf(&b, "built:     %s\n", v.BuildTime)
	}
	return b.String()
}

// versionCommand prints the version, the Go version and platform, and what
// is known of the revision the binary was built from and when.
func versionCommand(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("version", flag.ContinueOnError)
	fs.SetOutput(stderr)
	asJSON := fs.Bool("json", false, "print one JSON object (fields not known are left out)")
	setHelp(fs, helpText{
		usage: "waitroom version [--json]",
		about: "Prints the module version, the Go version and platform, the VCS revision " +
			"(+dirty when built with uncommitted changes), the commit's time and the build time, " +
			"each when the binary knows it (a line it does not know is left out).",
		examples: []string{"waitroom version", "waitroom version --json"},
	})
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	bi, _ := debug.ReadBuildInfo()
	v := resolveVersion(bi, version, revision, buildTime)
	if *asJSON {
		enc := json.NewEncoder(stdout)
		return enc.Encode(v)
	}
	_, err := io.WriteString(stdout, v.String())
	return err
}
