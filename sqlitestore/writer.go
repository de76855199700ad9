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

// batch is the changes committed together in one transaction.
type batch struct {
	events []*waitroom.Event
	// msgs holds, aligned with events, the webhook log lines of events of
	// rooms with webhooks (zero for the others, and nil while none has
	// any), made by the callers rather than the committer.
	msgs []logLines
	// ops run in the batch's transaction after its events (exec).
	ops []*batchOp
	// lead holds the one right to commit, passed from batch to batch: the
	// caller waiting on a batch who takes it writes the batch.
	lead chan struct{}
	done chan struct{} // closed once the batch is committed or failed
	err  error
}

func newBatch() *batch {
	return &batch{lead: make(chan struct{}, 1), done: make(chan struct{})}
}

// writer makes changes durable with group commit and no goroutine of its
// own. Events arrive in the order they happened (the engine appends them with
// the room locked) and gather in the current batch; one of the callers
// waiting on a batch commits it in one transaction while the next batch
// gathers, so one fsync serves every change that arrived during the
// previous one.
//
// The caller that commits is one of those waiting anyway. With a writer
// goroutine, that goroutine had to be woken for every commit, and the
// callers it woke after a commit sat queued behind it (about 0.5 ms on two
// cores) while it went straight back into fsync: at 256 connections the
// HTTP durable join went from 0.41-0.46x hello-world to 0.54-0.57x.
type writer struct {
	conn  *sql.Conn
	stmts map[string]*sql.Stmt
	// inserts holds new sessions not yet written: they go in multi-row
	// INSERTs, which cost far less per row than one statement each.
	inserts []any
	multi   map[int]*sql.Stmt // multi-row INSERT by row count
	// counted is each room's counts as last written (by the holder of the
	// right to commit only), so a batch that changes none writes none.
	counted map[string][4]int64
	// uses counts token uses written since the last pruning of expired
	// ones (by the holder of the right to commit only).
	uses int

	// hooks is each room's webhooks. mids is each room's last webhook
	// message number given and logs the batch's messages by room (both
	// by the holder of the right to commit only). roomGone is told of a
	// room with webhooks deleted (its outbox's claims go).
	hooks    hookRegistry
	mids     map[string]int64
	logs     map[string]*logBuf
	roomGone func(room string)

	mu       sync.Mutex
	cur      *batch // gathering
	inflight *batch // being committed, or nil
	busy     bool   // the right to commit is taken or waiting in cur.lead
	closed   bool
	commits  int // written only by the holder of the right to commit
}

