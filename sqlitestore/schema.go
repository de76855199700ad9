package sqlitestore

// schema is the database layout, version 6 (opening an older file
// migrates it: see migrations). It is documented in the README
// ("SQLite schema") so operators can query it with the sqlite3 shell; keep
// the two in step. Times are unix milliseconds (UTC).
const schema = `
CREATE TABLE IF NOT EXISTS rooms (
	name       TEXT PRIMARY KEY,
	config     TEXT NOT NULL,    -- the room's configuration as the API's JSON
	updated_at INTEGER NOT NULL
) WITHOUT ROWID;

-- The last ticket issued per room, and its last configuration revision
-- (version 6: waitroom.Room.Revision). Rows outlive their room, so a room
-- created again under the same name never reuses a ticket or a revision.
CREATE TABLE IF NOT EXISTS tickets (
	room     TEXT PRIMARY KEY,
	last     INTEGER NOT NULL,
	revision INTEGER NOT NULL DEFAULT 0
) WITHOUT ROWID;

-- Live sessions: waiting, invited or active.
CREATE TABLE IF NOT EXISTS sessions (
	room        TEXT NOT NULL,
	ticket      INTEGER NOT NULL,
	id          TEXT NOT NULL,
	key         TEXT,
	status      TEXT NOT NULL CHECK (status IN ('waiting', 'invited', 'active')),  -- invited: version 5
	joined_at   INTEGER NOT NULL,
	admitted_at INTEGER,
	unit        INTEGER NOT NULL DEFAULT 0,  -- 1: active, holding a reserved unit (version 2)
	place       INTEGER NOT NULL DEFAULT 0,  -- an operator's move (Session.Place), 0 if never (version 3)
	extended    INTEGER NOT NULL DEFAULT 0,  -- ms an operator extended max_session by (version 3)
	tier        TEXT NOT NULL DEFAULT '',    -- the tier's name in a room with tiers (version 4)
	contact     TEXT,                        -- a held session's contact (version 5)
	near        INTEGER NOT NULL DEFAULT 0,  -- 1: told it reached notify_at (version 5)
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

-- Scheduled rooms' draws (version 2). seed is the secret until drawn_at
-- is set; the API publishes only its SHA-256 before then.
CREATE TABLE IF NOT EXISTS draws (
	room         TEXT PRIMARY KEY,
	seed         TEXT NOT NULL,  -- 64 hex digits
	opens_at     INTEGER NOT NULL,
	drawn_at     INTEGER,        -- NULL until the draw
	first_ticket INTEGER,
	digest       TEXT
) WITHOUT ROWID;

-- The pre-queue of a scheduled room before its draw: one row per live
-- entrant, by entry number. Entrants that end before the draw go to
-- history with ticket = -entry.
CREATE TABLE IF NOT EXISTS entrants (
	room      TEXT NOT NULL,
	entry     INTEGER NOT NULL,
	id        TEXT NOT NULL,
	key       TEXT,
	joined_at INTEGER NOT NULL,
	tier      TEXT NOT NULL DEFAULT '',  -- version 4
	PRIMARY KEY (room, entry)
) WITHOUT ROWID;

-- A drawn room's entries in draw order (ticket order), as published.
CREATE TABLE IF NOT EXISTS draw_entries (
	room     TEXT NOT NULL,
	ticket   INTEGER NOT NULL,
	entry_no INTEGER NOT NULL,  -- the entrant's number in the pre-queue
	entry    TEXT NOT NULL,
	value    TEXT NOT NULL,
	PRIMARY KEY (room, ticket)
) WITHOUT ROWID;

-- Counts per room (version 2): admissions (and services), those that came
-- while a larger ticket had been let in before, the largest ticket let in
-- so far, and units of the inventory sold.
CREATE TABLE IF NOT EXISTS counts (
	room         TEXT PRIMARY KEY,
	admissions   INTEGER NOT NULL,
	inversions   INTEGER NOT NULL,
	max_admitted INTEGER NOT NULL,
	sold         INTEGER NOT NULL
) WITHOUT ROWID;

-- Uses of invite and challenge tokens (version 4): how many joins spent
-- each, kept until the token expires.
CREATE TABLE IF NOT EXISTS token_uses (
	room    TEXT NOT NULL,
	kind    TEXT NOT NULL CHECK (kind IN ('invite', 'challenge')),
	id      TEXT NOT NULL,
	n       INTEGER NOT NULL,
	expires INTEGER NOT NULL,
	PRIMARY KEY (room, kind, id)
) WITHOUT ROWID;

PRAGMA user_version = 6;
`

// migrations bring an older file to the current version, by the version it
// had before the schema ran.
var migrations = map[int]string{
	1: `ALTER TABLE sessions ADD COLUMN unit INTEGER NOT NULL DEFAULT 0`,
	2: `ALTER TABLE sessions ADD COLUMN place INTEGER NOT NULL DEFAULT 0;
ALTER TABLE sessions ADD COLUMN extended INTEGER NOT NULL DEFAULT 0`,
	// A version 1 file has no entrants yet: make the version 3 table first.
	3: `ALTER TABLE sessions ADD COLUMN tier TEXT NOT NULL DEFAULT '';
CREATE TABLE IF NOT EXISTS entrants (room TEXT NOT NULL, entry INTEGER NOT NULL, id TEXT NOT NULL, key TEXT,
	joined_at INTEGER NOT NULL, PRIMARY KEY (room, entry)) WITHOUT ROWID;
ALTER TABLE entrants ADD COLUMN tier TEXT NOT NULL DEFAULT ''`,
	// A CHECK constraint cannot be altered: the table is made again with
	// 'invited' allowed and the two new columns, and its rows copied.
	4: `CREATE TABLE sessions_v5 (
	room TEXT NOT NULL, ticket INTEGER NOT NULL, id TEXT NOT NULL, key TEXT,
	status TEXT NOT NULL CHECK (status IN ('waiting', 'invited', 'active')),
	joined_at INTEGER NOT NULL, admitted_at INTEGER, unit INTEGER NOT NULL DEFAULT 0,
	place INTEGER NOT NULL DEFAULT 0, extended INTEGER NOT NULL DEFAULT 0, tier TEXT NOT NULL DEFAULT '',
	contact TEXT, near INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (room, ticket)) WITHOUT ROWID;
INSERT INTO sessions_v5 (room, ticket, id, key, status, joined_at, admitted_at, unit, place, extended, tier)
	SELECT room, ticket, id, key, status, joined_at, admitted_at, unit, place, extended, tier FROM sessions;
DROP TABLE sessions;
ALTER TABLE sessions_v5 RENAME TO sessions`,
	// A room of an older file is at revision 1 (see Store.load).
	5: `ALTER TABLE tickets ADD COLUMN revision INTEGER NOT NULL DEFAULT 0`,
}
