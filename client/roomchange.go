package client

import (
	"context"
	"net/http"

	"github.com/waitroom/waitroom"
)

// Safe changes to a live room: a merge patch, pause and resume, each
// optionally on the condition that the room is still at the version read.

// ChangeOption sets a condition of a change to a room.
type ChangeOption func(*changeOptions)

type changeOptions struct {
	ifMatch string
}

// IfMatch makes the change only while the room is at version etag: a
// Room's ETag() (its Revision) or RoomStatus.ETag, as read before the
// change, or "*" for any version of a room that exists. A room changed
// since is not touched: the call fails with waitroom.CodePreconditionFailed
// (HTTP 412), and the caller reads the room again and decides afresh.
func IfMatch(etag string) ChangeOption {
	return func(o *changeOptions) { o.ifMatch = etag }
}

// changeCall adds the options' headers to k.
func changeCall(k call, opts []ChangeOption) call {
	var o changeOptions
	for _, f := range opts {
		f(&o)
	}
	if o.ifMatch != "" {
		k.header = http.Header{"If-Match": {o.ifMatch}}
	}
	return k
}

// PatchRoom changes the fields of room's configuration that patch names
// and keeps the rest (admin). patch is a JSON merge patch (RFC 7396): an
// object, such as map[string]any{"capacity": 50, "target_url": nil}, whose
// nil (JSON null) values take a field back to its default. The result is
// checked as PutRoom's configuration is. An unknown room fails with
// room_not_found: PatchRoom never creates one. Without IfMatch a change
// made by someone else meanwhile is kept (the server applies the patch to
// the room as it then is).
func (c *Client) PatchRoom(ctx context.Context, room string, patch any, opts ...ChangeOption) (waitroom.Room, error) {
	if patch == nil {
		patch = map[string]any{}
	}
	var r waitroom.Room
	err := c.do(ctx, changeCall(call{method: http.MethodPatch, path: roomPath(room), body: patch,
		contentType: "application/merge-patch+json", admin: true, out: &r}, opts))
	return r, err
}

// Pause stops automatic admissions in room and changes nothing else
// (admin); everyone keeps their place. reason, if not empty, goes into the
// audit log (at most waitroom.MaxAuditReason bytes of printable text).
func (c *Client) Pause(ctx context.Context, room, reason string, opts ...ChangeOption) (waitroom.Room, error) {
	return c.setPaused(ctx, room, "pause", reason, opts)
}

// Resume starts automatic admissions in room again, admitting waiting
// sessions at once up to the capacity, and changes nothing else (admin).
// reason is as for Pause.
func (c *Client) Resume(ctx context.Context, room, reason string, opts ...ChangeOption) (waitroom.Room, error) {
	return c.setPaused(ctx, room, "resume", reason, opts)
}

func (c *Client) setPaused(ctx context.Context, room, verb, reason string, opts []ChangeOption) (waitroom.Room, error) {
	k := call{method: http.MethodPost, path: roomPath(room, verb), admin: true}
	if reason != "" {
		k.body = map[string]string{"reason": reason}
	}
	var r waitroom.Room
	k.out = &r
	err := c.do(ctx, changeCall(k, opts))
	return r, err
}
