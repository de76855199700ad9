package main

import (
	"bytes"
	"context"
	"runtime"
	"strings"
	"testing"
)

func TestVersionPrintsVersionGoAndRevision(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if err := run(context.Background(), []string{"version"}, env(nil), &stdout, &stderr); err != nil {
		t.Fatalf("version: %v; stderr:\n%s", err, stderr.String())
	}
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	if len(lines) < 3 {
		t.Fatalf("version printed %d lines, want at least 3:\n%s", len(lines), stdout.String())
	}
	if !strings.HasPrefix(lines[0], "waitroom ") || len(lines[0]) <= len("waitroom ") {
		t.Errorf("first line %q, want \"waitroom <version>\"", lines[0])
	}
	if !strings.Contains(lines[1], runtime.Version()) {
		t.Errorf("second line %q does not name the Go version %s", lines[1], runtime.Version())
	}
	if !strings.HasPrefix(lines[2], "revision: ") {
		t.Errorf("third line %q, want the VCS revision (or \"unknown\")", lines[2])
	}
	if stderr.Len() != 0 {
		t.Errorf("stderr = %q, want nothing", stderr.String())
	}
}

func TestVersionUsesLinkTimeVersion(t *testing.T) {
	old := version
	version = "v9.8.7"
	defer func() { version = old }()
	var stdout bytes.Buffer
	if err := run(context.Background(), []string{"version"}, env(nil), &stdout, &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(stdout.String(), "waitroom v9.8.7\n") {
		t.Errorf("version output %q, want it to start with the link-time version", stdout.String())
	}
}
