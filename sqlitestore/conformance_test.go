package sqlitestore_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/sqlitestore"
	"github.com/waitroom/waitroom/storetest"
)

// newStore opens a store on a fresh file; the cleanup closes it (Close may
// already have been called by the test).
func newStore(t *testing.T) waitroom.Store {
	s, err := sqlitestore.Open(context.Background(), filepath.Join(t.TempDir(), "waitroom.db"))
	if err != nil {
		t.Fatalf("sqlitestore.Open: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

func TestConformance(t *testing.T) { storetest.Run(t, newStore) }

func TestModel(t *testing.T) { storetest.RunModel(t, newStore) }
