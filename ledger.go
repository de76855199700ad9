package waitroom

import (
	"context"
	"encoding/json"
	"time"
)

// Ledger is what the operator console keeps in the store besides the rooms:
// an audit log of operator actions, per-room statistics in 10-second
// buckets, and the console's sign-in sessions. It is part of Store, so
// every backend keeps it, and what one process writes every process reads.
//
// Like Store, a Ledger never reads the clock: times come in as arguments
// (AuditEntry.At, StatsBucket.At, now), so tests control them. Errors are
// *Error values: CodeInvalidRequest for arguments no store accepts (see
// AuditEntry.Check and a bad cursor), CodeUnavailable when the backend
// fails. Implementations are safe for concurrent use.
type Ledger interface {
	// AddAudit appends an operator action to room's audit log (kept: the
	// newest AuditKeep per room). e.ID is ignored: the store assigns it.
	AddAudit(ctx context.Context, e AuditEntry) error

	// Audit lists room's audit entries newest first, paged like History
	// (Page.After is the ID of the last entry of the previous page; next
	// is "" at the end). sessionID, when set, keeps only entries about
	// that session.
	Audit(ctx context.Context, room, sessionID string, page Page) (entries []AuditEntry, next string, err error)

	// AddStats merges b into room's stats bucket b.At (aligned down to
	// StatsStep): counters add, so two processes may each add their own
	// counts to one bucket; gauges (Waiting, Active, ETALastMs) are set
	// when b.HasGauges. Buckets more than StatsKeep older than the room's
	// newest bucket are dropped.
	AddStats(ctx context.Context, room string, b StatsBucket) error

	// Stats returns room's buckets with At >= since, oldest first.
	Stats(ctx context.Context, room string, since time.Time) ([]StatsBucket, error)

	// PutConsoleSession records a console sign-in live until expires,
	// shared by every process.
	PutConsoleSession(ctx context.Context, id string, expires time.Time) error

	// ConsoleSession reports whether id is recorded and unexpired at now.
	ConsoleSession(ctx context.Context, id string, now time.Time) (bool, error)

	// DeleteConsoleSession ends the sign-in id; an unknown id is no error.
	DeleteConsoleSession(ctx context.Context, id string) error
}

// Stats bucket size and retention.
const (
	// StatsStep is the width of a stats bucket.
	StatsStep = 10 * time.Second
	// StatsKeep is how long a room keeps its buckets: an hour of complete
	// buckets and the current one.
	StatsKeep = time.Hour + StatsStep
)

// AuditKeep is how many audit entries a room keeps; older ones are dropped.
const AuditKeep = 10_000

// AuditEntry is one operator action on a room.
type AuditEntry struct {
	At   time.Time `json:"at"`
	Room string    `json:"room"`
	// Actor says who acted: one of the AuditActor* names.
	Actor string `json:"actor"`
	// Action is one of the Audit* action names (AuditPause …).
	Action  string `json:"action"`
	Session string `json:"session,omitempty"`
	Ticket  int64  `json:"ticket,omitempty"`
	// Reason is the operator's own words, at most MaxAuditReason bytes.
	Reason string `json:"reason,omitempty"`
	// Detail says what changed (JSON, at most MaxAuditDetail bytes).
	Detail json.RawMessage `json:"detail,omitempty"`
	// ID is set by the store: the entries of one room have IDs that sort,
	// as strings, in the order they were added, and an ID is the cursor
	// (Page.After) of the page after it.
	ID string `json:"id"`
}

// The actors of audit entries.
const (
	AuditActorConsole = "console"
	AuditActorAPI     = "api"
	// AuditActorFile is the rooms file (`waitroom serve --rooms`).
	AuditActorFile = "file"
	// AuditActorDemo is `waitroom serve --demo` creating its room.
	AuditActorDemo = "demo"
)