var statements = map[string]string{
	"insSession": `INSERT INTO sessions (room, ticket, id, key, status, joined_at, admitted_at, unit, place, extended, tier, contact) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
	"admit":      `UPDATE sessions SET status = ?, admitted_at = ?, unit = ?, place = ?, extended = ? WHERE room = ? AND ticket = ?`,
	"requeue":    `UPDATE sessions SET status = 'waiting', admitted_at = NULL, unit = 0, place = ?, near = near OR ? WHERE room = ? AND ticket = ?`,
	"near":       `UPDATE sessions SET near = 1 WHERE room = ? AND ticket = ?`,
	"setUnit":    `UPDATE sessions SET unit = ? WHERE room = ? AND ticket = ?`,
	"delSession": `DELETE FROM sessions WHERE room = ? AND ticket = ?`,
	"insHistory": `INSERT INTO history (room, ticket, id, key, status, reason, joined_at, admitted_at, ended_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
	"putRoom":    `INSERT INTO rooms (name, config, updated_at) VALUES (?, ?, ?) ON CONFLICT (name) DO UPDATE SET config = excluded.config, updated_at = excluded.updated_at`,
	"delRoom":    `DELETE FROM rooms WHERE name = ?`,
	"delLive":    `DELETE FROM sessions WHERE room = ?`,
	"delHistory": `DELETE FROM history WHERE room = ?`,
	"putTicket":  `INSERT INTO tickets (room, last) VALUES (?, ?) ON CONFLICT (room) DO UPDATE SET last = max(last, excluded.last)`,
	"putRevision": `INSERT INTO tickets (room, last, revision) VALUES (?, 0, ?)
		ON CONFLICT (room) DO UPDATE SET revision = max(revision, excluded.revision)`,
	"putDraw": `INSERT INTO draws (room, seed, opens_at, drawn_at, first_ticket, digest) VALUES (?, ?, ?, ?, ?, ?)
		ON CONFLICT (room) DO UPDATE SET seed = excluded.seed, opens_at = excluded.opens_at, drawn_at = excluded.drawn_at,
		first_ticket = excluded.first_ticket, digest = excluded.digest`,
	"insEntrant": `INSERT INTO entrants (room, entry, id, key, joined_at, tier) VALUES (?, ?, ?, ?, ?, ?)`,
	"putUse": `INSERT INTO token_uses (room, kind, id, n, expires) VALUES (?1, ?2, ?3, 1, ?4)
		ON CONFLICT (room, kind, id) DO UPDATE SET
		n = CASE WHEN token_uses.expires <= ?5 THEN 1 ELSE token_uses.n + 1 END,
		expires = CASE WHEN token_uses.expires <= ?5 THEN excluded.expires ELSE max(token_uses.expires, excluded.expires) END`,
	"delUses":      `DELETE FROM token_uses WHERE room = ?`,
	"pruneUses":    `DELETE FROM token_uses WHERE room = ? AND expires <= ?`,
	"delEntrant":   `DELETE FROM entrants WHERE room = ? AND entry = ?`,
	"delEntrants":  `DELETE FROM entrants WHERE room = ?`,
	"insDrawEntry": `INSERT INTO draw_entries (room, ticket, entry_no, entry, value) VALUES (?, ?, ?, ?, ?)`,
	"delDraw":      `DELETE FROM draws WHERE room = ?`,
	"delDrawList":  `DELETE FROM draw_entries WHERE room = ?`,
	"putCounts": `INSERT INTO counts (room, admissions, inversions, max_admitted, sold) VALUES (?, ?, ?, ?, ?)
		ON CONFLICT (room) DO UPDATE SET admissions = excluded.admissions, inversions = excluded.inversions,
		max_admitted = excluded.max_admitted, sold = excluded.sold`,
	"delCounts": `DELETE FROM counts WHERE room = ?`,
	// Prepared too: parsing them for every commit showed in profiles.
	"begin":    `BEGIN IMMEDIATE`,
	"commit":   `COMMIT`,
	"rollback": `ROLLBACK`,
}

func newWriter(ctx context.Context, conn *sql.Conn) (*writer, error) {
	w := &writer{conn: conn, stmts: make(map[string]*sql.Stmt), multi: make(map[int]*sql.Stmt), mids: map[string]int64{}, logs: map[string]*logBuf{}, counted: make(map[string][4]int64), cur: newBatch()}
	for name, q := range hookStatements {
		st, err := conn.PrepareContext(ctx, q)
		if err != nil {
			return nil, fmt.Errorf("prepare %s: %w", name, err)
		}
		w.stmts[name] = st
	}
	for name, q := range statements {
		st, err := conn.PrepareContext(ctx, q)
		if err != nil {
			return nil, fmt.Errorf("prepare %s: %w", name, err)
		}
		w.stmts[name] = st
	}
	return w, nil
}

var errClosed = errors.New("store is closed")

// batchOp is a change that is not a store event (the webhook outbox's
// claims settled, webhooks put), run in a group commit's transaction
// under a savepoint of its own, so its failure is its caller's alone.
type batchOp struct {
	fn  func(ctx context.Context, c *sql.Conn) error
	err error
}

// exec runs fn in the transaction of the next group commit and returns
// once that is committed: fn's error, or the commit's.
func (w *writer) exec(fn func(ctx context.Context, c *sql.Conn) error) error {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return errClosed
	}
	b := w.cur
	op := &batchOp{fn: fn}
	b.ops = append(b.ops, op)
	if !w.busy {
		w.busy = true
		b.lead <- struct{}{}
	}
	w.mu.Unlock()
	if err := w.wait(b); err != nil {
		return err
	}
	return op.err
}

// runOps runs the batch's ops, each under a savepoint.
func (w *writer) runOps(ctx context.Context, ops []*batchOp) error {
	for _, op := range ops {
		if _, err := w.conn.ExecContext(ctx, `SAVEPOINT op`); err != nil {
			return fmt.Errorf("savepoint: %w", err)
		}
		if op.err = op.fn(ctx, w.conn); op.err != nil {
			if _, err := w.conn.ExecContext(ctx, `ROLLBACK TO op`); err != nil {
				return fmt.Errorf("rollback to savepoint: %w", err)
			}
		}
		if _, err := w.conn.ExecContext(ctx, `RELEASE op`); err != nil {
			return fmt.Errorf("release savepoint: %w", err)
		}
	}
	return nil
}

// Append implements engine.Journal. The function it returns may be
// called any number of times, from any goroutine.
func (w *writer) Append(ev *waitroom.Event) func() error {
	var msgs logLines
	if ev.Kind != waitroom.EventDeleted && len(w.hooks.get(ev.Room)) > 0 {
		evs := waitroom.HookEvents(*ev)
		msgs.b = make([]byte, 0, 128*len(evs)) // a session event's line is about 100 bytes
		for _, h := range evs {
			msgs.b = appendLogEvent(msgs.b, h)
			msgs.n++
		}
	}
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return func() error { return errClosed }
	}
	b := w.cur
	if msgs.n > 0 || b.msgs != nil {
		if b.msgs == nil {
			b.msgs = make([]logLines, len(b.events), cap(b.events))
		}
		b.msgs = append(b.msgs, msgs)
	}
	b.events = append(b.events, ev)
	if !w.busy {
		w.busy = true
		b.lead <- struct{}{}
	}
	w.mu.Unlock()
	return func() error { return w.wait(b) }
}

