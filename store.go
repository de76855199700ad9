package waitroom

import (
	"context"
	"sync"
	"time"
)

// Store holds every room's state. Each method is one atomic operation on one
// room: concurrent calls, from any number of goroutines or (for shared
// backends) processes, behave as if they ran one at a time, and the
// invariants hold after each:
//
//  1. automatic admission never makes Active exceed Capacity (Advance may);
//  2. line order: no waiting session is admitted while one ahead of it in
//     line waits (the line is ordered by Place where set, by Ticket
//     otherwise: first come, first served inside a tier, operators' moves
//     first; see Session.Place);
//  3. a key has at most one live session per room;
//  4. a change is durable (as the backend documents) before the method returns;
//  5. a slot freed by Leave goes to the next in line within that same call.
//
// Time is passed in as now; stores never read the clock, so tests control
// time. Calls for one room should pass non-decreasing times; a store treats an
// earlier now as equal to the latest it has seen for that room.
//
// Every method that takes now first ends what is due at now and admits into
// the slots that frees, all stamped now; then it does its own work; then it
// ends and admits again what that work made due. So no answer ever shows a
// session past its deadline, whether or not Sweep ran; Sweep makes the same
// happen without a request. Methods without now report the state as of the
// room's last operation.
//
// Deadlines. A waiting session is due at last_seen + WaitingTimeout
// (ReasonNoPresence) and, while away, at away_until (ReasonGone). An active
// session is due at admitted_at + MaxSession (ReasonMaxSession), at
// last_active + ActiveTimeout (ReasonIdle) and, while away, at away_until
// (ReasonGone). A zero duration means no such deadline. The earliest names the
// reason; on a tie the order is the one just given. A held waiting session
// (Session.Contact) has no deadline and ignores Away; an invited one is due
// at admitted_at (its invitation) + ClaimWindow (ReasonUnclaimed), and
// nothing else. Presence (Session,
// Heartbeat) sets last_seen of a waiting session and ends an away period;
// Heartbeat also sets last_active of an active one. Admission sets
// last_active; a session admitted while away stays away.
//
// Admission in an auto room that is not paused: while Active < Capacity,
// someone waits and the rate allows, the first in line becomes active (a
// held session becomes invited instead; Active counts invited sessions,
// whose slots are reserved, and so does everything that counts actives). RatePerMinute R > 0 is a token bucket of
// max(1, ceil(R/60)) tokens refilled at R tokens a minute, full when the room
// is created or reconfigured; each automatic admission takes a token.
//
// Errors are *Error values: CodeRoomNotFound, CodeSessionNotFound,
// CodeInvalidSessionID and the others named on each method, or
// CodeUnavailable when the backend fails. Implementations are safe for
// concurrent use.
//
// A Store is also the operator console's Ledger and the webhook outbox
// (Hooks), each documented on its own interface. They are part of the
// contract, not optional extras found by type assertion: a backend
// without them would leave the console and webhooks silently dead, and
// storetest checks them like the rest.
type Store interface {
	Ledger
	Hooks

	// PutRoom creates room name with cfg, or replaces its configuration.
	// created says which. cfg must be valid (CodeInvalidConfig otherwise). A
	// larger capacity, or unpausing, admits waiting sessions at once.
	PutRoom(ctx context.Context, name string, cfg RoomConfig, now time.Time) (room Room, created bool, err error)

	// UpdateRoom replaces the configuration of existing room name with cfg,
	// as PutRoom does, on a condition: when rev is positive, the room's
	// Revision must still be rev, otherwise nothing changes and it fails
	// with CodePreconditionFailed; rev 0 is no condition. It never creates
	// a room: an unknown one fails with CodeRoomNotFound. A read, a change
	// made from what was read, and UpdateRoom with the revision read is a
	// change that can never overwrite another made in between (see
	// Room.Revision).
	UpdateRoom(ctx context.Context, name string, cfg RoomConfig, rev int64, now time.Time) (Room, error)

	// Room returns a room's configuration and counts.
	Room(ctx context.Context, name string) (Room, error)

	// Rooms lists every room, ordered by name.
	Rooms(ctx context.Context) ([]Room, error)

	// DeleteRoom deletes a room and its history. With live sessions it fails
	// with CodeRoomNotEmpty unless force is set; with force, live sessions
	// end with ReasonRoomDeleted.
	DeleteRoom(ctx context.Context, name string, force bool, now time.Time) error

	// Claim makes invited session id active (its admitted_at and
	// last_active become now). An active session is returned unchanged; a
	// waiting or ended one fails with CodeNotInvited (the error's Session
	// is it).
	Claim(ctx context.Context, room, id string, now time.Time) (Session, error)

	// Join issues a new session with the room's next ticket. In an auto room
	// that is not paused it is active at once if a slot is free (and the
	// rate allows) and nobody waits; otherwise it waits at the back. When
	// key is not empty and already holds a live session, Join fails with
	// CodeAlreadyJoined and the error's Session is that live session.
	Join(ctx context.Context, room string, key string, now time.Time) (Session, error)

	// JoinWith is Join with a tier and token uses (JoinRequest): the new
	// session goes to tier req.Tier ("" for the room's lowest; an unknown
	// tier fails with CodeInvalidRequest). Each use in req.Uses counts
	// against its ID, kept per room until its Expires; a join that would
	// take a token past its Max fails with CodeInviteUsed or
	// CodeChallengeUsed. A join with req.Contact is held: a room without
	// HoldPlaces, or scheduled and before its draw, refuses it with
	// CodeInvalidRequest (NotHeld). Checks run in this order: closed, sold
	// out, uses, key already joined (which spends nothing), held, tier. Uses
	// come before the key so that a spent token (a forwarded invite link)
	// is refused without the key's live session: only a join that could
	// have been made learns of it. Uses are spent only by a join that makes
	// a session (or pre-queue entry), atomically with it. Join(key) is
	// JoinWith(JoinRequest{Key: key}).
	JoinWith(ctx context.Context, room string, req JoinRequest, now time.Time) (Session, error)

	// Session reads a session and counts as presence: it refreshes a
	// waiting session's last-seen time and ends an away period. It does not
	// refresh an active session's activity (Heartbeat does). A session that
	// ended is returned with its final status while it is in the history.
	Session(ctx context.Context, room, id string, now time.Time) (Session, error)

	// Heartbeat is presence and activity: like Session, and it also
	// refreshes an active session's last-active time.
	Heartbeat(ctx context.Context, room, id string, now time.Time) (Session, error)

	// Away starts the grace period: the session keeps its place or slot
	// until now+Grace, and expires then unless Session or Heartbeat is
	// called first. Away on an ended session does nothing.
	Away(ctx context.Context, room, id string, now time.Time) error

	// Leave ends a live session with reason (ReasonLeft or ReasonRevoked) and
	// hands a freed slot to the next in line within the same call. On a
	// session that already ended it returns the session unchanged.
	Leave(ctx context.Context, room, id string, reason Reason, now time.Time) (Session, error)

	// Advance moves the next n waiting sessions, in line order, to served
	// (manual rooms) or active (auto rooms, ignoring capacity and pause). It
	// fails with CodeQueueEmpty when nobody waits; with fewer than n waiting
	// it advances those there are.
	Advance(ctx context.Context, room string, n int, now time.Time) ([]Session, error)

	// Sweep expires the room's sessions whose deadlines are at or before
	// now and admits waiting sessions into freed slots. Its work is
	// proportional to what is due, not to the room's size. A shared
	// backend may let only one process sweep a room at a time (a lease);
	// the others then return a zero result at once. Correctness never
	// depends on Sweep: every operation settles what is due at its own now.
	Sweep(ctx context.Context, room string, now time.Time) (SweepResult, error)

	// Waiting lists waiting sessions in admission order with their
	// positions, starting after the cursor page.After ("" for the start).
	// next is the cursor for the following page, "" at the end.
	Waiting(ctx context.Context, room string, page Page) (sessions []Session, next string, err error)

	// History lists ended sessions, newest first, optionally only those with
	// status, paged like Waiting.
	History(ctx context.Context, room string, status Status, page Page) (sessions []Session, next string, err error)

	// Sessions reads many sessions of one room in one call without counting
	// as presence, for pushing updates. The result is aligned with ids; an
	// id that is malformed or unknown gives a zero Session (empty ID).
	Sessions(ctx context.Context, room string, ids []string) ([]Session, error)

	// Stock changes the stock of a room with an Inventory, and reports the
	// room after it. StockSold moves n reserved units to sold, StockReleased
	// gives n reserved units back, both taking the units of the active
	// sessions with the smallest tickets; with id, they act on that one
	// session's unit instead (n is ignored). StockSet makes the inventory
	// n (also in the room's configuration). A change the counts do not
	// allow (selling more than is reserved, an inventory below what is
	// sold and reserved, a session without a unit) fails with
	// CodeStockConflict and changes nothing; a room without an inventory
	// fails the same way. Units given back are reserved for the next in
	// line at once; once everything is sold, the line ends with
	// ReasonSoldOut.
	Stock(ctx context.Context, room string, op StockOp, n int64, id string, now time.Time) (Room, error)

	// Draw returns the room's draw record (see DrawRecord): the commitment
	// and the pre-queue's size while the room is scheduled, everything
	// once the draw took place. A room that was never scheduled fails with
	// CodeNotFound.
	Draw(ctx context.Context, room string) (DrawRecord, error)

	// QueueAll pauses the room and sends every active session back to the
	// line ahead of everyone waiting, in ticket order (queue-all for
	// maintenance): each becomes waiting again with a Place (see Session),
	// its reserved unit, if any, given back. Resuming admits them first. It
	// returns the room after it and the sessions it moved, in line order.
	// The change is one config event (Paused) carrying their Changes.
	QueueAll(ctx context.Context, room string, now time.Time) (Room, []Session, error)

	// Front moves waiting session id to the front of the line (position 1),
	// for an operator restoring a place lost by a mistake. A session that is
	// not waiting (active, ended, or in a pre-queue before the draw) fails
	// with CodeInvalidRequest.
	Front(ctx context.Context, room, id string, now time.Time) (Session, error)

	// Extend lets active session id stay by longer: its max_session
	// deadline moves by later (Session.Extended accumulates) and its idle
	// timer restarts, as with Heartbeat. by is in [1ms, MaxDuration]; a
	// session that is not active fails with CodeInvalidRequest.
	Extend(ctx context.Context, room, id string, by time.Duration, now time.Time) (Session, error)

	// Lookup finds a session for an operator, without its secret: by ticket
	// (a live session, or an ended one still in the history) when ticket is
	// positive, else the live session of key. It is not presence.
	// CodeSessionNotFound when there is none.
	Lookup(ctx context.Context, room string, ticket int64, key string) (Session, error)

	// Subscribe calls fn with every event of this store, after the change
	// is durable, until cancel is called. fn runs on the goroutine that made
	// the change and must not block or call back into the store.
	Subscribe(fn func(Event)) (cancel func())

	// Ping reports whether the backend is reachable (CodeUnavailable if not).
	Ping(ctx context.Context) error

	// Close releases the store's resources. Calls after Close fail.
	Close() error
}

