package bench

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"net/url"
	"time"

	_ "modernc.org/sqlite" // the SQLite driver the embedded store uses
)

// The seed's SQL design (seeds/002, "Waitlist / FIFO Queue"): one table of
// entries with a soft status; a join is one INSERT, a leave one UPDATE of
// the status, and a position is derived on every read:
//
//	SELECT COUNT(*) FROM waitlist_entries
//	WHERE queue = ? AND status = 'waiting' AND joined_at <= ?
//
// The seed indexes (queue, status). Here the index also holds joined_at, so
// the count is an index-only range scan, the best SQLite can do for it: the
// baseline is the design at its fastest, not a strawman. joined_at keeps the
// seed's text form with microseconds, so that each entry's is unique (the
// seed's whole seconds would tie thousands of joins).
const seedSchema = `
CREATE TABLE IF NOT EXISTS waitlist_entries (
	id         INTEGER PRIMARY KEY,
	created_at TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP,
	updated_at TEXT,
	queue      TEXT NOT NULL,
	user_id    INTEGER NOT NULL,
	status     TEXT NOT NULL,
	note       TEXT NOT NULL DEFAULT '',
	joined_at  TEXT NOT NULL
);
CREATE UNIQUE INDEX IF NOT EXISTS waitlist_queue_user_unique ON waitlist_entries (queue, user_id);
CREATE INDEX IF NOT EXISTS waitlist_queue_status_index ON waitlist_entries (queue, status, joined_at);
`

const (
	seedInsert   = `INSERT INTO waitlist_entries (queue, user_id, status, joined_at) VALUES (?, ?, 'waiting', ?)`
	seedPosition = `SELECT COUNT(*) FROM waitlist_entries WHERE queue = ? AND status = 'waiting' AND joined_at <= ?`
	seedLeave    = `UPDATE waitlist_entries SET status = 'left', updated_at = ? WHERE queue = ? AND user_id = ? AND status = 'waiting'`
	seedRejoin   = `UPDATE waitlist_entries SET status = 'waiting', updated_at = NULL WHERE queue = ? AND user_id = ?`
	seedQueue    = "r"
)

// seedSQL is one seed waitlist in a SQLite file.
type seedSQL struct {
	db          *sql.DB
	ins, pos    *sql.Stmt
	leave, back *sql.Stmt
	users       []int64 // user ids waiting now, in join order
	joinedAt    []string
	next        int64 // the next user id
	rng         *rand.Rand
}

// seedTime is the joined_at of the n-th entry: t0 plus n microseconds.
func seedTime(n int64) string {
	return t0.Add(time.Duration(n) * time.Microsecond).Format("2006-01-02 15:04:05.000000")
}

// openSeedSQL creates the seed's table at path with n entries waiting.
// sync is SQLite's synchronous setting: OFF to compare with the in-memory
// engine, FULL with the durable store. The page cache holds the whole
// table, as a tuned server would.
func openSeedSQL(ctx context.Context, path, sync string, n int) (*seedSQL, error) {
	q := url.Values{}
	for _, p := range []string{"journal_mode(WAL)", "synchronous(" + sync + ")", "busy_timeout(10000)", "cache_size(-1048576)", "temp_store(MEMORY)"} {
		q.Add("_pragma", p)
	}
	db, err := sql.Open("sqlite", "file:"+(&url.URL{Path: path}).EscapedPath()+"?"+q.Encode())
	if err != nil {
		return nil, err
	}
	// SQLite has one writer; one connection serializes callers in Go
	// rather than in SQLite's busy loop.
	db.SetMaxOpenConns(1)
	s := &seedSQL{db: db, rng: rand.New(rand.NewPCG(3, 4))}
	if err := s.setup(ctx, n); err != nil {
		db.Close()
		return nil, err
	}
	return s, nil
}

func (s *seedSQL) setup(ctx context.Context, n int) error {
	if _, err := s.db.ExecContext(ctx, seedSchema); err != nil {
		return fmt.Errorf("create the seed's table: %w", err)
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	ins, err := tx.PrepareContext(ctx, seedInsert)
	if err != nil {
		tx.Rollback()
		return err
	}
	s.users = make([]int64, 0, n)
	s.joinedAt = make([]string, 0, n)
	for range n {
		at := seedTime(s.next)
		if _, err := ins.ExecContext(ctx, seedQueue, s.next, at); err != nil {
			tx.Rollback()
			return fmt.Errorf("fill the seed's table: %w", err)
		}
		s.users = append(s.users, s.next)
		s.joinedAt = append(s.joinedAt, at)
		s.next++
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	if _, err := s.db.ExecContext(ctx, "ANALYZE"); err != nil {
		return err
	}
	for _, p := range []struct {
		st  **sql.Stmt
		sql string
	}{{&s.ins, seedInsert}, {&s.pos, seedPosition}, {&s.leave, seedLeave}, {&s.back, seedRejoin}} {
		if *p.st, err = s.db.PrepareContext(ctx, p.sql); err != nil {
			return err
		}
	}
	return nil
}

func (s *seedSQL) close() { s.db.Close() }

// join is the seed's join: one INSERT, its own transaction.
func (s *seedSQL) join(ctx context.Context) (int64, error) {
	u := s.next
	s.next++
	_, err := s.ins.ExecContext(ctx, seedQueue, u, seedTime(u))
	return u, err
}

// positions reads a random waiting entry's position by COUNT(*).
func (s *seedSQL) positions() batchFunc {
	return func(ctx context.Context) (int, time.Duration, error) {
		i := s.rng.IntN(len(s.users))
		start := time.Now()
		var pos int64
		if err := s.pos.QueryRowContext(ctx, seedQueue, s.joinedAt[i]).Scan(&pos); err != nil {
			return 0, 0, err
		}
		took := time.Since(start)
		if pos != int64(i)+1 {
			return 0, 0, fmt.Errorf("COUNT(*) position %d for the entry at %d", pos, i+1)
		}
		return 1, took, nil
	}
}

// joins times n INSERTs, then (untimed) deletes them again.
func (s *seedSQL) joins(n int) batchFunc {
	return func(ctx context.Context) (int, time.Duration, error) {
		first := s.next
		start := time.Now()
		for range n {
			if _, err := s.join(ctx); err != nil {
				return 0, 0, err
			}
		}
		took := time.Since(start)
		_, err := s.db.ExecContext(ctx, `DELETE FROM waitlist_entries WHERE queue = ? AND user_id >= ?`, seedQueue, first)
		return n, took, err
	}
}

// leaves times n leaves (status updates) of random waiting entries, then
// (untimed) puts them back in line at their places.
func (s *seedSQL) leaves(n int) batchFunc {
	picked := make([]int64, n)
	return func(ctx context.Context) (int, time.Duration, error) {
		seen := make(map[int]bool, n)
		for i := range picked {
			j := s.rng.IntN(len(s.users))
			for seen[j] {
				j = s.rng.IntN(len(s.users))
			}
			seen[j] = true
			picked[i] = s.users[j]
		}
		now := time.Now().UTC().Format("2006-01-02 15:04:05")
		start := time.Now()
		for _, u := range picked {
			res, err := s.leave.ExecContext(ctx, now, seedQueue, u)
			if err != nil {
				return 0, 0, err
			}
			if k, _ := res.RowsAffected(); k != 1 {
				return 0, 0, fmt.Errorf("leave of user %d changed %d rows", u, k)
			}
		}
		took := time.Since(start)
		for _, u := range picked {
			if _, err := s.back.ExecContext(ctx, seedQueue, u); err != nil {
				return 0, 0, err
			}
		}
		return n, took, nil
	}
}
