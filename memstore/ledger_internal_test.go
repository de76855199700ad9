package memstore

import (
	"runtime"
	"testing"
	"time"
	"weak"

	"github.com/waitroom/waitroom"
)

// TestLedgerStateGoesWithStore checks that a Store's ledger state, kept
// outside it, is dropped once the Store is garbage.
func TestLedgerStateGoesWithStore(t *testing.T) {
	held := func(k weak.Pointer[Store]) bool {
		ledgers.mu.Lock()
		defer ledgers.mu.Unlock()
		return ledgers.m[k] != nil
	}
	k := func() weak.Pointer[Store] {
		s := New()
		if err := s.AddStats(t.Context(), "r", waitroom.StatsBucket{Joins: 1}); err != nil {
			t.Fatal(err)
		}
		k := weak.Make(s)
		if !held(k) {
			t.Fatal("a store's ledger state is not held while it is in use")
		}
		return k
	}()
	deadline := time.Now().Add(5 * time.Second)
	for held(k) {
		if time.Now().After(deadline) {
			t.Fatal("the ledger state of a dropped store is still held after 5 s of garbage collections")
		}
		runtime.GC()
		time.Sleep(time.Millisecond)
	}
}
