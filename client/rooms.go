package client

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/waitroom/waitroom"
)

// RoomStatus is a room's public status: what anyone may know about it.
type RoomStatus struct {
	Room     string        `json:"room"`
	Mode     waitroom.Mode `json:"mode"`
	Capacity int           `json:"capacity"`
	Active   int           `json:"active"`
	Waiting  int           `json:"waiting"`
	Paused   bool          `json:"paused"`
	// OpensAt and Entrants describe a scheduled room's pre-queue;
	// ClosesAt ends joining.
	OpensAt  time.Time `json:"opens_at,omitzero"`
	ClosesAt time.Time `json:"closes_at,omitzero"`
	Entrants int       `json:"entrants,omitempty"`
	// Remaining is what is left to sell in a room with an inventory.
	Remaining *int64 `json:"remaining,omitempty"`
	// ETag is the version of the room's configuration, from the answer's
	// ETag header: IfMatch(ETag) makes a change only to the room as read.
	ETag string `json:"-"`
}

// Draw reads a scheduled room's published draw: the commitment before the
// opening, the whole draw after it (see waitroom.VerifyDraw).
func (c *Client) Draw(ctx context.Context, room string) (waitroom.DrawRecord, error) {
	var d waitroom.DrawRecord
	err := c.do(ctx, call{method: http.MethodGet, path: roomPath(room, "draw"), out: &d})
	return d, err
}

// Stock reports what became of a room's units (admin): op sold or
// released moves n reserved units, set makes the inventory n; with id, sold
// or released acts on that one session's unit (n is ignored). It returns
// the room with its sold, reserved and remaining counts.
func (c *Client) Stock(ctx context.Context, room string, op waitroom.StockOp, n int64, id string) (waitroom.Room, error) {
	body := map[string]any{string(op): n}
	if id != "" {
		body = map[string]any{string(op): 1, "session": id}
	}
	var r waitroom.Room
	err := c.do(ctx, call{method: http.MethodPost, path: roomPath(room, "inventory"), body: body, admin: true, out: &r})
	return r, err
}

// Room reads a room's public status.
func (c *Client) Room(ctx context.Context, room string) (RoomStatus, error) {
	var s RoomStatus
	err := c.do(ctx, call{method: http.MethodGet, path: roomPath(room), out: &s, etag: &s.ETag})
	return s, err
}

// PutRoom creates room with cfg or replaces its whole configuration
// (admin): a field cfg leaves at its zero value is set so, not kept (see
// PatchRoom, Pause and Resume to change some fields and keep the rest).
// created says which. With IfMatch it only replaces a room at that version
// (never creates one), else fails with precondition_failed.
func (c *Client) PutRoom(ctx context.Context, room string, cfg waitroom.RoomConfig, opts ...ChangeOption) (r waitroom.Room, created bool, err error) {
	var status int
	err = c.do(ctx, changeCall(call{method: http.MethodPut, path: roomPath(room), body: cfg, admin: true, out: &r, status: &status}, opts))
	return r, status == http.StatusCreated, err
}

// Rooms lists every room with its configuration and counts (admin).
func (c *Client) Rooms(ctx context.Context) ([]waitroom.Room, error) {
	var a struct {
		Rooms []waitroom.Room `json:"rooms"`
	}
	err := c.do(ctx, call{method: http.MethodGet, path: "/v1/rooms", admin: true, out: &a})
	return a.Rooms, err
}

// DeleteRoom deletes a room and its history (admin). Without force it fails
// with room_not_empty while the room has live sessions.
func (c *Client) DeleteRoom(ctx context.Context, room string, force bool) error {
	k := call{method: http.MethodDelete, path: roomPath(room), admin: true}
	if force {
		k.query = url.Values{"force": {"true"}}
	}
	return c.do(ctx, k)
}

// Advance moves the next n waiting sessions on (admin): to served in a
// manual room, to active in an auto room. n of 0 or less means the server's
// default, 1.
func (c *Client) Advance(ctx context.Context, room string, n int) ([]waitroom.Session, error) {
	k := call{method: http.MethodPost, path: roomPath(room, "advance"), admin: true}
	if n > 0 {
		k.body = map[string]int{"n": n}
	}
	var a struct {
		Sessions []waitroom.Session `json:"sessions"`
	}
	k.out = &a
	err := c.do(ctx, k)
	return a.Sessions, err
}

// Waiting lists one page of waiting sessions in order, with positions
// (admin). next is the cursor for the following page, "" at the end.
func (c *Client) Waiting(ctx context.Context, room string, page waitroom.Page) (sessions []waitroom.Session, next string, err error) {
	return c.list(ctx, roomPath(room, "waiting"), pageQuery(page))
}

// History lists one page of ended sessions, newest first, only those with
// status unless it is "" (admin).
func (c *Client) History(ctx context.Context, room string, status waitroom.Status, page waitroom.Page) (sessions []waitroom.Session, next string, err error) {
	q := pageQuery(page)
	if status != "" {
		q.Set("status", string(status))
	}
	return c.list(ctx, roomPath(room, "history"), q)
}

func (c *Client) list(ctx context.Context, path string, q url.Values) ([]waitroom.Session, string, error) {
	var a struct {
		Sessions []waitroom.Session `json:"sessions"`
		Next     string             `json:"next"`
	}
	err := c.do(ctx, call{method: http.MethodGet, path: path, query: q, admin: true, out: &a})
	return a.Sessions, a.Next, err
}

// pageQuery encodes a page; a Limit of 0 or less leaves the server's default.
func pageQuery(p waitroom.Page) url.Values {
	q := url.Values{}
	if p.Limit > 0 {
		q.Set("limit", strconv.Itoa(p.Limit))
	}
	if p.After != "" {
		q.Set("after", p.After)
	}
	return q
}
