package sqlitestore

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/waitroom/waitroom"
)

// outbox is each webhook's place in its room's log, and the claims of
// this process. Its lock is never held while waiting for the writer (the
// writer calls roomGone and drop, which take it).
type outbox struct {
	mu      sync.Mutex
	cursors map[roomHook]*cursor
}

type roomHook struct{ room, hook string }

// cursor is one webhook's reading of its room's log.
type cursor struct {
	done int64 // every message up to done is settled (as on disk once written)
	sent int64 // the last message read from the log (≥ done)
	// settled holds messages in (done, sent] settled out of order, or
	// skipped (a type the webhook does not want).
	settled map[int64]bool
	// inflight holds messages read from the log and claimed, not settled.
	inflight map[int64]*flight
	// retries holds the claims of rows of hook_tasks: mid → until (ms).
	retries map[int64]int64
}

type flight struct {
	until int64
	d     waitroom.Delivery
}

// roomGone forgets a deleted room's cursors (the writer calls it).
func (o *outbox) roomGone(room string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for k := range o.cursors {
		if k.room == room {
			delete(o.cursors, k)
		}
	}
}

// drop forgets a deleted webhook's cursor (the writer calls it).
func (o *outbox) drop(room, hook string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	delete(o.cursors, roomHook{room, hook})
}

// cursor returns webhook hook of room's cursor, read from disk the first
// time; nil when it has none (no such webhook).
func (s *Store) cursor(ctx context.Context, room, hook string) (*cursor, error) {
	k := roomHook{room, hook}
	if c := s.ob.cursors[k]; c != nil {
		return c, nil
	}
	var mid int64
	err := s.rdb.QueryRowContext(ctx, `SELECT mid FROM hook_cursor WHERE room = ? AND hook = ?`, room, hook).Scan(&mid)
	if err == sql.ErrNoRows {
		return nil, nil
	}
	if err != nil {
		return nil, waitroom.Unavailable(err, "sqlitestore: read a webhook's cursor")
	}
	if s.ob.cursors == nil {
		s.ob.cursors = map[roomHook]*cursor{}
	}
	c := &cursor{done: mid, sent: mid, settled: map[int64]bool{}, inflight: map[int64]*flight{}, retries: map[int64]int64{}}
	s.ob.cursors[k] = c
	return c, nil
}

// advance moves done over the settled messages that follow it.
func (c *cursor) advance() {
	for c.settled[c.done+1] {
		delete(c.settled, c.done+1)
		c.done++
	}
}

// messageID is the webhook-id of message mid of room.
func messageID(room string, mid int64) string {
	return "msg_" + room + "_" + strconv.FormatInt(mid, 10)
}

