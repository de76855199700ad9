// Package sqlitestore is waitroom's embedded default store: the in-memory
// state machine of memstore made durable in one SQLite file.
//
// Every change is committed to SQLite before its answer goes out. Changes
// that arrive while a commit runs gather into the next batch, which one of
// their callers then commits in one transaction (group commit), so a
// commit's cost is shared by all the callers waiting on it. On start the rooms, ticket counters and
// live sessions are read back and the in-memory state is rebuilt; presence
// and activity timers restart then. History stays in SQLite and is read from
// there.
//
// Durability: by default the database runs in WAL mode with
// synchronous=FULL, so an acknowledged change survives kill -9 and power
// loss. WithSynchronous("NORMAL") keeps kill -9 safety but may lose the last
// commits on power loss, for more throughput on slow disks.
package sqlitestore

import (
	"context"
	"crypto/subtle"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/internal/engine"
	_ "modernc.org/sqlite" // registers the "sqlite" driver
)

// Store is the durable waitroom.Store. It implements waitroom.Store, which
// includes waitroom.Ledger (the console's audit log, stats and sign-ins)
// and waitroom.Hooks (the webhook outbox); its methods are those and only
// those, and their contracts are documented on those interfaces in package
// waitroom. It is safe for concurrent use.
type Store struct {
	// core is the in-memory engine seen as the contract: its methods are
	// promoted to Store (those Store declares itself take precedence),
	// and the engine's restore hooks are not. mem is the same engine, for
	// this package's own use of those hooks.
	core
	mem      *engine.Store
	wdb, rdb *sql.DB
	w        *writer
	lock     *os.File
	once     sync.Once
	closeErr error
	// ledgerConn is the console ledger's own write handle (see ledger.go).
	ledgerConn ledgerConn
	// ob is the webhook outbox's cursors and claims (outbox.go).
	ob outbox
}

var _ waitroom.Store = (*Store)(nil)

// core is the contract the engine answers for Store (see Store.core).
type core interface {
	waitroom.Store
}

type options struct {
	sync  string
	clock waitroom.Clock
}

// Option configures Open.
type Option func(*options)

// WithSynchronous sets SQLite's synchronous pragma: "FULL" (default) or
// "NORMAL" (see the package documentation).
func WithSynchronous(mode string) Option { return func(o *options) { o.sync = strings.ToUpper(mode) } }

// WithClock sets the clock read once at Open, to restart the timers of
// restored sessions.
func WithClock(c waitroom.Clock) Option { return func(o *options) { o.clock = c } }

// Open opens (creating if needed) the database at path, takes an exclusive
// lock on it (path + ".lock") and restores the state it holds. The
// database, its -wal and -shm files and the lock are mode 0600 whatever
// the umask (an existing database is restricted to it); a folder it
// creates is 0700.
func Open(ctx context.Context, path string, opts ...Option) (*Store, error) {
	o := options{sync: "FULL", clock: waitroom.SystemClock{}}
	for _, f := range opts {
		f(&o)
	}
	if o.sync != "FULL" && o.sync != "NORMAL" {
		return nil, fmt.Errorf("sqlitestore: synchronous must be FULL or NORMAL, not %q", o.sync)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("sqlitestore: create data folder: %w", err)
	}
	lock, err := lockFile(path + ".lock")
	if err != nil {
		return nil, fmt.Errorf("sqlitestore: %w", err)
	}
	s := &Store{lock: lock}
	if err := createPrivate(path); err != nil {
		s.release()
		return nil, fmt.Errorf("sqlitestore: %w", err)
	}
	if err := s.open(ctx, path, o); err != nil {
		s.release()
		return nil, fmt.Errorf("sqlitestore: open %s: %w", path, err)
	}
	if err := restrictSidecars(path); err != nil {
		s.Close()
		return nil, fmt.Errorf("sqlitestore: %w", err)
	}
	return s, nil
}

func dsn(path string, pragmas ...string) string {
	q := url.Values{}
	for _, p := range pragmas {
		q.Add("_pragma", p)
	}
	return "file:" + (&url.URL{Path: path}).EscapedPath() + "?" + q.Encode()
}