// ValidAuditActor reports whether a is one of the audit actors.
func ValidAuditActor(a string) bool {
	switch a {
	case AuditActorConsole, AuditActorAPI, AuditActorFile, AuditActorDemo:
		return true
	}
	return false
}

// The audited actions.
const (
	AuditPause     = "pause"
	AuditResume    = "resume"
	AuditConfig    = "config"
	AuditAdvance   = "advance"
	AuditInventory = "inventory"
	AuditQueueAll  = "queue_all"
	AuditFront     = "front"
	AuditExtend    = "extend"
	AuditRevoke    = "revoke"
	AuditDelete    = "delete"
	AuditInvites   = "invites"
	AuditWebhook   = "webhook" // a webhook made, replaced or deleted
	AuditReplay    = "replay"  // dead letters sent again
)

// Audit entry limits.
const (
	MaxAuditReason  = 500  // bytes
	MaxAuditDetail  = 4096 // bytes
	maxAuditSession = 64   // bytes; a session id is 32
)

// ValidAuditAction reports whether a is one of the audited actions.
func ValidAuditAction(a string) bool {
	switch a {
	case AuditPause, AuditResume, AuditConfig, AuditAdvance, AuditInventory,
		AuditQueueAll, AuditFront, AuditExtend, AuditRevoke, AuditDelete, AuditInvites, AuditWebhook, AuditReplay:
		return true
	}
	return false
}

// CheckAuditReason returns a CodeInvalidRequest error unless reason is at
// most MaxAuditReason bytes of printable text (Printable: no control,
// format or invisible character, which would spoof what the console
// shows). An empty reason passes; a route that requires one checks that
// itself.
func CheckAuditReason(reason string) error {
	if len(reason) > MaxAuditReason {
		return Errorf(CodeInvalidRequest, "A reason is at most %d bytes, not %d.", MaxAuditReason, len(reason))
	}
	if !Printable(reason) {
		return Errorf(CodeInvalidRequest, "A reason must be printable text on one line: no control, format or invisible characters.")
	}
	return nil
}

// Check returns a CodeInvalidRequest error unless e can go into an audit
// log: a time, a valid room name, a known actor and action, a printable
// session id of at most 64 bytes, a ticket >= 0, a reason CheckAuditReason
// accepts and a Detail that is empty or valid JSON of at most
// MaxAuditDetail bytes. The ID is not checked (the store sets it).
func (e *AuditEntry) Check() error {
	if e.At.IsZero() {
		return Errorf(CodeInvalidRequest, "An audit entry needs a time.")
	}
	if err := CheckRoomName(e.Room); err != nil {
		return err
	}
	if !ValidAuditActor(e.Actor) {
		return Errorf(CodeInvalidRequest, "An audit entry's actor is %q, %q, %q or %q, not %q.", AuditActorConsole, AuditActorAPI, AuditActorFile, AuditActorDemo, e.Actor)
	}
	if !ValidAuditAction(e.Action) {
		return Errorf(CodeInvalidRequest, "%q is not an audited action.", e.Action)
	}
	if len(e.Session) > maxAuditSession || !Printable(e.Session) {
		return Errorf(CodeInvalidRequest, "An audit entry's session is a session id.")
	}
	if e.Ticket < 0 {
		return Errorf(CodeInvalidRequest, "An audit entry's ticket is not negative.")
	}
	if err := CheckAuditReason(e.Reason); err != nil {
		return err
	}
	if len(e.Detail) > MaxAuditDetail {
		return Errorf(CodeInvalidRequest, "An audit entry's detail is at most %d bytes, not %d.", MaxAuditDetail, len(e.Detail))
	}
	if len(e.Detail) > 0 && !json.Valid(e.Detail) {
		return Errorf(CodeInvalidRequest, "An audit entry's detail must be JSON.")
	}
	return nil
}

