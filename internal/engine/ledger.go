package engine

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/waitroom/waitroom"
)

// This file implements waitroom.Ledger in memory: the console's audit log,
// stats buckets and sign-ins, lost on exit. sqlitestore keeps the audit log
// and sign-ins in SQLite instead and uses the stats from here.

// ledgerState is one Store's ledger.
type ledgerState struct {
	mu      sync.Mutex
	seq     int64                 // the last audit entry's sequence number
	audit   map[string][]auditRec // per room, oldest first
	stats   map[string][]statsRec // per room, by time
	console map[string]time.Time  // sign-in → expiry
}

// consoleLedger returns s's ledger state, made on first use.
func (s *Store) consoleLedger() *ledgerState {
	s.ledgerOnce.Do(func() {
		s.ledger = &ledgerState{
			audit:   make(map[string][]auditRec),
			stats:   make(map[string][]statsRec),
			console: make(map[string]time.Time),
		}
	})
	return s.ledger
}

// auditID returns the audit entry ID of sequence number seq: 16 digits,
// zero-padded, so IDs sort as strings in the order entries were added.
func auditID(seq int64) string { return fmt.Sprintf("%016d", seq) }

// parseAuditCursor returns the sequence number of a Page.After cursor
// ("" is 0: the start), or a CodeInvalidRequest error.
func parseAuditCursor(after string) (int64, error) {
	if after == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(after, 10, 64)
	if err != nil || n < 1 || after[0] == '+' {
		return 0, waitroom.Errorf(waitroom.CodeInvalidRequest, "The cursor %q is not one this server returned.", after)
	}
	return n, nil
}

// auditRec is an audit entry with its sequence number.
type auditRec struct {
	seq int64
	e   waitroom.AuditEntry
}

// AddAudit implements waitroom.Ledger.
func (s *Store) AddAudit(ctx context.Context, e waitroom.AuditEntry) error {
	if err := s.usable(); err != nil {
		return err
	}
	if err := e.Check(); err != nil {
		return err
	}
	e.At = e.At.UTC()
	e.Detail = slices.Clone(e.Detail)
	l := s.consoleLedger()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.seq++
	e.ID = auditID(l.seq)
	log := append(l.audit[e.Room], auditRec{seq: l.seq, e: e})
	if len(log) > waitroom.AuditKeep {
		// Slicing off the front: the next append that grows the array
		// copies only the kept entries, so memory stays bounded.
		log = log[len(log)-waitroom.AuditKeep:]
	}
	l.audit[e.Room] = log
	return nil
}

// Audit implements waitroom.Ledger. The cursor is the ID of an entry.
func (s *Store) Audit(ctx context.Context, room, sessionID string, page waitroom.Page) ([]waitroom.AuditEntry, string, error) {
	if err := s.usable(); err != nil {
		return nil, "", err
	}
	if err := waitroom.CheckRoomName(room); err != nil {
		return nil, "", err
	}
	after, err := parseAuditCursor(page.After)
	if err != nil {
		return nil, "", err
	}
	l := s.consoleLedger()
	l.mu.Lock()
	defer l.mu.Unlock()
	log := l.audit[room]
	end := len(log) // entries before end have seq < after
	if after > 0 {
		end, _ = slices.BinarySearchFunc(log, after, func(r auditRec, seq int64) int { return compareInt(r.seq, seq) })
	}
	size := page.Size()
	out := make([]waitroom.AuditEntry, 0, min(size, 64))
	for i := end - 1; i >= 0; i-- {
		if sessionID != "" && log[i].e.Session != sessionID {
			continue
		}
		if len(out) == size {
			return out, out[size-1].ID, nil
		}
		e := log[i].e
		e.Detail = slices.Clone(e.Detail)
		out = append(out, e)
	}
	return out, "", nil
}

func compareInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// statsRec is a stats bucket as memory keeps it: the wait histogram is
// sparse (a bucket's waits fall in a few bins), so an hour of a busy room
// costs tens of kilobytes, not half a megabyte.
type statsRec struct {
	at                                        int64 // unix ms
	joins, admissions, abandons, errAbs, errs int64
	estN, relBp                               int64
	hasGauges                                 bool
	waiting, active                           int
	eta                                       int64
	waits                                     []binCount // by bin
}

type binCount struct {
	bin int
	n   int64
}

