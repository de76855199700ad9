package engine_test

import (
	"testing"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/internal/engine"
	"github.com/waitroom/waitroom/storetest"
)

// The engine runs the suite itself, not only through memstore, so a
// failure points at the state machine rather than at a wrapper.

func newStore(t *testing.T) waitroom.Store {
	s := engine.New()
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func TestConformance(t *testing.T) { storetest.Run(t, newStore) }

func TestModel(t *testing.T) { storetest.RunModel(t, newStore) }

func TestLedger(t *testing.T) {
	storetest.Ledger(t, func(t *testing.T) waitroom.Ledger {
		s := engine.New()
		t.Cleanup(func() { _ = s.Close() })
		return s
	})
}
