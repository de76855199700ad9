// Package engine is the in-memory state machine behind memstore and
// sqlitestore: exact positions in O(log n) through a Fenwick tree over
// tickets, expiry costing work proportional to what expires through a lazy
// deadline heap, a waiting session in well under 128 bytes.
//
// Its Store implements waitroom.Store. Besides the contract it has what a
// durable backend needs to build on it and nobody else should call: a
// Journal and an Archive (WithJournal, WithArchive) and the restore hooks
// (Restore, RestoreTicket, RestoreCounts, RestoreUses, RestoreNear,
// RestoreDraw, ClosedTold, HasRoom). memstore wraps it to expose only the
// contract; sqlitestore gives it a journal and an archive and rebuilds its
// state on start.
package engine

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/waitroom/waitroom"
)

// Journal makes changes durable. Append is called with the room's lock held,
// in the order changes happen, for every event (sessions, config, deleted).
// The function it returns blocks until those changes are durable and reports
// whether they could be made so. Append must not block for long.
type Journal interface {
	Append(ev *waitroom.Event) (wait func() error)
}

// Archive keeps ended sessions outside memory. With one, the store keeps no
// history of its own and asks the archive for ended sessions.
type Archive interface {
	// Find returns the ended session with id in room, if there is one. It
	// must check the id's secret.
	Find(ctx context.Context, room string, id waitroom.SessionID) (waitroom.Session, bool, error)
	// List returns ended sessions of room newest first, as Store.History.
	List(ctx context.Context, room string, status waitroom.Status, page waitroom.Page) ([]waitroom.Session, string, error)
}

// Option configures a Store.
type Option func(*Store)

// WithHistoryLimit sets how many ended sessions each room keeps in memory
// (default 100,000). Older ones are forgotten.
func WithHistoryLimit(n int) Option { return func(s *Store) { s.keepHistory = max(1, n) } }

// WithJournal makes every change durable through j before it is answered.
func WithJournal(j Journal) Option { return func(s *Store) { s.journal = j } }

// WithArchive keeps history in a instead of memory.
func WithArchive(a Archive) Option { return func(s *Store) { s.archive = a } }

// Store is the in-memory waitroom.Store. It is safe for concurrent use.
type Store struct {
	mu      sync.RWMutex
	rooms   map[string]*room
	tickets map[string]int64 // last tickets of deleted rooms, so none is reused
	revs    map[string]int64 // last revisions of deleted rooms, so none is reused (revisions.go)

	keepHistory int
	journal     Journal
	archive     Archive

	subMu  sync.RWMutex
	subs   map[int]func(waitroom.Event)
	nextID int
	nSubs  atomic.Int32

	failed atomic.Pointer[error] // set when the journal fails: memory no longer matches disk
	closed atomic.Bool

	// The webhook outbox (hooks.go); hooked is set once a webhook exists.
	hooksOnce sync.Once
	hooks     *hookState
	hooked    atomic.Bool

	// The console's ledger (audit log, stats, sign-ins); see ledger.go.
	ledgerOnce sync.Once
	ledger     *ledgerState
}

var _ waitroom.Store = (*Store)(nil)

// New returns an empty in-memory store.
func New(opts ...Option) *Store {
	s := &Store{
		rooms:       make(map[string]*room),
		tickets:     make(map[string]int64),
		revs:        make(map[string]int64),
		keepHistory: 100_000,
		subs:        make(map[int]func(waitroom.Event)),
	}
	for _, o := range opts {
		o(s)
	}
	if s.archive != nil {
		s.keepHistory = 0
	}
	return s
}

func (s *Store) usable() error {
	if s.closed.Load() {
		return waitroom.Errorf(waitroom.CodeUnavailable, "The store is closed.")
	}
	if e := s.failed.Load(); e != nil {
		return waitroom.Unavailable(*e, "store failed earlier")
	}
	return nil
}

// room returns room name, unlocked, or an error.
func (s *Store) room(name string) (*room, error) {
	if err := s.usable(); err != nil {
		return nil, err
	}
	if err := waitroom.CheckRoomName(name); err != nil {
		return nil, err
	}
	s.mu.RLock()
	r := s.rooms[name]
	s.mu.RUnlock()
	if r == nil {
		return nil, waitroom.RoomNotFound(name)
	}
	return r, nil
}

// get returns room name, locked, or an error.
func (s *Store) get(name string) (*room, error) {
	r, err := s.room(name)
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	if r.gone {
		r.mu.Unlock()
		return nil, waitroom.RoomNotFound(name)
	}
	return r, nil
}

func (s *Store) fail(err error) {
	s.failed.CompareAndSwap(nil, &err)
}

func firstErr(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

// Ping implements waitroom.Store.
func (s *Store) Ping(ctx context.Context) error { return s.usable() }

// Close implements waitroom.Store.
func (s *Store) Close() error {
	s.closed.Store(true)
	return nil
}
