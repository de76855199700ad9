package sqlitestore

// schema is the database layout, version 1. It is documented in the README
// ("SQLite schema") so operators can query it with the sqlite3 shell; keep
// the two in step. Times are unix milliseconds (UTC).
const schema = `
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
