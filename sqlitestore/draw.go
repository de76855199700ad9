package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/internal/engine"
)

// entrant writes a change of a session in a pre-queue: a new entrant, or
// one that ended before the draw (kept in history with ticket -entry).
func (w *writer) entrant(ctx context.Context, c waitroom.Change, deleted bool) error {
	s := &c.Session
	id, err := waitroom.ParseSessionID(s.ID)
	if err != nil || id.Entry == 0 {
		return fmt.Errorf("entrant change without an entry id (ticket 0, status %s)", s.Status)
	}
	if c.From == "" && s.Status == waitroom.StatusWaiting {
		_, err := w.stmts["insEntrant"].ExecContext(ctx, s.Room, id.Entry, s.ID, null(s.Key), s.JoinedAt.UnixMilli(), s.Tier)
		return err
	}
	if !s.Status.Final() {
		return fmt.Errorf("unexpected change of entrant %d from %q to %q", id.Entry, c.From, s.Status)
	}
	if _, err := w.stmts["delEntrant"].ExecContext(ctx, s.Room, id.Entry); err != nil {
		return err
	}
	if deleted {
		return nil
	}
	_, err = w.stmts["insHistory"].ExecContext(ctx, s.Room, -id.Entry, s.ID, null(s.Key), string(s.Status), string(s.EndReason), s.JoinedAt.UnixMilli(), nil, s.EndedAt.UnixMilli())
	return err
}

// draw writes a room's draw state: the seed when the room is scheduled,
// and, in the same transaction as the tickets it hands out, the draw.
func (w *writer) draw(ctx context.Context, room string, d *waitroom.DrawState) error {
	var drawnAt, first, digest any
	if d.Drawn {
		drawnAt, first, digest = d.DrawnAt.UnixMilli(), d.FirstTicket, d.Digest
	}
	if _, err := w.stmts["putDraw"].ExecContext(ctx, room, d.Seed.String(), d.OpensAt.UnixMilli(), drawnAt, first, digest); err != nil {
		return fmt.Errorf("write draw: %w", err)
	}
	if !d.Drawn {
		return nil
	}
	if _, err := w.stmts["delEntrants"].ExecContext(ctx, room); err != nil {
		return fmt.Errorf("clear pre-queue: %w", err)
	}
	// Multi-row INSERTs: a draw of 100,000 writes its list in well under
	// a second this way, about three times faster than row by row.
	args := make([]any, 0, drawRows*5)
	for i := 0; i < len(d.Entries); i += drawRows {
		part := d.Entries[i:min(i+drawRows, len(d.Entries))]
		args = args[:0]
		for j, e := range part {
			args = append(args, room, e.Ticket, d.EntryNumbers[i+j], e.Entry, e.Value)
		}
		st, err := w.drawEntryStmt(ctx, len(part))
		if err != nil {
			return err
		}
		if _, err := st.ExecContext(ctx, args...); err != nil {
			return fmt.Errorf("write draw entries %d-%d: %w", i, i+len(part)-1, err)
		}
	}
	return nil
}

// drawRows is the most draw entries one INSERT writes.
const drawRows = 500

// drawEntryStmt returns the prepared INSERT of n draw entries.
func (w *writer) drawEntryStmt(ctx context.Context, n int) (*sql.Stmt, error) {
	if st := w.multi[-n]; st != nil {
		return st, nil
	}
	q := statements["insDrawEntry"] + strings.Repeat(", (?, ?, ?, ?, ?)", n-1)
	st, err := w.conn.PrepareContext(ctx, q)
	if err != nil {
		return nil, fmt.Errorf("prepare insert of %d draw entries: %w", n, err)
	}
	w.multi[-n] = st // negative sizes: draw entries; positive: sessions
	return st, nil
}

// loadDraw restores a room's draw and pre-queue, if it has them.
func loadDraw(ctx context.Context, db *sql.DB, mem *engine.Store, room string) error {
	var seedHex string
	var opensAt int64
	var drawnAt, first sql.NullInt64
	var digest sql.NullString
	err := db.QueryRowContext(ctx, `SELECT seed, opens_at, drawn_at, first_ticket, digest FROM draws WHERE room = ?`, room).
		Scan(&seedHex, &opensAt, &drawnAt, &first, &digest)
	if errors.Is(err, sql.ErrNoRows) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read draw of room %q: %w", room, err)
	}
	seed, err := waitroom.ParseDrawSeed(seedHex)
	if err != nil {
		return fmt.Errorf("draw of room %q: %w", room, err)
	}
	st := waitroom.DrawState{Seed: seed, OpensAt: time.UnixMilli(opensAt).UTC()}
	var entrants []waitroom.Session
	if drawnAt.Valid {
		st.Drawn, st.DrawnAt, st.FirstTicket, st.Digest = true, time.UnixMilli(drawnAt.Int64).UTC(), first.Int64, digest.String
		rows, err := db.QueryContext(ctx, `SELECT ticket, entry_no, entry, value FROM draw_entries WHERE room = ? ORDER BY ticket`, room)
		if err != nil {
			return fmt.Errorf("read draw entries of room %q: %w", room, err)
		}
		defer rows.Close()
		for rows.Next() {
			var e waitroom.DrawEntry
			var n int64
			if err := rows.Scan(&e.Ticket, &n, &e.Entry, &e.Value); err != nil {
				return fmt.Errorf("read draw entries of room %q: %w", room, err)
			}
			st.Entries = append(st.Entries, e)
			st.EntryNumbers = append(st.EntryNumbers, n)
		}
		if err := rows.Err(); err != nil {
			return fmt.Errorf("read draw entries of room %q: %w", room, err)
		}
	} else {
		rows, err := db.QueryContext(ctx, `SELECT id, key, joined_at, tier FROM entrants WHERE room = ? ORDER BY entry`, room)
		if err != nil {
			return fmt.Errorf("read pre-queue of room %q: %w", room, err)
		}
		defer rows.Close()
		for rows.Next() {
			var x waitroom.Session
			var key sql.NullString
			var joined int64
			if err := rows.Scan(&x.ID, &key, &joined, &x.Tier); err != nil {
				return fmt.Errorf("read pre-queue of room %q: %w", room, err)
			}
			x.Room, x.Key, x.Status, x.JoinedAt = room, key.String, waitroom.StatusWaiting, time.UnixMilli(joined).UTC()
			entrants = append(entrants, x)
		}
		if err := rows.Err(); err != nil {
			return fmt.Errorf("read pre-queue of room %q: %w", room, err)
		}
	}
	// Entry numbers are never reused: those that left before the draw
	// are in the history with ticket -entry.
	var minHist sql.NullInt64
	if err := db.QueryRowContext(ctx, `SELECT min(ticket) FROM history WHERE room = ? AND ticket < 0`, room).Scan(&minHist); err != nil {
		return fmt.Errorf("read history of room %q: %w", room, err)
	}
	if err := mem.RestoreDraw(room, st, entrants, -minHist.Int64); err != nil {
		return fmt.Errorf("restore draw of room %q: %w", room, err)
	}
	return nil
}

// entryOf is the public draw entry of a session that entered a pre-queue
// (its id carries an entry number), derived as the store made it: from its
// key, or else from its secret. Other sessions have none.
func entryOf(room, id, key string) string {
	sid, err := waitroom.ParseSessionID(id)
	if err != nil || sid.Entry == 0 {
		return ""
	}
	return waitroom.EntryFor(room, key, sid.Secret)
}
