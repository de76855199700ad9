package client

import (
	"context"
	"net/http"

	"github.com/waitroom/waitroom"
)

// Join joins room and returns the new session. A non-empty key (an identity,
// such as a user id) needs the admin token; when the key already holds a
// live session the error has code already_joined and carries that session
// (a keyed join has the admin token; a copy of a keyed invite gets the
// code alone: see JoinWith).
func (c *Client) Join(ctx context.Context, room, key string) (waitroom.Session, error) {
	var s waitroom.Session
	k := call{method: http.MethodPost, path: roomPath(room, "sessions"), out: &s}
	if key != "" {
		k.body = map[string]string{"key": key}
		k.admin = true
	}
	err := c.do(ctx, k)
	return s, err
}

// Session reads a session. The server counts it as presence.
func (c *Client) Session(ctx context.Context, room, id string) (waitroom.Session, error) {
	var s waitroom.Session
	err := c.do(ctx, call{method: http.MethodGet, path: roomPath(room, "sessions", id), out: &s})
	return s, err
}

// Heartbeat signals presence and activity.
func (c *Client) Heartbeat(ctx context.Context, room, id string) (waitroom.Session, error) {
	var s waitroom.Session
	err := c.do(ctx, call{method: http.MethodPost, path: roomPath(room, "sessions", id, "heartbeat"), out: &s})
	return s, err
}

// Claim claims the slot of an invited (held) session, which becomes active;
// the answer carries its pass. A session that is not invited (still
// waiting, or ended: its claim window passed) fails with code
// not_invited; an active one is answered as it is.
func (c *Client) Claim(ctx context.Context, room, id string) (waitroom.Session, error) {
	var s waitroom.Session
	err := c.do(ctx, call{method: http.MethodPost, path: roomPath(room, "sessions", id, "claim"), out: &s})
	return s, err
}

// Away says the session is going away: it keeps its place or slot for the
// room's grace period.
func (c *Client) Away(ctx context.Context, room, id string) error {
	return c.do(ctx, call{method: http.MethodPost, path: roomPath(room, "sessions", id, "away")})
}

// Leave ends the session as its holder. It never sends the admin token, so
// it is never mistaken for a revocation.
func (c *Client) Leave(ctx context.Context, room, id string) (waitroom.Session, error) {
	var s waitroom.Session
	err := c.do(ctx, call{method: http.MethodDelete, path: roomPath(room, "sessions", id), out: &s})
	return s, err
}

// Revoke ends any session as an operator (admin token).
func (c *Client) Revoke(ctx context.Context, room, id string) (waitroom.Session, error) {
	var s waitroom.Session
	err := c.do(ctx, call{method: http.MethodDelete, path: roomPath(room, "sessions", id), admin: true, out: &s})
	return s, err
}