// wait returns once b is committed, committing it itself if it gets the
// right to.
func (w *writer) wait(b *batch) error {
	select {
	case <-b.done:
	case <-b.lead:
		w.commit(b)
	}
	return b.err
}

// commit writes b, which holds the right to commit and is the gathering
// batch, then passes the right on to the batch that gathered meanwhile.
func (w *writer) commit(b *batch) {
	w.mu.Lock()
	w.cur, w.inflight = newBatch(), b
	w.mu.Unlock()
	w.commits++
	// Whatever happens, b's callers hear of it and the right to commit
	// moves on: a panic here (net/http recovers them in handlers) must
	// not leave every later change waiting forever.
	defer w.handOn(b)
	defer func() {
		if r := recover(); r != nil {
			b.err = fmt.Errorf("commit panicked: %v", r)
			// Leave no transaction open for the next batch to trip on.
			_, _ = w.stmts["rollback"].ExecContext(context.Background())
		}
	}()
	b.err = w.write(b.events, b.msgs, b.ops)
}

// handOn finishes b and passes the right to commit to the batch that
// gathered while b was written.
func (w *writer) handOn(b *batch) {
	b.events, b.msgs, b.ops = nil, nil, nil
	close(b.done)
	w.mu.Lock()
	w.inflight = nil
	if len(w.cur.events) > 0 || len(w.cur.ops) > 0 {
		w.cur.lead <- struct{}{}
	} else {
		w.busy = false
	}
	w.mu.Unlock()
}

