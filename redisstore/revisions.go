package redisstore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/waitroom/waitroom"
)

// Configuration revisions (waitroom.Room.Revision): the room hash holds
// rev, which every change of the configuration raises by one in the same
// script run (bumpRev, machinery.lua), and a deleted room's last stays in
// :rv, never deleted, so a room made again continues above it. UpdateRoom
// is PutRoom's script with the revision checked first, atomically with
// the change however many processes share the room.

// UpdateRoom implements waitroom.Store. go-redis sends a script again when
// its connection broke before the reply: a random nonce, kept in the room
// hash by the run that made the change, lets that second run answer as the
// first did instead of failing on the revision it raised itself.
func (s *Store) UpdateRoom(ctx context.Context, name string, cfg waitroom.RoomConfig, rev int64, now time.Time) (waitroom.Room, error) {
	var nonce [12]byte
	_, _ = rand.Read(nonce[:]) // never fails (crypto/rand)
	room, _, err := s.putRoom(ctx, name, cfg, now, "updateroom", strconv.FormatInt(max(rev, 0), 10), hex.EncodeToString(nonce[:]))
	return room, err
}

// putRoom is PutRoom (op "putroom") and UpdateRoom (op "updateroom",
// with the revision the room must have and the call's nonce in cond).
func (s *Store) putRoom(ctx context.Context, name string, cfg waitroom.RoomConfig, now time.Time, op string, cond ...any) (waitroom.Room, bool, error) {
	if err := s.usable(); err != nil {
		return waitroom.Room{}, false, err
	}
	if err := waitroom.CheckRoomName(name); err != nil {
		return waitroom.Room{}, false, err
	}
	if err := cfg.Validate(); err != nil {
		return waitroom.Room{}, false, err
	}
	cfg = cfg.Normalize()
	args, err := configArgs(cfg)
	if err != nil {
		return waitroom.Room{}, false, err
	}
	r, err := s.runEv(ctx, op, name, now.UnixMilli(), withScheduleSeed, append(args, cond...)...)
	if err != nil {
		return waitroom.Room{}, false, err
	}
	if err := errorFor(name, r); err != nil {
		return waitroom.Room{}, false, err
	}
	if len(r.rest) < 2 {
		return waitroom.Room{}, false, malformed(op, r.rest)
	}
	created := num(r.rest, 0) == 1
	room, _, err := decodeRoom(name, r.rest[1])
	if err != nil {
		return waitroom.Room{}, false, err
	}
	// The rooms set is in another slot, so it is updated apart from the
	// script. Doing it on every PutRoom (not only on create) repairs a set
	// that missed a name because a process died between the two.
	if err := s.write(ctx, "listing room "+name, redis.NewIntCmd(ctx, "sadd", s.roomsKey(), name)); err != nil {
		return waitroom.Room{}, false, err
	}
	if created {
		// Other processes subscribe to a new room's sharded channel when
		// they hear of it here.
		_ = s.client.Publish(ctx, s.controlChannel(), name).Err()
	}
	more, drawNow := num(r.rest, 2) == 1, num(r.rest, 3) == 1
	if more || drawNow {
		// The new timeouts made more sessions due than one run handles,
		// or the configuration closed the pre-queue: hold the draw, finish
		// expiring, admit, then report the room as it is after.
		if drawNow {
			if err := s.completeDraw(ctx, name); err != nil {
				return waitroom.Room{}, false, err
			}
		}
		if _, err := s.settle(ctx, name, now); err != nil {
			return waitroom.Room{}, false, err
		}
		room, err = s.Room(ctx, name)
	}
	return room, created, err
}
