package waitroom

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Mode says how a room admits people.
type Mode string

const (
	// ModeAuto is a traffic waiting room: sessions are admitted automatically
	// while fewer than Capacity are active.
	ModeAuto Mode = "auto"
	// ModeManual is a service waitlist: an operator serves the next in line
	// with Advance; nobody is admitted automatically.
	ModeManual Mode = "manual"
)

// Limits on configuration values. They keep arithmetic far from overflow and
// catch typos such as a capacity with three extra zeros.
const (
	MaxCapacity      = 1_000_000_000
	MaxRatePerMinute = 1_000_000_000
	MaxDuration      = Duration(366 * 24 * time.Hour)
	// MaxRoomNameLen is the longest room name.
	MaxRoomNameLen = 64
	// MaxKeyLen is the longest identity key, in bytes.
	MaxKeyLen = 256
)

// DefaultRoom is the room that exists on a server's first start.
const DefaultRoom = "default"

// Duration is a time.Duration that reads and writes JSON as a Go duration
// string ("90s", "5m").
type Duration time.Duration

// D returns d as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// String formats d compactly: "5m" rather than "5m0s", "0s" for zero.
func (d Duration) String() string {
	s := time.Duration(d).String()
	if strings.HasSuffix(s, "m0s") {
		s = s[:len(s)-2]
	}
	if strings.HasSuffix(s, "h0m") {
		s = s[:len(s)-2]
	}
	return s
}

// MarshalJSON writes d as a duration string.
func (d Duration) MarshalJSON() ([]byte, error) {
	return json.Marshal(d.String())
}

// UnmarshalJSON reads a duration string. Numbers are refused, because a bare
// number leaves the unit to guesswork.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("a duration must be a string such as \"90s\" or \"5m\"")
	}
	v, err := ParseDuration(s)
	if err != nil {
		return err
	}
	*d = v
	return nil
}

// MaxDurationLen is the longest duration string read, in bytes.
const MaxDurationLen = 32

// durationSyntax is the form of a duration string the API reads, which the
// document's Duration pattern states: "0", or numbers each with a unit. Go's
// time.ParseDuration also reads a sign ("+5s", "-0"), a bare point (".5s",
// "5.s") and the Greek mu ("5μs"); those are refused, so that what the
// document says is what the server reads.
var durationSyntax = regexp.MustCompile(`^(?:0|(?:[0-9]+(?:\.[0-9]+)?(?:h|m|s|ms|us|µs|ns))+)$`)

// ParseDuration parses a Go duration string of the document's Duration
// pattern and checks it is 0 or lies in [1ms, MaxDuration].
func ParseDuration(s string) (Duration, error) {
	if len(s) > MaxDurationLen {
		return 0, fmt.Errorf("duration %.32q… is too long", s)
	}
	if !durationSyntax.MatchString(s) {
		return 0, fmt.Errorf("%q is not a duration such as \"90s\" or \"5m\": numbers each with a unit (h, m, s, ms, us, ns), or 0", s)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("%q is not a duration such as \"90s\" or \"5m\"", s)
	}
	if v < 0 {
		return 0, fmt.Errorf("duration %q is negative", s)
	}
	if Duration(v) > MaxDuration {
		return 0, fmt.Errorf("duration %q is longer than %s", s, MaxDuration)
	}
	if v > 0 && v < time.Millisecond {
		return 0, fmt.Errorf("duration %q is shorter than 1ms; use 0 or at least 1ms", s)
	}
	return Duration(v), nil
}