// Page selects one page of a listing.
type Page struct {
	// After is the cursor returned with the previous page; "" for the first.
	After string
	// Limit is the most items to return; 0 or less means DefaultPageLimit.
	Limit int
}

// Paging limits.
const (
	DefaultPageLimit = 100
	MaxPageLimit     = 1000
)

// Size returns the page size Limit asks for, clamped to [1, MaxPageLimit].
func (p Page) Size() int {
	switch {
	case p.Limit <= 0:
		return DefaultPageLimit
	case p.Limit > MaxPageLimit:
		return MaxPageLimit
	}
	return p.Limit
}

// StockOp is a change to a room's stock (see Store.Stock).
type StockOp string

// The stock changes.
const (
	StockSold     StockOp = "sold"
	StockReleased StockOp = "released"
	StockSet      StockOp = "set"
)

// CheckStock returns the CodeInvalidRequest error of a Store.Stock call
// whose arguments no store could accept: an unknown op, a count outside
// [0, MaxInventory], or set with a session.
func CheckStock(op StockOp, n int64, id string) error {
	switch op {
	case StockSold, StockReleased, StockSet:
	default:
		return Errorf(CodeInvalidRequest, "A stock change is sold, released or set, not %q.", string(op))
	}
	if id == "" && (n < 0 || n > MaxInventory) {
		return Errorf(CodeInvalidRequest, "A stock count is between 0 and %d, not %d.", MaxInventory, n)
	}
	if id != "" && op == StockSet {
		return Errorf(CodeInvalidRequest, "A session's unit is sold or released; set is for the whole inventory.")
	}
	return nil
}

