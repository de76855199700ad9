package storetest

import (
	"fmt"
	"strings"
	"time"

	"github.com/waitroom/waitroom"
	"pgregory.net/rapid"
)

// The model test's moves for tiers and token uses.

func init() {
	refusal[waitroom.CodeRoomNotEmpty] = "changing the tiers of a room with people in it"
	refusal[waitroom.CodeInvalidRequest] = "to a tier the room does not have, with an expired token, or held where places are not held"
	refusal[waitroom.CodeInviteUsed] = "with an invite that has no uses left"
	refusal[waitroom.CodeChallengeUsed] = "with a challenge already used"
}

// modelTierSets are the tier configurations the model test tries.
var modelTierSets = []struct {
	policy waitroom.TierPolicy
	tiers  []waitroom.Tier
}{
	{"", nil},
	{waitroom.TierStrict, []waitroom.Tier{{Name: "vip"}, {Name: "general"}}},
	{waitroom.TierWeighted, []waitroom.Tier{{Name: "vip", Share: 0.7}, {Name: "general"}}},
	{waitroom.TierWeighted, []waitroom.Tier{{Name: "a", Share: 0.5}, {Name: "b", Share: 0.25}, {Name: "c"}}},
	{waitroom.TierStrict, []waitroom.Tier{{Name: "a"}, {Name: "b"}, {Name: "c"}}},
}

// withTiers gives cfg tiers: a room with tiers mostly keeps them (a change
// while people are in it is refused), sometimes with new shares; any room
// may get another set.
func (h *modelRun) withTiers(t *rapid.T, cfg waitroom.RoomConfig) waitroom.RoomConfig {
	if h.m.exists && rapid.IntRange(0, 3).Draw(t, "keep_tiers") > 0 {
		cfg.Tiers, cfg.TierPolicy = h.m.cfg.Tiers, h.m.cfg.TierPolicy
		if cfg.TierPolicy == waitroom.TierWeighted && rapid.Bool().Draw(t, "reshare") {
			cfg.Tiers = append([]waitroom.Tier(nil), cfg.Tiers...)
			cfg.Tiers[0].Share = rapid.SampledFrom([]float64{0.3, 0.5, 0.6}).Draw(t, "share")
		}
		return cfg
	}
	set := modelTierSets[rapid.IntRange(0, len(modelTierSets)-1).Draw(t, "tiers")]
	cfg.Tiers, cfg.TierPolicy = set.tiers, set.policy
	return cfg
}

// modelTokenIDs is the pool token uses draw their IDs from, so that uses
// meet.
var modelTokenIDs = []string{"t1", "t2", "t3"}

// joinRequest draws a join: a key, sometimes a tier (rarely one the room
// lacks) and sometimes token uses.
func (h *modelRun) joinRequest(t *rapid.T) waitroom.JoinRequest {
	req := waitroom.JoinRequest{Key: rapid.SampledFrom(modelKeys).Draw(t, "key"), Contact: rapid.SampledFrom(modelContacts).Draw(t, "contact")}
	names := []string{"", "", ""}
	for _, tr := range h.m.cfg.Tiers {
		names = append(names, tr.Name)
	}
	names = append(names, "nosuch")
	if rapid.IntRange(0, 2).Draw(t, "tiered") == 0 {
		req.Tier = rapid.SampledFrom(names).Draw(t, "tier")
	}
	for i := range rapid.IntRange(0, 2).Draw(t, "uses") {
		kind := rapid.SampledFrom([]waitroom.TokenKind{waitroom.TokenInvite, waitroom.TokenChallenge}).Draw(t, "kind")
		id := rapid.SampledFrom(modelTokenIDs).Draw(t, "token")
		if i == 1 && req.Uses[0].Kind == kind && req.Uses[0].ID == id {
			break // a join spends a token once
		}
		// Expiries at sub-millisecond times too (stores keep milliseconds),
		// and sometimes already past (refused before anything).
		ttl := rapid.SampledFrom([]time.Duration{-sec, sec, 10 * sec, time.Minute, sec + 300*time.Microsecond}).Draw(t, "ttl")
		req.Uses = append(req.Uses, waitroom.TokenUse{Kind: kind, ID: id, Max: rapid.IntRange(1, 3).Draw(t, "max"),
			Expires: h.clock.Add(ttl)})
	}
	return req
}

func fmtJoin(req waitroom.JoinRequest) string {
	var b strings.Builder
	fmt.Fprintf(&b, "key=%q", req.Key)
	if req.Contact != "" {
		fmt.Fprintf(&b, " contact=%q", req.Contact)
	}
	if req.Tier != "" {
		fmt.Fprintf(&b, " tier=%q", req.Tier)
	}
	for _, u := range req.Uses {
		fmt.Fprintf(&b, " %s:%s(max %d, until %s)", u.Kind, u.ID, u.Max, rel(u.Expires))
	}
	return b.String()
}

// expiredUse reports whether req spends a token that expired at now (to the
// millisecond): stores refuse it before anything else.
func expiredUse(req waitroom.JoinRequest, now time.Time) bool {
	for _, u := range req.Uses {
		if u.Expires.UnixMilli() <= now.UnixMilli() {
			return true
		}
	}
	return false
}
