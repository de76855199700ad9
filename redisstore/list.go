package redisstore

import (
	"context"
	"encoding/hex"
	"strconv"

	"github.com/waitroom/waitroom"
)

// This file reads a room's line, its history and many sessions at once.

// Waiting implements waitroom.Store.
func (s *Store) Waiting(ctx context.Context, room string, page waitroom.Page) ([]waitroom.Session, string, error) {
	// The cursor is the last session's place in the line: its ticket, or
	// the negative place of a session an operator moved.
	after := ""
	if page.After != "" {
		v, err := strconv.ParseInt(page.After, 10, 64)
		if err != nil {
			return nil, "", waitroom.Errorf(waitroom.CodeInvalidRequest, "The cursor %q is not one this server returned.", page.After)
		}
		after = strconv.FormatInt(v, 10)
	}
	if err := s.usable(); err != nil {
		return nil, "", err
	}
	if err := waitroom.CheckRoomName(room); err != nil {
		return nil, "", err
	}
	r, err := s.run(ctx, "waiting", room, 0, after, page.Size())
	if err != nil {
		return nil, "", err
	}
	if err := errorFor(room, r); err != nil {
		return nil, "", err
	}
	out, err := decodeList(room, "waiting", r.rest, 1)
	if err != nil {
		return nil, "", err
	}
	return out, str(r.rest, 0), nil
}

// History implements waitroom.Store. The cursor is a stream id.
func (s *Store) History(ctx context.Context, room string, status waitroom.Status, page waitroom.Page) ([]waitroom.Session, string, error) {
	if status != "" && !status.Final() {
		return nil, "", waitroom.Errorf(waitroom.CodeInvalidRequest, "History holds served, left and expired sessions, not %q.", string(status))
	}
	if page.After != "" && !validStreamID(page.After) {
		return nil, "", waitroom.Errorf(waitroom.CodeInvalidRequest, "The cursor %q is not one this server returned.", page.After)
	}
	if err := s.usable(); err != nil {
		return nil, "", err
	}
	if err := waitroom.CheckRoomName(room); err != nil {
		return nil, "", err
	}
	r, err := s.run(ctx, "history", room, 0, string(status), page.After, page.Size())
	if err != nil {
		return nil, "", err
	}
	if err := errorFor(room, r); err != nil {
		return nil, "", err
	}
	out, err := decodeList(room, "history", r.rest, 1)
	if err != nil {
		return nil, "", err
	}
	return out, str(r.rest, 0), nil
}

// Sessions implements waitroom.Store in one script run for the whole
// batch.
func (s *Store) Sessions(ctx context.Context, room string, ids []string) ([]waitroom.Session, error) {
	if err := s.usable(); err != nil {
		return nil, err
	}
	if err := waitroom.CheckRoomName(room); err != nil {
		return nil, err
	}
	out := make([]waitroom.Session, len(ids))
	args := make([]any, 0, 3*len(ids))
	idx := make([]int, 0, len(ids)) // which id each triple of args is
	for i, id := range ids {
		sid, err := waitroom.ParseSessionID(id)
		if err != nil {
			continue
		}
		args = append(args, sid.Ticket, hex.EncodeToString(sid.Secret[:]), sid.Entry)
		idx = append(idx, i)
	}
	r, err := s.run(ctx, "sessions", room, 0, args...)
	if err != nil {
		return nil, err
	}
	if err := errorFor(room, r); err != nil {
		return nil, err
	}
	if len(r.rest) != len(idx) {
		return nil, malformed("sessions", r.rest)
	}
	for j, x := range r.rest {
		if _, isList := x.([]any); !isList {
			continue // unknown
		}
		sess, ok := decodeSession(room, x)
		if !ok {
			return nil, malformed("sessions", x)
		}
		out[idx[j]] = sess
	}
	return out, nil
}