// write commits a batch in one transaction.
func (w *writer) write(events []*waitroom.Event, msgs []logLines, ops []*batchOp) (err error) {
	ctx := context.Background()
	if _, err := w.stmts["begin"].ExecContext(ctx); err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	defer func() {
		if err != nil {
			if _, rerr := w.stmts["rollback"].ExecContext(ctx); rerr != nil {
				err = errors.Join(err, fmt.Errorf("rollback: %w", rerr))
			}
		}
	}()
	w.inserts = w.inserts[:0]
	clear(w.logs)
	last := make(map[string]int64, 1)
	counts := make(map[string]*waitroom.Event, 1) // each room's latest event, nil after a delete
	for i, ev := range events {
		if err := w.event(ctx, ev); err != nil {
			return fmt.Errorf("write %s event of room %q: %w", ev.Kind, ev.Room, err)
		}
		var ms logLines
		if msgs != nil {
			ms = msgs[i]
		}
		if err := w.outbox(ctx, ev, ms); err != nil {
			return fmt.Errorf("write the webhook deliveries of room %q: %w", ev.Room, err)
		}
		if ev.LastTicket > last[ev.Room] {
			last[ev.Room] = ev.LastTicket
		}
		counts[ev.Room] = ev
		if ev.Kind == waitroom.EventDeleted {
			counts[ev.Room] = nil
		}
	}
	written := make(map[string][4]int64, len(counts))
	for room, ev := range counts {
		if ev == nil {
			written[room] = [4]int64{}
			continue
		}
		c := [4]int64{ev.Admissions, ev.Inversions, ev.MaxAdmitted, ev.Sold}
		if c == w.counted[room] {
			continue // unchanged (or all zero, which is no row): a batch of joins that admit nobody writes nothing here
		}
		if _, err := w.stmts["putCounts"].ExecContext(ctx, room, ev.Admissions, ev.Inversions, ev.MaxAdmitted, ev.Sold); err != nil {
			return fmt.Errorf("write counts of room %q: %w", room, err)
		}
		written[room] = c
	}
	if err := w.flush(ctx); err != nil {
		return err
	}
	if err := w.flushLog(ctx); err != nil {
		return err
	}
	if err := w.runOps(ctx, ops); err != nil {
		return err
	}
	for room, t := range last {
		if _, err := w.stmts["putTicket"].ExecContext(ctx, room, t); err != nil {
			return fmt.Errorf("write last ticket of room %q: %w", room, err)
		}
	}
	if _, err := w.stmts["commit"].ExecContext(ctx); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	for room, c := range written { // only once they are on disk
		w.counted[room] = c
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
	if len(ev.Units) > 0 {
		// The units may be of sessions still in the insert buffer.
		if err := w.flush(ctx); err != nil {
			return err
		}
	}
	for _, u := range ev.Units {
		if _, err := w.stmts["setUnit"].ExecContext(ctx, u.Unit, ev.Room, u.Ticket); err != nil {
			return fmt.Errorf("write the unit of session %d: %w", u.Ticket, err)
		}
	}
	for _, u := range ev.Uses {
		if _, err := w.stmts["putUse"].ExecContext(ctx, ev.Room, string(u.Kind), u.ID, u.Expires.UnixMilli(), ev.At.UnixMilli()); err != nil {
			return fmt.Errorf("write a use of %s %s: %w", u.Kind, u.ID, err)
		}
		// Every so many uses, the room's expired ones go, so the table
		// follows the tokens in use (a challenge per join would otherwise
		// keep a row per join until the next start).
		if w.uses++; w.uses >= pruneUsesEvery {
			w.uses = 0
			if _, err := w.stmts["pruneUses"].ExecContext(ctx, ev.Room, ev.At.UnixMilli()); err != nil {
				return fmt.Errorf("prune token uses: %w", err)
			}
		}
	}
	if ev.Closed {
		if _, err := w.stmts["putClosing"].ExecContext(ctx, ev.Room, ev.At.UnixMilli()); err != nil {
			return fmt.Errorf("write the closing: %w", err)
		}
	}
	if ev.Draw != nil && !deleted {
		if err := w.draw(ctx, ev.Room, ev.Draw); err != nil {
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
		if _, err := w.stmts["putRevision"].ExecContext(ctx, ev.Room, ev.Revision); err != nil {
			return fmt.Errorf("write the revision of room %q: %w", ev.Room, err)
		}
	case waitroom.EventDeleted:
		for _, st := range []string{"delRoom", "delLive", "delHistory", "delDraw", "delEntrants", "delDrawList", "delCounts", "delUses", "delClosing"} {
			if _, err := w.stmts[st].ExecContext(ctx, ev.Room); err != nil {
				return err
			}
		}
	}
	return nil
}

// pruneUsesEvery is how many token uses are written between prunings.
const pruneUsesEvery = 4096

// insertColumns is the number of values of one sessions row.
const insertColumns = 12

// maxInsertRows keeps a multi-row INSERT well under SQLite's limit of
// 32,766 bound values.
const maxInsertRows = 256

func (w *writer) change(ctx context.Context, c waitroom.Change, deleted bool) error {
	s := &c.Session
	if s.Ticket == 0 {
		return w.entrant(ctx, c, deleted)
	}
	if (c.From == "" && s.Status.Live()) || (c.From == waitroom.StatusWaiting && s.Status == waitroom.StatusWaiting && s.Place >= 0 && !c.Near) {
		// A new session, or an entrant the draw gave its ticket.
		w.inserts = append(w.inserts, s.Room, s.Ticket, s.ID, null(s.Key), string(s.Status), s.JoinedAt.UnixMilli(), nullTime(s.AdmittedAt), s.Unit, s.Place, s.Extended.Milliseconds(), s.Tier, null(s.Contact))
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
	case c.Near:
		// Told it is near: a restart must not tell it again.
		_, err := w.stmts["near"].ExecContext(ctx, s.Room, s.Ticket)
		return err
	case s.Status == waitroom.StatusActive || s.Status == waitroom.StatusInvited:
		// An admission, an invitation, a claim, or an extension.
		_, err := w.stmts["admit"].ExecContext(ctx, string(s.Status), s.AdmittedAt.UnixMilli(), s.Unit, s.Place, s.Extended.Milliseconds(), s.Room, s.Ticket)
		return err
	case s.Status == waitroom.StatusWaiting && c.From != "":
		// An operator's move: back from active or invited (QueueAll),
		// which counts as told it is near, or to the front.
		_, err := w.stmts["requeue"].ExecContext(ctx, s.Place, c.From != waitroom.StatusWaiting, s.Room, s.Ticket)
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

// insertStmt returns the prepared INSERT of n rows, preparing it on first
// use (at most maxInsertRows shapes).
func (w *writer) insertStmt(ctx context.Context, n int) (*sql.Stmt, error) {
	if st := w.multi[n]; st != nil {
		return st, nil
	}
	q := statements["insSession"] + strings.Repeat(", (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", n-1)
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

// close stops accepting events, commits what is gathered and waits for
// any commit under way.
func (w *writer) close() {
	w.mu.Lock()
	w.closed = true
	w.mu.Unlock()
	for {
		w.mu.Lock()
		b, gathered, inflight := w.cur, len(w.cur.events)+len(w.cur.ops), w.inflight
		w.mu.Unlock()
		switch {
		case gathered > 0:
			_ = w.wait(b)
		case inflight != nil:
			<-inflight.done
		default:
			for _, st := range w.stmts {
				st.Close()
			}
			for _, st := range w.multi {
				st.Close()
			}
			return
		}
	}
}