func (s *Store) open(ctx context.Context, path string, o options) error {
	var err error
	s.wdb, err = sql.Open("sqlite", dsn(path, "journal_mode(WAL)", "synchronous("+o.sync+")", "busy_timeout(10000)", "foreign_keys(OFF)"))
	if err != nil {
		return err
	}
	s.wdb.SetMaxOpenConns(1)
	s.wdb.SetConnMaxIdleTime(0)
	var version int
	if err := s.wdb.QueryRowContext(ctx, `PRAGMA user_version`).Scan(&version); err != nil {
		return fmt.Errorf("read schema version: %w", err)
	}
	// The migrations and the schema (which sets the new version) commit
	// together: a failure or a crash between them would otherwise leave a
	// file that says it is current without the new columns.
	script := "BEGIN IMMEDIATE;\n"
	for v := version; v > 0 && migrations[v] != ""; v++ {
		script += migrations[v] + ";\n"
	}
	script += schema + "\nCOMMIT;"
	if _, err := s.wdb.ExecContext(ctx, script); err != nil {
		_, _ = s.wdb.ExecContext(ctx, "ROLLBACK")
		return fmt.Errorf("create or migrate schema (version %d): %w", version, err)
	}
	if err := createLedger(ctx, s.wdb); err != nil {
		return err
	}
	hooks, mids, err := loadHooks(ctx, s.wdb)
	if err != nil {
		return err
	}
	s.rdb, err = sql.Open("sqlite", dsn(path, "busy_timeout(10000)", "query_only(1)"))
	if err != nil {
		return err
	}
	s.rdb.SetMaxOpenConns(4)
	mem := engine.New(engine.WithArchive(archive{s.rdb}))
	if err := load(ctx, s.wdb, mem, o.clock.Now()); err != nil {
		return err
	}
	if err := loadClosings(ctx, s.wdb, mem); err != nil {
		return err
	}
	conn, err := s.wdb.Conn(ctx)
	if err != nil {
		return err
	}
	s.w, err = newWriter(ctx, conn)
	if err != nil {
		conn.Close()
		return err
	}
	s.w.hooks.subs.Store(&hooks)
	s.w.mids = mids
	s.w.roomGone = s.ob.roomGone
	// The journal is attached after loading: restoring writes nothing.
	engine.WithJournal(s.w)(mem)
	s.core, s.mem = mem, mem
	return nil
}

// load rebuilds the in-memory state from the database.
func load(ctx context.Context, db *sql.DB, mem *engine.Store, now time.Time) error {
	last, revs := map[string]int64{}, map[string]int64{}
	rows, err := db.QueryContext(ctx, `SELECT room, last, revision FROM tickets`)
	if err != nil {
		return fmt.Errorf("read tickets: %w", err)
	}
	for rows.Next() {
		var room string
		var t, rev int64
		if err := rows.Scan(&room, &t, &rev); err != nil {
			rows.Close()
			return fmt.Errorf("read tickets: %w", err)
		}
		last[room], revs[room] = t, rev
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read tickets: %w", err)
	}
	type roomRow struct {
		name string
		cfg  waitroom.RoomConfig
	}
	var rooms []roomRow
	rows, err = db.QueryContext(ctx, `SELECT name, config FROM rooms`)
	if err != nil {
		return fmt.Errorf("read rooms: %w", err)
	}
	for rows.Next() {
		var r roomRow
		var cfg string
		if err := rows.Scan(&r.name, &cfg); err != nil {
			rows.Close()
			return fmt.Errorf("read rooms: %w", err)
		}
		r.cfg = waitroom.DefaultConfig()
		if err := json.Unmarshal([]byte(cfg), &r.cfg); err != nil {
			rows.Close()
			return fmt.Errorf("room %q has an unreadable config: %w", r.name, err)
		}
		rooms = append(rooms, r)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read rooms: %w", err)
	}
	for _, r := range rooms {
		var told []int64
		live, err := liveSessions(ctx, db, r.name, &told)
		if err != nil {
			return err
		}
		var maxHist sql.NullInt64
		if err := db.QueryRowContext(ctx, `SELECT max(ticket) FROM history WHERE room = ?`, r.name).Scan(&maxHist); err != nil {
			return fmt.Errorf("read history of room %q: %w", r.name, err)
		}
		if err := mem.Restore(r.name, r.cfg, max(last[r.name], maxHist.Int64), live, now); err != nil {
			return err
		}
		mem.RestoreNear(r.name, told)
		// A room of a file older than revisions is at revision 1.
		mem.RestoreRevision(r.name, max(revs[r.name], 1))
		delete(revs, r.name)
		if err := loadDraw(ctx, db, mem, r.name); err != nil {
			return err
		}
		var adm, inv, most, sold int64
		err = db.QueryRowContext(ctx, `SELECT admissions, inversions, max_admitted, sold FROM counts WHERE room = ?`, r.name).Scan(&adm, &inv, &most, &sold)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("read counts of room %q: %w", r.name, err)
		}
		mem.RestoreCounts(r.name, adm, inv, most, sold)
		if err := loadUses(ctx, db, mem, r.name, now); err != nil {
			return err
		}
		delete(last, r.name)
	}
	for room, t := range last {
		mem.RestoreTicket(room, t)
	}
	for room, rev := range revs {
		mem.RestoreRevision(room, rev)
	}
	return nil
}