// RoomConfig is a room's configuration. The JSON field names are the API's.
type RoomConfig struct {
	// Mode is auto (admission is automatic) or manual (an operator serves).
	Mode Mode `json:"mode"`
	// Capacity is the most sessions active at once in an auto room; 0 admits nobody.
	Capacity int `json:"capacity"`
	// RatePerMinute paces automatic admissions; 0 means no limit. Admissions
	// average at most this many per minute, with bursts of at most one
	// second's worth (RatePerMinute/60, at least 1).
	RatePerMinute int `json:"rate_per_minute"`
	// ActiveTimeout expires an active session with no activity for this long;
	// 0 means active sessions never idle out.
	ActiveTimeout Duration `json:"active_timeout"`
	// MaxSession caps the time a session stays active; 0 means no cap.
	MaxSession Duration `json:"max_session"`
	// WaitingTimeout drops a waiting session that shows no presence for this
	// long; 0 keeps it until it leaves.
	WaitingTimeout Duration `json:"waiting_timeout"`
	// Grace is how long a session that said it is going away keeps its place
	// or slot.
	Grace Duration `json:"grace"`
	// Paused stops automatic admissions.
	Paused bool `json:"paused"`
	// TargetURL is where the waiting page sends a session once it is
	// admitted: an absolute http(s) URL, or a path on this server.
	TargetURL string `json:"target_url,omitempty"`
	// ReturnOrigins lists the origins (scheme://host[:port]) that a
	// waiting page's ?return_to= may send an admitted session back to;
	// any other return_to is ignored, so the page is no open redirect.
	ReturnOrigins []string `json:"return_origins,omitempty"`
	// OpensAt schedules the room's opening: joins before it enter a
	// pre-queue, and at it every entrant gets a ticket in a verifiable
	// draw (see DrawRecord). Zero means the room is open.
	OpensAt time.Time `json:"opens_at,omitzero"`
	// ClosesAt ends joining: a join at or after it fails with
	// CodeRoomClosed. Those already in line still get their turn.
	ClosesAt time.Time `json:"closes_at,omitzero"`
	// Inventory, when set, is the stock the room sells: each automatic
	// admission reserves a unit for the admitted session, admission stops
	// while none is left to reserve, and once all are sold the line ends
	// (ReasonSoldOut) and joins fail with CodeSoldOut. See Store.Stock.
	Inventory *int64 `json:"inventory,omitempty"`
	// Tiers, when set, splits the line into priority classes, highest
	// first (see Tier): a join goes to the last tier unless its invite
	// names another. Names and order (and TierPolicy) change only while
	// the room is empty.
	Tiers []Tier `json:"tiers,omitempty"`
	// TierPolicy is how admission picks between tiers: strict priority
	// (the default) or weighted by share.
	TierPolicy TierPolicy `json:"tier_policy,omitempty"`
	// InviteOnly refuses joins without a valid invite (CodeInviteRequired).
	InviteOnly bool `json:"invite_only,omitempty"`
	// InviteKeys are Ed25519 public keys (base64) whose private halves
	// mint invites offline, in the operator's own backend.
	InviteKeys []string `json:"invite_keys,omitempty"`
	// Challenge "pow" asks every join for a solved proof-of-work
	// challenge (ALTCHA), whose difficulty follows the join rate between
	// ChallengeMin and ChallengeMax (0: the server's defaults).
	Challenge    string `json:"challenge,omitempty"`
	ChallengeMin int64  `json:"challenge_min,omitempty"`
	ChallengeMax int64  `json:"challenge_max,omitempty"`
	// HoldPlaces lets a trusted backend join held sessions (JoinRequest
	// Contact): they need no presence while they wait, and when their
	// turn comes they are invited for ClaimWindow (see StatusInvited).
	HoldPlaces bool `json:"hold_places,omitempty"`
	// ClaimWindow is how long an invited session's slot stays reserved
	// for its claim; past it the session expires (ReasonUnclaimed) and the
	// slot goes to the next in line. Required with HoldPlaces (a
	// configuration read from JSON gets DefaultClaimWindow); see
	// HeldWindow for a room that stopped holding places.
	ClaimWindow Duration `json:"claim_window,omitempty"`
	// NotifyAt, when positive, is the position at which a waiting session
	// is told it is near (once: a Change with Near set, the webhook event
	// session.near).
	NotifyAt int `json:"notify_at,omitempty"`
}

// MaxInventory is the largest inventory a room may have.
const MaxInventory = 1_000_000_000

