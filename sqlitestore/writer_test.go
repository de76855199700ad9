package sqlitestore

import (
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/waitroom/waitroom"
)

// joinEvent is the event of one new waiting session in room r.
func joinEvent(ticket int64) *waitroom.Event {
	return &waitroom.Event{Room: "r", Kind: waitroom.EventSessions, At: t0, LastTicket: ticket, Changes: []waitroom.Change{{
		Session: waitroom.Session{Room: "r", Ticket: ticket, ID: waitroom.NewSessionID(ticket).String(), Status: waitroom.StatusWaiting, JoinedAt: t0},
	}}}
}

// tickets returns the tickets of the live sessions of room r on disk.
func tickets(t *testing.T, db *sql.DB) map[int64]bool {
	t.Helper()
	rows, err := db.Query(`SELECT ticket FROM sessions WHERE room = 'r'`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	got := map[int64]bool{}
	for rows.Next() {
		var n int64
		if err := rows.Scan(&n); err != nil {
			t.Fatal(err)
		}
		got[n] = true
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return got
}

func openRaw(t *testing.T) (*Store, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "waitroom.db")
	s := open(t, path, t0)
	if _, _, err := s.PutRoom(context.Background(), "r", waitroom.DefaultConfig(), t0); err != nil {
		t.Fatal(err)
	}
	return s, path
}

// TestEventsGatherWhileNobodyCommits checks group commit itself: events
// appended before anyone waits gather in one batch, and the first wait
// commits all of them at once.
func TestEventsGatherWhileNobodyCommits(t *testing.T) {
	s, _ := openRaw(t)
	defer s.Close()
	before := s.w.commits
	var waits []func() error
	for n := int64(1); n <= 50; n++ {
		waits = append(waits, s.w.Append(joinEvent(n)))
	}
	if err := waits[49](); err != nil {
		t.Fatal(err)
	}
	if got := s.w.commits - before; got != 1 {
		t.Errorf("50 gathered events took %d commits, want 1", got)
	}
	for i, wait := range waits {
		if err := wait(); err != nil {
			t.Errorf("wait %d: %v", i, err)
		}
	}
	if got := len(tickets(t, s.rdb)); got != 50 {
		t.Errorf("%d sessions on disk, want 50", got)
	}
}

// TestWaitFromManyGoroutines appends from many goroutines and waits on
// every event from two goroutines at once, twice each: every wait returns
// only once its event is on disk, and batches commit one at a time.
func TestWaitFromManyGoroutines(t *testing.T) {
	s, _ := openRaw(t)
	defer s.Close()
	var mu sync.Mutex // appends in ticket order, as memstore's room lock gives them
	next := int64(0)
	var wg sync.WaitGroup
	for range 32 {
		wg.Go(func() {
			for range 40 {
				mu.Lock()
				next++
				n := next
				wait := s.w.Append(joinEvent(n))
				mu.Unlock()
				var both sync.WaitGroup
				for range 2 {
					both.Go(func() {
						for range 2 {
							if err := wait(); err != nil {
								t.Errorf("ticket %d: %v", n, err)
								return
							}
						}
					})
				}
				both.Wait()
				var found int
				if err := s.rdb.QueryRow(`SELECT count(*) FROM sessions WHERE room = 'r' AND ticket = ?`, n).Scan(&found); err != nil {
					t.Error(err)
					return
				}
				if found != 1 {
					t.Errorf("ticket %d acknowledged but not on disk", n)
				}
			}
		})
	}
	wg.Wait()
	if got := len(tickets(t, s.rdb)); got != 32*40 {
		t.Errorf("%d sessions on disk, want %d", got, 32*40)
	}
	if s.w.commits >= 32*40 {
		t.Errorf("%d commits for %d events: nothing was grouped", s.w.commits, 32*40)
	}
}

// TestCloseCommitsWhatNobodyWaitedFor checks that events whose callers
// never waited are still written when the store closes.
func TestCloseCommitsWhatNobodyWaitedFor(t *testing.T) {
	s, path := openRaw(t)
	for n := int64(1); n <= 10; n++ {
		s.w.Append(joinEvent(n))
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.w.Append(joinEvent(11))(); err != errClosed {
		t.Errorf("append after close: %v, want %v", err, errClosed)
	}
	s = open(t, path, t0)
	defer s.Close()
	if got := len(tickets(t, s.rdb)); got != 10 {
		t.Errorf("%d sessions on disk after reopening, want 10", got)
	}
}

// TestPanicInCommitFailsOnlyItsBatch makes one commit panic: its callers
// get an error, its changes are rolled back, and later batches commit.
func TestPanicInCommitFailsOnlyItsBatch(t *testing.T) {
	s, _ := openRaw(t)
	defer s.Close()
	if err := s.w.Append(joinEvent(1))(); err != nil {
		t.Fatal(err)
	}
	saved := s.w.stmts["putTicket"]
	s.w.stmts["putTicket"] = nil // ExecContext on a nil *sql.Stmt panics
	err := s.w.Append(joinEvent(2))()
	s.w.stmts["putTicket"] = saved
	if err == nil || !strings.Contains(err.Error(), "panicked") {
		t.Fatalf("wait on the panicking commit: %v, want a panic error", err)
	}
	if err := s.w.Append(joinEvent(3))(); err != nil {
		t.Fatalf("commit after the panic: %v", err)
	}
	got := tickets(t, s.rdb)
	if !got[1] || got[2] || !got[3] || len(got) != 2 {
		t.Errorf("tickets on disk %v, want 1 and 3 (2 rolled back)", got)
	}
}
