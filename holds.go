package waitroom

import (
	"net/url"
	"time"
	"unicode/utf8"
)

// Holding places: in a room with HoldPlaces, a trusted backend joins a
// session for a person who will not keep a page open (JoinRequest.Contact).
// The held session needs no presence while it waits; when its turn comes it
// becomes StatusInvited and its slot (and unit of stock) is reserved for
// ClaimWindow; Store.Claim makes it active, and a window that passes
// unclaimed ends it with ReasonUnclaimed, handing the slot on. The webhook
// events session.near, session.invited and session.claimed tell the
// backend, which reaches the person through the contact.

// Limits of holding places.
const (
	// MaxContactLen is the longest contact, in bytes.
	MaxContactLen = 512
	// MaxNotifyAt is the largest notify_at.
	MaxNotifyAt = 1000
	// MinClaimWindow is the shortest claim window: a person needs time to
	// open a link.
	MinClaimWindow = Duration(time.Second)
	// DefaultClaimWindow is the claim window of a configuration read from
	// JSON with hold_places and no claim_window.
	DefaultClaimWindow = Duration(10 * time.Minute)
)

// HeldWindow is the claim window held sessions get: ClaimWindow, or
// DefaultClaimWindow in a room that stopped holding places (and so may
// have none) while held sessions remain, who were promised a claim.
func (c RoomConfig) HeldWindow() time.Duration {
	if c.ClaimWindow > 0 {
		return c.ClaimWindow.D()
	}
	return DefaultClaimWindow.D()
}

// validateHolds checks the hold_places fields.
func (c RoomConfig) validateHolds() error {
	if c.NotifyAt < 0 || c.NotifyAt > MaxNotifyAt {
		return Errorf(CodeInvalidConfig, "notify_at must be between 0 (off) and %d, not %d.", MaxNotifyAt, c.NotifyAt)
	}
	if c.HoldPlaces && c.ClaimWindow < MinClaimWindow {
		return Errorf(CodeInvalidConfig, "hold_places needs a claim_window of at least %s: how long an invited session's slot waits for its claim.", MinClaimWindow)
	}
	return nil
}

// CheckContact returns a CodeInvalidRequest error unless contact is 1 to
// MaxContactLen bytes of valid UTF-8 that Printable accepts, the rule of
// CheckKey (no control, format, invisible or non-ASCII space characters,
// no U+FFFD).
func CheckContact(contact string) error {
	if contact == "" || len(contact) > MaxContactLen || !utf8.ValidString(contact) {
		return Errorf(CodeInvalidRequest, "A contact is 1 to %d bytes of UTF-8 text.", MaxContactLen)
	}
	if !Printable(contact) {
		return Errorf(CodeInvalidRequest, "A contact must be printable text: letters, marks, numbers, punctuation, symbols and the ASCII space, without control, format, invisible or other separator characters.")
	}
	return nil
}

// NotHeld is the error of a held join in a room that does not hold
// places, or before a scheduled room's draw.
func NotHeld(room string, preQueue bool) error {
	if preQueue {
		return Errorf(CodeInvalidRequest, "Room %q takes held joins once it opens: its pre-queue has no places to hold yet.", room)
	}
	return Errorf(CodeInvalidRequest, "Room %q does not hold places: set hold_places (and claim_window) in its configuration first.", room)
}

// NotInvited is the error of a claim of a session that is not invited:
// still waiting, or ended (its window passed, or it left).
func NotInvited(s Session) error {
	msg := "This session is not invited yet: it is still waiting for its turn."
	if s.Status.Final() {
		msg = "This session has ended (" + string(s.EndReason) + "): there is no place left to claim."
	}
	return &Error{Code: CodeNotInvited, Message: msg, Session: &s}
}

// ClaimPath is the path, on the server's public URL, of the page where
// the person of invited session id of room claims their place.
func ClaimPath(room, id string) string {
	return "/claim/" + url.PathEscape(room) + "/" + url.PathEscape(id)
}
