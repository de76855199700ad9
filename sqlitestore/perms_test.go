//go:build unix

package sqlitestore

import (
	"context"
	"database/sql"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/waitroom/waitroom"
)

// TestFilesArePrivate is issue 26's world-readable database: in a 0755
// folder (systemd's StateDirectory= default) under umask 022, waitroom.db
// and its -wal and -shm were 0644. Now every file is 0600, and so is a
// database an older version left 0644 (with a -wal beside it), once
// opened. A folder Open creates is 0700.
func TestFilesArePrivate(t *testing.T) {
	old := syscall.Umask(0o022) // the usual umask; not a parallel test
	t.Cleanup(func() { syscall.Umask(old) })

	check := func(t *testing.T, path string) {
		t.Helper()
		for _, name := range []string{path, path + "-wal", path + "-shm", path + ".lock"} {
			fi, err := os.Stat(name)
			if err != nil {
				t.Errorf("stat %s: %v", filepath.Base(name), err)
			} else if fi.Mode().Perm() != 0o600 {
				t.Errorf("%s is %04o, want 0600", filepath.Base(name), fi.Mode().Perm())
			}
		}
	}
	use := func(t *testing.T, s *Store) {
		t.Helper()
		ctx := context.Background()
		if _, _, err := s.PutRoom(ctx, "r", waitroom.DefaultConfig(), t0); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Join(ctx, "r", "", t0); err != nil {
			t.Fatal(err)
		}
	}

	t.Run("new", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "state")
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, "waitroom.db")
		s := open(t, path, t0)
		defer s.Close()
		use(t, s)
		check(t, path)
	})

	t.Run("left 0644 by an older version", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "waitroom.db")
		db, err := sql.Open("sqlite", dsn(path, "journal_mode(WAL)"))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := db.Exec(`CREATE TABLE before (x)`); err != nil {
			t.Fatal(err)
		}
		db.Close()
		if err := os.WriteFile(path+"-wal", nil, 0o644); err != nil { // an empty log, as a crash may leave
			t.Fatal(err)
		}
		for _, name := range []string{path, path + "-wal"} {
			if fi, err := os.Stat(name); err != nil {
				t.Fatal(err)
			} else if fi.Mode().Perm() != 0o644 {
				t.Fatalf("setting up: %s is %04o, want 0644 as SQLite makes it", name, fi.Mode().Perm())
			}
		}
		s := open(t, path, t0)
		defer s.Close()
		use(t, s)
		check(t, path)
	})

	t.Run("folder made by Open", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "a", "b")
		s := open(t, filepath.Join(dir, "waitroom.db"), t0)
		defer s.Close()
		for _, d := range []string{dir, filepath.Dir(dir)} {
			if fi, err := os.Stat(d); err != nil {
				t.Error(err)
			} else if fi.Mode().Perm() != fs.FileMode(0o700) {
				t.Errorf("folder %s is %04o, want 0700", d, fi.Mode().Perm())
			}
		}
		check(t, filepath.Join(dir, "waitroom.db"))
	})
}