// MaxAdvance is the most sessions one Advance call moves.
const MaxAdvance = 10_000

// SweepResult says what a Sweep did.
type SweepResult struct {
	Expired  int
	Admitted int
	// Next is the earliest time at which the room may have something due
	// again; zero when nothing is scheduled.
	Next time.Time
}

// EventKind says what kind of change an Event records.
type EventKind string

// The event kinds.
const (
	EventSessions EventKind = "sessions" // sessions changed status
	EventConfig   EventKind = "config"   // a room was created or reconfigured
	EventDeleted  EventKind = "deleted"  // a room was deleted
)

// Event records what one operation changed in one room.
type Event struct {
	Room string
	Kind EventKind
	At   time.Time
	// Changes lists the status changes, in the order they happened.
	Changes []Change
	// Config is the room's configuration after a config event.
	Config *RoomConfig
	// Waiting and Active are the room's totals after the change.
	Waiting, Active int
	// LastTicket is the room's highest ticket after the change.
	LastTicket int64
	// Admissions, Inversions and MaxAdmitted are the room's fairness
	// counts after the change (see Room), and Sold its units sold: durable
	// stores keep them.
	Admissions, Inversions, MaxAdmitted, Sold int64
	// Units lists active sessions whose unit was sold or released (Unit
	// false) outside a status change; a session admitted with a unit has
	// Unit set in its Change.
	Units []UnitChange
	// Draw is set when the room's draw state changed: on a config event
	// that scheduled the room (its new seed, for durable stores to keep)
	// and on the event of the draw itself. It holds the secret seed:
	// consumers must never send it anywhere before Drawn.
	Draw *DrawState
	// Uses lists the token uses a join spent, for durable stores to keep.
	Uses []TokenUse
	// Revision is the room's configuration revision after a config event
	// (see Room.Revision), for durable stores to keep; 0 on other events.
	Revision int64
	// PausedBefore is whether the room was paused before a config event
	// (false for a room it created), so consumers see pause and resume.
	PausedBefore bool
	// SoldOut is set on the event of the change that sold the room's
	// inventory out (everything sold, none before).
	SoldOut bool
	// DrawDone is set on the event of the change that completed the
	// room's draw.
	DrawDone bool
	// Closed is set on the event of the room's first operation at or after
	// its closes_at (once for each closes_at the room is given; durable
	// stores keep which was told).
	Closed bool
	// Remote is set on events that another process made (shared backends).
	// A Remote event with no Changes is a resynchronisation hint, sent when
	// a shared store reconnects or first notices a room: something may
	// have changed unseen, so consumers should re-read the room.
	Remote bool
}

