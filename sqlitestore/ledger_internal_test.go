package sqlitestore

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"
	"time"

	"github.com/waitroom/waitroom"
)

// SetAuditKeep makes stores keep n audit entries a room until restore is
// called, so the ledger suite's cap test needs n commits, not 10,000.
func SetAuditKeep(n int) (restore func()) {
	old := auditKeep
	auditKeep = n
	return func() { auditKeep = old }
}

// TestCreateLedgerBeforeOpen creates the tables the way Open may (on a
// handle of its own, twice), then checks a store on the file uses them and
// that closeLedger closes the ledger's handle and a closed store opens no
// other.
func TestCreateLedgerBeforeOpen(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "waitroom.db")
	db, err := sql.Open("sqlite", dsn(path, "journal_mode(WAL)"))
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := createLedger(ctx, db); err != nil {
			t.Fatalf("createLedger: %v", err)
		}
	}
	if _, err := db.ExecContext(ctx, `INSERT INTO console_sessions (id, expires) VALUES (?, ?)`, consoleKey("early"), int64(1)<<50); err != nil {
		t.Fatal(err)
	}
	db.Close()
	s, err := Open(ctx, path)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer s.Close()
	if live, err := s.ConsoleSession(ctx, "early", time.Now()); err != nil || !live {
		t.Fatalf("ConsoleSession of a row written before Open = %v, %v", live, err)
	}
	if err := s.closeLedger(); err != nil {
		t.Fatalf("closeLedger: %v", err)
	}
	// The handle opens again on use while the store is open.
	if err := s.PutConsoleSession(ctx, "later", time.Now().Add(time.Hour)); err != nil {
		t.Fatalf("PutConsoleSession after closeLedger: %v", err)
	}
	s.Close()
	if err := s.closeLedger(); err != nil {
		t.Fatalf("closeLedger: %v", err)
	}
	if err := s.PutConsoleSession(ctx, "after", time.Now().Add(time.Hour)); waitroom.ErrorCode(err) != waitroom.CodeUnavailable {
		t.Fatalf("PutConsoleSession after Close: %v, want code unavailable", err)
	}
}
