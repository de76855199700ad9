// Package memstore is the in-memory waitroom.Store. Positions are exact and
// cost O(log n); expiry costs work proportional to what expires; a waiting
// session costs well under 128 bytes. Everything is lost on exit: for state
// that survives a restart use sqlitestore, which runs the same state machine
// with a journal in SQLite.
package memstore

import (
	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/internal/engine"
)

// Store is the in-memory waitroom.Store. It implements waitroom.Store,
// which includes waitroom.Ledger (the console's audit log, stats and
// sign-ins) and waitroom.Hooks (the webhook outbox); its methods are those
// and only those, and their contracts are documented on those interfaces
// in package waitroom. It is safe for concurrent use.
type Store struct {
	core
}

// core is the contract, embedded so its methods are promoted to Store
// without a line of forwarding each. It is an interface, not the engine's
// type, so that the engine's restore hooks (for sqlitestore only) are not
// in Store's method set.
type core interface {
	waitroom.Store
}

var _ waitroom.Store = (*Store)(nil)

// Option configures a Store.
type Option func(*options)

type options struct {
	engine []engine.Option
}

// WithHistoryLimit sets how many ended sessions each room keeps in memory
// (default 100,000). Older ones are forgotten.
func WithHistoryLimit(n int) Option {
	return func(o *options) { o.engine = append(o.engine, engine.WithHistoryLimit(n)) }
}

// New returns an empty in-memory store.
func New(opts ...Option) *Store {
	var o options
	for _, f := range opts {
		f(&o)
	}
	return &Store{core: engine.New(o.engine...)}
}
