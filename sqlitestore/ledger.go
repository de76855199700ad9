package sqlitestore

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/waitroom/waitroom"
)

// This file implements the durable half of waitroom.Ledger: the audit log
// and console sign-ins live in SQLite, so they survive a restart. The stats
// buckets are the in-memory engine's (AddStats and Stats are promoted):
// they are an hour of charts, rebuilt as the server runs, and not worth a
// write a second.
//
// The group-commit writer holds the write handle's only connection, so the
// ledger writes through a connection of its own, opened on first use. Its
// writes are rare (an operator action, a sign-in) and each waits for the
// writer's transaction like any second writer of the file (busy_timeout).

// ledgerSchema is the ledger's tables. Times are unix milliseconds (UTC).
const ledgerSchema = `
-- Operator actions, in the order they were recorded (seq); the newest
-- 10,000 per room are kept. json is the API's AuditEntry without its id,
-- which is seq zero-padded to 16 digits.
CREATE TABLE IF NOT EXISTS audit (
	seq     INTEGER PRIMARY KEY,
	room    TEXT NOT NULL,
	session TEXT,             -- the session acted on, if any
	at      INTEGER NOT NULL,
	json    TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS audit_room ON audit (room, seq);
CREATE INDEX IF NOT EXISTS audit_session ON audit (room, session, seq) WHERE session IS NOT NULL;

-- Console sign-ins, by the SHA-256 (hex) of the sign-in id, so the file
-- never holds a usable one.
CREATE TABLE IF NOT EXISTS console_sessions (
	id      TEXT PRIMARY KEY,
	expires INTEGER NOT NULL
) WITHOUT ROWID;
`

// createLedger creates the ledger's tables if they do not exist. Open may
// call it on the write handle before the writer takes it; otherwise the
// first ledger call does.
func createLedger(ctx context.Context, db *sql.DB) error {
	if _, err := db.ExecContext(ctx, ledgerSchema); err != nil {
		return fmt.Errorf("create ledger tables: %w", err)
	}
	return nil
}

// ledgerConn is one Store's ledger write handle, opened once.
type ledgerConn struct {
	mu sync.Mutex
	db *sql.DB // nil until opened
}

// auditKeep is waitroom.AuditKeep; tests lower it (each entry is a
// commit, and 10,000 of them take seconds).
var auditKeep = waitroom.AuditKeep

// ledger returns the write handle of s's ledger, opening it and creating
// the tables on first use. It fails once s is closed.
func (s *Store) ledger(ctx context.Context) (*sql.DB, error) {
	if err := s.mem.Ping(ctx); err != nil { // the memstore: closed or failed
		return nil, err
	}
	lc := &s.ledgerConn
	lc.mu.Lock()
	defer lc.mu.Unlock()
	if lc.db != nil {
		return lc.db, nil
	}
	db, err := s.openLedger(ctx)
	if err != nil {
		return nil, waitroom.Unavailable(err, "sqlitestore: open the ledger")
	}
	lc.db = db
	return db, nil
}

// closeLedger closes s's ledger handle, if one was opened (Close calls it).
func (s *Store) closeLedger() error {
	lc := &s.ledgerConn
	lc.mu.Lock()
	defer lc.mu.Unlock()
	if lc.db == nil {
		return nil
	}
	err := lc.db.Close()
	lc.db = nil
	return err
}

// openLedger opens a write handle on s's file and creates the tables.
func (s *Store) openLedger(ctx context.Context) (*sql.DB, error) {
	var seq int
	var name, path string
	if err := s.rdb.QueryRowContext(ctx, `PRAGMA database_list`).Scan(&seq, &name, &path); err != nil {
		return nil, fmt.Errorf("find the database file: %w", err)
	}
	db, err := sql.Open("sqlite", dsn(path, "synchronous(FULL)", "busy_timeout(10000)"))
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1)
	// An idle handle holds no file open for long; the next write opens
	// it again.
	db.SetConnMaxIdleTime(time.Minute)
	if err := createLedger(ctx, db); err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}

// auditID returns the ID of the audit entry with sequence number seq.
func auditID(seq int64) string { return fmt.Sprintf("%016d", seq) }