// DrawState is a scheduled room's draw as a store keeps it.
type DrawState struct {
	Seed    DrawSeed
	OpensAt time.Time
	Drawn   bool
	DrawnAt time.Time
	// FirstTicket, Entries and Digest are set once Drawn. Entries is in
	// draw order and EntryNumbers, aligned with it, gives each entrant's
	// number in the pre-queue (the Entry of its SessionID). They are
	// shared: read them, never change them.
	FirstTicket  int64
	Entries      []DrawEntry
	EntryNumbers []int64
	Digest       string
}

// UnitChange is an active session's reserved unit taken or given.
type UnitChange struct {
	Ticket int64
	Unit   bool
}

// Change is one session's status change. Session holds the state after it
// (without position); From is the status before ("" for a new session).
type Change struct {
	Session Session
	From    Status
	// Near marks a change that is no status change: waiting session
	// Session reached the room's NotifyAt (Session.Position is set). Each
	// session is told once, in the operation in which it first stands at
	// a position of at most NotifyAt, after that operation's status
	// changes and in line order. A session an operator sends back to the
	// line (QueueAll) had its turn and is not told again.
	Near bool
}

// Clock tells the time. Servers use SystemClock; tests pass their own.
type Clock interface {
	Now() time.Time
}

// SystemClock is the real clock.
type SystemClock struct{}

// Now returns time.Now().
func (SystemClock) Now() time.Time { return time.Now() }

// ManualClock is a clock that moves only when told to, for tests and
// simulations. It is safe for concurrent use.
type ManualClock struct {
	mu  sync.Mutex
	now time.Time
}

// NewManualClock returns a clock reading t.
func NewManualClock(t time.Time) *ManualClock { return &ManualClock{now: t} }

// Now returns the clock's time.
func (c *ManualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock forward by d.
func (c *ManualClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// Set moves the clock to t.
func (c *ManualClock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
}
