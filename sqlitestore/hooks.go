package sqlitestore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/waitroom/waitroom"
)

// The webhook outbox. The group-commit writer turns the events of a room
// with webhooks into deliveries (one row per message and endpoint) in the
// transaction that commits the change, so a change on disk always has its
// deliveries on disk. Everything else that writes (webhooks put and
// deleted, outcomes, replays) rides the next group commit too (writer.exec),
// so it never contends with the writer for SQLite's lock. Claims live in
// memory: one process holds the file, and when it dies its claims die with
// it, which is what a lapsed lease means anyway.

var _ waitroom.Hooks = (*Store)(nil)

// hooksSchema is the outbox's tables. Times are unix milliseconds.
const hooksSchema = `
CREATE TABLE IF NOT EXISTS webhooks (
	room       TEXT NOT NULL,
	name       TEXT NOT NULL,
	json       TEXT NOT NULL, -- the waitroom.Webhook
	PRIMARY KEY (room, name)
) WITHOUT ROWID;

-- One delivery of message mid (webhook-id msg_<mid>) to webhook hook,
-- due at next_at. Rows are appended in rowid order and found by the one
-- small index: a WITHOUT ROWID table keyed by (room, hook, mid) costs
-- more, its wide rows splitting pages on every insert.
CREATE TABLE IF NOT EXISTS hook_tasks (
	id         INTEGER PRIMARY KEY,
	room       TEXT NOT NULL,
	hook       TEXT NOT NULL,
	mid        INTEGER NOT NULL,
	type       TEXT NOT NULL,
	at         INTEGER NOT NULL,
	data       TEXT NOT NULL,
	attempts   INTEGER NOT NULL DEFAULT 0,
	next_at    INTEGER NOT NULL,
	last_error TEXT NOT NULL DEFAULT '',
	dead_at    INTEGER NOT NULL DEFAULT 0,
	replayed   INTEGER NOT NULL DEFAULT 0
);
CREATE UNIQUE INDEX IF NOT EXISTS hook_tasks_key ON hook_tasks (room, hook, mid);
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
) WITHOUT ROWID;
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

-- The last message number given: webhook-ids are never reused.
CREATE TABLE IF NOT EXISTS hook_seq (
	id   INTEGER PRIMARY KEY CHECK (id = 1),
	last INTEGER NOT NULL
);
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

// loadHooks reads every webhook, by room, and the last message number,
// at open.
func loadHooks(ctx context.Context, db *sql.DB) (map[string][]hookSub, int64, error) {
	if _, err := db.ExecContext(ctx, hooksSchema); err != nil {
		return nil, 0, fmt.Errorf("create webhook tables: %w", err)
	}
	rows, err := db.QueryContext(ctx, `SELECT room, json FROM webhooks ORDER BY room, name`)
	if err != nil {
		return nil, 0, fmt.Errorf("read webhooks: %w", err)
	}
	defer rows.Close()
	by := map[string][]hookSub{}
	for rows.Next() {
		var room, js string
		var w waitroom.Webhook
		if err := rows.Scan(&room, &js); err != nil {
			return nil, 0, fmt.Errorf("read webhooks: %w", err)
		}
		if err := json.Unmarshal([]byte(js), &w); err != nil {
			return nil, 0, fmt.Errorf("read webhook of room %q: %w", room, err)
		}
		by[room] = append(by[room], hookSub{w.Name, w.Events})
	}
	if err := rows.Err(); err != nil {
		return nil, 0, fmt.Errorf("read webhooks: %w", err)
	}
	var last int64
	err = db.QueryRowContext(ctx, `SELECT last FROM hook_seq WHERE id = 1`).Scan(&last)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return nil, 0, fmt.Errorf("read the last webhook message number: %w", err)
	}
	return by, last, nil
}

// hookStatements are the writer's outbox statements.
var hookStatements = map[string]string{
	"putSeq":    `INSERT INTO hook_seq (id, last) VALUES (1, ?) ON CONFLICT (id) DO UPDATE SET last = max(last, excluded.last)`,
	"delHooks":  `DELETE FROM webhooks WHERE room = ?`,
	"delTasks":  `DELETE FROM hook_tasks WHERE room = ?`,
	"delDead":   `DELETE FROM hook_dead WHERE room = ?`,
	"delHStats": `DELETE FROM hook_stats WHERE room = ?`,
}

// outbox writes ev's deliveries in the writer's transaction. A deleted
// room's webhooks and deliveries go with it.
func (w *writer) outbox(ctx context.Context, ev *waitroom.Event, msgs []waitroom.HookMessage) error {
	subs := w.hooks.get(ev.Room)
	if len(subs) == 0 {
		return nil
	}
	if ev.Kind == waitroom.EventDeleted {
		if err := w.flushTasks(ctx); err != nil {
			return err
		}
		for _, st := range []string{"delHooks", "delTasks", "delDead", "delHStats"} {
			if _, err := w.stmts[st].ExecContext(ctx, ev.Room); err != nil {
				return fmt.Errorf("delete the webhooks of room %q: %w", ev.Room, err)
			}
		}
		w.hooks.set(ev.Room, nil)
		return nil
	}
	for _, m := range msgs {
		w.mid++
		at := m.At.UnixMilli()
		for _, h := range subs {
			if !h.wants(m.Type) {
				continue
			}
			w.tasks = append(w.tasks, ev.Room, h.name, w.mid, m.Type, at, string(m.Data), at)
			if len(w.tasks) == maxTaskRows*taskInsertColumns {
				if err := w.flushTasks(ctx); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// taskInsertColumns is the number of values of one hook_tasks row, and
// maxTaskRows the most rows of one INSERT.
const (
	taskInsertColumns = 7
	maxTaskRows       = 256
)

// flushTasks writes the gathered deliveries in multi-row INSERTs.
func (w *writer) flushTasks(ctx context.Context) error {
	for len(w.tasks) > 0 {
		rows := min(len(w.tasks)/taskInsertColumns, maxTaskRows)
		st := w.taskMulti[rows]
		if st == nil {
			q := `INSERT OR IGNORE INTO hook_tasks (room, hook, mid, type, at, data, next_at) VALUES (?, ?, ?, ?, ?, ?, ?)` +
				strings.Repeat(", (?, ?, ?, ?, ?, ?, ?)", rows-1)
			var err error
			if st, err = w.conn.PrepareContext(ctx, q); err != nil {
				return fmt.Errorf("prepare insert of %d deliveries: %w", rows, err)
			}
			w.taskMulti[rows] = st
		}
		if _, err := st.ExecContext(ctx, w.tasks[:rows*taskInsertColumns]...); err != nil {
			return fmt.Errorf("insert %d deliveries: %w", rows, err)
		}
		w.tasks = w.tasks[rows*taskInsertColumns:]
	}
	w.tasks = w.tasks[:0]
	return nil
}

// hooksTx runs fn in the writer's next group commit.
func (s *Store) hooksTx(ctx context.Context, what string, fn func(*sql.Conn) error) error {
	if err := s.Store.Ping(ctx); err != nil {
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

// claims are the deliveries claimed in this process: room, webhook and
// message number → claimed until (unix ms).
type claims struct {
	mu sync.Mutex
	m  map[claimKey]int64
}

type claimKey struct {
	room, hook string
	mid        int64
}

// PutWebhook implements waitroom.Hooks.
func (s *Store) PutWebhook(ctx context.Context, h waitroom.Webhook, now time.Time) (waitroom.Webhook, bool, error) {
	if err := h.Check(); err != nil {
		return waitroom.Webhook{}, false, err
	}
	if _, err := s.Store.Room(ctx, h.Room); err != nil {
		return waitroom.Webhook{}, false, err
	}
	reg := &s.w.hooks
	reg.puts.Lock()
	defer reg.puts.Unlock()
	var created bool
	err := s.hooksTx(ctx, "put a webhook", func(c *sql.Conn) error {
		// The room may have gone since: its deletion's event, written
		// before this, took its webhooks with it.
		if _, err := s.Store.Room(ctx, h.Room); err != nil {
			return err
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
	if err := s.Store.Ping(ctx); err != nil {
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
		for _, q := range []string{`DELETE FROM hook_tasks WHERE room = ? AND hook = ?`, `DELETE FROM hook_dead WHERE room = ? AND hook = ?`, `DELETE FROM hook_stats WHERE room = ? AND hook = ?`} {
			if _, err := c.ExecContext(ctx, q, room, name); err != nil {
				return err
			}
		}
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
	if err := s.Store.Ping(ctx); err != nil {
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

const taskColumns = `hook, mid, type, at, data, attempts, next_at, last_error, dead_at, replayed`

func scanTask(room string, sc interface{ Scan(...any) error }) (waitroom.Delivery, int64, error) {
	var d waitroom.Delivery
	var mid, at, next, dead, replayed int64
	var data string
	if err := sc.Scan(&d.Hook, &mid, &d.Message.Type, &at, &data, &d.Attempts, &next, &d.LastError, &dead, &replayed); err != nil {
		return d, 0, err
	}
	d.Room = room
	d.Message.ID = "msg_" + strconv.FormatInt(mid, 10)
	d.Message.At = time.UnixMilli(at).UTC()
	d.Message.Data = json.RawMessage(data)
	if replayed > 0 {
		d.Replayed = time.UnixMilli(replayed).UTC()
	}
	if dead > 0 {
		d.DeadAt = time.UnixMilli(dead).UTC()
	} else {
		d.NextAt = time.UnixMilli(next).UTC()
	}
	return d, mid, nil
}

// ClaimDeliveries implements waitroom.Hooks. It reads the due rows and
// skips those claimed here; a claim is not written.
func (s *Store) ClaimDeliveries(ctx context.Context, room, hook string, now time.Time, lease time.Duration, n int) ([]waitroom.Delivery, error) {
	if err := s.Store.Ping(ctx); err != nil {
		return nil, err
	}
	if n <= 0 || len(s.w.hooks.get(room)) == 0 {
		return nil, nil
	}
	c := &s.claims
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[claimKey]int64{}
	}
	t := now.UnixMilli()
	held := 0
	for k, until := range c.m {
		switch {
		case until <= t:
			delete(c.m, k)
		case k.room == room && (hook == "" || k.hook == hook):
			held++
		}
	}
	q := `SELECT ` + taskColumns + ` FROM hook_tasks WHERE room = ? AND hook = ? AND next_at <= ? ORDER BY mid LIMIT ?`
	args := []any{room, hook, t, n + held}
	if hook == "" {
		q = `SELECT ` + taskColumns + ` FROM hook_tasks WHERE room = ? AND next_at <= ? ORDER BY mid, hook LIMIT ?`
		args = []any{room, t, n + held}
	}
	rows, err := s.rdb.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, waitroom.Unavailable(err, "sqlitestore: claim deliveries")
	}
	defer rows.Close()
	var out []waitroom.Delivery
	until := now.Add(lease).UnixMilli()
	for rows.Next() && len(out) < n {
		d, mid, err := scanTask(room, rows)
		if err != nil {
			return nil, waitroom.Unavailable(err, "sqlitestore: claim deliveries")
		}
		k := claimKey{room, d.Hook, mid}
		if _, ok := c.m[k]; ok {
			continue
		}
		c.m[k] = until
		out = append(out, d)
	}
	if err := rows.Err(); err != nil {
		return nil, waitroom.Unavailable(err, "sqlitestore: claim deliveries")
	}
	return out, nil
}

// unclaim forgets the claims of settled deliveries.
func (s *Store) unclaim(room string, outs []waitroom.DeliveryOutcome) {
	c := &s.claims
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, o := range outs {
		if mid, ok := messageNumber(o.ID); ok {
			delete(c.m, claimKey{room, o.Hook, mid})
		}
	}
}

// messageNumber parses a message ID this store gave.
func messageNumber(id string) (int64, bool) {
	n, err := strconv.ParseInt(strings.TrimPrefix(id, "msg_"), 10, 64)
	return n, err == nil && strings.HasPrefix(id, "msg_") && n > 0
}

// SettleDeliveries implements waitroom.Hooks.
func (s *Store) SettleDeliveries(ctx context.Context, room string, outs []waitroom.DeliveryOutcome, now time.Time) error {
	if len(outs) == 0 {
		return nil
	}
	t := now.UnixMilli()
	defer s.unclaim(room, outs)
	return s.hooksTx(ctx, "settle deliveries", func(c *sql.Conn) error {
		for _, o := range outs {
			mid, ok := messageNumber(o.ID)
			if !ok {
				continue
			}
			var res sql.Result
			var err error
			switch {
			case o.OK:
				res, err = c.ExecContext(ctx, `DELETE FROM hook_tasks WHERE room = ? AND hook = ? AND mid = ?`, room, o.Hook, mid)
			case o.Dead:
				res, err = c.ExecContext(ctx, `INSERT INTO hook_dead SELECT room, hook, mid, type, at, data, attempts + 1, next_at, ?, ?, replayed
					FROM hook_tasks WHERE room = ? AND hook = ? AND mid = ?`, o.Error, t, room, o.Hook, mid)
				if err == nil {
					_, err = c.ExecContext(ctx, `DELETE FROM hook_tasks WHERE room = ? AND hook = ? AND mid = ?`, room, o.Hook, mid)
				}
			default:
				res, err = c.ExecContext(ctx, `UPDATE hook_tasks SET attempts = attempts + 1, last_error = ?, next_at = ? WHERE room = ? AND hook = ? AND mid = ?`,
					o.Error, o.Next.UnixMilli(), room, o.Hook, mid)
			}
			if err != nil {
				return err
			}
			if n, _ := res.RowsAffected(); n == 0 {
				continue
			}
			if o.OK {
				_, err = c.ExecContext(ctx, `UPDATE hook_stats SET delivered = delivered + 1, last_ok_at = ? WHERE room = ? AND hook = ?`, t, room, o.Hook)
			} else {
				_, err = c.ExecContext(ctx, `UPDATE hook_stats SET failed = failed + 1, last_error = ?, last_error_at = ? WHERE room = ? AND hook = ?`, o.Error, t, room, o.Hook)
			}
			if err != nil {
				return err
			}
		}
		return nil
	})
}

// DeadLetters implements waitroom.Hooks. The cursor is the last letter's
// dead time, message number and webhook.
func (s *Store) DeadLetters(ctx context.Context, room string, page waitroom.Page) ([]waitroom.Delivery, string, error) {
	if err := s.Store.Ping(ctx); err != nil {
		return nil, "", err
	}
	q := `SELECT ` + taskColumns + ` FROM hook_dead WHERE room = ?`
	args := []any{room}
	if page.After != "" {
		var at, mid int64
		var hook string
		if _, err := fmt.Sscanf(page.After, "%d.%d.%s", &at, &mid, &hook); err != nil {
			return nil, "", waitroom.Errorf(waitroom.CodeInvalidRequest, "Cursor %q is not one this listing gave.", page.After)
		}
		q += ` AND (dead_at, mid, hook) < (?, ?, ?)`
		args = append(args, at, mid, hook)
	}
	size := page.Size()
	q += ` ORDER BY dead_at DESC, mid DESC, hook DESC LIMIT ?`
	args = append(args, size+1)
	rows, err := s.rdb.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, "", waitroom.Unavailable(err, "sqlitestore: read dead letters")
	}
	defer rows.Close()
	var out []waitroom.Delivery
	var mids []int64
	for rows.Next() {
		d, mid, err := scanTask(room, rows)
		if err != nil {
			return nil, "", waitroom.Unavailable(err, "sqlitestore: read dead letters")
		}
		out = append(out, d)
		mids = append(mids, mid)
	}
	if err := rows.Err(); err != nil {
		return nil, "", waitroom.Unavailable(err, "sqlitestore: read dead letters")
	}
	next := ""
	if len(out) > size {
		out = out[:size]
		l := out[size-1]
		next = fmt.Sprintf("%d.%d.%s", l.DeadAt.UnixMilli(), mids[size-1], l.Hook)
	}
	return out, next, nil
}

// ReplayDeadLetters implements waitroom.Hooks.
func (s *Store) ReplayDeadLetters(ctx context.Context, room string, ids []string, now time.Time) (int, error) {
	n := 0
	err := s.hooksTx(ctx, "replay dead letters", func(c *sql.Conn) error {
		const move = `INSERT INTO hook_tasks (room, hook, mid, type, at, data, attempts, next_at, last_error, dead_at, replayed)
			SELECT room, hook, mid, type, at, data, 0, ?1, '', 0, ?1 FROM hook_dead WHERE room = ?2`
		const drop = `DELETE FROM hook_dead WHERE room = ?2`
		replay := func(cond string, args ...any) error {
			res, err := c.ExecContext(ctx, move+cond, args...)
			if err != nil {
				return err
			}
			k, _ := res.RowsAffected()
			n += int(k)
			_, err = c.ExecContext(ctx, drop+cond, args...)
			return err
		}
		if len(ids) == 0 {
			return replay("", now.UnixMilli(), room)
		}
		for _, id := range ids {
			if mid, ok := messageNumber(id); ok {
				if err := replay(` AND mid = ?3`, now.UnixMilli(), room, mid); err != nil {
					return err
				}
			}
		}
		return nil
	})
	return n, err
}

// HookStats implements waitroom.Hooks.
func (s *Store) HookStats(ctx context.Context, room string) (map[string]waitroom.HookStats, error) {
	if err := s.Store.Ping(ctx); err != nil {
		return nil, err
	}
	out := map[string]waitroom.HookStats{}
	rows, err := s.rdb.QueryContext(ctx, `SELECT hook, delivered, failed, last_error, last_error_at, last_ok_at,
		(SELECT count(*) FROM hook_tasks t WHERE t.room = s.room AND t.hook = s.hook),
		(SELECT count(*) FROM hook_dead t WHERE t.room = s.room AND t.hook = s.hook)
		FROM hook_stats s WHERE room = ?`, room)
	if err != nil {
		return nil, waitroom.Unavailable(err, "sqlitestore: read webhook stats")
	}
	defer rows.Close()
	for rows.Next() {
		var name string
		var st waitroom.HookStats
		var errAt, okAt int64
		if err := rows.Scan(&name, &st.Delivered, &st.Failed, &st.LastError, &errAt, &okAt, &st.Pending, &st.Dead); err != nil {
			return nil, waitroom.Unavailable(err, "sqlitestore: read webhook stats")
		}
		if errAt > 0 {
			st.LastErrorAt = time.UnixMilli(errAt).UTC()
		}
		if okAt > 0 {
			st.LastDelivered = time.UnixMilli(okAt).UTC()
		}
		out[name] = st
	}
	return out, rows.Err()
}
