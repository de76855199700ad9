package waitroom

import (
	"context"
	"errors"
	"fmt"
)

// Code is a machine-readable error code. It is part of the public API: a
// Store returns it, the HTTP API sends it, and the client hands it back, so a
// program acts on the same code whichever it talks to.
type Code string

// The domain's error kinds: what a Store returns, or the domain's own
// checks (RoomConfig.Validate, ParseRoomConfig, ParseSessionID, CheckJoin).
const (
	CodeInvalidRequest   Code = "invalid_request"    // malformed input of any other kind
	CodeInvalidJSON      Code = "invalid_json"       // a body that is not the JSON expected (DecodeJSON)
	CodeInvalidRoomName  Code = "invalid_room_name"  // a room name outside the allowed pattern
	CodeInvalidSessionID Code = "invalid_session_id" // a session id that cannot have been issued
	CodeInvalidConfig    Code = "invalid_config"     // a room configuration that fails validation
	CodeInvalidKey       Code = "invalid_key"        // an identity key that is empty, too long or not printable
	CodeNotFound         Code = "not_found"          // no such webhook or draw; from the API, no such route
	CodeRoomNotFound     Code = "room_not_found"
	CodeSessionNotFound  Code = "session_not_found"
	CodeQueueEmpty       Code = "queue_empty"    // advance with nobody waiting
	CodeAlreadyJoined    Code = "already_joined" // the key already holds a live session
	CodeRoomNotEmpty     Code = "room_not_empty" // delete of a room with live sessions
	CodeRoomClosed       Code = "room_closed"    // a join after the room's closes_at
	CodeDrawDone         Code = "draw_done"      // a change to opens_at after the room's draw took place
	CodeSoldOut          Code = "sold_out"       // a join after the room's inventory sold out
	CodeStockConflict    Code = "stock_conflict" // a stock change the counts do not allow (selling more than is reserved)
	CodeNotInvited       Code = "not_invited"    // a claim of a session that is not invited (still waiting, or ended)
	// CodePreconditionFailed is a conditional change (Store.UpdateRoom;
	// from the API, an If-Match) of a room whose configuration changed
	// since the revision it names: nothing was changed.
	CodePreconditionFailed Code = "precondition_failed"
	CodeUnavailable        Code = "unavailable" // the store cannot be reached or has failed
	CodeInternal           Code = "internal"
)

// The kinds of a room's door: invites and proof-of-work challenges,
// checked by the server (and package challenge) before a join reaches the
// Store, which records each token's uses and returns the *_used kinds.
const (
	CodeInviteRequired     Code = "invite_required"      // a join without an invite in an invite_only room
	CodeInviteInvalid      Code = "invite_invalid"       // an invite token that is malformed or wrongly signed
	CodeInviteExpired      Code = "invite_expired"       // an invite token past its expiry
	CodeInviteWrongRoom    Code = "invite_wrong_room"    // an invite token for another room
	CodeInviteUsed         Code = "invite_used"          // an invite token with no uses left
	CodeChallengeRequired  Code = "challenge_required"   // a join without a solved challenge where one is needed
	CodeChallengeInvalid   Code = "challenge_invalid"    // a challenge solution that is malformed, wrongly signed or wrong
	CodeChallengeExpired   Code = "challenge_expired"    // a challenge past its expiry
	CodeChallengeWrongRoom Code = "challenge_wrong_room" // a challenge issued for another room
	CodeChallengeUsed      Code = "challenge_used"       // a challenge solution already used for a join
)

// The kinds only the server's HTTP layers and join limits answer with. No
// Store returns them, but package client returns every answer as the
// server sent it, so a program using the client acts on these as on the
// domain's. (The codes of refusals the Go client never meets, such as a
// cross-origin WebSocket or a malformed request head, are the server's
// own.)
const (
	CodeUnauthorized     Code = "unauthorized"       // no or bad admin token
	CodeMethodNotAllowed Code = "method_not_allowed" // the route exists, the method does not
	CodeBodyTooLarge     Code = "body_too_large"     // a body over the server's limit
	CodeRateLimited      Code = "rate_limited"       // a join over the per-address rate
	CodeRoomFull         Code = "room_full"          // a cap on sessions or memory refuses the join
)

// Error is the one error type of waitroom. Message is written for a person
// and is safe to show to a client; Err is the internal cause, which is logged
// and never sent.
type Error struct {
	Code    Code
	Message string
	// Session is the live session that caused CodeAlreadyJoined (or the
	// session of a CodeNotInvited claim).
	Session *Session
	// Challenge is the proof-of-work challenge to solve that a
	// CodeChallengeRequired or CodeChallengeExpired answer carries; nil
	// otherwise.
	Challenge *ChallengeDetail
	// Err is the underlying cause, if any.
	Err error
}

// ChallengeDetail is a proof-of-work challenge (ALTCHA v1) as an error
// answer carries it in its "challenge" member: package challenge issues
// it (challenge.Challenge, which converts to and from this type) and
// solves it.
type ChallengeDetail struct {
	Algorithm string `json:"algorithm"`
	Challenge string `json:"challenge"`
	MaxNumber int64  `json:"maxnumber"`
	Salt      string `json:"salt"`
	Signature string `json:"signature"`
}

// Error implements the error interface.
func (e *Error) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("%s: %s: %v", e.Code, e.Message, e.Err)
	}
	return fmt.Sprintf("%s: %s", e.Code, e.Message)
}

// Unwrap returns the internal cause.
func (e *Error) Unwrap() error { return e.Err }

// Errorf returns an *Error with the given code and a formatted message.
func Errorf(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Unavailable wraps a backend failure: the client sees a generic message and
// CodeUnavailable, the log sees cause.
func Unavailable(cause error, what string) *Error {
	return &Error{Code: CodeUnavailable, Message: "The waiting room's storage is unavailable; try again shortly.", Err: fmt.Errorf("%s: %w", what, cause)}
}

// ErrorCode returns the code of err: the Code of an *Error in its chain,
// CodeUnavailable for context cancellation, and CodeInternal for anything else.
func ErrorCode(err error) Code {
	if err == nil {
		return ""
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return CodeUnavailable
	}
	return CodeInternal
}

// ErrorMessage returns the person-readable message of err. Errors that are not
// an *Error get a generic message, so internal details never leak.
func ErrorMessage(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Message
	}
	return "An internal error occurred."
}

// RoomNotFound returns the error for an unknown room.
func RoomNotFound(room string) *Error {
	return Errorf(CodeRoomNotFound, "There is no room named %q.", room)
}

// RevisionChanged returns the CodePreconditionFailed error of a
// conditional change of room that named revision rev when the room is at
// revision now.
func RevisionChanged(room string, rev, now int64) *Error {
	return Errorf(CodePreconditionFailed, "Room %q was changed since it was read (revision %d, now %d): nothing was changed; read it again and make the change afresh.", room, rev, now)
}

// SessionNotFound returns the error for an unknown session.
func SessionNotFound() *Error {
	return Errorf(CodeSessionNotFound, "There is no such session in this room.")
}
