package sqlitestore

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/internal/engine"
)

// The webhook outbox, as a log. The group-commit writer appends the
// webhook messages of each room's events in a batch to hook_log, one row
// per room and batch, in the transaction that commits the changes: a
// change on disk always has its messages on disk, and a join pays for a
// few dozen bytes in a row it shares, not for a row of its own. Each
// webhook reads the log from its cursor (hook_cursor: every message of
// the room up to it is settled for that webhook); a delivery that fails
// becomes a row of hook_tasks (retries) and one given up on a row of
// hook_dead, and rows of the log every cursor has passed are deleted.
// Everything but the log rides the next group commit too (writer.exec),
// so nothing contends with the writer for SQLite's lock. Claims live in
// memory (outbox.go): one process holds the file, and when it dies its
// claims die with it, which is what a lapsed lease means anyway.

// hooksSchema is the outbox's tables. Times are unix milliseconds.
const hooksSchema = `
CREATE TABLE IF NOT EXISTS webhooks (
	room       TEXT NOT NULL,
	name       TEXT NOT NULL,
	json       TEXT NOT NULL, -- the waitroom.Webhook
	PRIMARY KEY (room, name)
) WITHOUT ROWID;

-- The messages of a room's events in one commit: first_mid..last_mid
-- (webhook-id msg_<room>_<mid>), one per line of msgs (loglines.go).
CREATE TABLE IF NOT EXISTS hook_log (
	id        INTEGER PRIMARY KEY,
	room      TEXT NOT NULL,
	first_mid INTEGER NOT NULL,
	last_mid  INTEGER NOT NULL,
	msgs      TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS hook_log_room ON hook_log (room, last_mid);

-- Per webhook: every message of the room up to mid is settled for it.
CREATE TABLE IF NOT EXISTS hook_cursor (
	room TEXT NOT NULL,
	hook TEXT NOT NULL,
	mid  INTEGER NOT NULL,
	PRIMARY KEY (room, hook)
) WITHOUT ROWID;

-- A delivery that failed, due again at next_at (or replayed).
CREATE TABLE IF NOT EXISTS hook_tasks (
	room       TEXT NOT NULL,
	hook       TEXT NOT NULL,
	mid        INTEGER NOT NULL,
	type       TEXT NOT NULL,
	at         INTEGER NOT NULL,
	data       TEXT NOT NULL,
	attempts   INTEGER NOT NULL,
	next_at    INTEGER NOT NULL,
	last_error TEXT NOT NULL,
	dead_at    INTEGER NOT NULL,
	replayed   INTEGER NOT NULL,
	PRIMARY KEY (room, hook, mid)
);

-- Dead letters: deliveries given up on (dead_at), until replayed.
CREATE TABLE IF NOT EXISTS hook_dead (
	room       TEXT NOT NULL,
	hook       TEXT NOT NULL,
	mid        INTEGER NOT NULL,
	type       TEXT NOT NULL,
	at         INTEGER NOT NULL,
	data       TEXT NOT NULL,
	attempts   INTEGER NOT NULL,
	next_at    INTEGER NOT NULL,
	last_error TEXT NOT NULL,
	dead_at    INTEGER NOT NULL,
	replayed   INTEGER NOT NULL,
	PRIMARY KEY (room, hook, mid)
);
CREATE INDEX IF NOT EXISTS hook_dead_newest ON hook_dead (room, dead_at, mid, hook);

CREATE TABLE IF NOT EXISTS hook_stats (
	room          TEXT NOT NULL,
	hook          TEXT NOT NULL,
	delivered     INTEGER NOT NULL DEFAULT 0,
	failed        INTEGER NOT NULL DEFAULT 0,
	last_error    TEXT NOT NULL DEFAULT '',
	last_error_at INTEGER NOT NULL DEFAULT 0,
	last_ok_at    INTEGER NOT NULL DEFAULT 0,
	PRIMARY KEY (room, hook)
) WITHOUT ROWID;

-- Per room, when an event last told that its closes_at had passed
-- (Event.Closed), so a restart does not tell it again.
CREATE TABLE IF NOT EXISTS closings (
	room      TEXT PRIMARY KEY,
	closed_at INTEGER NOT NULL
) WITHOUT ROWID;

-- Per room, the last message number given: kept when the room goes, so
-- no webhook-id is ever reused.
CREATE TABLE IF NOT EXISTS hook_seq (
	room TEXT PRIMARY KEY,
	last INTEGER NOT NULL
) WITHOUT ROWID;
`

