package sqlitestore

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"

	"github.com/waitroom/waitroom"
)

// TestRevisionsSurviveRestart: a room's configuration revision, and the
// last revision of a deleted room (so a room made again continues above
// it), are the same after closing and opening the file again.
func TestRevisionsSurviveRestart(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "waitroom.db")
	s := open(t, path, t0)
	cfg := waitroom.DefaultConfig()
	for _, name := range []string{"kept", "gone"} {
		if _, _, err := s.PutRoom(ctx, name, cfg, t0); err != nil {
			t.Fatal(err)
		}
	}
	cfg.Paused = true
	for rev := int64(1); rev <= 2; rev++ {
		if _, err := s.UpdateRoom(ctx, "kept", cfg, rev, t0); err != nil {
			t.Fatalf("UpdateRoom(rev %d): %v", rev, err)
		}
	}
	if _, err := s.UpdateRoom(ctx, "gone", cfg, 1, t0); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteRoom(ctx, "gone", false, t0); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s = open(t, path, t0)
	defer s.Close()
	r, err := s.Room(ctx, "kept")
	if err != nil || r.Revision != 3 || !r.Paused {
		t.Fatalf("after the restart: room kept = revision %d, paused %v (%v); want revision 3, paused", r.Revision, r.Paused, err)
	}
	if _, err := s.UpdateRoom(ctx, "kept", cfg, 2, t0); waitroom.ErrorCode(err) != waitroom.CodePreconditionFailed {
		t.Fatalf("UpdateRoom with a revision from before the restart: %v, want precondition_failed", err)
	}
	r, _, err = s.PutRoom(ctx, "gone", cfg, t0)
	if err != nil || r.Revision != 3 {
		t.Fatalf("room gone made again after the restart: revision %d (%v), want 3 (above the deleted room's 2)", r.Revision, err)
	}
}

// TestOpenVersion5File: a room of a file from before revisions were kept
// opens at revision 1, and its next change makes it 2.
func TestOpenVersion5File(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "waitroom.db")
	s := open(t, path, t0)
	if _, _, err := s.PutRoom(ctx, "old", waitroom.DefaultConfig(), t0); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// Make it a version 5 file: no revision column.
	db, err := sql.Open("sqlite", dsn(path))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`ALTER TABLE tickets DROP COLUMN revision; PRAGMA user_version = 5`); err != nil {
		t.Fatal(err)
	}
	db.Close()

	s = open(t, path, t0)
	defer s.Close()
	r, err := s.Room(ctx, "old")
	if err != nil || r.Revision != 1 {
		t.Fatalf("room of a version 5 file: revision %d (%v), want 1", r.Revision, err)
	}
	if r, err = s.UpdateRoom(ctx, "old", waitroom.DefaultConfig(), 1, t0); err != nil || r.Revision != 2 {
		t.Fatalf("UpdateRoom(rev 1) on the migrated file: revision %d (%v), want 2", r.Revision, err)
	}
	var version int
	if err := s.rdb.QueryRowContext(ctx, `PRAGMA user_version`).Scan(&version); err != nil || version != 6 {
		t.Fatalf("schema version %d (%v), want 6", version, err)
	}
}
