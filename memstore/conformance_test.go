package memstore_test

import (
	"testing"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/memstore"
	"github.com/waitroom/waitroom/storetest"
)

func newStore(t *testing.T) waitroom.Store {
	s := memstore.New()
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func TestConformance(t *testing.T) { storetest.Run(t, newStore) }

func TestModel(t *testing.T) { storetest.RunModel(t, newStore) }