// hookSub is what the writer needs of a webhook.
type hookSub struct {
	name   string
	events []string
}

func (h hookSub) wants(typ string) bool {
	return slices.Contains(h.events, typ) || slices.Contains(h.events, "*")
}

// hookRegistry is each room's webhooks as the writer reads them: an
// immutable map swapped whole on every change. Changes are made by the
// writer's goroutine only (in its transactions), so they follow the
// order of commits.
type hookRegistry struct {
	// puts serialises PutWebhook and DeleteWebhook (held while their
	// group commit runs; the writer never takes it).
	puts sync.Mutex
	subs atomic.Pointer[map[string][]hookSub]
}

func (r *hookRegistry) get(room string) []hookSub {
	m := r.subs.Load()
	if m == nil {
		return nil
	}
	return (*m)[room]
}

// set replaces room's webhooks (none: the room has none).
func (r *hookRegistry) set(room string, subs []hookSub) {
	old := r.subs.Load()
	m := make(map[string][]hookSub)
	if old != nil {
		for k, v := range *old {
			m[k] = v
		}
	}
	if len(subs) == 0 {
		delete(m, room)
	} else {
		m[room] = subs
	}
	r.subs.Store(&m)
}

// loadHooks reads every webhook, by room, and each room's last message
// number, at open.
func loadHooks(ctx context.Context, db *sql.DB) (map[string][]hookSub, map[string]int64, error) {
	if _, err := db.ExecContext(ctx, hooksSchema); err != nil {
		return nil, nil, fmt.Errorf("create webhook tables: %w", err)
	}
	rows, err := db.QueryContext(ctx, `SELECT room, json FROM webhooks ORDER BY room, name`)
	if err != nil {
		return nil, nil, fmt.Errorf("read webhooks: %w", err)
	}
	defer rows.Close()
	by := map[string][]hookSub{}
	for rows.Next() {
		var room, js string
		var w waitroom.Webhook
		if err := rows.Scan(&room, &js); err != nil {
			return nil, nil, fmt.Errorf("read webhooks: %w", err)
		}
		if err := json.Unmarshal([]byte(js), &w); err != nil {
			return nil, nil, fmt.Errorf("read webhook of room %q: %w", room, err)
		}
		by[room] = append(by[room], hookSub{w.Name, w.Events})
	}
	if err := rows.Err(); err != nil {
		return nil, nil, fmt.Errorf("read webhooks: %w", err)
	}
	seqs := map[string]int64{}
	srows, err := db.QueryContext(ctx, `SELECT room, last FROM hook_seq`)
	if err != nil {
		return nil, nil, fmt.Errorf("read the last webhook message numbers: %w", err)
	}
	defer srows.Close()
	for srows.Next() {
		var room string
		var last int64
		if err := srows.Scan(&room, &last); err != nil {
			return nil, nil, fmt.Errorf("read the last webhook message numbers: %w", err)
		}
		seqs[room] = last
	}
	return by, seqs, srows.Err()
}

// hookStatements are the writer's outbox statements.
var hookStatements = map[string]string{
	"putClosing": `INSERT INTO closings (room, closed_at) VALUES (?, ?) ON CONFLICT (room) DO UPDATE SET closed_at = excluded.closed_at`,
	"delClosing": `DELETE FROM closings WHERE room = ?`,
	"putLog":     `INSERT INTO hook_log (room, first_mid, last_mid, msgs) VALUES (?, ?, ?, ?)`,
	"putSeq":     `INSERT INTO hook_seq (room, last) VALUES (?, ?) ON CONFLICT (room) DO UPDATE SET last = max(last, excluded.last)`,
}

// roomHookTables are the tables a deleted room's webhooks go with.
var roomHookTables = []string{"webhooks", "hook_log", "hook_cursor", "hook_tasks", "hook_dead", "hook_stats"}

// logBuf is a room's messages of the batch being written.
type logBuf struct {
	first, last int64
	msgs        []byte
}

