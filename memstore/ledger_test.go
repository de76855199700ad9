package memstore_test

import (
	"testing"
	"time"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/memstore"
	"github.com/waitroom/waitroom/storetest"
)

func TestLedger(t *testing.T) {
	storetest.Ledger(t, func(t *testing.T) waitroom.Ledger {
		s := memstore.New()
		t.Cleanup(func() { _ = s.Close() })
		return s
	})
}

// TestLedgerClosed checks that a closed store's ledger refuses service.
func TestLedgerClosed(t *testing.T) {
	s := memstore.New()
	_ = s.Close()
	err := s.AddStats(t.Context(), "r", waitroom.StatsBucket{})
	if waitroom.ErrorCode(err) != waitroom.CodeUnavailable {
		t.Fatalf("AddStats after Close: error = %v, want code unavailable", err)
	}
	if _, err := s.ConsoleSession(t.Context(), "x", time.Now()); waitroom.ErrorCode(err) != waitroom.CodeUnavailable {
		t.Fatalf("ConsoleSession after Close: error = %v, want code unavailable", err)
	}
}