// loadUses restores the counts of the room's tokens still valid at now.
func loadUses(ctx context.Context, db *sql.DB, mem *engine.Store, room string, now time.Time) error {
	rows, err := db.QueryContext(ctx, `SELECT kind, id, n, expires FROM token_uses WHERE room = ? AND expires > ?`, room, now.UnixMilli())
	if err != nil {
		return fmt.Errorf("read token uses of room %q: %w", room, err)
	}
	defer rows.Close()
	var uses []waitroom.TokenUse
	var counts []int
	for rows.Next() {
		var u waitroom.TokenUse
		var kind string
		var n int
		var exp int64
		if err := rows.Scan(&kind, &u.ID, &n, &exp); err != nil {
			return fmt.Errorf("read token uses of room %q: %w", room, err)
		}
		u.Kind, u.Expires = waitroom.TokenKind(kind), time.UnixMilli(exp).UTC()
		uses, counts = append(uses, u), append(counts, n)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read token uses of room %q: %w", room, err)
	}
	mem.RestoreUses(room, uses, counts, now)
	return nil
}

// liveSessions reads a room's live sessions in ticket order, and appends to
// told the tickets of those told they are near.
func liveSessions(ctx context.Context, db *sql.DB, room string, told *[]int64) ([]waitroom.Session, error) {
	// Counting first sizes the slice once: a room of a million would
	// otherwise spend a quarter of its recovery growing it.
	var n int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM sessions WHERE room = ?`, room).Scan(&n); err != nil {
		return nil, fmt.Errorf("count sessions of room %q: %w", room, err)
	}
	rows, err := db.QueryContext(ctx, `SELECT ticket, id, key, status, joined_at, admitted_at, unit, place, extended, tier, contact, near FROM sessions WHERE room = ? ORDER BY ticket`, room)
	if err != nil {
		return nil, fmt.Errorf("read sessions of room %q: %w", room, err)
	}
	defer rows.Close()
	out := make([]waitroom.Session, 0, n)
	for rows.Next() {
		var x waitroom.Session
		var key sql.NullString
		var joined int64
		var admitted sql.NullInt64
		var status string
		var extended int64
		var contact sql.NullString
		var near bool
		if err := rows.Scan(&x.Ticket, &x.ID, &key, &status, &joined, &admitted, &x.Unit, &x.Place, &extended, &x.Tier, &contact, &near); err != nil {
			return nil, fmt.Errorf("read sessions of room %q: %w", room, err)
		}
		if near {
			*told = append(*told, x.Ticket)
		}
		x.Room, x.Key, x.Status, x.Contact = room, key.String, waitroom.Status(status), contact.String
		x.JoinedAt = time.UnixMilli(joined).UTC()
		x.Extended = time.Duration(extended) * time.Millisecond
		if admitted.Valid {
			x.AdmittedAt = time.UnixMilli(admitted.Int64).UTC()
		}
		out = append(out, x)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read sessions of room %q: %w", room, err)
	}
	return out, nil
}

// Ping implements waitroom.Store: the store is usable and the file readable.
func (s *Store) Ping(ctx context.Context) error {
	if err := s.mem.Ping(ctx); err != nil {
		return err
	}
	if err := s.rdb.PingContext(ctx); err != nil {
		return waitroom.Unavailable(err, "ping database")
	}
	return nil
}

// Close implements waitroom.Store: it refuses new operations, commits what
// is queued, closes the database and releases the lock.
func (s *Store) Close() error {
	s.once.Do(func() {
		s.mem.Close()
		s.w.close()
		s.closeErr = errors.Join(s.closeLedger(), s.w.conn.Close(), s.wdb.Close(), s.rdb.Close())
		s.release()
	})
	return s.closeErr
}

func (s *Store) release() {
	if s.wdb != nil && s.w == nil {
		s.wdb.Close()
	}
	if s.rdb != nil && s.w == nil {
		s.rdb.Close()
	}
	if s.lock != nil {
		s.lock.Close()
		s.lock = nil
	}
}

// archive reads ended sessions from the history table.
type archive struct{ db *sql.DB }

const historyColumns = `ticket, id, key, status, reason, joined_at, admitted_at, ended_at, seq`

func scanHistory(room string, sc interface{ Scan(...any) error }) (waitroom.Session, int64, error) {
	var x waitroom.Session
	var key sql.NullString
	var status, reason string
	var joined, ended, seq int64
	var admitted sql.NullInt64
	if err := sc.Scan(&x.Ticket, &x.ID, &key, &status, &reason, &joined, &admitted, &ended, &seq); err != nil {
		return x, 0, err
	}
	x.Ticket = max(x.Ticket, 0) // an entrant that ended before its draw had none
	x.Room, x.Key, x.Status, x.EndReason = room, key.String, waitroom.Status(status), waitroom.Reason(reason)
	x.Entry = entryOf(room, x.ID, x.Key)
	x.JoinedAt = time.UnixMilli(joined).UTC()
	x.EndedAt = time.UnixMilli(ended).UTC()
	if admitted.Valid {
		x.AdmittedAt = time.UnixMilli(admitted.Int64).UTC()
	}
	return x, seq, nil
}

// Find implements engine.Archive.
func (a archive) Find(ctx context.Context, room string, id waitroom.SessionID) (waitroom.Session, bool, error) {
	ticket := id.Ticket
	if ticket == 0 {
		ticket = -id.Entry // an entrant that ended before its draw
	}
	row := a.db.QueryRowContext(ctx, `SELECT `+historyColumns+` FROM history WHERE room = ? AND ticket = ? ORDER BY seq DESC LIMIT 1`, room, ticket)
	x, _, err := scanHistory(room, row)
	if errors.Is(err, sql.ErrNoRows) {
		return waitroom.Session{}, false, nil
	}
	if err != nil {
		return waitroom.Session{}, false, fmt.Errorf("find ended session: %w", err)
	}
	if subtle.ConstantTimeCompare([]byte(x.ID), []byte(id.String())) != 1 {
		return waitroom.Session{}, false, nil
	}
	return x, true, nil
}

// FindTicket implements engine.TicketArchive: an operator's lookup of an
// ended session by its ticket, without its secret.
func (a archive) FindTicket(ctx context.Context, room string, ticket int64) (waitroom.Session, bool, error) {
	row := a.db.QueryRowContext(ctx, `SELECT `+historyColumns+` FROM history WHERE room = ? AND ticket = ? ORDER BY seq DESC LIMIT 1`, room, ticket)
	x, _, err := scanHistory(room, row)
	if errors.Is(err, sql.ErrNoRows) {
		return waitroom.Session{}, false, nil
	}
	if err != nil {
		return waitroom.Session{}, false, fmt.Errorf("find ended session %d: %w", ticket, err)
	}
	return x, true, nil
}

// List implements engine.Archive.
func (a archive) List(ctx context.Context, room string, status waitroom.Status, page waitroom.Page) ([]waitroom.Session, string, error) {
	q := `SELECT ` + historyColumns + ` FROM history WHERE room = ?`
	args := []any{room}
	if status != "" {
		q += ` AND status = ?`
		args = append(args, string(status))
	}
	if page.After != "" {
		c, err := strconv.ParseInt(page.After, 10, 64)
		if err != nil || c < 1 {
			return nil, "", waitroom.Errorf(waitroom.CodeInvalidRequest, "The cursor %q is not one this server returned.", page.After)
		}
		q += ` AND seq < ?`
		args = append(args, c)
	}
	size := page.Size()
	q += ` ORDER BY seq DESC LIMIT ?`
	args = append(args, size+1)
	rows, err := a.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, "", fmt.Errorf("list history: %w", err)
	}
	defer rows.Close()
	out := make([]waitroom.Session, 0, min(size, 64))
	var seqs []int64
	for rows.Next() {
		x, seq, err := scanHistory(room, rows)
		if err != nil {
			return nil, "", fmt.Errorf("list history: %w", err)
		}
		out = append(out, x)
		seqs = append(seqs, seq)
	}
	if err := rows.Err(); err != nil {
		return nil, "", fmt.Errorf("list history: %w", err)
	}
	next := ""
	if len(out) > size {
		out = out[:size]
		next = strconv.FormatInt(seqs[size-1], 10)
	}
	return out, next, nil
}