// Bounds on opens_at and closes_at: far enough apart for any real drop,
// close enough to keep millisecond arithmetic and four-digit years.
var (
	MinScheduleTime = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	MaxScheduleTime = time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)
)

// Limits on the page fields of a configuration.
const (
	MaxURLLen        = 2048
	MaxReturnOrigins = 32
)

// DefaultConfig returns the configuration of a room for which nothing was set.
func DefaultConfig() RoomConfig {
	return RoomConfig{
		Mode:           ModeAuto,
		Capacity:       100,
		ActiveTimeout:  Duration(5 * time.Minute),
		WaitingTimeout: Duration(time.Minute),
		Grace:          Duration(30 * time.Second),
	}
}

// Validate reports the first problem with c as a CodeInvalidConfig error.
func (c RoomConfig) Validate() error {
	bad := func(format string, args ...any) error {
		return Errorf(CodeInvalidConfig, format, args...)
	}
	switch c.Mode {
	case ModeAuto, ModeManual:
	default:
		return bad("mode must be \"auto\" or \"manual\", not %q.", string(c.Mode))
	}
	if c.Capacity < 0 || c.Capacity > MaxCapacity {
		return bad("capacity must be between 0 and %d.", MaxCapacity)
	}
	if c.RatePerMinute < 0 || c.RatePerMinute > MaxRatePerMinute {
		return bad("rate_per_minute must be between 0 and %d.", MaxRatePerMinute)
	}
	for _, f := range []struct {
		name string
		d    Duration
	}{
		{"active_timeout", c.ActiveTimeout},
		{"max_session", c.MaxSession},
		{"waiting_timeout", c.WaitingTimeout},
		{"grace", c.Grace},
		{"claim_window", c.ClaimWindow},
	} {
		if f.d < 0 || f.d > MaxDuration {
			return bad("%s must be between 0s and %s.", f.name, MaxDuration)
		}
		if f.d > 0 && f.d < Duration(time.Millisecond) {
			return bad("%s must be 0 or at least 1ms.", f.name)
		}
	}
	if c.TargetURL != "" {
		if err := checkTarget(c.TargetURL); err != nil {
			return bad("target_url %s", err)
		}
	}
	if len(c.ReturnOrigins) > MaxReturnOrigins {
		return bad("return_origins holds at most %d origins.", MaxReturnOrigins)
	}
	for _, o := range c.ReturnOrigins {
		if _, err := ParseOrigin(o); err != nil {
			return bad("return_origins: %s", err)
		}
	}
	for _, f := range []struct {
		name string
		t    time.Time
	}{{"opens_at", c.OpensAt}, {"closes_at", c.ClosesAt}} {
		if !f.t.IsZero() && (f.t.Before(MinScheduleTime) || !f.t.Before(MaxScheduleTime)) {
			return bad("%s must lie between %s and %s.", f.name, MinScheduleTime.Format(time.RFC3339), MaxScheduleTime.Format(time.RFC3339))
		}
	}
	if c.Inventory != nil && (*c.Inventory < 0 || *c.Inventory > MaxInventory) {
		return bad("inventory must be between 0 and %d, not %d.", MaxInventory, *c.Inventory)
	}
	if !c.OpensAt.IsZero() && !c.ClosesAt.IsZero() && !c.ClosesAt.After(c.OpensAt) {
		return bad("closes_at (%s) must be after opens_at (%s); move closes_at later or opens_at earlier.",
			c.ClosesAt.UTC().Format(time.RFC3339), c.OpensAt.UTC().Format(time.RFC3339))
	}
	if err := c.validateHolds(); err != nil {
		return err
	}
	return c.validateDoor()
}

