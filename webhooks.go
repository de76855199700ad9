package waitroom

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Webhook event types. Each is what one store change, or one part of it,
// tells an operator's system.
const (
	HookSessionJoined   = "session.joined"   // a session joined (or entered a pre-queue)
	HookSessionAdmitted = "session.admitted" // a session became active
	HookSessionEnded    = "session.ended"    // a session ended; data.reason says why
	HookSessionNear     = "session.near"     // a session's position reached the room's notify_at
	HookSessionInvited  = "session.invited"  // a held place's turn came: claim it within claim_window
	HookSessionClaimed  = "session.claimed"  // an invited session claimed its slot
	HookRoomPaused      = "room.paused"      // admissions stopped
	HookRoomResumed     = "room.resumed"     // admissions started again
	HookRoomClosed      = "room.closed"      // the room's closes_at passed: no new joins
	HookRoomSoldOut     = "room.sold_out"    // the room's inventory sold out
	HookDrawCompleted   = "draw.completed"   // a scheduled room's draw took place
)

// HookTypes lists every webhook event type, in the order of the docs.
var HookTypes = []string{
	HookSessionJoined, HookSessionAdmitted, HookSessionEnded, HookSessionNear,
	HookSessionInvited, HookSessionClaimed, HookRoomPaused, HookRoomResumed,
	HookRoomClosed, HookRoomSoldOut, HookDrawCompleted,
}

// Webhook limits.
const (
	MaxWebhooks      = 16   // endpoints per room
	MaxWebhookURL    = 2048 // bytes of an endpoint's URL
	webhookSecretPfx = "whsec_"
	// MinWebhookSecret and MaxWebhookSecret bound a secret's key, in bytes
	// (before base64).
	MinWebhookSecret = 24
	MaxWebhookSecret = 64
)

