package main

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/server"
	"github.com/waitroom/waitroom/sqlitestore"
)

// defaultRecoverySessions keeps the recovery test quick in CI; the figure
// in docs/RELIABILITY.md is measured with WAITROOM_RECOVERY_SESSIONS=1000000.
const defaultRecoverySessions = 20_000

// TestRecoveryTimeWithManyLiveSessions fills the embedded store with N
// waiting sessions (WAITROOM_RECOVERY_SESSIONS, 20,000 by default) through
// sqlitestore from many goroutines, so group commit batches them, then
// measures how long the store takes to come back: sqlitestore.Open after a
// clean close, and `waitroom serve` from exec to /readyz after a SIGKILL.
// Every session must be back. The times are logged, not asserted: they
// depend on the machine.
func TestRecoveryTimeWithManyLiveSessions(t *testing.T) {
	if testing.Short() {
		t.Skip("fills a store and restarts a real server; skipped with -short")
	}
	n := defaultRecoverySessions
	if v := os.Getenv("WAITROOM_RECOVERY_SESSIONS"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 1 {
			t.Fatalf("WAITROOM_RECOVERY_SESSIONS=%q: want a positive whole number", v)
		}
	}
	const room = "big"
	data := filepath.Join(t.TempDir(), "data")
	path := filepath.Join(data, server.DatabaseFile)
	bg := context.Background()

	st, err := sqlitestore.Open(bg, path)
	if err != nil {
		t.Fatal(err)
	}
	// Capacity 0 and no timeouts: everyone waits, and nobody expires
	// while the store is closed.
	cfg := waitroom.DefaultConfig()
	cfg.Capacity = 0
	cfg.ActiveTimeout, cfg.WaitingTimeout, cfg.MaxSession = 0, 0, 0
	if _, _, err := st.PutRoom(bg, room, cfg, time.Now()); err != nil {
		t.Fatal(err)
	}
	fillStart := time.Now()
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for range 64 {
		wg.Go(func() {
			for next.Add(1) <= int64(n) {
				if _, err := st.Join(bg, room, "", time.Now()); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("join: %v", err)
	}
	fill := time.Since(fillStart)
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	var dbSize int64
	for _, suffix := range []string{"", "-wal"} {
		if fi, err := os.Stat(path + suffix); err == nil {
			dbSize += fi.Size()
		}
	}

	// The store alone: open, which reloads every live session.
	openStart := time.Now()
	st, err = sqlitestore.Open(bg, path)
	if err != nil {
		t.Fatal(err)
	}
	open := time.Since(openStart)
	r, err := st.Room(bg, room)
	if err != nil {
		t.Fatal(err)
	}
	if r.Waiting != n || r.LastTicket != int64(n) {
		t.Errorf("after reopening: %d waiting, last ticket %d; want %d and %d", r.Waiting, r.LastTicket, n, n)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}

	// The real server: start it, join once, SIGKILL it, and time the
	// restart from exec to /readyz.
	bin := buildBinary(t)
	const token = "recovery-test-admin-token"
	args := append([]string{"--admin-token", token}, noJoinLimitFlags(bin)...)
	p := startProcess(t, bin, data, args...)
	c := newCrashClient(p.url, token)
	waitReady(t, c, time.Minute)
	s, err := c.Join(ctx(t), room, "")
	if err != nil {
		t.Fatalf("join: %v", err)
	}
	p.kill(t)
	restart := time.Now()
	p = startProcess(t, bin, data, args...)
	listening := time.Since(restart)
	c = newCrashClient(p.url, token)
	waitReady(t, c, time.Minute)
	ready := time.Since(restart)
	rs, err := c.Room(ctx(t), room)
	if err != nil {
		t.Fatal(err)
	}
	if rs.Waiting != n+1 {
		t.Errorf("after SIGKILL and restart: %d waiting, want %d", rs.Waiting, n+1)
	}
	got, err := c.Session(ctx(t), room, s.ID)
	if err != nil || got.Ticket != s.Ticket || got.Position != int64(n+1) {
		t.Errorf("the join acknowledged before the SIGKILL reads as ticket %d position %d (%v), want ticket %d position %d", got.Ticket, got.Position, err, s.Ticket, n+1)
	}
	t.Logf("recovery with %d live sessions: fill %v (%.0f durable joins/s from 64 goroutines, database %.1f MB); "+
		"sqlitestore.Open %v; waitroom serve after SIGKILL: listening %v, /readyz 200 %v",
		n, fill.Round(time.Millisecond), float64(n)/fill.Seconds(), float64(dbSize)/1e6,
		open.Round(time.Millisecond), listening.Round(time.Millisecond), ready.Round(time.Millisecond))
}
