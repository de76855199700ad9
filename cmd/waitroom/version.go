package main

import (
	"flag"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
)

// version is the release version, set at link time with
// -ldflags "-X main.version=v1.2.3". When empty, the main module's version
// from the build information is used ("(devel)" for a source build).
var version string

// versionCommand prints the version, the Go version and, when the binary was
// built from a VCS checkout, the revision it was built from.
func versionCommand(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("version", flag.ContinueOnError)
	fs.SetOutput(stderr)
	setHelp(fs, helpText{
		usage:    "waitroom version",
		about:    "Prints the version, the Go version and the VCS revision the binary was built from.",
		examples: []string{"waitroom version"},
	})
	if err := parseFlags(fs, args); err != nil {
		return err
	}

	v, goVersion := version, runtime.Version()
	var revision, revTime, modified string
	if info, ok := debug.ReadBuildInfo(); ok {
		if v == "" {
			v = info.Main.Version
		}
		if info.GoVersion != "" {
			goVersion = info.GoVersion
		}
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				revision = s.Value
			case "vcs.time":
				revTime = s.Value
			case "vcs.modified":
				modified = s.Value
			}
		}
	}
	if v == "" {
		v = "(devel)"
	}
	fmt.Fprintf(stdout, "waitroom %s\n", v)
	fmt.Fprintf(stdout, "go:       %s %s/%s\n", goVersion, runtime.GOOS, runtime.GOARCH)
	switch {
	case revision == "":
		// Built without VCS stamping (go test, -buildvcs=false, or outside a checkout).
		fmt.Fprintf(stdout, "revision: unknown\n")
	case modified == "true":
		fmt.Fprintf(stdout, "revision: %s (with uncommitted changes)\n", revision)
	default:
		fmt.Fprintf(stdout, "revision: %s\n", revision)
	}
	if revTime != "" {
		fmt.Fprintf(stdout, "time:     %s\n", revTime)
	}
	return nil
}
