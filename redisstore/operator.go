package redisstore

import (
	"context"
	"time"

	"github.com/waitroom/waitroom"
)

// An operator's moves: QueueAll, Front, Extend and Lookup, each one run of
// the room script (operator.lua holds the rules and how the line's order is
// kept: the wait sorted set is scored by place, the ticket or the negative
// place a move gave).

// QueueAll implements waitroom.Store.
func (s *Store) QueueAll(ctx context.Context, name string, now time.Time) (waitroom.Room, []waitroom.Session, error) {
	if err := s.usable(); err != nil {
		return waitroom.Room{}, nil, err
	}
	if err := waitroom.CheckRoomName(name); err != nil {
		return waitroom.Room{}, nil, err
	}
	r, err := s.run(ctx, "queueall", name, now.UnixMilli())
	if err != nil {
		return waitroom.Room{}, nil, err
	}
	if err := errorFor(name, r); err != nil {
		return waitroom.Room{}, nil, err
	}
	room, _, err := decodeRoom(name, first(r.rest))
	if err != nil {
		return waitroom.Room{}, nil, err
	}
	moved, err := decodeList(name, "queueall", r.rest, 1)
	if err != nil {
		return waitroom.Room{}, nil, err
	}
	if num(r.rest, 2) == 1 {
		// A sold-out line is still being ended, the moved sessions with
		// it: end the rest, then report the room and them as they are
		// after.
		if _, err := s.settle(ctx, name, now); err != nil {
			return waitroom.Room{}, nil, err
		}
		if room, err = s.Room(ctx, name); err != nil {
			return waitroom.Room{}, nil, err
		}
		ids := make([]string, len(moved))
		for i, m := range moved {
			ids[i] = m.ID
		}
		if moved, err = s.Sessions(ctx, name, ids); err != nil {
			return waitroom.Room{}, nil, err
		}
	}
	return room, moved, nil
}

// Front implements waitroom.Store.
func (s *Store) Front(ctx context.Context, name, id string, now time.Time) (waitroom.Session, error) {
	return s.sessionResult(ctx, "front", name, id, now)
}

// Extend implements waitroom.Store.
func (s *Store) Extend(ctx context.Context, name, id string, by time.Duration, now time.Time) (waitroom.Session, error) {
	if err := waitroom.CheckExtend(by); err != nil {
		return waitroom.Session{}, err
	}
	// Milliseconds and the nanoseconds past them: Lua numbers are doubles,
	// exact to 2^53, which a sum of nanoseconds may pass.
	return s.sessionResult(ctx, "extend", name, id, now, by.Milliseconds(), int64(by%time.Millisecond))
}

// Lookup implements waitroom.Store. It is a read: it settles nothing and
// counts as no presence.
func (s *Store) Lookup(ctx context.Context, name string, ticket int64, key string) (waitroom.Session, error) {
	if err := s.usable(); err != nil {
		return waitroom.Session{}, err
	}
	if err := waitroom.CheckRoomName(name); err != nil {
		return waitroom.Session{}, err
	}
	if ticket < 0 {
		ticket = 0 // by key
	}
	r, err := s.run(ctx, "lookup", name, 0, ticket, key)
	if err != nil {
		return waitroom.Session{}, err
	}
	if err := errorFor(name, r); err != nil {
		return waitroom.Session{}, err
	}
	out, ok := decodeSession(name, first(r.rest))
	if !ok {
		return waitroom.Session{}, malformed("lookup", r.rest)
	}
	return out, nil
}

// extended is an extension kept as whole milliseconds and the nanoseconds
// past them.
func extended(ms, ns int64) time.Duration {
	return time.Duration(ms)*time.Millisecond + time.Duration(ns)
}

// stateName names a session's state in an error: its status, or "pre" for
// an entrant of a pre-queue before the draw.
func stateName(st string) string {
	if st == "pre" {
		return "in the pre-queue before the draw"
	}
	return st
}