// Normalize returns c with its times in UTC at millisecond resolution, the
// form every store keeps.
func (c RoomConfig) Normalize() RoomConfig {
	if c.Inventory != nil {
		v := *c.Inventory // never share the caller's
		c.Inventory = &v
	}
	c.Tiers = slices.Clone(c.Tiers)
	c.InviteKeys = slices.Clone(c.InviteKeys)
	c.ReturnOrigins = slices.Clone(c.ReturnOrigins)
	if len(c.Tiers) > 0 && c.TierPolicy == "" {
		c.TierPolicy = TierStrict
	}
	if !c.OpensAt.IsZero() {
		c.OpensAt = time.UnixMilli(c.OpensAt.UnixMilli()).UTC()
	}
	if !c.ClosesAt.IsZero() {
		c.ClosesAt = time.UnixMilli(c.ClosesAt.UnixMilli()).UTC()
	}
	return c
}

// checkTarget accepts an absolute http(s) URL or a path on this server.
func checkTarget(v string) error {
	if len(v) > MaxURLLen {
		return fmt.Errorf("is longer than %d bytes.", MaxURLLen)
	}
	u, err := url.Parse(v)
	if err != nil {
		return fmt.Errorf("is not a URL.")
	}
	switch {
	case u.Scheme == "" && u.Host == "" && strings.HasPrefix(v, "/") && !strings.HasPrefix(v, "//") && !strings.Contains(v, "\\"):
		return nil // a path on this server
	case (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" && u.User == nil:
		return nil
	}
	return fmt.Errorf("must be an absolute http(s) URL without credentials, or a path starting with /.")
}

// ParseOrigin parses an origin, scheme://host[:port] with scheme http or
// https and nothing after it, into its canonical lower-case form.
func ParseOrigin(v string) (string, error) {
	if len(v) > MaxURLLen {
		return "", fmt.Errorf("%.40q… is too long", v)
	}
	for i := 0; i < len(v); i++ {
		if v[i] <= ' ' || v[i] >= 0x7f || v[i] == '%' {
			// Browsers send an Origin in ASCII, an international name in
			// its xn-- form; anything else could never match one. A
			// percent escape would decode to a byte no Origin has.
			return "", fmt.Errorf("%.40q is not an origin: write it in ASCII without %%-escapes, an international host name in its xn-- form", v)
		}
	}
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil ||
		(u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" || u.Opaque != "" {
		return "", fmt.Errorf("%q is not an origin such as https://example.com", v)
	}
	return strings.ToLower(u.Scheme + "://" + u.Host), nil
}

// ParseRoomConfig reads a configuration from JSON. Fields that are absent
// take their defaults; unknown fields, trailing data, nulls (a null field is
// not an absent one) and invalid values are CodeInvalidConfig or
// CodeInvalidJSON errors. An empty body is the default configuration; a
// null body is refused.
func ParseRoomConfig(data []byte) (RoomConfig, error) {
	c := DefaultConfig()
	if len(bytes.TrimSpace(data)) == 0 {
		return c, nil
	}
	if err := DecodeJSON(data, &c); err != nil {
		var pe *time.ParseError
		if errors.As(err, &pe) || strings.Contains(err.Error(), "Time.UnmarshalJSON") {
			return RoomConfig{}, &Error{Code: CodeInvalidConfig, Err: err,
				Message: "opens_at and closes_at are RFC 3339 times as strings, such as \"2030-06-01T18:00:00Z\" or \"2030-06-01T20:00:00+02:00\"."}
		}
		return RoomConfig{}, err
	}
	if err := checkNotEmpty(data); err != nil {
		return RoomConfig{}, err
	}
	if c.HoldPlaces && c.ClaimWindow == 0 {
		c.ClaimWindow = DefaultClaimWindow
	}
	return c.Normalize(), c.Validate()
}

// checkNotEmpty refuses "" for the fields whose absence is their default
// but whose values are a list of words (the document's enums): in the
// configuration "" would read as absent, which the document does not say.
func checkNotEmpty(data []byte) error {
	var sent struct {
		Challenge  *string `json:"challenge"`
		TierPolicy *string `json:"tier_policy"`
	}
	_ = json.Unmarshal(data, &sent) // DecodeJSON read it already
	switch {
	case sent.Challenge != nil && *sent.Challenge == "":
		return Errorf(CodeInvalidConfig, "challenge must be \"pow\", or left out for none; not \"\".")
	case sent.TierPolicy != nil && *sent.TierPolicy == "":
		return Errorf(CodeInvalidConfig, "tier_policy must be \"strict\" or \"weighted\", or left out for strict; not \"\".")
	}
	return nil
}

// DecodeJSON decodes exactly one JSON value from data into v, refusing unknown
// fields, trailing data and, unless v is a raw form (*json.RawMessage, *any,
// *map[string]any or *map[string]json.RawMessage), any null: a struct
// cannot tell a null field from an absent one. Errors are *Error with
// CodeInvalidJSON and a message that names the problem.
func DecodeJSON(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return &Error{Code: CodeInvalidJSON, Message: jsonProblem(err), Err: err}
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return Errorf(CodeInvalidJSON, "The body holds more than one JSON value.")
	}
	if !keepsNulls(v) {
		return checkNoNull(data)
	}
	return nil
}