// messageNumber parses a message ID of room this store gave.
func messageNumber(room, id string) (int64, bool) {
	rest, ok := strings.CutPrefix(id, "msg_"+room+"_")
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(rest, 10, 64)
	return n, err == nil && n > 0
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
	d.Message.ID = messageID(room, mid)
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

// ClaimDeliveries implements waitroom.Hooks: due retries first, then
// claims that lapsed, then messages read on from the webhook's place in
// the log. A claim is not written.
func (s *Store) ClaimDeliveries(ctx context.Context, room, hook string, now time.Time, lease time.Duration, n int) ([]waitroom.Delivery, error) {
	if err := s.mem.Ping(ctx); err != nil {
		return nil, err
	}
	subs := s.w.hooks.get(room)
	if n <= 0 || len(subs) == 0 {
		return nil, nil
	}
	s.ob.mu.Lock()
	defer s.ob.mu.Unlock()
	var out []waitroom.Delivery
	for _, h := range subs {
		if (hook != "" && h.name != hook) || len(out) >= n {
			continue
		}
		ds, err := s.claim(ctx, room, h, now, lease, n-len(out))
		if err != nil {
			return out, err
		}
		out = append(out, ds...)
	}
	return out, nil
}

// claim claims up to n of one webhook's deliveries; s.ob.mu is held.
func (s *Store) claim(ctx context.Context, room string, h hookSub, now time.Time, lease time.Duration, n int) ([]waitroom.Delivery, error) {
	c, err := s.cursor(ctx, room, h.name)
	if err != nil || c == nil {
		return nil, err
	}
	t, until := now.UnixMilli(), now.Add(lease).UnixMilli()
	var out []waitroom.Delivery
	// Retries that are due.
	held := 0
	for mid, u := range c.retries {
		if u <= t {
			delete(c.retries, mid)
		} else {
			held++
		}
	}
	rows, err := s.rdb.QueryContext(ctx, `SELECT `+taskColumns+` FROM hook_tasks WHERE room = ? AND hook = ? AND next_at <= ? ORDER BY mid LIMIT ?`,
		room, h.name, t, n+held)
	if err != nil {
		return nil, waitroom.Unavailable(err, "sqlitestore: claim deliveries")
	}
	for rows.Next() && len(out) < n {
		d, mid, err := scanTask(room, rows)
		if err != nil {
			rows.Close()
			return nil, waitroom.Unavailable(err, "sqlitestore: claim deliveries")
		}
		if _, claimed := c.retries[mid]; !claimed {
			c.retries[mid] = until
			out = append(out, d)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, waitroom.Unavailable(err, "sqlitestore: claim deliveries")
	}
	// Claims that lapsed, oldest first.
	var lapsed []int64
	for mid, f := range c.inflight {
		if f.until <= t {
			lapsed = append(lapsed, mid)
		}
	}
	slices.Sort(lapsed)
	for _, mid := range lapsed {
		if len(out) >= n {
			break
		}
		f := c.inflight[mid]
		f.until = until
		out = append(out, f.d)
	}
	// Read on in the log, up to now (a room's messages are in time order).
	future := false
	for len(out) < n && !future {
		rows, err := s.rdb.QueryContext(ctx, `SELECT first_mid, msgs FROM hook_log WHERE room = ? AND last_mid > ? ORDER BY last_mid LIMIT 16`, room, c.sent)
		if err != nil {
			return nil, waitroom.Unavailable(err, "sqlitestore: read the webhook log")
		}
		read := 0
		for !future && len(out) < n && rows.Next() {
			read++
			var first int64
			var msgs []byte
			if err := rows.Scan(&first, &msgs); err != nil {
				rows.Close()
				return nil, waitroom.Unavailable(err, "sqlitestore: read the webhook log")
			}
			for mid := first; len(msgs) > 0 && len(out) < n; mid++ {
				var line []byte
				line, msgs, _ = bytes.Cut(msgs, []byte{'\n'})
				if mid <= c.sent {
					continue
				}
				if at, ok := logLineAt(line); ok && at > t {
					future = true
					break
				}
				c.sent = mid
				if !h.wants(logLineType(line)) {
					c.settled[mid] = true
					continue
				}
				m, ok := parseLogLine(room, line)
				if !ok {
					c.settled[mid] = true
					continue
				}
				m.ID = messageID(room, mid)
				d := waitroom.Delivery{Room: room, Hook: h.name, Message: m, NextAt: m.At}
				c.inflight[mid] = &flight{until: until, d: d}
				out = append(out, d)
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, waitroom.Unavailable(err, "sqlitestore: read the webhook log")
		}
		if read == 0 {
			break
		}
	}
	c.advance()
	return out, nil
}

// settleWrite is one change SettleDeliveries writes.
type settleWrite struct {
	q    string
	args []any
	// stat, when set, is the stats update to make if q changed a row
	// (always, when q is empty).
	stat *settleWrite
}

// SettleDeliveries implements waitroom.Hooks. A message read from the log
// is settled in memory and, once every message before it is too, by
// moving the webhook's cursor; one that failed becomes a retry row, one
// given up on a dead letter. Retry rows are updated or deleted.
func (s *Store) SettleDeliveries(ctx context.Context, room string, outs []waitroom.DeliveryOutcome, now time.Time) error {
	if len(outs) == 0 {
		return nil
	}
	t := now.UnixMilli()
	var writes []settleWrite
	moved := map[string]int64{}
	s.ob.mu.Lock()
	for _, o := range outs {
		mid, ok := messageNumber(room, o.ID)
		if !ok {
			continue
		}
		c, err := s.cursor(ctx, room, o.Hook)
		if err != nil {
			s.ob.mu.Unlock()
			return err
		}
		if c == nil {
			continue
		}
		stat := &settleWrite{q: `UPDATE hook_stats SET failed = failed + 1, last_error = ?, last_error_at = ? WHERE room = ? AND hook = ?`,
			args: []any{o.Error, t, room, o.Hook}}
		if o.OK {
			stat = &settleWrite{q: `UPDATE hook_stats SET delivered = delivered + 1, last_ok_at = ? WHERE room = ? AND hook = ?`, args: []any{t, room, o.Hook}}
		}
		if f := c.inflight[mid]; f != nil {
			// Read from the log.
			delete(c.inflight, mid)
			c.settled[mid] = true
			m := f.d.Message
			switch {
			case o.OK:
			case o.Dead:
				writes = append(writes, settleWrite{q: `INSERT OR REPLACE INTO hook_dead VALUES (?, ?, ?, ?, ?, ?, 1, 0, ?, ?, 0)`,
					args: []any{room, o.Hook, mid, m.Type, m.At.UnixMilli(), string(m.Data), o.Error, t}})
			default:
				writes = append(writes, settleWrite{q: `INSERT OR REPLACE INTO hook_tasks VALUES (?, ?, ?, ?, ?, ?, 1, ?, ?, 0, 0)`,
					args: []any{room, o.Hook, mid, m.Type, m.At.UnixMilli(), string(m.Data), o.Next.UnixMilli(), o.Error}})
			}
			writes = append(writes, settleWrite{stat: stat})
			before := c.done
			c.advance()
			if c.done != before {
				moved[o.Hook] = c.done
			}
			continue
		}
		// A retry row.
		delete(c.retries, mid)
		key := []any{room, o.Hook, mid}
		switch {
		case o.OK:
			writes = append(writes, settleWrite{q: `DELETE FROM hook_tasks WHERE room = ? AND hook = ? AND mid = ?`, args: key, stat: stat})
		case o.Dead:
			writes = append(writes,
				settleWrite{q: `INSERT OR REPLACE INTO hook_dead SELECT room, hook, mid, type, at, data, attempts + 1, next_at, ?, ?, replayed
					FROM hook_tasks WHERE room = ? AND hook = ? AND mid = ?`, args: append([]any{o.Error, t}, key...), stat: stat},
				settleWrite{q: `DELETE FROM hook_tasks WHERE room = ? AND hook = ? AND mid = ?`, args: key})
		default:
			writes = append(writes, settleWrite{q: `UPDATE hook_tasks SET attempts = attempts + 1, last_error = ?, next_at = ? WHERE room = ? AND hook = ? AND mid = ?`,
				args: append([]any{o.Error, o.Next.UnixMilli()}, key...), stat: stat})
		}
	}
	s.ob.mu.Unlock()
	for hook, done := range moved {
		writes = append(writes, settleWrite{q: `UPDATE hook_cursor SET mid = max(mid, ?) WHERE room = ? AND hook = ?`, args: []any{done, room, hook}})
	}
	if len(moved) > 0 {
		// The log rows every cursor has passed.
		writes = append(writes, settleWrite{q: `DELETE FROM hook_log WHERE room = ?1 AND last_mid <= (SELECT min(mid) FROM hook_cursor WHERE room = ?1)`, args: []any{room}})
	}
	if len(writes) == 0 {
		return nil
	}
	return s.hooksTx(ctx, "settle deliveries", func(c *sql.Conn) error {
		for _, w := range writes {
			changed := true
			if w.q != "" {
				res, err := c.ExecContext(ctx, w.q, w.args...)
				if err != nil {
					return err
				}
				k, _ := res.RowsAffected()
				changed = k > 0
			}
			if w.stat != nil && changed {
				if _, err := c.ExecContext(ctx, w.stat.q, w.stat.args...); err != nil {
					return err
				}
			}
		}
		return nil
	})
}

// DeadLetters implements waitroom.Hooks. The cursor is the last letter's
// dead time, message number and webhook.
func (s *Store) DeadLetters(ctx context.Context, room string, page waitroom.Page) ([]waitroom.Delivery, string, error) {
	if err := s.mem.Ping(ctx); err != nil {
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

// ReplayDeadLetters implements waitroom.Hooks: dead letters become retry
// rows due at now.
func (s *Store) ReplayDeadLetters(ctx context.Context, room string, ids []string, now time.Time) (int, error) {
	n := 0
	err := s.hooksTx(ctx, "replay dead letters", func(c *sql.Conn) error {
		const move = `INSERT OR REPLACE INTO hook_tasks SELECT room, hook, mid, type, at, data, 0, ?1, '', 0, ?1 FROM hook_dead WHERE room = ?2`
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
			if mid, ok := messageNumber(room, id); ok {
				if err := replay(` AND mid = ?3`, now.UnixMilli(), room, mid); err != nil {
					return err
				}
			}
		}
		return nil
	})
	return n, err
}

// maxPendingScan bounds the log rows HookStats reads to count what a
// webhook has pending; past it the count is of the rows read.
const maxPendingScan = 2000

// HookStats implements waitroom.Hooks. Pending counts a webhook's retry
// rows, its claims in flight and the messages it wants in the log past
// its place.
func (s *Store) HookStats(ctx context.Context, room string) (map[string]waitroom.HookStats, error) {
	if err := s.mem.Ping(ctx); err != nil {
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
	if err := rows.Err(); err != nil {
		return nil, waitroom.Unavailable(err, "sqlitestore: read webhook stats")
	}
	rows.Close()
	for _, h := range s.w.hooks.get(room) {
		st, ok := out[h.name]
		if !ok {
			continue
		}
		n, err := s.pendingInLog(ctx, room, h)
		if err != nil {
			return nil, err
		}
		st.Pending += n
		out[h.name] = st
	}
	return out, nil
}

// pendingInLog counts webhook h's messages not settled: in flight, and in
// the log past what it has read.
func (s *Store) pendingInLog(ctx context.Context, room string, h hookSub) (int64, error) {
	s.ob.mu.Lock()
	c, err := s.cursor(ctx, room, h.name)
	var from, inflight int64
	var settled map[int64]bool
	if c != nil {
		from, inflight = c.done, int64(len(c.inflight))
		settled = make(map[int64]bool, len(c.settled)+len(c.inflight))
		for mid := range c.settled {
			settled[mid] = true
		}
		for mid := range c.inflight {
			settled[mid] = true // counted as in flight
		}
	}
	s.ob.mu.Unlock()
	if err != nil || c == nil {
		return 0, err
	}
	rows, err := s.rdb.QueryContext(ctx, `SELECT first_mid, msgs FROM hook_log WHERE room = ? AND last_mid > ? ORDER BY last_mid LIMIT ?`, room, from, maxPendingScan)
	if err != nil {
		return 0, waitroom.Unavailable(err, "sqlitestore: read the webhook log")
	}
	defer rows.Close()
	n := inflight
	for rows.Next() {
		var first int64
		var msgs []byte
		if err := rows.Scan(&first, &msgs); err != nil {
			return 0, waitroom.Unavailable(err, "sqlitestore: read the webhook log")
		}
		for mid := first; len(msgs) > 0; mid++ {
			var line []byte
			line, msgs, _ = bytes.Cut(msgs, []byte{'\n'})
			if mid <= from || settled[mid] {
				continue
			}
			if h.wants(logLineType(line)) {
				n++
			}
		}
	}
	return n, rows.Err()
}
