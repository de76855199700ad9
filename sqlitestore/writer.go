package sqlitestore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/waitroom/waitroom"
)

// maxBatch bounds one transaction, so one commit never holds up a caller
// for long.
const maxBatch = 4096

// entry is one event waiting to be written.
type entry struct {
	ev   *waitroom.Event
	err  error
	done chan struct{}
}

// writer is the one goroutine that writes. Events arrive in the order they
// happened (memstore appends them with the room locked); the writer takes
// everything queued, writes it in one transaction and wakes every caller of
// that batch: group commit, so one fsync serves many changes.
type writer struct {
	conn  *sql.Conn
	stmts map[string]*sql.Stmt
	// inserts holds new sessions not yet written: they go in multi-row
	// INSERTs, which cost far less per row than one statement each.
	inserts []any
	multi   map[int]*sql.Stmt // multi-row INSERT by row count

	mu     sync.RWMutex // guards closed against sends on a closed ch
	closed bool
	ch     chan *entry
	exited chan struct{}
}

var statements = map[string]string{
	"insSession": `INSERT INTO sessions (room, ticket, id, key, status, joined_at, admitted_at) VALUES (?, ?, ?, ?, ?, ?, ?)`,
	"admit":      `UPDATE sessions SET status = 'active', admitted_at = ? WHERE room = ? AND ticket = ?`,
	"delSession": `DELETE FROM sessions WHERE room = ? AND ticket = ?`,
	"insHistory": `INSERT INTO history (room, ticket, id, key, status, reason, joined_at, admitted_at, ended_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
	"putRoom":    `INSERT INTO rooms (name, config, updated_at) VALUES (?, ?, ?) ON CONFLICT (name) DO UPDATE SET config = excluded.config, updated_at = excluded.updated_at`,
	"delRoom":    `DELETE FROM rooms WHERE name = ?`,
	"delLive":    `DELETE FROM sessions WHERE room = ?`,
	"delHistory": `DELETE FROM history WHERE room = ?`,
	"putTicket":  `INSERT INTO tickets (room, last) VALUES (?, ?) ON CONFLICT (room) DO UPDATE SET last = max(last, excluded.last)`,
}

func newWriter(ctx context.Context, conn *sql.Conn) (*writer, error) {
	w := &writer{conn: conn, stmts: make(map[string]*sql.Stmt), multi: make(map[int]*sql.Stmt), ch: make(chan *entry, maxBatch), exited: make(chan struct{})}
	for name, q := range statements {
		st, err := conn.PrepareContext(ctx, q)
		if err != nil {
			return nil, fmt.Errorf("prepare %s: %w", name, err)
		}
		w.stmts[name] = st
	}
	go w.run()
	return w, nil
}

var errClosed = errors.New("store is closed")

// Append implements memstore.Journal.
func (w *writer) Append(ev *waitroom.Event) func() error {
	e := &entry{ev: ev, done: make(chan struct{})}
	w.mu.RLock()
	if w.closed {
		w.mu.RUnlock()
		return func() error { return errClosed }
	}
	w.ch <- e
	w.mu.RUnlock()
	return func() error {
		<-e.done
		return e.err
	}
}

func (w *writer) run() {
	defer close(w.exited)
	batch := make([]*entry, 0, maxBatch)
	for e := range w.ch {
		batch = append(batch[:0], e)
	drain:
		for len(batch) < maxBatch {
			select {
			case e, ok := <-w.ch:
				if !ok {
					break drain
				}
				batch = append(batch, e)
			default:
				break drain
			}
		}
		err := w.write(batch)
		for _, e := range batch {
			e.err = err
			close(e.done)
		}
	}
}

// write commits a batch in one transaction.
func (w *writer) write(batch []*entry) (err error) {
	ctx := context.Background()
	if _, err := w.conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	defer func() {
		if err != nil {
			if _, rerr := w.conn.ExecContext(ctx, "ROLLBACK"); rerr != nil {
				err = errors.Join(err, fmt.Errorf("rollback: %w", rerr))
			}
		}
	}()
	w.inserts = w.inserts[:0]
	last := make(map[string]int64, 1)
	for _, e := range batch {
		if err := w.event(ctx, e.ev); err != nil {
			return fmt.Errorf("write %s event of room %q: %w", e.ev.Kind, e.ev.Room, err)
		}
		if e.ev.LastTicket > last[e.ev.Room] {
			last[e.ev.Room] = e.ev.LastTicket
		}
	}
	if err := w.flush(ctx); err != nil {
		return err
	}
	for room, t := range last {
		if _, err := w.stmts["putTicket"].ExecContext(ctx, room, t); err != nil {
			return fmt.Errorf("write last ticket of room %q: %w", room, err)
		}
	}
	if _, err := w.conn.ExecContext(ctx, "COMMIT"); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}

func (w *writer) event(ctx context.Context, ev *waitroom.Event) error {
	deleted := ev.Kind == waitroom.EventDeleted
	for _, c := range ev.Changes {
		if err := w.change(ctx, c, deleted); err != nil {
			return err
		}
	}
	switch ev.Kind {
	case waitroom.EventConfig:
		cfg, err := json.Marshal(ev.Config)
		if err != nil {
			return fmt.Errorf("encode config: %w", err)
		}
		if _, err := w.stmts["putRoom"].ExecContext(ctx, ev.Room, string(cfg), ev.At.UnixMilli()); err != nil {
			return err
		}
	case waitroom.EventDeleted:
		for _, st := range []string{"delRoom", "delLive", "delHistory"} {
			if _, err := w.stmts[st].ExecContext(ctx, ev.Room); err != nil {
				return err
			}
		}
	}
	return nil
}

// insertColumns is the number of values of one sessions row.
const insertColumns = 7

// maxInsertRows keeps a multi-row INSERT well under SQLite's limit of
// 32,766 bound values.
const maxInsertRows = 256

func (w *writer) change(ctx context.Context, c waitroom.Change, deleted bool) error {
	s := &c.Session
	if c.From == "" && s.Status.Live() {
		w.inserts = append(w.inserts, s.Room, s.Ticket, s.ID, null(s.Key), string(s.Status), s.JoinedAt.UnixMilli(), nullTime(s.AdmittedAt))
		if len(w.inserts) == maxInsertRows*insertColumns {
			return w.flush(ctx)
		}
		return nil
	}
	// Later statements may touch the rows being inserted: write them first.
	if err := w.flush(ctx); err != nil {
		return err
	}
	switch {
	case s.Status == waitroom.StatusActive:
		_, err := w.stmts["admit"].ExecContext(ctx, s.AdmittedAt.UnixMilli(), s.Room, s.Ticket)
		return err
	case s.Status.Final():
		if c.From != "" {
			if _, err := w.stmts["delSession"].ExecContext(ctx, s.Room, s.Ticket); err != nil {
				return err
			}
		}
		if deleted {
			return nil // the room's history goes with it
		}
		_, err := w.stmts["insHistory"].ExecContext(ctx, s.Room, s.Ticket, s.ID, null(s.Key), string(s.Status), string(s.EndReason), s.JoinedAt.UnixMilli(), nullTime(s.AdmittedAt), s.EndedAt.UnixMilli())
		return err
	}
	return fmt.Errorf("unexpected change of session %d from %q to %q", s.Ticket, c.From, s.Status)
}

// flush writes the buffered new sessions.
func (w *writer) flush(ctx context.Context) error {
	for len(w.inserts) > 0 {
		rows := min(len(w.inserts)/insertColumns, maxInsertRows)
		st, err := w.insertStmt(ctx, rows)
		if err != nil {
			return err
		}
		if _, err := st.ExecContext(ctx, w.inserts[:rows*insertColumns]...); err != nil {
			return fmt.Errorf("insert %d sessions: %w", rows, err)
		}
		w.inserts = w.inserts[rows*insertColumns:]
	}
	w.inserts = w.inserts[:0]
	return nil
}

// insertStmt returns the prepared INSERT of n rows. Sizes are rounded to a
// few prepared shapes: a power of two, and single rows for the rest.
func (w *writer) insertStmt(ctx context.Context, n int) (*sql.Stmt, error) {
	if st := w.multi[n]; st != nil {
		return st, nil
	}
	q := statements["insSession"] + strings.Repeat(", (?, ?, ?, ?, ?, ?, ?)", n-1)
	st, err := w.conn.PrepareContext(ctx, q)
	if err != nil {
		return nil, fmt.Errorf("prepare insert of %d rows: %w", n, err)
	}
	w.multi[n] = st
	return st, nil
}

func null(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func nullTime(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UnixMilli()
}

// close stops accepting events, writes what is queued and waits for the
// writer to finish.
func (w *writer) close() {
	w.mu.Lock()
	if !w.closed {
		w.closed = true
		close(w.ch)
	}
	w.mu.Unlock()
	<-w.exited
	for _, st := range w.stmts {
		st.Close()
	}
	for _, st := range w.multi {
		st.Close()
	}
}
