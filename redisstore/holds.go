package redisstore

import (
	"context"
	"time"

	"github.com/waitroom/waitroom"
)

// Holding places and telling sessions they are near (holds.lua holds the
// rules and what they keep): held joins carry their contact to the script
// with the join (joinArgs), the configuration's hold_places, claim window
// and notify_at go with the rest of it (holdArgs), and session arrays and
// event lines of held sessions end with the contact and when an invited
// session's claim window ends.

// Claim implements waitroom.Store.
func (s *Store) Claim(ctx context.Context, room, id string, now time.Time) (waitroom.Session, error) {
	return s.sessionResult(ctx, "claim", room, id, now)
}

// holdArgs is the holding part of a configuration as the script takes it:
// "1" when it holds places, the claim window held sessions get in ms
// (RoomConfig.HeldWindow, which a room that stopped holding places still
// gives the held sessions it has) and notify_at.
func holdArgs(cfg waitroom.RoomConfig) []any {
	hold := "0"
	if cfg.HoldPlaces {
		hold = "1"
	}
	return []any{hold, cfg.HeldWindow().Milliseconds(), cfg.NotifyAt}
}

// holdFields completes a held session from its array, whose holding part
// (holdTail in holds.lua) starts at 21: its contact, and when an invited
// one's claim window ends (0 for none).
func holdFields(s *waitroom.Session, v []any) {
	if len(v) < 23 {
		return
	}
	s.Contact = str(v, 21)
	s.ClaimBy = tm(num(v, 22))
}

// notInvited is the error of a claim of a session that is not invited,
// which the reply holds.
func notInvited(room string, r result) error {
	s, ok := decodeSession(room, first(r.rest))
	if !ok {
		return malformed("claim", r.rest)
	}
	return waitroom.NotInvited(s)
}
