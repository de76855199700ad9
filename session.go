package waitroom

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Status is where a session stands.
type Status string

// The statuses. Waiting, Invited and Active are live; the others are final
// and stay in the room's history. Invited is a held session (one joined
// with a contact in a room with hold_places) whose turn came: its slot is
// reserved for the room's claim_window, and Claim makes it active.
const (
	StatusWaiting Status = "waiting"
	StatusInvited Status = "invited"
	StatusActive  Status = "active"
	StatusServed  Status = "served"
	StatusLeft    Status = "left"
	StatusExpired Status = "expired"
)

// Live reports whether s is waiting, invited or active.
func (s Status) Live() bool { return s == StatusWaiting || s == StatusActive || s == StatusInvited }

// Final reports whether s is served, left or expired.
func (s Status) Final() bool { return s == StatusServed || s == StatusLeft || s == StatusExpired }

// Reason says why a session ended.
type Reason string

// The reasons a session ends, with the status each one gives.
const (
	ReasonLeft        Reason = "left"         // StatusLeft: the session left
	ReasonRevoked     Reason = "revoked"      // StatusLeft: an operator ended it
	ReasonServed      Reason = "served"       // StatusServed: advanced in a manual room
	ReasonIdle        Reason = "idle"         // StatusExpired: active with no activity for active_timeout
	ReasonMaxSession  Reason = "max_session"  // StatusExpired: active longer than max_session
	ReasonNoPresence  Reason = "no_presence"  // StatusExpired: waiting with no presence for waiting_timeout
	ReasonGone        Reason = "gone"         // StatusExpired: went away and did not come back within grace
	ReasonRoomDeleted Reason = "room_deleted" // StatusExpired: the room was deleted with force
	ReasonSoldOut     Reason = "sold_out"     // StatusExpired: waiting when the room's inventory sold out
	ReasonUnclaimed   Reason = "unclaimed"    // StatusExpired: invited and not claimed within claim_window
)

// Status returns the final status a session ending for reason r gets.
func (r Reason) Status() Status {
	switch r {
	case ReasonLeft, ReasonRevoked:
		return StatusLeft
	case ReasonServed:
		return StatusServed
	}
	return StatusExpired
}

// Session is one person's place in a room. Position and Ahead are set only
// while waiting; Waiting, Active and Capacity are the room's totals when the
// session was read.
type Session struct {
	ID     string
	Room   string
	Status Status
	Ticket int64
	// Key is the optional identity given by a trusted caller.
	Key string
	// Position is the 1-based rank among waiting sessions; 0 when not waiting.
	Position int64
	Waiting  int
	Active   int
	Capacity int
	// ETA is the estimated wait; nil while there is no basis for one.
	ETA *ETA
	// ETAUnknown says why a waiting session in line has no ETA yet
	// ("starting", "paused", "stalled"; see internal/eta); empty when it
	// has one or no reason is known.
	ETAUnknown string
	JoinedAt   time.Time
	AdmittedAt time.Time
	EndedAt    time.Time
	// EndReason says why a final session ended.
	EndReason Reason
	// OpensAt is the opening of a scheduled room, set on a session that
	// waits in its pre-queue (Ticket 0, no Position until the draw).
	OpensAt time.Time
	// Entrants is how many wait in the pre-queue, set with OpensAt.
	Entrants int
	// Entry is the public name of a session that entered a pre-queue, as
	// the published draw lists it.
	Entry string
	// Stocked says the room has an inventory; Remaining is then how many
	// units are neither sold nor reserved, and Unit whether this (active)
	// session holds a reserved unit.
	Stocked   bool
	Remaining int64
	Unit      bool
	// Place orders the line: the line is ordered by Place where it is
	// set and by Ticket otherwise. An operator's moves (QueueAll, Front)
	// give negative places, each smaller than every place given before,
	// so a moved session waits ahead of everyone, the latest move first.
	// In a room with tiers every other session has a positive place made
	// from its tier and ticket (see StrictPlace and WeightedPlace). 0 for
	// an untiered session never moved. An admitted session keeps its
	// Place; an ended one reports 0, as it does Extended.
	Place int64
	// Tier is the session's tier in a room with tiers (RoomConfig.Tiers).
	Tier string
	// Extended is how much longer than max_session an operator let this
	// session stay active (Store.Extend).
	Extended time.Duration
	// Contact is what the trusted backend that joined a held session gave
	// to reach its person (opaque: the webhooks carry it). A session is
	// held exactly when it has one: it needs no presence while it waits.
	Contact string
	// ClaimBy is when an invited session's claim window ends (its
	// AdmittedAt, the invitation, plus the room's claim_window).
	ClaimBy time.Time
	// Pass is the signed pass of an active session (a JWT the gate and the
	// protected app check offline). Stores never set it: the server fills it
	// in on the way out, so it is empty in anything a store returns.
	Pass string
}

