package redisstore

import (
	"context"
	"strconv"
	"time"

	"github.com/waitroom/waitroom"
)

// WithDrawStep sets how many entrants one script run of a draw applies, so
// tests can make a small draw take many steps.
func WithDrawStep(n int) Option {
	return func(c *config) error {
		c.drawStep = n
		return nil
	}
}

// WithDrawLease sets how long a process may drive a draw without progress
// before another takes over.
func WithDrawLease(d time.Duration) Option {
	return func(c *config) error {
		c.drawLease = d
		return nil
	}
}

// DecodeEvent parses an event message of the wire format (events.go).
var DecodeEvent = decodeEvent

// UpdateRoomNonce is UpdateRoom with the call's nonce given, as go-redis
// sends one script run again after a lost reply.
func (s *Store) UpdateRoomNonce(name string, cfg waitroom.RoomConfig, rev int64, nonce string, now time.Time) (waitroom.Room, error) {
	room, _, err := s.putRoom(context.Background(), name, cfg, now, "updateroom", strconv.FormatInt(rev, 10), nonce)
	return room, err
}

// RoomKey is the key of room's hash.
func (s *Store) RoomKey(room string) string { return s.keys(room)[0] }

// WithoutRewindMarks makes the Store send no high-water marks, as before
// rewinds were detected, so a test can show what a rewind does then.
func WithoutRewindMarks() Option {
	return func(c *config) error {
		c.noMarks = true
		return nil
	}
}

// ReadOp reports whether a room script op only reads (pipeline.go).
var ReadOp = readOp

// RoomScriptHash is the SHA1 of the room script.
func RoomScriptHash() string { return roomScript.Hash() }

// OnlineReplicas counts the online, acknowledging replicas of an INFO
// replication section (ack.go).
var OnlineReplicas = onlineReplicas
