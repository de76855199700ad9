package sqlitestore_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/sqlitestore"
	"github.com/waitroom/waitroom/storetest"
)

// TestLedger runs the ledger suite with a cap of 300 audit entries a room
// (each entry is a commit; memstore and redisstore check the real cap).
func TestLedger(t *testing.T) {
	const keep = 300
	defer sqlitestore.SetAuditKeep(keep)()
	storetest.Ledger(t, func(t *testing.T) waitroom.Ledger { return newStore(t) }, storetest.WithAuditKeep(keep))
}

// TestLedgerSurvivesRestart checks that the audit log and console
// sign-ins are in the file: a store opened again on it has them.
func TestLedgerSurvivesRestart(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "waitroom.db")
	at := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	s, err := sqlitestore.Open(ctx, path)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	for i, action := range []string{waitroom.AuditPause, waitroom.AuditResume} {
		e := waitroom.AuditEntry{At: at.Add(time.Duration(i) * time.Second), Room: "r", Actor: waitroom.AuditActorAPI, Action: action, Reason: "maintenance"}
		if err := s.AddAudit(ctx, e); err != nil {
			t.Fatalf("AddAudit: %v", err)
		}
	}
	if err := s.PutConsoleSession(ctx, "signed-in", at.Add(time.Hour)); err != nil {
		t.Fatalf("PutConsoleSession: %v", err)
	}
	before, _, err := s.Audit(ctx, "r", "", waitroom.Page{})
	if err != nil {
		t.Fatalf("Audit: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := s.AddAudit(ctx, waitroom.AuditEntry{At: at, Room: "r", Actor: waitroom.AuditActorAPI, Action: waitroom.AuditPause}); waitroom.ErrorCode(err) != waitroom.CodeUnavailable {
		t.Fatalf("AddAudit after Close: error = %v, want code unavailable", err)
	}

	s, err = sqlitestore.Open(ctx, path)
	if err != nil {
		t.Fatalf("Open again: %v", err)
	}
	defer s.Close()
	after, next, err := s.Audit(ctx, "r", "", waitroom.Page{})
	if err != nil {
		t.Fatalf("Audit after restart: %v", err)
	}
	if len(after) != 2 || next != "" || after[0].ID != before[0].ID || after[1].ID != before[1].ID ||
		after[0].Action != waitroom.AuditResume || after[1].Reason != "maintenance" || !after[1].At.Equal(at) {
		t.Fatalf("Audit after restart = %+v, want %+v", after, before)
	}
	live, err := s.ConsoleSession(ctx, "signed-in", at)
	if err != nil || !live {
		t.Fatalf("ConsoleSession after restart = %v, %v; want live", live, err)
	}
	// A new entry continues the sequence.
	if err := s.AddAudit(ctx, waitroom.AuditEntry{At: at.Add(time.Minute), Room: "r", Actor: waitroom.AuditActorAPI, Action: waitroom.AuditDelete}); err != nil {
		t.Fatalf("AddAudit after restart: %v", err)
	}
	if got, _, _ := s.Audit(ctx, "r", "", waitroom.Page{Limit: 1}); len(got) != 1 || got[0].ID <= before[0].ID {
		t.Fatalf("new entry after restart = %+v, want an ID after %q", got, before[0].ID)
	}
}