// AddAudit implements waitroom.Ledger. The entry is durable when it
// returns.
func (s *Store) AddAudit(ctx context.Context, e waitroom.AuditEntry) error {
	if err := e.Check(); err != nil {
		return err
	}
	db, err := s.ledger(ctx)
	if err != nil {
		return err
	}
	e.At = e.At.UTC()
	e.ID = ""
	doc, err := json.Marshal(e)
	if err != nil {
		return fmt.Errorf("sqlitestore: encode audit entry: %w", err)
	}
	var session any
	if e.Session != "" {
		session = e.Session
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return waitroom.Unavailable(err, "sqlitestore: add audit entry")
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `INSERT INTO audit (room, session, at, json) VALUES (?, ?, ?, ?)`,
		e.Room, session, e.At.UnixMilli(), string(doc)); err != nil {
		return waitroom.Unavailable(err, "sqlitestore: add audit entry")
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM audit WHERE room = ?1 AND seq <= (
		SELECT seq FROM audit WHERE room = ?1 ORDER BY seq DESC LIMIT 1 OFFSET ?2)`, e.Room, auditKeep); err != nil {
		return waitroom.Unavailable(err, "sqlitestore: trim audit log")
	}
	if err := tx.Commit(); err != nil {
		return waitroom.Unavailable(err, "sqlitestore: add audit entry")
	}
	return nil
}

// Audit implements waitroom.Ledger. The cursor is the ID of an entry.
func (s *Store) Audit(ctx context.Context, room, sessionID string, page waitroom.Page) ([]waitroom.AuditEntry, string, error) {
	if err := waitroom.CheckRoomName(room); err != nil {
		return nil, "", err
	}
	q := `SELECT seq, json FROM audit WHERE room = ?`
	args := []any{room}
	if sessionID != "" {
		q += ` AND session = ?`
		args = append(args, sessionID)
	}
	if page.After != "" {
		c, err := strconv.ParseInt(page.After, 10, 64)
		if err != nil || c < 1 || page.After[0] == '+' {
			return nil, "", waitroom.Errorf(waitroom.CodeInvalidRequest, "The cursor %q is not one this server returned.", page.After)
		}
		q += ` AND seq < ?`
		args = append(args, c)
	}
	if _, err := s.ledger(ctx); err != nil {
		return nil, "", err
	}
	size := page.Size()
	q += ` ORDER BY seq DESC LIMIT ?`
	args = append(args, size+1)
	rows, err := s.rdb.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, "", waitroom.Unavailable(err, "sqlitestore: list audit entries")
	}
	defer rows.Close()
	out := make([]waitroom.AuditEntry, 0, min(size, 64))
	for rows.Next() {
		var seq int64
		var doc string
		if err := rows.Scan(&seq, &doc); err != nil {
			return nil, "", waitroom.Unavailable(err, "sqlitestore: list audit entries")
		}
		var e waitroom.AuditEntry
		if err := json.Unmarshal([]byte(doc), &e); err != nil {
			return nil, "", fmt.Errorf("sqlitestore: audit entry %d is unreadable: %w", seq, err)
		}
		e.ID = auditID(seq)
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, "", waitroom.Unavailable(err, "sqlitestore: list audit entries")
	}
	next := ""
	if len(out) > size {
		out = out[:size]
		next = out[size-1].ID
	}
	return out, next, nil
}

// consoleKey is what the table holds of a sign-in id.
func consoleKey(id string) string {
	h := sha256.Sum256([]byte(id))
	return hex.EncodeToString(h[:])
}

// consolePrune: recording a sign-in removes those that expired a day
// before it expires (sign-ins last less than that), so the table stays
// small without reading the clock.
const consolePrune = 24 * time.Hour

// PutConsoleSession implements waitroom.Ledger.
func (s *Store) PutConsoleSession(ctx context.Context, id string, expires time.Time) error {
	if err := waitroom.CheckConsoleSessionID(id); err != nil {
		return err
	}
	db, err := s.ledger(ctx)
	if err != nil {
		return err
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return waitroom.Unavailable(err, "sqlitestore: record console session")
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `INSERT INTO console_sessions (id, expires) VALUES (?, ?)
		ON CONFLICT (id) DO UPDATE SET expires = excluded.expires`, consoleKey(id), expires.UnixMilli()); err != nil {
		return waitroom.Unavailable(err, "sqlitestore: record console session")
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM console_sessions WHERE expires < ?`, expires.Add(-consolePrune).UnixMilli()); err != nil {
		return waitroom.Unavailable(err, "sqlitestore: prune console sessions")
	}
	if err := tx.Commit(); err != nil {
		return waitroom.Unavailable(err, "sqlitestore: record console session")
	}
	return nil
}

// ConsoleSession implements waitroom.Ledger.
func (s *Store) ConsoleSession(ctx context.Context, id string, now time.Time) (bool, error) {
	if _, err := s.ledger(ctx); err != nil {
		return false, err
	}
	var expires int64
	err := s.rdb.QueryRowContext(ctx, `SELECT expires FROM console_sessions WHERE id = ?`, consoleKey(id)).Scan(&expires)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, waitroom.Unavailable(err, "sqlitestore: read console session")
	}
	return now.UnixMilli() < expires, nil
}

// DeleteConsoleSession implements waitroom.Ledger.
func (s *Store) DeleteConsoleSession(ctx context.Context, id string) error {
	db, err := s.ledger(ctx)
	if err != nil {
		return err
	}
	if _, err := db.ExecContext(ctx, `DELETE FROM console_sessions WHERE id = ?`, consoleKey(id)); err != nil {
		return waitroom.Unavailable(err, "sqlitestore: delete console session")
	}
	return nil
}