// outbox adds ev's messages to its room's log row of this batch. A
// deleted room's webhooks and outbox go with it.
func (w *writer) outbox(ctx context.Context, ev *waitroom.Event, msgs logLines) error {
	if len(w.hooks.get(ev.Room)) == 0 {
		return nil
	}
	if ev.Kind == waitroom.EventDeleted {
		delete(w.logs, ev.Room)
		for _, t := range roomHookTables {
			if _, err := w.conn.ExecContext(ctx, `DELETE FROM `+t+` WHERE room = ?`, ev.Room); err != nil {
				return fmt.Errorf("delete the webhooks of room %q: %w", ev.Room, err)
			}
		}
		w.hooks.set(ev.Room, nil)
		if w.roomGone != nil {
			w.roomGone(ev.Room)
		}
		return nil
	}
	if msgs.n == 0 {
		return nil
	}
	lb := w.logs[ev.Room]
	if lb == nil {
		lb = &logBuf{first: w.mids[ev.Room] + 1}
		w.logs[ev.Room] = lb
	}
	w.mids[ev.Room] += int64(msgs.n)
	lb.last = w.mids[ev.Room]
	lb.msgs = append(lb.msgs, msgs.b...)
	return nil
}

// flushLog writes the batch's log rows and message numbers.
func (w *writer) flushLog(ctx context.Context) error {
	for room, lb := range w.logs {
		if _, err := w.stmts["putLog"].ExecContext(ctx, room, lb.first, lb.last, string(lb.msgs)); err != nil {
			return fmt.Errorf("write the webhook log of room %q: %w", room, err)
		}
		if _, err := w.stmts["putSeq"].ExecContext(ctx, room, lb.last); err != nil {
			return fmt.Errorf("write the last webhook message number of room %q: %w", room, err)
		}
		delete(w.logs, room)
	}
	return nil
}

// hooksTx runs fn in the writer's next group commit.
func (s *Store) hooksTx(ctx context.Context, what string, fn func(*sql.Conn) error) error {
	if err := s.mem.Ping(ctx); err != nil {
		return err
	}
	err := s.w.exec(func(ctx context.Context, c *sql.Conn) error { return fn(c) })
	if err == nil {
		return nil
	}
	if code := waitroom.ErrorCode(err); code != "" && code != waitroom.CodeInternal && code != waitroom.CodeUnavailable {
		return err
	}
	return waitroom.Unavailable(err, "sqlitestore: "+what)
}

// PutWebhook implements waitroom.Hooks.
func (s *Store) PutWebhook(ctx context.Context, h waitroom.Webhook, now time.Time) (waitroom.Webhook, bool, error) {
	if err := h.Check(); err != nil {
		return waitroom.Webhook{}, false, err
	}
	if _, err := s.mem.Room(ctx, h.Room); err != nil {
		return waitroom.Webhook{}, false, err
	}
	reg := &s.w.hooks
	reg.puts.Lock()
	defer reg.puts.Unlock()
	var created bool
	err := s.hooksTx(ctx, "put a webhook", func(c *sql.Conn) error {
		// The room may have gone since: its deletion's event, written
		// before this, took its webhooks with it. (Not Room: it waits for
		// the room's latest change to be durable, which may be in the
		// very commit this runs in.)
		if !s.mem.HasRoom(h.Room) {
			return waitroom.RoomNotFound(h.Room)
		}
		all, err := roomHooks(ctx, c, h.Room)
		if err != nil {
			return err
		}
		i := slices.IndexFunc(all, func(w waitroom.Webhook) bool { return w.Name == h.Name })
		created = i < 0
		h.CreatedAt, h.UpdatedAt = now.UTC(), now.UTC()
		if created && len(all) >= waitroom.MaxWebhooks {
			return waitroom.Errorf(waitroom.CodeInvalidRequest, "Room %q has %d webhooks, the most a room may have.", h.Room, waitroom.MaxWebhooks)
		}
		if !created {
			h.CreatedAt = all[i].CreatedAt
			all[i] = h
		} else {
			all = append(all, h)
		}
		js, _ := json.Marshal(h)
		if _, err := c.ExecContext(ctx, `INSERT INTO webhooks (room, name, json) VALUES (?, ?, ?) ON CONFLICT (room, name) DO UPDATE SET json = excluded.json`, h.Room, h.Name, string(js)); err != nil {
			return err
		}
		if _, err := c.ExecContext(ctx, `INSERT OR IGNORE INTO hook_stats (room, hook) VALUES (?, ?)`, h.Room, h.Name); err != nil {
			return err
		}
		// A new webhook reads the log from the room's next message.
		if _, err := c.ExecContext(ctx, `INSERT OR IGNORE INTO hook_cursor (room, hook, mid) VALUES (?, ?, ?)`, h.Room, h.Name, s.w.mids[h.Room]); err != nil {
			return err
		}
		var subs []hookSub
		for _, w := range all {
			subs = append(subs, hookSub{w.Name, w.Events})
		}
		reg.set(h.Room, subs) // on the writer's goroutine, in commit order
		return nil
	})
	if err != nil {
		return waitroom.Webhook{}, false, err
	}
	return h, created, nil
}

