package sqlitestore

import (
	"context"
	"database/sql"
	"encoding/json"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/waitroom/waitroom"
)

// nearOf subscribes to s and returns a function listing the tickets told
// they are near since the last call.
func nearOf(s *Store) func() []int64 {
	var mu sync.Mutex
	var got []int64
	s.Subscribe(func(e waitroom.Event) {
		mu.Lock()
		defer mu.Unlock()
		for _, c := range e.Changes {
			if c.Near {
				got = append(got, c.Session.Ticket)
			}
		}
	})
	return func() []int64 {
		mu.Lock()
		defer mu.Unlock()
		out := got
		got = nil
		return out
	}
}

// TestRestartKeepsHolds: a held session keeps its contact and needs no
// presence across a restart; an invited one keeps its invitation (and so
// its claim window); a session told it is near is not told again.
func TestRestartKeepsHolds(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "waitroom.db")
	s := open(t, path, t0)
	cfg := waitroom.DefaultConfig()
	cfg.Capacity, cfg.HoldPlaces, cfg.ClaimWindow, cfg.NotifyAt = 1, true, waitroom.Duration(time.Minute), 1
	cfg.WaitingTimeout = waitroom.Duration(10 * time.Second)
	if _, _, err := s.PutRoom(ctx, "r", cfg, t0); err != nil {
		t.Fatal(err)
	}
	a, err := s.Join(ctx, "r", "", t0)
	if err != nil {
		t.Fatal(err)
	}
	held, err := s.JoinWith(ctx, "r", waitroom.JoinRequest{Contact: "sms:+15550100"}, t0)
	if err != nil || held.Status != waitroom.StatusWaiting || held.Position != 1 {
		t.Fatalf("held join = %+v, %v; want waiting at position 1", held, err)
	}
	s.Close()

	// Two minutes later: the waiting timeout would have ended a plain
	// session; the held one waits on, and is not told it is near again.
	now := t0.Add(2 * time.Minute)
	s = open(t, path, now)
	near := nearOf(s)
	got, err := s.Session(ctx, "r", held.ID, now)
	if err != nil || got.Status != waitroom.StatusWaiting || got.Contact != "sms:+15550100" {
		t.Fatalf("held session after restart = %+v, %v; want waiting with its contact", got, err)
	}
	if _, err := s.Heartbeat(ctx, "r", a.ID, now); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Leave(ctx, "r", a.ID, waitroom.ReasonLeft, now); err != nil {
		t.Fatal(err)
	}
	if told := near(); len(told) != 0 {
		t.Fatalf("after a restart, tickets %v were told they are near again", told)
	}
	inv, err := s.Session(ctx, "r", held.ID, now)
	if err != nil || inv.Status != waitroom.StatusInvited || !inv.ClaimBy.Equal(now.Add(time.Minute)) {
		t.Fatalf("after the leave = %+v, %v; want invited until +1m", inv, err)
	}
	s.Close()

	later := now.Add(30 * time.Second)
	s = open(t, path, later)
	got, err = s.Session(ctx, "r", held.ID, later)
	if err != nil || got.Status != waitroom.StatusInvited || !got.ClaimBy.Equal(inv.ClaimBy) || got.Contact != "sms:+15550100" {
		t.Fatalf("invited session after restart = %+v, %v; want invited until %s", got, err, inv.ClaimBy)
	}
	claimed, err := s.Claim(ctx, "r", held.ID, later)
	if err != nil || claimed.Status != waitroom.StatusActive || !claimed.AdmittedAt.Equal(later) {
		t.Fatalf("claim after restart = %+v, %v", claimed, err)
	}
	s.Close()
	s = open(t, path, later)
	defer s.Close()
	if got, err := s.Session(ctx, "r", held.ID, later); err != nil || got.Status != waitroom.StatusActive {
		t.Fatalf("claimed session after restart = %+v, %v; want active", got, err)
	}
}

