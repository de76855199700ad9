// Package admit is the one path a new session takes, whatever door it came
// by: the API's join, the waiting page (its first visit, its door's form,
// its "join again" button) and the gate in front of an app. Every join goes
// the same way, in the same order:
//
//  1. what only a trusted caller may ask (a key, a held place's contact);
//  2. the room's door (package door): an invite, a solved challenge, or,
//     for a caller that joins nobody past a door, ErrGuarded;
//  3. the limits (package limit): the per-address rate (skipped for trusted
//     callers), the memory guard and the cap on live sessions per room;
//  4. the store's JoinWith;
//  5. the session cookie, for the callers that give a ResponseWriter.
//
// The live count the cap reads next needs no bookkeeping here: it is the
// room view's (package roomview), which the join's own event updates
// before JoinWith returns.
//
// The door comes first because its checks cost microseconds and a join it
// refuses then costs the address none of its allowance. A new rule for
// joining (a challenge, an invite, a contact) is written here once.
//
// Completing the session for its answer (its estimated wait, its pass) is
// left to the callers: each door answers differently (the API with both,
// the page with the estimate of a waiting session, the gate with a pass of
// its own making), and none of it decides whether the join happens.
package admit

import (
	"context"
	"crypto/subtle"
	"errors"
	"net/http"
	"net/netip"
	"time"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/internal/clientaddr"
	"github.com/waitroom/waitroom/internal/door"
	"github.com/waitroom/waitroom/internal/limit"
)

// ErrGuarded is the answer to a Request with StopAtDoor for a room that
// asks for an invite or a proof of work: no session was made, and the
// visitor belongs on the waiting page, whose door asks for it.
var ErrGuarded = errors.New("admit: the room asks for an invite or a challenge at its door")

// Config holds what an Admission needs. A server makes one Admission and
// gives it to every door (API, pages, gate), so that all of them draw from
// one allowance per address and one live count per room.
type Config struct {
	// Store holds the rooms. It is required.
	Store waitroom.Store
	// Door checks invites and challenges (package door). nil turns the door
	// off: rooms that ask for an invite or a challenge then admit like any
	// other, and invites and solutions presented are ignored.
	Door *door.Door
	// Joins are the server's join limits (package limit): the per-address
	// rate, which trusted callers (Request.Trusted) skip, the memory guard
	// and the cap on live sessions per room; every door shares them (one
	// allowance per address) through this Admission. Their Proxies name the
	// client (for the rate and the challenge's difficulty). nil means no
	// limits, and the client is always the connection's peer.
	Joins *limit.Joins
}

// Admission makes new sessions (see the package documentation). Its limits
// apply to new sessions only: existing ones are never refused by them. It
// is safe for concurrent use.
type Admission struct {
	store waitroom.Store
	door  *door.Door
	// joins is the server's one set of join limits, shared by every door.
	joins *limit.Joins
}

// New returns the Admission for cfg. It panics if cfg.Store is nil, since
// no join could be made.
func New(cfg Config) *Admission {
	if cfg.Store == nil {
		panic("admit: Config.Store is nil")
	}
	return &Admission{store: cfg.Store, door: cfg.Door, joins: cfg.Joins}
}

// Door returns the door the Admission checks joins with (nil when it is
// off), for the endpoints that hand out its challenges and invites.
func (a *Admission) Door() *door.Door { return a.door }

// Client returns the address of r's client: the connection's peer, or
// behind the trusted proxies (Joins.Proxies) the client they name.
func (a *Admission) Client(r *http.Request) netip.Addr {
	if a.joins == nil {
		return clientaddr.Peer(r)
	}
	return a.joins.Proxies.Client(r)
}

// Request is one visitor's join: the room and what the visitor presented.
type Request struct {
	// Room is the room to join.
	Room string
	// Key is an identity the caller sets for the visitor, and Contact makes
	// the join held (a room with hold_places); nil asks for neither. Both
	// need Trusted: anyone could otherwise claim someone else's identity,
	// or reserve a slot without presence.
	Key, Contact *string
	// Invite is an invite token (package invite) and Challenge a solved
	// proof-of-work challenge (package challenge); "" for none.
	Invite, Challenge string
	// Trusted says the caller is a trusted backend (it carries the admin
	// token) joining on behalf of its users, often all from one address:
	// the per-address rate is not for it, the caps on memory and sessions
	// are.
	Trusted bool
	// StopAtDoor makes a room that asks for an invite or a challenge answer
	// ErrGuarded instead of asking: for the callers whose visitor has
	// nothing to present (the gate, the waiting page before its door).
	// The door is asked first either way, so such a refusal costs the
	// address none of its allowance.
	StopAtDoor bool
	// Cookie, when set, gets the new session's cookie (SetCookie), so the
	// waiting page finds the session wherever the visitor joined. Secure
	// marks it Secure: the server is reached over HTTPS, or the visitor's
	// request came over TLS as far as the caller can tell.
	Cookie http.ResponseWriter
	Secure bool
}

