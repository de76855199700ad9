package client

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/challenge"
)

// JoinOptions are what a join may carry past a room's door.
type JoinOptions struct {
	// Key is an identity only a trusted caller (with the admin token) sets.
	Key string
	// Invite is an invite token (wr1.…), which joins into its tier.
	Invite string
	// Contact makes a held join (admin token), in a room with
	// hold_places: the session needs no presence while it waits, and when
	// its turn comes it is invited until its claim_by (see Claim). The
	// contact is opaque to the server; the webhooks carry it.
	Contact string
	// Solve, when set, lets JoinWith solve the room's proof-of-work
	// challenges itself (challenge.Solve) when the room asks for one;
	// otherwise such a join fails with CodeChallengeRequired and the error's
	// Challenge holds the challenge.
	Solve bool
}

// maxSolves bounds how many challenges one JoinWith solves: a room whose
// difficulty more than doubles while a solve runs answers with a fresh one.
const maxSolves = 3

// JoinWith joins room past its door: with an invite, and solving the proof
// of work when asked to (see JoinOptions). An invite whose key already
// holds a live session fails with already_joined and no Session (the
// client is not that session's holder), or invite_used once its uses are
// gone.
func (c *Client) JoinWith(ctx context.Context, room string, o JoinOptions) (waitroom.Session, error) {
	body := map[string]string{}
	if o.Key != "" {
		body["key"] = o.Key
	}
	if o.Invite != "" {
		body["invite"] = o.Invite
	}
	if o.Contact != "" {
		body["contact"] = o.Contact
	}
	for i := 0; ; i++ {
		var s waitroom.Session
		err := c.do(ctx, call{method: http.MethodPost, path: roomPath(room, "sessions"), body: body, out: &s, admin: o.Key != "" || o.Contact != ""})
		var e *waitroom.Error
		if !o.Solve || i == maxSolves || !errors.As(err, &e) ||
			(e.Code != waitroom.CodeChallengeRequired && e.Code != waitroom.CodeChallengeExpired) {
			return s, err
		}
		if e.Challenge == nil {
			return s, err
		}
		p, serr := challenge.Solve(ctx, challenge.Challenge(*e.Challenge))
		if serr != nil {
			return s, serr
		}
		body["challenge"] = p
	}
}

// Invite is one invite the server made.
type Invite struct {
	Token     string    `json:"token"`
	Link      string    `json:"link"`
	Tier      string    `json:"tier,omitempty"`
	Uses      int       `json:"uses"`
	ExpiresAt time.Time `json:"expires_at"`
}

// InviteRequest asks for invites (all optional: one, for the lowest tier,
// one use each, valid seven days; see the README's API table).
type InviteRequest struct {
	Count  int    `json:"count,omitempty"`
	Tier   string `json:"tier,omitempty"`
	Key    string `json:"key,omitempty"`
	Uses   int    `json:"uses,omitempty"`
	Expiry string `json:"expiry,omitempty"` // a duration ("72h") or an RFC 3339 time
}

// Invites makes invites for room (admin).
func (c *Client) Invites(ctx context.Context, room string, r InviteRequest) ([]Invite, error) {
	var out struct {
		Invites []Invite `json:"invites"`
	}
	err := c.do(ctx, call{method: http.MethodPost, path: roomPath(room, "invites"), body: r, out: &out, admin: true})
	return out.Invites, err
}