// jsonProblem turns a decoding error into a sentence for a person.
func jsonProblem(err error) string {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		return fmt.Sprintf("The body is not valid JSON (at byte %d).", syn.Offset)
	case errors.As(err, &typ):
		if typ.Field != "" {
			return fmt.Sprintf("Field %q must be a JSON %s.", typ.Field, jsonKind(typ.Type.Kind().String()))
		}
		return "The body must be a JSON object."
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "The body ends before its JSON value does."
	}
	msg := err.Error()
	if f, ok := strings.CutPrefix(msg, "json: unknown field "); ok {
		return fmt.Sprintf("Unknown field %s.", f)
	}
	// Errors from UnmarshalJSON methods (durations) carry their own sentence.
	msg = strings.TrimPrefix(msg, "json: ")
	if len(msg) > 200 {
		msg = msg[:200]
	}
	return "Invalid value: " + msg + "."
}

func jsonKind(k string) string {
	switch k {
	case "int", "int64", "int32", "uint", "uint64", "float64":
		return "number"
	case "bool":
		return "boolean"
	case "struct", "map":
		return "object"
	case "slice", "array":
		return "array"
	}
	return k
}

// ValidRoomName reports whether name matches ^[a-z0-9][a-z0-9._-]{0,63}$.
func ValidRoomName(name string) bool {
	if len(name) == 0 || len(name) > MaxRoomNameLen {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
		case i > 0 && (c == '.' || c == '_' || c == '-'):
		default:
			return false
		}
	}
	return true
}

// CheckRoomName returns a CodeInvalidRoomName error when name is not valid.
func CheckRoomName(name string) error {
	if ValidRoomName(name) {
		return nil
	}
	return Errorf(CodeInvalidRoomName, "A room name is 1 to 64 characters of a-z, 0-9, '.', '_' and '-', starting with a letter or digit.")
}

// CheckKey returns a CodeInvalidKey error unless key is 1 to MaxKeyLen bytes
// of valid UTF-8 that Printable accepts: no control, format (bidi, zero
// width), invisible or non-ASCII space characters, no U+FFFD.
func CheckKey(key string) error {
	if key == "" || len(key) > MaxKeyLen {
		return Errorf(CodeInvalidKey, "A key is 1 to %d bytes.", MaxKeyLen)
	}
	if !Printable(key) {
		return Errorf(CodeInvalidKey, "A key must be printable UTF-8 text: letters, marks, numbers, punctuation, symbols and the ASCII space, without control, format, invisible or other separator characters.")
	}
	return nil
}