// Enter makes a new session for req, made by the visitor's HTTP request r
// (its client address and its context) at now. Errors are
// *waitroom.Error: unauthorized or invalid_key/invalid_request for a key
// or contact, the door's invite and challenge codes, rate_limited or
// room_full (a *limit.RetryError, with the Retry-After to send), or the
// store's (an already_joined carries the key's live session only for a
// trusted caller or one whose cookie holds it: see hideHolder); or
// ErrGuarded (see Request.StopAtDoor). A refused join costs
// nothing of the steps after the one that refused it.
func (a *Admission) Enter(r *http.Request, req Request, now time.Time) (waitroom.Session, error) {
	ctx := r.Context()
	key, contact, err := trustedOnly(req)
	if err != nil {
		return waitroom.Session{}, err
	}
	jr, err := a.atDoor(ctx, r, req, key, now)
	if err != nil {
		return waitroom.Session{}, err
	}
	jr.Contact = contact
	if req.Trusted {
		err = a.joins.CheckCaps(ctx, req.Room, now)
	} else {
		err = a.joins.Check(ctx, r, req.Room, now)
	}
	if err != nil {
		return waitroom.Session{}, err
	}
	s, err := a.store.JoinWith(ctx, req.Room, jr, now)
	if err != nil {
		return waitroom.Session{}, hideHolder(r, req, err)
	}
	if req.Cookie != nil {
		SetCookie(req.Cookie, req.Room, s.ID, req.Secure)
	}
	return s, nil
}

// hideHolder keeps the live session of an already_joined error only for a
// caller entitled to it: a trusted backend (it set the key itself, and
// holds the admin token) or the holder, whose request carries the
// session's cookie for the room. Anyone else gets the code without the
// session: the key came from an invite, and whoever has a copy of the
// link (forwarded, leaked, shoulder-surfed) must not get the id that
// reads, moves and ends that place.
func hideHolder(r *http.Request, req Request, err error) error {
	var e *waitroom.Error
	if req.Trusted || !errors.As(err, &e) || e.Code != waitroom.CodeAlreadyJoined || e.Session == nil {
		return err
	}
	if id := SessionID(r, req.Room); id != "" && subtle.ConstantTimeCompare([]byte(id), []byte(e.Session.ID)) == 1 {
		return err
	}
	return &waitroom.Error{Code: waitroom.CodeAlreadyJoined,
		Message: "This invite's key already holds a place in this room. Open the line where that place was taken (the browser or app that joined first)."}
}

// trustedOnly checks what only a trusted caller may ask and returns the key
// and contact to join with ("" for none).
func trustedOnly(req Request) (key, contact string, err error) {
	if req.Key != nil {
		if !req.Trusted {
			return "", "", waitroom.Errorf(waitroom.CodeUnauthorized, "Joining with a key needs the admin token (Authorization: Bearer <token>).")
		}
		if err := waitroom.CheckKey(*req.Key); err != nil {
			return "", "", err
		}
		key = *req.Key
	}
	if req.Contact != nil {
		// A held place needs no presence and reserves a slot when its turn
		// comes: only a trusted backend that will tell its person may ask.
		if !req.Trusted {
			return "", "", waitroom.Errorf(waitroom.CodeUnauthorized, "A held join (contact) needs the admin token (Authorization: Bearer <token>): only a trusted backend holds places for people.")
		}
		if err := waitroom.CheckContact(*req.Contact); err != nil {
			return "", "", err
		}
		contact = *req.Contact
	}
	return key, contact, nil
}

// atDoor passes the door: the request to make of the store (tier, key, the
// invite and challenge uses it spends), or the door's refusal.
func (a *Admission) atDoor(ctx context.Context, r *http.Request, req Request, key string, now time.Time) (waitroom.JoinRequest, error) {
	if a.door == nil {
		return waitroom.JoinRequest{Key: key}, nil
	}
	if req.StopAtDoor {
		guarded, err := a.door.Guarded(ctx, req.Room, now)
		if err != nil {
			return waitroom.JoinRequest{}, err
		}
		if guarded {
			return waitroom.JoinRequest{}, ErrGuarded
		}
	}
	return a.door.Admit(ctx, req.Room, a.Client(r), key, req.Invite, req.Challenge, now)
}