// Ahead is the number of waiting sessions ahead of this one.
func (s Session) Ahead() int64 {
	if s.Position > 0 {
		return s.Position - 1
	}
	return 0
}

// ETA is an estimate, in whole seconds, of the time until admission.
type ETA struct {
	Seconds int64
	Low     int64
	High    int64
}

// TimeFormat is the layout of every time in the API: RFC 3339 in UTC with
// milliseconds.
const TimeFormat = "2006-01-02T15:04:05.000Z07:00"

// MarshalJSON writes the API's Session object. It is written by hand because
// it is on the hottest path of the server.
func (s Session) MarshalJSON() ([]byte, error) {
	return s.AppendJSON(make([]byte, 0, 384)), nil
}

// AppendJSON appends the JSON form of s to b.
func (s Session) AppendJSON(b []byte) []byte {
	b = append(b, `{"id":`...)
	b = appendString(b, s.ID)
	b = append(b, `,"room":`...)
	b = appendString(b, s.Room)
	b = append(b, `,"status":`...)
	b = appendString(b, string(s.Status))
	b = append(b, `,"ticket":`...)
	b = strconv.AppendInt(b, s.Ticket, 10)
	if s.Key != "" {
		b = append(b, `,"key":`...)
		b = appendString(b, s.Key)
	}
	if s.Status == StatusWaiting && s.Position > 0 {
		b = append(b, `,"position":`...)
		b = strconv.AppendInt(b, s.Position, 10)
		b = append(b, `,"ahead":`...)
		b = strconv.AppendInt(b, s.Ahead(), 10)
	}
	b = append(b, `,"waiting":`...)
	b = strconv.AppendInt(b, int64(s.Waiting), 10)
	b = append(b, `,"active":`...)
	b = strconv.AppendInt(b, int64(s.Active), 10)
	b = append(b, `,"capacity":`...)
	b = strconv.AppendInt(b, int64(s.Capacity), 10)
	if s.ETA != nil && s.Status == StatusWaiting {
		b = append(b, `,"eta_seconds":`...)
		b = strconv.AppendInt(b, s.ETA.Seconds, 10)
		b = append(b, `,"eta_low_seconds":`...)
		b = strconv.AppendInt(b, s.ETA.Low, 10)
		b = append(b, `,"eta_high_seconds":`...)
		b = strconv.AppendInt(b, s.ETA.High, 10)
	} else if s.ETAUnknown != "" && s.Status == StatusWaiting && s.Position > 0 {
		b = append(b, `,"eta_unknown":`...)
		b = appendString(b, s.ETAUnknown)
	}
	if s.Entry != "" {
		b = append(b, `,"entry":`...)
		b = appendString(b, s.Entry)
	}
	if s.Stocked {
		b = append(b, `,"remaining":`...)
		b = strconv.AppendInt(b, s.Remaining, 10)
		if s.Status == StatusActive {
			b = append(b, `,"unit":`...)
			b = strconv.AppendBool(b, s.Unit)
		}
	}
	if !s.OpensAt.IsZero() && s.Status == StatusWaiting {
		b = appendTime(b, `,"opens_at":"`, s.OpensAt)
		b = append(b, `,"entrants":`...)
		b = strconv.AppendInt(b, int64(s.Entrants), 10)
	}
	if s.Contact != "" {
		b = append(b, `,"contact":`...)
		b = appendString(b, s.Contact)
	}
	if s.Status == StatusInvited {
		b = appendTime(b, `,"claim_by":"`, s.ClaimBy)
	}
	if s.Tier != "" {
		b = append(b, `,"tier":`...)
		b = appendString(b, s.Tier)
	}
	if s.Place != 0 {
		b = append(b, `,"place":`...)
		b = strconv.AppendInt(b, s.Place, 10)
	}
	if s.Extended != 0 {
		b = append(b, `,"extended":`...)
		b = appendString(b, Duration(s.Extended).String())
	}
	b = appendTime(b, `,"joined_at":"`, s.JoinedAt)
	b = appendTime(b, `,"admitted_at":"`, s.AdmittedAt)
	b = appendTime(b, `,"ended_at":"`, s.EndedAt)
	if s.EndReason != "" {
		b = append(b, `,"end_reason":`...)
		b = appendString(b, string(s.EndReason))
	}
	if s.Pass != "" && s.Status == StatusActive {
		b = append(b, `,"pass":`...)
		b = appendString(b, s.Pass)
	}
	return append(b, '}')
}

