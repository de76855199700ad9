package sqlitestore

import (
	"context"
	"database/sql"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/waitroom/waitroom"
)

// TestRestartStock checks that units sold, the units active sessions hold,
// and so what remains, are the same after closing and opening the file.
func TestRestartStock(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "waitroom.db")
	s := open(t, path, t0)
	cfg := waitroom.DefaultConfig()
	cfg.Capacity = 3
	cfg.ActiveTimeout, cfg.WaitingTimeout = 0, 0
	inv := int64(4)
	cfg.Inventory = &inv
	if _, _, err := s.PutRoom(ctx, "sale", cfg, t0); err != nil {
		t.Fatal(err)
	}
	var ss []waitroom.Session
	for range 5 {
		x, err := s.Join(ctx, "sale", "", t0)
		if err != nil {
			t.Fatal(err)
		}
		ss = append(ss, x)
	}
	if _, err := s.Stock(ctx, "sale", waitroom.StockSold, 0, ss[1].ID, t0.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	before, err := s.Room(ctx, "sale")
	if err != nil || before.Sold != 1 || before.Reserved != 2 || *before.Remaining != 1 {
		t.Fatalf("room before the restart = %+v, %v; want sold 1, reserved 2, remaining 1", before, err)
	}
	s.Close()

	s = open(t, path, t0.Add(time.Minute))
	defer s.Close()
	after, err := s.Room(ctx, "sale")
	if err != nil || after.Sold != 1 || after.Reserved != 2 || after.Remaining == nil || *after.Remaining != 1 {
		t.Fatalf("room after the restart = %+v, %v; want sold 1, reserved 2, remaining 1", after, err)
	}
	for i, want := range []bool{true, false, true} {
		got, err := s.Session(ctx, "sale", ss[i].ID, t0.Add(time.Minute))
		if err != nil || got.Unit != want {
			t.Fatalf("session %d after the restart: unit %v (%v), want %v", i, got.Unit, err, want)
		}
	}
	// Ticket 1 leaves: its unit goes to ticket 4.
	if _, err := s.Leave(ctx, "sale", ss[0].ID, waitroom.ReasonLeft, t0.Add(2*time.Minute)); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.Session(ctx, "sale", ss[3].ID, t0.Add(2*time.Minute)); got.Status != waitroom.StatusActive || !got.Unit {
		t.Fatalf("ticket 4 after ticket 1 left = %+v, want active with the unit", got)
	}
}

// TestOpenVersion1File checks that a file of schema version 1 opens: its
// sessions load, and the column and tables of version 2 are added.
func TestOpenVersion1File(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "waitroom.db")
	db, err := sql.Open("sqlite", dsn(path))
	if err != nil {
		t.Fatal(err)
	}
	cfg, _ := json.Marshal(waitroom.DefaultConfig())
	id := waitroom.NewSessionID(1).String()
	for _, q := range []string{
		schemaV1,
		`INSERT INTO rooms (name, config, updated_at) VALUES ('old', '` + string(cfg) + `', 0)`,
		`INSERT INTO sessions (room, ticket, id, key, status, joined_at, admitted_at) VALUES ('old', 1, '` + id + `', NULL, 'active', 0, 0)`,
		`INSERT INTO tickets (room, last) VALUES ('old', 1)`,
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatalf("%.60s: %v", q, err)
		}
	}
	db.Close()

	s := open(t, path, t0)
	got, err := s.Session(ctx, "old", id, t0)
	if err != nil || got.Status != waitroom.StatusActive || got.Unit {
		t.Fatalf("the version 1 session = %+v, %v; want active without a unit", got, err)
	}
	var version int
	if err := s.rdb.QueryRowContext(ctx, `PRAGMA user_version`).Scan(&version); err != nil || version != 6 {
		t.Fatalf("schema version %d (%v), want 6", version, err)
	}
	x, err := s.Join(ctx, "old", "", t0)
	if err != nil || x.Ticket != 2 {
		t.Fatalf("join on the migrated file = %+v, %v; want ticket 2", x, err)
	}
	s.Close()
	s = open(t, path, t0) // opening a version 2 file migrates nothing
	s.Close()
}

// schemaV1 is the layout before version 2, as it was released.
const schemaV1 = `
CREATE TABLE IF NOT EXISTS rooms (
	name       TEXT PRIMARY KEY,
	config     TEXT NOT NULL,    -- the room's configuration as the API's JSON
	updated_at INTEGER NOT NULL
) WITHOUT ROWID;

-- The last ticket issued per room. Rows outlive their room, so a room created
-- again under the same name never reuses a ticket.
CREATE TABLE IF NOT EXISTS tickets (
	room TEXT PRIMARY KEY,
	last INTEGER NOT NULL
) WITHOUT ROWID;

-- Live sessions: waiting or active.
CREATE TABLE IF NOT EXISTS sessions (
	room        TEXT NOT NULL,
	ticket      INTEGER NOT NULL,
	id          TEXT NOT NULL,
	key         TEXT,
	status      TEXT NOT NULL CHECK (status IN ('waiting', 'active')),
	joined_at   INTEGER NOT NULL,
	admitted_at INTEGER,
	PRIMARY KEY (room, ticket)
) WITHOUT ROWID;
CREATE UNIQUE INDEX IF NOT EXISTS sessions_key ON sessions (room, key) WHERE key IS NOT NULL;

-- Ended sessions, in the order they ended (seq).
CREATE TABLE IF NOT EXISTS history (
	seq         INTEGER PRIMARY KEY,
	room        TEXT NOT NULL,
	ticket      INTEGER NOT NULL,
	id          TEXT NOT NULL,
	key         TEXT,
	status      TEXT NOT NULL CHECK (status IN ('served', 'left', 'expired')),
	reason      TEXT NOT NULL,
	joined_at   INTEGER NOT NULL,
	admitted_at INTEGER,
	ended_at    INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS history_room ON history (room, seq);
CREATE INDEX IF NOT EXISTS history_ticket ON history (room, ticket);
CREATE INDEX IF NOT EXISTS history_status ON history (room, status, seq);

PRAGMA user_version = 1;
`