// TestOpenVersion4File: a file of schema version 4 (sessions without
// the invited status, contact or near) opens, keeps its sessions and takes
// held sessions.
func TestOpenVersion4File(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "waitroom.db")
	db, err := sql.Open("sqlite", dsn(path))
	if err != nil {
		t.Fatal(err)
	}
	cfg := waitroom.DefaultConfig()
	cfg.Capacity = 1
	js, _ := json.Marshal(cfg)
	ids := []string{waitroom.NewSessionID(1).String(), waitroom.NewSessionID(2).String()}
	for _, q := range []string{
		`CREATE TABLE rooms (name TEXT PRIMARY KEY, config TEXT NOT NULL, updated_at INTEGER NOT NULL) WITHOUT ROWID`,
		`CREATE TABLE tickets (room TEXT PRIMARY KEY, last INTEGER NOT NULL) WITHOUT ROWID`,
		`CREATE TABLE sessions (room TEXT NOT NULL, ticket INTEGER NOT NULL, id TEXT NOT NULL, key TEXT,
			status TEXT NOT NULL CHECK (status IN ('waiting', 'active')), joined_at INTEGER NOT NULL, admitted_at INTEGER,
			unit INTEGER NOT NULL DEFAULT 0, place INTEGER NOT NULL DEFAULT 0, extended INTEGER NOT NULL DEFAULT 0,
			tier TEXT NOT NULL DEFAULT '', PRIMARY KEY (room, ticket)) WITHOUT ROWID`,
		`CREATE UNIQUE INDEX sessions_key ON sessions (room, key) WHERE key IS NOT NULL`,
		`INSERT INTO rooms VALUES ('old', '` + string(js) + `', 0)`,
		`INSERT INTO sessions (room, ticket, id, key, status, joined_at, admitted_at) VALUES ('old', 1, '` + ids[0] + `', 'k', 'active', 0, 0)`,
		`INSERT INTO sessions (room, ticket, id, key, status, joined_at) VALUES ('old', 2, '` + ids[1] + `', NULL, 'waiting', 0)`,
		`INSERT INTO tickets VALUES ('old', 2)`,
		`PRAGMA user_version = 4`,
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatalf("%.60s: %v", q, err)
		}
	}
	db.Close()

	s := open(t, path, t0)
	defer s.Close()
	for i, want := range []waitroom.Status{waitroom.StatusActive, waitroom.StatusWaiting} {
		if got, err := s.Session(ctx, "old", ids[i], t0); err != nil || got.Status != want {
			t.Fatalf("session %d of the version 4 file = %+v, %v; want %s", i+1, got, err, want)
		}
	}
	if _, err := s.Join(ctx, "old", "k", t0); waitroom.ErrorCode(err) != waitroom.CodeAlreadyJoined {
		t.Fatalf("join with the migrated key = %v, want already_joined (the key index survived)", err)
	}
	cfg.HoldPlaces, cfg.ClaimWindow = true, waitroom.Duration(time.Minute)
	if _, _, err := s.PutRoom(ctx, "old", cfg, t0); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Leave(ctx, "old", ids[0], waitroom.ReasonLeft, t0); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Leave(ctx, "old", ids[1], waitroom.ReasonLeft, t0); err != nil {
		t.Fatal(err)
	}
	h, err := s.JoinWith(ctx, "old", waitroom.JoinRequest{Contact: "c"}, t0)
	if err != nil || h.Status != waitroom.StatusInvited {
		t.Fatalf("held join on the migrated file = %+v, %v; want invited", h, err)
	}
	var status, contact string
	if err := s.rdb.QueryRowContext(ctx, `SELECT status, contact FROM sessions WHERE room = 'old' AND ticket = ?`, h.Ticket).Scan(&status, &contact); err != nil || status != "invited" || contact != "c" {
		t.Fatalf("row of the held session: %q %q (%v), want invited with its contact", status, contact, err)
	}
	var version int
	if err := s.rdb.QueryRowContext(ctx, `PRAGMA user_version`).Scan(&version); err != nil || version != 6 {
		t.Fatalf("schema version %d (%v), want 6", version, err)
	}
}