// appendString appends v as a JSON string, escaped as encoding/json does:
// control characters, quotes and backslashes, <, > and & (so the JSON is safe
// inside HTML), U+2028 and U+2029, and invalid UTF-8 as U+FFFD.
func appendString(b []byte, v string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(v); {
		c := v[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, v[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(v[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, v[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, v[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, v[start:]...)
	return append(b, '"')
}

func appendTime(b []byte, prefix string, t time.Time) []byte {
	if t.IsZero() {
		return b
	}
	b = append(b, prefix...)
	t = t.UTC()
	year, month, day := t.Date()
	if year < 0 || year > 9999 {
		b = t.AppendFormat(b, TimeFormat)
		return append(b, '"')
	}
	// TimeFormat written out by hand: AppendFormat interprets its layout
	// on every call, and every Session carries up to three times.
	hour, minute, second := t.Clock()
	b = append4(b, year)
	b = append(b, '-')
	b = append2(b, int(month))
	b = append(b, '-')
	b = append2(b, day)
	b = append(b, 'T')
	b = append2(b, hour)
	b = append(b, ':')
	b = append2(b, minute)
	b = append(b, ':')
	b = append2(b, second)
	ms := t.Nanosecond() / 1e6
	b = append(b, '.', byte('0'+ms/100), byte('0'+ms/10%10), byte('0'+ms%10), 'Z', '"')
	return b
}

func append2(b []byte, n int) []byte { return append(b, byte('0'+n/10), byte('0'+n%10)) }

func append4(b []byte, n int) []byte {
	return append(b, byte('0'+n/1000), byte('0'+n/100%10), byte('0'+n/10%10), byte('0'+n%10))
}

// sessionJSON is the wire form used for decoding.
type sessionJSON struct {
	ID         string     `json:"id"`
	Room       string     `json:"room"`
	Status     Status     `json:"status"`
	Ticket     int64      `json:"ticket"`
	Key        string     `json:"key,omitempty"`
	Position   int64      `json:"position,omitempty"`
	Ahead      *int64     `json:"ahead,omitempty"`
	Waiting    int        `json:"waiting"`
	Active     int        `json:"active"`
	Capacity   int        `json:"capacity"`
	ETA        *int64     `json:"eta_seconds,omitempty"`
	ETALow     *int64     `json:"eta_low_seconds,omitempty"`
	ETAHigh    *int64     `json:"eta_high_seconds,omitempty"`
	ETAUnknown string     `json:"eta_unknown,omitempty"`
	JoinedAt   *time.Time `json:"joined_at,omitempty"`
	AdmittedAt *time.Time `json:"admitted_at,omitempty"`
	EndedAt    *time.Time `json:"ended_at,omitempty"`
	EndReason  Reason     `json:"end_reason,omitempty"`
	Pass       string     `json:"pass,omitempty"`
	Entry      string     `json:"entry,omitempty"`
	OpensAt    *time.Time `json:"opens_at,omitempty"`
	Entrants   int        `json:"entrants,omitempty"`
	Remaining  *int64     `json:"remaining,omitempty"`
	Unit       bool       `json:"unit,omitempty"`
	Place      int64      `json:"place,omitempty"`
	Tier       string     `json:"tier,omitempty"`
	Extended   Duration   `json:"extended,omitempty"`
	Contact    string     `json:"contact,omitempty"`
	ClaimBy    *time.Time `json:"claim_by,omitempty"`
}

// UnmarshalJSON reads the API's Session object.
func (s *Session) UnmarshalJSON(b []byte) error {
	var w sessionJSON
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*s = Session{
		ID: w.ID, Room: w.Room, Status: w.Status, Ticket: w.Ticket, Key: w.Key,
		Position: w.Position, Waiting: w.Waiting, Active: w.Active, Capacity: w.Capacity,
		EndReason: w.EndReason, Pass: w.Pass, Entry: w.Entry, Entrants: w.Entrants, Unit: w.Unit,
		Place: w.Place, Tier: w.Tier, Extended: w.Extended.D(), Contact: w.Contact,
		ETAUnknown: w.ETAUnknown,
	}
	if w.Remaining != nil {
		s.Stocked, s.Remaining = true, *w.Remaining
	}
	if w.ETA != nil {
		s.ETA = &ETA{Seconds: *w.ETA}
		if w.ETALow != nil {
			s.ETA.Low = *w.ETALow
		}
		if w.ETAHigh != nil {
			s.ETA.High = *w.ETAHigh
		}
	}
	for _, p := range []struct {
		dst *time.Time
		src *time.Time
	}{{&s.OpensAt, w.OpensAt}, {&s.JoinedAt, w.JoinedAt}, {&s.AdmittedAt, w.AdmittedAt}, {&s.EndedAt, w.EndedAt}, {&s.ClaimBy, w.ClaimBy}} {
		if p.src != nil {
			*p.dst = *p.src
		}
	}
	return nil
}

// SessionID is a parsed session id: the session's ticket and 128 random bits.
// Whoever holds the string form owns the session. The ticket is public (it is
// in every Session); the secret is what makes the id unguessable, and stores
// compare it in constant time.
//
// A session that joins a scheduled room before it opens has no ticket yet:
// its id carries its entry number in the pre-queue instead (Entry, with
// Ticket 0), and keeps that id after the draw gives it a ticket.
type SessionID struct {
	Ticket int64
	Entry  int64
	Secret [16]byte
}

// entryBit marks the 8-byte number of an id as an entry number.
const entryBit = 1 << 63

// MaxEntry is the largest pre-queue entry number.
const MaxEntry = 1 << 62

// NewEntryID returns an id for pre-queue entry n with a fresh random secret.
func NewEntryID(n int64) SessionID {
	id := SessionID{Entry: n}
	_, _ = rand.Read(id.Secret[:])
	return id
}

// SessionIDLen is the length of a session id's string form.
const SessionIDLen = 32

// NewSessionID returns an id for ticket with a fresh random secret.
func NewSessionID(ticket int64) SessionID {
	id := SessionID{Ticket: ticket}
	// crypto/rand.Read never returns an error on supported platforms.
	_, _ = rand.Read(id.Secret[:])
	return id
}

// String returns the URL-safe form: 32 characters of unpadded base64url
// encoding the 8-byte big-endian ticket followed by the secret.
func (id SessionID) String() string {
	var raw [24]byte
	if id.Entry != 0 {
		binary.BigEndian.PutUint64(raw[:8], uint64(id.Entry)|entryBit)
	} else {
		binary.BigEndian.PutUint64(raw[:8], uint64(id.Ticket))
	}
	copy(raw[8:], id.Secret[:])
	return base64.RawURLEncoding.EncodeToString(raw[:])
}

// Matches reports in constant time whether secret equals id's secret.
func (id SessionID) Matches(secret [16]byte) bool {
	return subtle.ConstantTimeCompare(id.Secret[:], secret[:]) == 1
}

// TicketOfIDPrefix returns the ticket a session id starting with prefix
// has: the first 11 characters of an id hold its ticket. ok is false for a
// prefix too short or not the start of a ticketed id (an entrant's id
// before its draw holds an entry number instead).
func TicketOfIDPrefix(prefix string) (ticket int64, ok bool) {
	if len(prefix) < 11 || len(prefix) > SessionIDLen {
		return 0, false
	}
	id, err := ParseSessionID(prefix + strings.Repeat("A", SessionIDLen-len(prefix)))
	if err != nil || id.Ticket == 0 {
		return 0, false
	}
	return id.Ticket, true
}

// ParseSessionID parses the string form of a session id. Anything that cannot
// have been issued is a CodeInvalidSessionID error.
func ParseSessionID(s string) (SessionID, error) {
	var id SessionID
	if len(s) != SessionIDLen {
		return id, errBadID
	}
	// 32 base64url characters are exactly 24 bytes with no padding and no
	// spare bits, so decoding by table is exact; it is also several times
	// faster than encoding/base64 on this hot path.
	var raw [24]byte
	for i := 0; i < 8; i++ {
		a, b, c, d := b64[s[4*i]], b64[s[4*i+1]], b64[s[4*i+2]], b64[s[4*i+3]]
		if a|b|c|d == 0xff {
			return id, errBadID
		}
		v := uint32(a)<<18 | uint32(b)<<12 | uint32(c)<<6 | uint32(d)
		raw[3*i], raw[3*i+1], raw[3*i+2] = byte(v>>16), byte(v>>8), byte(v)
	}
	t := binary.BigEndian.Uint64(raw[:8])
	if t&entryBit != 0 {
		if t &^= entryBit; t == 0 || t > MaxEntry {
			return id, errBadID
		}
		id.Entry = int64(t)
	} else if t == 0 || t > 1<<62 {
		return id, errBadID
	} else {
		id.Ticket = int64(t)
	}
	copy(id.Secret[:], raw[8:])
	return id, nil
}

// b64 maps a base64url character to its 6-bit value, and anything else to 0xff.
var b64 = func() (t [256]byte) {
	for i := range t {
		t[i] = 0xff
	}
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	for i := 0; i < len(alphabet); i++ {
		t[alphabet[i]] = byte(i)
	}
	return t
}()

var errBadID = &Error{Code: CodeInvalidSessionID, Message: "That is not a session id this server issues."}