// roomHooks reads room's webhooks, by name.
func roomHooks(ctx context.Context, q interface {
	QueryContext(context.Context, string, ...any) (*sql.Rows, error)
}, room string) ([]waitroom.Webhook, error) {
	rows, err := q.QueryContext(ctx, `SELECT json FROM webhooks WHERE room = ? ORDER BY name`, room)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []waitroom.Webhook
	for rows.Next() {
		var js string
		var w waitroom.Webhook
		if err := rows.Scan(&js); err != nil {
			return nil, err
		}
		if err := json.Unmarshal([]byte(js), &w); err != nil {
			return nil, fmt.Errorf("webhook of room %q: %w", room, err)
		}
		out = append(out, w)
	}
	return out, rows.Err()
}

// Webhooks implements waitroom.Hooks.
func (s *Store) Webhooks(ctx context.Context, room string) ([]waitroom.Webhook, error) {
	if err := s.mem.Ping(ctx); err != nil {
		return nil, err
	}
	out, err := roomHooks(ctx, s.rdb, room)
	if err != nil {
		return nil, waitroom.Unavailable(err, "sqlitestore: read webhooks")
	}
	return out, nil
}

// DeleteWebhook implements waitroom.Hooks.
func (s *Store) DeleteWebhook(ctx context.Context, room, name string) error {
	reg := &s.w.hooks
	reg.puts.Lock()
	defer reg.puts.Unlock()
	return s.hooksTx(ctx, "delete a webhook", func(c *sql.Conn) error {
		res, err := c.ExecContext(ctx, `DELETE FROM webhooks WHERE room = ? AND name = ?`, room, name)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return waitroom.Errorf(waitroom.CodeNotFound, "Room %q has no webhook %q.", room, name)
		}
		for _, t := range roomHookTables[2:] {
			if _, err := c.ExecContext(ctx, `DELETE FROM `+t+` WHERE room = ? AND hook = ?`, room, name); err != nil {
				return err
			}
		}
		s.ob.drop(room, name)
		all, err := roomHooks(ctx, c, room)
		if err != nil {
			return err
		}
		var subs []hookSub
		for _, w := range all {
			subs = append(subs, hookSub{w.Name, w.Events})
		}
		reg.set(room, subs)
		return nil
	})
}

// HookRooms implements waitroom.Hooks.
func (s *Store) HookRooms(ctx context.Context) ([]string, error) {
	if err := s.mem.Ping(ctx); err != nil {
		return nil, err
	}
	m := s.w.hooks.subs.Load()
	var out []string
	if m != nil {
		for room := range *m {
			out = append(out, room)
		}
	}
	slices.Sort(out)
	return out, nil
}

// loadClosings tells the restored rooms which closes_at an event already
// told: a room whose closes_at is at or before its last told closing.
func loadClosings(ctx context.Context, db *sql.DB, mem *engine.Store) error {
	rows, err := db.QueryContext(ctx, `SELECT room, closed_at FROM closings`)
	if err != nil {
		return fmt.Errorf("read closings: %w", err)
	}
	defer rows.Close()
	told := map[string]int64{}
	for rows.Next() {
		var room string
		var at int64
		if err := rows.Scan(&room, &at); err != nil {
			return fmt.Errorf("read closings: %w", err)
		}
		told[room] = at
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read closings: %w", err)
	}
	rows.Close()
	for room, at := range told {
		r, err := mem.Room(ctx, room)
		if err != nil || r.ClosesAt.IsZero() {
			continue
		}
		if c := r.ClosesAt.UnixMilli(); at >= c {
			mem.ClosedTold(room, c)
		}
	}
	return nil
}
