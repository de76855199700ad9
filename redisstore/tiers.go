package redisstore

import (
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/waitroom/waitroom"
)

// Tiers and token uses (tiers.lua holds the rules and the keys). A tiered
// room's waiting sessions are scored by their tiered place in the wait
// sorted set, so the line, positions and admission stay ZRANGE, ZRANK and
// the lowest score. Go works out each tier's weighted-fair-queuing step
// (RoomConfig.TierSteps) and hands it to the script with the
// configuration, so the script does only integer arithmetic.

// tierArgs is the tier part of a configuration as the script takes it:
// the tier names separated by spaces, the policy and the steps separated
// by spaces ("" for none).
func tierArgs(cfg waitroom.RoomConfig) []any {
	names := make([]string, len(cfg.Tiers))
	for i, t := range cfg.Tiers {
		names[i] = t.Name
	}
	steps := cfg.TierSteps()
	ss := make([]string, len(steps))
	for i, n := range steps {
		ss[i] = strconv.FormatInt(n, 10)
	}
	policy := ""
	if len(cfg.Tiers) > 0 {
		policy = string(cfg.TierPolicy)
	}
	return []any{strings.Join(names, " "), policy, strings.Join(ss, " ")}
}

// JoinWith implements waitroom.Store. A join with a tier, token uses or a contact
// runs on its own, never merged into a batch of joins (tiers.lua).
func (s *Store) JoinWith(ctx context.Context, room string, req waitroom.JoinRequest, now time.Time) (waitroom.Session, error) {
	if err := waitroom.CheckJoin(req, now); err != nil {
		return waitroom.Session{}, err
	}
	if err := s.usable(); err != nil {
		return waitroom.Session{}, err
	}
	if err := waitroom.CheckRoomName(room); err != nil {
		return waitroom.Session{}, err
	}
	// The secret is made here; the ticket only the script knows.
	var secret [16]byte
	_, _ = crand.Read(secret[:])
	r, err := s.run(ctx, "join", room, now.UnixMilli(), joinArgs(req, hex.EncodeToString(secret[:]))...)
	if err != nil {
		return waitroom.Session{}, err
	}
	if err := joinError(room, req, r); err != nil {
		// go-redis sends a command again when its connection broke before
		// the reply came, so the script may have run already. A keyed
		// join then finds its own session, with the secret made above:
		// that is this join's answer, not a conflict.
		var we *waitroom.Error
		if errors.As(err, &we) && we.Code == waitroom.CodeAlreadyJoined && we.Session != nil {
			if sid, perr := waitroom.ParseSessionID(we.Session.ID); perr == nil && sid.Matches(secret) {
				return *we.Session, nil
			}
		}
		return waitroom.Session{}, err
	}
	out, ok := decodeSession(room, first(r.rest))
	if !ok {
		return waitroom.Session{}, malformed("join", r.rest)
	}
	return out, nil
}

// joinArgs is a join's arguments: key and secret, and for a join with a
// tier, token uses or a contact the tier, the contact ("" for none), then
// kind:ID, most uses and expiry (unix ms) of each use. A plain join has
// only the two, so the pipeliner may merge it with others (mergeJoins).
func joinArgs(req waitroom.JoinRequest, secret string) []any {
	args := []any{req.Key, secret}
	if req.Tier == "" && len(req.Uses) == 0 && req.Contact == "" {
		return args
	}
	args = append(args, req.Tier, req.Contact)
	for _, u := range req.Uses {
		args = append(args, string(u.Kind)+":"+u.ID, u.Max, u.Expires.UnixMilli())
	}
	return args
}

// joinError is errorFor with a join's own refusals: a tier the room does
// not have, a token with no use left (the reply names which), and a held
// join where places are not held (the reply says whether for the
// pre-queue).
func joinError(room string, req waitroom.JoinRequest, r result) error {
	switch r.status {
	case "not_held":
		return waitroom.NotHeld(room, num(r.rest, 0) == 1)
	case "no_tier":
		return waitroom.NoTierError(room, req.Tier)
	case "token_used":
		if i := num(r.rest, 0) - 1; i >= 0 && i < int64(len(req.Uses)) {
			return waitroom.UsedError(req.Uses[i])
		}
		return malformed("join", r.rest)
	}
	return errorFor(room, r)
}
