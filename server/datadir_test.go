//go:build unix

package server

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// lockedBuffer is a log sink safe for the server's goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestOpenDataFolderWarns: a data folder others may read (0755, as
// systemd's StateDirectory= makes it) is warned about at start, with its
// mode, and the SQLite files in it are 0600 all the same; a 0700 folder
// gets no warning.
func TestOpenDataFolderWarns(t *testing.T) {
	const warning = "the data folder is readable or writable by other users"
	for _, tc := range []struct {
		mode os.FileMode
		warn bool
	}{{0o755, true}, {0o770, true}, {0o700, false}} {
		dir := filepath.Join(t.TempDir(), "state")
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(dir, tc.mode); err != nil {
			t.Fatal(err)
		}
		var log lockedBuffer
		cfg := Defaults()
		cfg.DataDir, cfg.Logger = dir, slog.New(slog.NewTextHandler(&log, nil))
		srv, err := New(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		got := log.String()
		if warned := strings.Contains(got, warning); warned != tc.warn {
			t.Errorf("folder %04o: warned %v, want %v; log:\n%s", tc.mode, warned, tc.warn, got)
		}
		if tc.warn && !strings.Contains(got, fmt.Sprintf("mode=%04o", tc.mode)) {
			t.Errorf("folder %04o: the warning does not give the mode; log:\n%s", tc.mode, got)
		}
		for _, name := range []string{DatabaseFile, DatabaseFile + "-wal", DatabaseFile + "-shm", tokenFileName} {
			if fi, err := os.Stat(filepath.Join(dir, name)); err != nil {
				t.Errorf("folder %04o: %v", tc.mode, err)
			} else if fi.Mode().Perm() != 0o600 {
				t.Errorf("folder %04o: %s is %04o, want 0600", tc.mode, name, fi.Mode().Perm())
			}
		}
		if err := srv.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