// AddStats implements waitroom.Ledger. A bucket older than the room's
// newest by StatsKeep or more is dropped as it arrives.
func (s *Store) AddStats(ctx context.Context, room string, b waitroom.StatsBucket) error {
	if err := s.usable(); err != nil {
		return err
	}
	if err := waitroom.CheckRoomName(room); err != nil {
		return err
	}
	at := waitroom.StatsBucketMs(b.At)
	keep := waitroom.StatsKeep.Milliseconds()
	l := s.consoleLedger()
	l.mu.Lock()
	defer l.mu.Unlock()
	recs := l.stats[room]
	if n := len(recs); n > 0 {
		newest := recs[n-1].at
		if at <= newest-keep {
			return nil
		}
		if at > newest {
			// Drop what the new newest bucket makes too old.
			drop, _ := slices.BinarySearchFunc(recs, at-keep+1, func(r statsRec, t int64) int { return compareInt(r.at, t) })
			recs = slices.Delete(recs, 0, drop)
		}
	}
	i, found := slices.BinarySearchFunc(recs, at, func(r statsRec, t int64) int { return compareInt(r.at, t) })
	if !found {
		recs = slices.Insert(recs, i, statsRec{at: at, eta: -1})
	}
	recs[i].merge(&b)
	l.stats[room] = recs
	return nil
}

// merge adds b's counters to r and sets its gauges.
func (r *statsRec) merge(b *waitroom.StatsBucket) {
	r.joins += b.Joins
	r.admissions += b.Admissions
	r.abandons += b.Abandons
	r.errAbs += b.EstErrAbsMs
	r.errs += b.EstErrMs
	r.estN += b.EstN
	r.relBp += b.EstRelErrBp
	if b.HasGauges {
		r.hasGauges = true
		r.waiting, r.active, r.eta = b.Waiting, b.Active, b.ETALastMs
	}
	for bin, n := range b.Waits {
		if n == 0 {
			continue
		}
		j, found := slices.BinarySearchFunc(r.waits, bin, func(c binCount, bin int) int { return c.bin - bin })
		if found {
			r.waits[j].n += n
		} else {
			r.waits = slices.Insert(r.waits, j, binCount{bin: bin, n: n})
		}
	}
}

// bucket returns r as a StatsBucket.
func (r *statsRec) bucket() waitroom.StatsBucket {
	b := waitroom.StatsBucket{
		At:    time.UnixMilli(r.at).UTC(),
		Joins: r.joins, Admissions: r.admissions, Abandons: r.abandons,
		EstErrAbsMs: r.errAbs, EstErrMs: r.errs, EstN: r.estN, EstRelErrBp: r.relBp,
		HasGauges: r.hasGauges, Waiting: r.waiting, Active: r.active, ETALastMs: r.eta,
	}
	for _, c := range r.waits {
		b.Waits[c.bin] = c.n
	}
	return b
}

// Stats implements waitroom.Ledger.
func (s *Store) Stats(ctx context.Context, room string, since time.Time) ([]waitroom.StatsBucket, error) {
	if err := s.usable(); err != nil {
		return nil, err
	}
	if err := waitroom.CheckRoomName(room); err != nil {
		return nil, err
	}
	from := since.UnixMilli()
	l := s.consoleLedger()
	l.mu.Lock()
	defer l.mu.Unlock()
	recs := l.stats[room]
	i, _ := slices.BinarySearchFunc(recs, from, func(r statsRec, t int64) int { return compareInt(r.at, t) })
	out := make([]waitroom.StatsBucket, 0, len(recs)-i)
	for j := i; j < len(recs); j++ {
		out = append(out, recs[j].bucket())
	}
	return out, nil
}

// consolePrune is how long after its expiry a sign-in is certainly of no
// use: a sign-in being recorded removes those that expired this long
// before it expires (sign-ins last less than this), so the table of
// sign-ins does not grow without a clock.
const consolePrune = 24 * time.Hour

// PutConsoleSession implements waitroom.Ledger.
func (s *Store) PutConsoleSession(ctx context.Context, id string, expires time.Time) error {
	if err := s.usable(); err != nil {
		return err
	}
	if err := waitroom.CheckConsoleSessionID(id); err != nil {
		return err
	}
	l := s.consoleLedger()
	l.mu.Lock()
	defer l.mu.Unlock()
	for other, exp := range l.console {
		if exp.Before(expires.Add(-consolePrune)) {
			delete(l.console, other)
		}
	}
	l.console[id] = expires
	return nil
}

// ConsoleSession implements waitroom.Ledger.
func (s *Store) ConsoleSession(ctx context.Context, id string, now time.Time) (bool, error) {
	if err := s.usable(); err != nil {
		return false, err
	}
	l := s.consoleLedger()
	l.mu.Lock()
	defer l.mu.Unlock()
	exp, ok := l.console[id]
	return ok && now.Before(exp), nil
}

// DeleteConsoleSession implements waitroom.Ledger.
func (s *Store) DeleteConsoleSession(ctx context.Context, id string) error {
	if err := s.usable(); err != nil {
		return err
	}
	l := s.consoleLedger()
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.console, id)
	return nil
}