// StatsBucket is what happened in one room during one StatsStep: counters
// that add up across processes and gauges sampled at some moment in it.
type StatsBucket struct {
	// At is the bucket's start, a multiple of StatsStep since the Unix epoch.
	At time.Time
	// Joins counts new sessions (waiting, admitted at once, or entering a
	// pre-queue); Admissions those that left the line to be admitted (or
	// served, in a manual room); Abandons those that left the line any
	// other way (left, expired).
	Joins, Admissions, Abandons int64
	// Waits is the histogram of the admissions' waits (see WaitBin).
	Waits [WaitBins]int64
	// EstErrAbsMs and EstErrMs sum |actual − estimated| and
	// (actual − estimated) wait, in milliseconds, over EstN admissions
	// whose estimate was known; EstRelErrBp sums their errors relative
	// to the actual wait (|actual − estimated| / actual, the actual wait
	// taken as at least a second), in basis points.
	EstErrAbsMs, EstErrMs, EstN, EstRelErrBp int64
	// HasGauges says Waiting, Active and ETALastMs were sampled.
	HasGauges bool
	// Waiting and Active are the room's totals when sampled.
	Waiting, Active int
	// ETALastMs is the estimated wait shown to the last person in line,
	// in milliseconds; -1 when nobody waits or there is no estimate.
	ETALastMs int64
}

// StatsBucketStart returns the start of the stats bucket holding t: t
// rounded down to a multiple of StatsStep since the Unix epoch, in UTC.
func StatsBucketStart(t time.Time) time.Time {
	return time.UnixMilli(StatsBucketMs(t)).UTC()
}

// StatsBucketMs is StatsBucketStart in Unix milliseconds.
func StatsBucketMs(t time.Time) int64 {
	ms, step := t.UnixMilli(), StatsStep.Milliseconds()
	b := ms - ms%step
	if ms%step < 0 {
		b -= step
	}
	return b
}

// The wait histogram has log-spaced bins: bin 0 holds waits under 100 ms;
// bin k (1 ≤ k ≤ waitLogBins) holds [waitEdges[k-1], waitEdges[k]), each
// edge 10% above the one before (rounded to a millisecond, so the ratio is
// 1.1 ± 0.005); the last bin holds waits of waitEdges[waitLogBins] (about
// 25 hours) and more.
const waitLogBins = 144

// WaitBins is the number of bins of a wait histogram.
const WaitBins = waitLogBins + 2

// waitEdges holds the bin edges in milliseconds. They are computed with
// integers, so every process and platform bins alike and histograms from
// different processes can be added up.
var waitEdges = func() (e [waitLogBins + 1]int64) {
	e[0] = 100
	for k := 1; k < len(e); k++ {
		e[k] = (e[k-1]*11 + 5) / 10
	}
	return e
}()

// WaitBin returns the histogram bin of a wait of d.
func WaitBin(d time.Duration) int {
	ms := d.Milliseconds()
	if ms < waitEdges[0] {
		return 0
	}
	if ms >= waitEdges[waitLogBins] {
		return WaitBins - 1
	}
	// The smallest k with ms < waitEdges[k]; waitEdges[0] <= ms.
	lo, hi := 1, waitLogBins
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if ms < waitEdges[mid] {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return lo
}

// WaitBinStart returns the shortest wait bin i holds: 0 for bin 0, and
// for the last bin (WaitBins-1) its lower edge, about 25 hours. Bin i holds
// the waits from WaitBinStart(i) up to WaitBinStart(i+1).
func WaitBinStart(i int) time.Duration {
	switch {
	case i <= 0:
		return 0
	case i >= WaitBins-1:
		return time.Duration(waitEdges[waitLogBins]) * time.Millisecond
	}
	return time.Duration(waitEdges[i-1]) * time.Millisecond
}

// CheckConsoleSessionID returns a CodeInvalidRequest error unless id can
// name a console sign-in: 1 to 256 bytes.
func CheckConsoleSessionID(id string) error {
	if id == "" || len(id) > 256 {
		return Errorf(CodeInvalidRequest, "A console session id is 1 to 256 bytes.")
	}
	return nil
}