// Webhook is one endpoint that a room's events are sent to.
type Webhook struct {
	Room string `json:"room"`
	Name string `json:"name"`
	URL  string `json:"url"`
	// Events lists the event types sent (HookTypes); ["*"] is all of them.
	Events []string `json:"events"`
	// Secret signs each delivery (Standard Webhooks, v1): "whsec_" then
	// the base64 of 24 to 64 random bytes. Stores keep it; the API shows
	// it only when it is made or replaced.
	Secret    string    `json:"secret,omitempty"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// Wants reports whether h is sent events of type typ.
func (h Webhook) Wants(typ string) bool {
	return slices.Contains(h.Events, typ) || slices.Contains(h.Events, "*")
}

// Check returns the CodeInvalidRequest error of a webhook no store
// accepts: a bad name (the room-name pattern), a URL that is not absolute
// http(s) without user info or fragment, no events or an unknown one, or a
// secret that is not whsec_ and base64 of 24 to 64 bytes. It does not
// judge where the URL points (see the webhook package for that).
func (h Webhook) Check() error {
	if !ValidRoomName(h.Name) {
		return Errorf(CodeInvalidRequest, "A webhook name is 1 to 64 of a-z, 0-9, '.', '_' and '-', starting with a letter or digit; %q is not.", clip(h.Name))
	}
	if err := CheckWebhookURL(h.URL); err != nil {
		return err
	}
	if len(h.Events) == 0 {
		return Errorf(CodeInvalidRequest, "A webhook needs \"events\": a list of event types, or [\"*\"] for all.")
	}
	if len(h.Events) > len(HookTypes) {
		return Errorf(CodeInvalidRequest, "A webhook lists at most %d event types.", len(HookTypes))
	}
	for i, e := range h.Events {
		if e != "*" && !slices.Contains(HookTypes, e) {
			return Errorf(CodeInvalidRequest, "Unknown event type %q: use one of %s, or \"*\".", clip(e), strings.Join(HookTypes, ", "))
		}
		if slices.Contains(h.Events[:i], e) {
			return Errorf(CodeInvalidRequest, "Event type %q is listed twice.", e)
		}
	}
	if _, err := webhookKey(h.Secret); err != nil {
		return err
	}
	return nil
}

// CheckWebhookURL returns the CodeInvalidRequest error of an endpoint URL
// that is not an absolute http or https URL with a host, or that holds
// user info or a fragment, or is longer than MaxWebhookURL.
func CheckWebhookURL(raw string) error {
	if len(raw) > MaxWebhookURL {
		return Errorf(CodeInvalidRequest, "A webhook URL is at most %d bytes, not %d.", MaxWebhookURL, len(raw))
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Hostname() == "" || u.Opaque != "" {
		return Errorf(CodeInvalidRequest, "A webhook URL is an absolute http:// or https:// URL with a host; %q is not.", clip(raw))
	}
	if u.User != nil {
		return Errorf(CodeInvalidRequest, "A webhook URL may not hold a user name or password: put credentials in the path or verify the signature.")
	}
	if u.Fragment != "" || strings.Contains(raw, "#") {
		return Errorf(CodeInvalidRequest, "A webhook URL has no #fragment.")
	}
	for _, r := range raw {
		if r <= ' ' || r == 0x7f {
			return Errorf(CodeInvalidRequest, "A webhook URL holds no spaces or control characters.")
		}
	}
	return nil
}

// webhookKey decodes a secret "whsec_<base64>" into its key. Only Check
// needs it: delivery signs with the secret itself (Standard Webhooks).
func webhookKey(secret string) ([]byte, error) {
	b64, ok := strings.CutPrefix(secret, webhookSecretPfx)
	if !ok {
		return nil, Errorf(CodeInvalidRequest, "A webhook secret starts with \"whsec_\" (leave it out and one is made).")
	}
	key, err := base64.StdEncoding.DecodeString(b64)
	// The decoder skips line breaks, which the secret sent back to the
	// endpoint's owner would keep: the document's pattern has none.
	if err != nil || strings.ContainsAny(b64, "\r\n") || len(key) < MinWebhookSecret || len(key) > MaxWebhookSecret {
		return nil, Errorf(CodeInvalidRequest, "A webhook secret is \"whsec_\" then the standard base64 of %d to %d bytes.", MinWebhookSecret, MaxWebhookSecret)
	}
	return key, nil
}

// NewWebhookSecret returns a fresh secret of 32 random bytes.
func NewWebhookSecret() string {
	var b [32]byte
	_, _ = rand.Read(b[:])
	return webhookSecretPfx + base64.StdEncoding.EncodeToString(b[:])
}

// clip shortens what a person sent for quoting it back in an error.
func clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}

// HookMessage is one webhook event a store change made: what every
// endpoint that wants its Type is sent. ID is the webhook-id, the same for
// every endpoint and every attempt; the store gives it.
type HookMessage struct {
	ID   string          `json:"id"`
	Type string          `json:"type"`
	At   time.Time       `json:"timestamp"`
	Data json.RawMessage `json:"data"`
}

// Body returns the request body of m: {"type","timestamp","data"}, as the
// Standard Webhooks specification lays out a payload.
func (m HookMessage) Body() []byte {
	b, _ := json.Marshal(struct {
		Type string          `json:"type"`
		At   string          `json:"timestamp"`
		Data json.RawMessage `json:"data"`
	}{m.Type, m.At.UTC().Format(time.RFC3339Nano), m.Data})
	return b
}

// HookSession is the data of a session.* event.
type HookSession struct {
	Room    string `json:"room"`
	Session string `json:"session"`
	Ticket  int64  `json:"ticket,omitempty"`
	Key     string `json:"key,omitempty"`
	Tier    string `json:"tier,omitempty"`
	Status  Status `json:"status"`
	// From is the status before ("" for a join).
	From     Status     `json:"from,omitempty"`
	Reason   Reason     `json:"reason,omitempty"`
	JoinedAt time.Time  `json:"joined_at"`
	Admitted *time.Time `json:"admitted_at,omitempty"`
	EndedAt  *time.Time `json:"ended_at,omitempty"`
	Waiting  int        `json:"waiting"`
	Active   int        `json:"active"`
	Entry    string     `json:"entry,omitempty"`
	// Position is the place in line of session.near.
	Position int64 `json:"position,omitempty"`
	// Contact is a held session's contact (JoinRequest.Contact).
	Contact string `json:"contact,omitempty"`
	// ClaimBy and ClaimPath are set on session.invited: when the claim
	// window ends, and the claim page's path (ClaimPath) on the server's
	// public URL. A server that knows its public URL adds claim_url, the
	// whole link, when it delivers.
	ClaimBy   *time.Time `json:"claim_by,omitempty"`
	ClaimPath string     `json:"claim_path,omitempty"`
}

// AppendJSON appends d as encoding/json encodes it (HookSession's
// fields in order, empty ones left out as tagged), without reflection:
// it runs for every event of a room with webhooks.
func (d HookSession) AppendJSON(b []byte) []byte {
	b = append(b, `{"room":`...)
	b = appendJSONString(b, d.Room)
	b = append(b, `,"session":`...)
	b = appendJSONString(b, d.Session)
	if d.Ticket != 0 {
		b = append(b, `,"ticket":`...)
		b = strconv.AppendInt(b, d.Ticket, 10)
	}
	if d.Key != "" {
		b = append(b, `,"key":`...)
		b = appendJSONString(b, d.Key)
	}
	if d.Tier != "" {
		b = append(b, `,"tier":`...)
		b = appendJSONString(b, d.Tier)
	}
	b = append(b, `,"status":`...)
	b = appendJSONString(b, string(d.Status))
	if d.From != "" {
		b = append(b, `,"from":`...)
		b = appendJSONString(b, string(d.From))
	}
	if d.Reason != "" {
		b = append(b, `,"reason":`...)
		b = appendJSONString(b, string(d.Reason))
	}
	b = append(b, `,"joined_at":`...)
	b = appendJSONTime(b, d.JoinedAt)
	if d.Admitted != nil {
		b = append(b, `,"admitted_at":`...)
		b = appendJSONTime(b, *d.Admitted)
	}
	if d.EndedAt != nil {
		b = append(b, `,"ended_at":`...)
		b = appendJSONTime(b, *d.EndedAt)
	}
	b = append(b, `,"waiting":`...)
	b = strconv.AppendInt(b, int64(d.Waiting), 10)
	b = append(b, `,"active":`...)
	b = strconv.AppendInt(b, int64(d.Active), 10)
	if d.Entry != "" {
		b = append(b, `,"entry":`...)
		b = appendJSONString(b, d.Entry)
	}
	if d.Position != 0 {
		b = append(b, `,"position":`...)
		b = strconv.AppendInt(b, d.Position, 10)
	}
	if d.Contact != "" {
		b = append(b, `,"contact":`...)
		b = appendJSONString(b, d.Contact)
	}
	if d.ClaimBy != nil {
		b = append(b, `,"claim_by":`...)
		b = appendJSONTime(b, *d.ClaimBy)
	}
	if d.ClaimPath != "" {
		b = append(b, `,"claim_path":`...)
		b = appendJSONString(b, d.ClaimPath)
	}
	return append(b, '}')
}

// appendJSONTime appends t as encoding/json does (RFC 3339 with
// nanoseconds, quoted).
func appendJSONTime(b []byte, t time.Time) []byte {
	b = append(b, '"')
	b = t.AppendFormat(b, time.RFC3339Nano)
	return append(b, '"')
}

// appendJSONString appends s quoted as encoding/json quotes it, with its
// HTML escaping and invalid UTF-8 replaced.
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				b = append(b, '\\', c)
			case c == '\n':
				b = append(b, '\\', 'n')
			case c == '\r':
				b = append(b, '\\', 'r')
			case c == '\t':
				b = append(b, '\\', 't')
			case c == '\b':
				b = append(b, '\\', 'b')
			case c == '\f':
				b = append(b, '\\', 'f')
			case c < 0x20 || c == '<' || c == '>' || c == '&':
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			default:
				b = append(b, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xf])
		default:
			b = append(b, s[i:i+size]...)
		}
		i += size
	}
	return append(b, '"')
}

// HookRoom is the data of a room.* and draw.* event.
type HookRoom struct {
	Room       string `json:"room"`
	Waiting    int    `json:"waiting"`
	Active     int    `json:"active"`
	Paused     bool   `json:"paused"`
	Sold       int64  `json:"sold,omitempty"`
	LastTicket int64  `json:"last_ticket"`
}

// HookEvent is one webhook event before it is encoded: Session is set for
// a session.* event, Room for the others.
type HookEvent struct {
	Type    string
	At      time.Time
	Session *HookSession
	Room    *HookRoom
}

// Message encodes h (without an ID).
func (h HookEvent) Message() HookMessage {
	var data []byte
	if h.Session != nil {
		data = h.Session.AppendJSON(nil)
	} else {
		data, _ = json.Marshal(h.Room)
	}
	return HookMessage{Type: h.Type, At: h.At, Data: data}
}

// HookMessages returns the webhook events of store event e, encoded (see
// HookEvents).
func HookMessages(e Event) []HookMessage {
	evs := HookEvents(e)
	out := make([]HookMessage, len(evs))
	for i, h := range evs {
		out[i] = h.Message()
	}
	return out
}

// HookEvents returns the webhook events of store event e, in order:
// session.joined for a new session or entrant, session.admitted for one
// that became active from waiting, session.invited for a held one whose
// turn came, session.claimed for an invited one that became active,
// session.near for one that reached notify_at (a Near change),
// session.ended for one that ended, room.paused and
// room.resumed for a configuration event that changed Paused,
// room.sold_out for the change that sold the last unit, draw.completed
// for the change that completed a draw and room.closed for the first
// operation at or after closes_at. Remote resynchronisation hints
// and moves inside the line make none. A session that joins and is
// admitted at once shares one *HookSession between its two events.
func HookEvents(e Event) []HookEvent {
	var out []HookEvent
	for _, c := range e.Changes {
		s := c.Session
		if c.From == s.Status && !c.Near {
			continue // a draw's ticket or an operator's move: no status change
		}
		d := &HookSession{Room: e.Room, Session: s.ID, Ticket: s.Ticket, Key: s.Key, Tier: s.Tier, Status: s.Status,
			From: c.From, Reason: s.EndReason, JoinedAt: s.JoinedAt, Waiting: e.Waiting, Active: e.Active, Entry: s.Entry,
			Contact: s.Contact}
		if c.Near {
			d.From, d.Position = "", s.Position
			out = append(out, HookEvent{Type: HookSessionNear, At: e.At, Session: d})
			continue
		}
		if s.Status == StatusInvited {
			t := s.ClaimBy
			d.ClaimBy, d.ClaimPath = &t, ClaimPath(e.Room, s.ID)
		}
		if !s.AdmittedAt.IsZero() {
			t := s.AdmittedAt
			d.Admitted = &t
		}
		if !s.EndedAt.IsZero() {
			t := s.EndedAt
			d.EndedAt = &t
		}
		if c.From == "" {
			out = append(out, HookEvent{Type: HookSessionJoined, At: e.At, Session: d})
		}
		switch {
		case s.Status == StatusActive && c.From == StatusInvited:
			out = append(out, HookEvent{Type: HookSessionClaimed, At: e.At, Session: d})
		case s.Status == StatusActive:
			out = append(out, HookEvent{Type: HookSessionAdmitted, At: e.At, Session: d})
		case s.Status == StatusInvited:
			out = append(out, HookEvent{Type: HookSessionInvited, At: e.At, Session: d})
		case s.Status.Final():
			out = append(out, HookEvent{Type: HookSessionEnded, At: e.At, Session: d})
		}
	}
	room := func() *HookRoom {
		r := &HookRoom{Room: e.Room, Waiting: e.Waiting, Active: e.Active, Sold: e.Sold, LastTicket: e.LastTicket}
		if e.Config != nil {
			r.Paused = e.Config.Paused
		}
		return r
	}
	if e.Kind == EventConfig && e.Config != nil && e.Config.Paused != e.PausedBefore {
		typ := HookRoomResumed
		if e.Config.Paused {
			typ = HookRoomPaused
		}
		out = append(out, HookEvent{Type: typ, At: e.At, Room: room()})
	}
	if e.SoldOut {
		out = append(out, HookEvent{Type: HookRoomSoldOut, At: e.At, Room: room()})
	}
	if e.DrawDone {
		out = append(out, HookEvent{Type: HookDrawCompleted, At: e.At, Room: room()})
	}
	if e.Closed {
		out = append(out, HookEvent{Type: HookRoomClosed, At: e.At, Room: room()})
	}
	return out
}

// Delivery is one webhook event on its way to one endpoint.
type Delivery struct {
	Room    string      `json:"room"`
	Hook    string      `json:"webhook"`
	Message HookMessage `json:"message"`
	// Attempts counts the tries so far.
	Attempts int `json:"attempts"`
	// NextAt is when it is tried next (pending), or zero.
	NextAt time.Time `json:"next_at,omitzero"`
	// LastError says why the last try failed.
	LastError string `json:"last_error,omitempty"`
	// DeadAt is when it was given up on (a dead letter), or zero.
	DeadAt time.Time `json:"dead_at,omitzero"`
	// Replayed is when it was last replayed from the dead letters, or
	// zero: its retry window starts then, not at its event.
	Replayed time.Time `json:"replayed_at,omitzero"`
}

// RetrySince is when d's retry window began: its event, or its last
// replay.
func (d Delivery) RetrySince() time.Time {
	if d.Replayed.After(d.Message.At) {
		return d.Replayed
	}
	return d.Message.At
}

// DeliveryOutcome is the result of one try of a claimed delivery.
type DeliveryOutcome struct {
	Hook string
	ID   string // the message's ID
	// OK: delivered; it leaves the outbox.
	OK bool
	// Error says why the try failed (when not OK).
	Error string
	// Dead gives up on it (when not OK): it becomes a dead letter.
	Dead bool
	// Next is when to try again (when neither OK nor Dead).
	Next time.Time
}

// HookStats is how an endpoint's deliveries fare.
type HookStats struct {
	Pending       int64     `json:"pending"`
	Dead          int64     `json:"dead"`
	Delivered     int64     `json:"delivered"`
	Failed        int64     `json:"failed"` // failed tries, each retry counted
	LastError     string    `json:"last_error,omitempty"`
	LastErrorAt   time.Time `json:"last_error_at,omitzero"`
	LastDelivered time.Time `json:"last_delivered_at,omitzero"`
}

// Hooks is a store's webhook outbox, part of Store. A store writes
// the webhook events of every change of a room with webhooks (HookMessages
// of the change's Event, each to every endpoint that wants its type) into
// a durable outbox in the same atomic step as the change, so a change
// that happened is never without its events. Deliverers claim what is due,
// try it, and settle the outcome; a claim is a lease, so of many
// processes only one tries a delivery at a time, and one that dies leaves
// its claims to be taken over when their leases lapse.
//
// Deleting a room deletes its webhooks and what they had not delivered;
// so does deleting a webhook. Errors are *Error values: CodeRoomNotFound,
// CodeNotFound for an unknown webhook, CodeInvalidRequest for a webhook
// that fails Check or one too many, CodeUnavailable when the backend
// fails. Implementations are safe for concurrent use.
type Hooks interface {
	// PutWebhook creates or replaces webhook h.Name of room h.Room (which
	// must exist) and returns it as stored (times set, CreatedAt kept on
	// replace). Events of changes after it returns go to it.
	PutWebhook(ctx context.Context, h Webhook, now time.Time) (stored Webhook, created bool, err error)

	// Webhooks lists room's webhooks by name, with their secrets.
	Webhooks(ctx context.Context, room string) ([]Webhook, error)

	// DeleteWebhook deletes webhook name of room and its deliveries.
	DeleteWebhook(ctx context.Context, room, name string) error

	// HookRooms lists the rooms that have webhooks.
	HookRooms(ctx context.Context) ([]string, error)

	// ClaimDeliveries returns up to n of room's pending deliveries to
	// webhook hook ("" for any) that are due at now, oldest first, each
	// claimed until now+lease: no other claim returns it before then
	// unless it is settled. Deliverers claim per webhook, so a slow
	// endpoint's backlog never takes the claims of the others.
	ClaimDeliveries(ctx context.Context, room, hook string, now time.Time, lease time.Duration, n int) ([]Delivery, error)

	// SettleDeliveries records outcomes of claimed deliveries of room:
	// delivered ones leave the outbox, failed ones wait until their Next,
	// dead ones become dead letters. Outcomes of deliveries that are no
	// longer pending (deleted) are ignored.
	SettleDeliveries(ctx context.Context, room string, outcomes []DeliveryOutcome, now time.Time) error

	// DeadLetters lists room's dead letters, newest first, paged like
	// History (the cursor is opaque).
	DeadLetters(ctx context.Context, room string, page Page) ([]Delivery, string, error)

	// ReplayDeadLetters makes dead letters of room pending again, due at
	// now with their attempts counted afresh and Replayed now: those of ids (message IDs),
	// or all of them when ids is empty. It returns how many.
	ReplayDeadLetters(ctx context.Context, room string, ids []string, now time.Time) (int, error)

	// HookStats reports each of room's webhooks' deliveries, by name.
	HookStats(ctx context.Context, room string) (map[string]HookStats, error)
}