// Room is a room's configuration and its counts at one moment.
type Room struct {
	Name string `json:"room"`
	RoomConfig
	// Waiting and Active count live sessions.
	Waiting int `json:"waiting"`
	Active  int `json:"active"`
	// LastTicket is the highest ticket issued so far (0 before any join).
	LastTicket int64 `json:"last_ticket"`
	// Entrants counts the pre-queue of a scheduled room before its draw.
	Entrants int `json:"entrants,omitempty"`
	// Admissions counts the sessions admitted (or, in a manual room,
	// served) since the room was created; Inversions those of them
	// admitted while a smaller ticket had been admitted before: a measure
	// of first come, first served that is 0 unless the order broke.
	Admissions int64 `json:"admissions"`
	Inversions int64 `json:"inversions"`
	// Sold and Reserved count units of a room with an Inventory;
	// Remaining is Inventory - Sold - Reserved. All three are zero (and
	// Remaining absent from JSON) without one.
	Sold      int64  `json:"sold,omitempty"`
	Reserved  int64  `json:"reserved,omitempty"`
	Remaining *int64 `json:"remaining,omitempty"`
	// Revision names the room's configuration: it is 1 for a room made
	// under a name never used before and grows by one with every change
	// of the configuration (PutRoom, UpdateRoom, QueueAll, a StockSet),
	// whether or not a value changed, and with nothing else. A room
	// deleted and made again continues above the last revision it had,
	// so a revision never names two configurations of one name in one
	// store. The API's ETag of a room is its revision (ETag).
	Revision int64 `json:"revision"`
}

// ETag is the room's HTTP entity tag: its Revision, quoted, as the API
// sends it in the ETag header and takes it back in If-Match.
func (r Room) ETag() string { return `"` + strconv.FormatInt(r.Revision, 10) + `"` }

// ParseETag reads an entity tag ETag made, strong and quoted, and returns
// its revision; ok is false for anything else (a weak tag, another
// server's tag), which matches no room.
func ParseETag(tag string) (rev int64, ok bool) {
	v, found := strings.CutPrefix(tag, `"`)
	if !found {
		return 0, false
	}
	v, found = strings.CutSuffix(v, `"`)
	if !found || v == "" || len(v) > 19 || v[0] == '0' {
		return 0, false
	}
	for i := 0; i < len(v); i++ {
		if v[i] < '0' || v[i] > '9' {
			return 0, false
		}
	}
	rev, err := strconv.ParseInt(v, 10, 64)
	return rev, err == nil
}

// Equal reports whether c and d configure a room the same way (a nil and an
// empty ReturnOrigins are the same).
func (c RoomConfig) Equal(d RoomConfig) bool {
	return c.Mode == d.Mode && c.Capacity == d.Capacity && c.RatePerMinute == d.RatePerMinute &&
		c.ActiveTimeout == d.ActiveTimeout && c.MaxSession == d.MaxSession &&
		c.WaitingTimeout == d.WaitingTimeout && c.Grace == d.Grace && c.Paused == d.Paused &&
		c.TargetURL == d.TargetURL && slices.Equal(c.ReturnOrigins, d.ReturnOrigins) &&
		c.OpensAt.Equal(d.OpensAt) && c.ClosesAt.Equal(d.ClosesAt) &&
		(c.Inventory == nil) == (d.Inventory == nil) && (c.Inventory == nil || *c.Inventory == *d.Inventory) &&
		slices.Equal(c.Tiers, d.Tiers) && c.TierPolicy == d.TierPolicy && c.InviteOnly == d.InviteOnly &&
		slices.Equal(c.InviteKeys, d.InviteKeys) && c.Challenge == d.Challenge &&
		c.ChallengeMin == d.ChallengeMin && c.ChallengeMax == d.ChallengeMax &&
		c.HoldPlaces == d.HoldPlaces && c.ClaimWindow == d.ClaimWindow && c.NotifyAt == d.NotifyAt
}

// Equal reports whether r and o hold the same configuration and counts. It
// does not compare their Revision.
func (r Room) Equal(o Room) bool {
	return r.Name == o.Name && r.RoomConfig.Equal(o.RoomConfig) && r.Waiting == o.Waiting &&
		r.Active == o.Active && r.LastTicket == o.LastTicket && r.Entrants == o.Entrants &&
		r.Admissions == o.Admissions && r.Inversions == o.Inversions && r.Sold == o.Sold && r.Reserved == o.Reserved &&
		(r.Remaining == nil) == (o.Remaining == nil) && (r.Remaining == nil || *r.Remaining == *o.Remaining)
}
