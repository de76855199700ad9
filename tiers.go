package waitroom

import (
	"encoding/base64"
	"fmt"
	"math"
	"slices"
	"time"
)

// Tier is one priority class of a room's line (RoomConfig.Tiers). Tiers are
// listed highest first.
type Tier struct {
	// Name names the tier in invites, sessions and pages: 1 to 32
	// characters of [a-z0-9_-].
	Name string `json:"name"`
	// Share is the part of admissions the tier gets under the weighted
	// policy while it has someone waiting, in [0.01, 1]. A tier without a
	// share gets an equal part of what the others leave. Strict priority
	// ignores it.
	Share float64 `json:"share,omitempty"`
}

// TierPolicy says how admission chooses between tiers.
type TierPolicy string

// The tier policies.
const (
	// TierStrict admits the first of the highest tier that has anyone
	// waiting: a lower tier waits while a higher one has anyone in line.
	TierStrict TierPolicy = "strict"
	// TierWeighted is weighted fair queuing: each tier gets its share of
	// admissions while it has anyone waiting, so no tier starves.
	TierWeighted TierPolicy = "weighted"
)

// Limits on tiers and on the door options.
const (
	MaxTiers      = 8
	MaxInviteKeys = 8
	// MaxChallenge bounds challenge_min and challenge_max (the ALTCHA
	// maxnumber: a browser tries half of it on average).
	MaxChallenge = 100_000_000
)

// ChallengePoW is the value of RoomConfig.Challenge that asks every join for
// a solved proof-of-work challenge.
const ChallengePoW = "pow"

// How tiered places are made. Every backend computes the same integers.
//
// Strict: place = index<<strictShift + ticket, so tiers come in order and
// tickets in order inside one.
//
// Weighted (weighted fair queuing, in integers): tier i's step is
// round(1000/share_i). A join to tier i gets the tag
// max(vt, fin_i) + step_i, where fin_i is the tier's last tag and vt the
// largest tag admitted so far, and the place tag*16 + i. The line is
// ordered by place, so each tier gets its share of admissions while it has
// people waiting, a tier that had nobody waiting earns no credit for it,
// and ties go to the higher tier.
const (
	strictShift = 40
	weightShift = 4
)

// TierIndex returns the index of tier name in c, or -1. The empty name is
// the last (lowest) tier, where joins without an invite go.
func (c RoomConfig) TierIndex(name string) int {
	if len(c.Tiers) == 0 {
		if name == "" {
			return 0
		}
		return -1
	}
	if name == "" {
		return len(c.Tiers) - 1
	}
	return slices.IndexFunc(c.Tiers, func(t Tier) bool { return t.Name == name })
}

// TierSteps returns each tier's weighted-fair-queuing step (see the place
// rules above); nil for a room without tiers or with strict priority.
func (c RoomConfig) TierSteps() []int64 {
	if len(c.Tiers) == 0 || c.TierPolicy != TierWeighted {
		return nil
	}
	var given float64
	var without int
	for _, t := range c.Tiers {
		if t.Share > 0 {
			given += t.Share
		} else {
			without++
		}
	}
	rest := 0.0
	if without > 0 {
		rest = max(0.01, (1-given)/float64(without))
	}
	out := make([]int64, len(c.Tiers))
	for i, t := range c.Tiers {
		s := t.Share
		if s == 0 {
			s = rest
		}
		out[i] = max(1, int64(math.Round(1000/s)))
	}
	return out
}

// StrictPlace is the place of ticket in tier index under strict priority.
func StrictPlace(index int, ticket int64) int64 { return int64(index)<<strictShift + ticket }

// WeightedPlace is the place of tag in tier index under weighted fair queuing.
func WeightedPlace(index int, tag int64) int64 { return tag<<weightShift + int64(index) }

// PlaceTier returns the tier index a place of a tiered, unmoved session
// encodes under policy.
func PlaceTier(policy TierPolicy, place int64) int {
	if policy == TierWeighted {
		return int(place & (1<<weightShift - 1))
	}
	return int(place >> strictShift)
}

// PlaceTag returns the weighted-fair-queuing tag of a weighted place.
func PlaceTag(place int64) int64 { return place >> weightShift }

// TiersEqual reports whether a and b name the same tiers in the same order
// under the same policy: what a room with live sessions may not change
// (shares may change at any time).
func TiersEqual(a, b RoomConfig) bool {
	if len(a.Tiers) != len(b.Tiers) || (len(a.Tiers) > 0 && a.policy() != b.policy()) {
		return false
	}
	for i := range a.Tiers {
		if a.Tiers[i].Name != b.Tiers[i].Name {
			return false
		}
	}
	return true
}

func (c RoomConfig) policy() TierPolicy {
	if c.TierPolicy == "" {
		return TierStrict
	}
	return c.TierPolicy
}

// validateDoor checks the tier, invite and challenge options.
func (c RoomConfig) validateDoor() error {
	bad := func(format string, args ...any) error { return Errorf(CodeInvalidConfig, format, args...) }
	if len(c.Tiers) > MaxTiers {
		return bad("tiers holds at most %d tiers.", MaxTiers)
	}
	switch c.TierPolicy {
	case "", TierStrict, TierWeighted:
	default:
		return bad("tier_policy must be \"strict\" or \"weighted\", not %q.", string(c.TierPolicy))
	}
	if c.TierPolicy != "" && len(c.Tiers) == 0 {
		return bad("tier_policy needs tiers.")
	}
	var given float64
	var without int
	for i, t := range c.Tiers {
		if !validTierName(t.Name) {
			return bad("tiers[%d]: a tier name is 1 to 32 characters of a-z, 0-9, _ and -, not %q.", i, t.Name)
		}
		if slices.IndexFunc(c.Tiers[:i], func(o Tier) bool { return o.Name == t.Name }) >= 0 {
			return bad("tiers[%d]: the name %q is used twice.", i, t.Name)
		}
		if t.Share != 0 && (math.IsNaN(t.Share) || t.Share < 0.01 || t.Share > 1) {
			return bad("tiers[%d]: share must be between 0.01 and 1.", i)
		}
		if t.Share > 0 {
			given += t.Share
		} else {
			without++
		}
	}
	if c.TierPolicy == TierWeighted {
		if given > 1+1e-9 {
			return bad("the shares of the tiers add up to more than 1.")
		}
		if without > 0 && (1-given)/float64(without) < 0.01-1e-9 {
			return bad("the tiers without a share would get less than 0.01 each; give them shares.")
		}
	}
	if len(c.InviteKeys) > MaxInviteKeys {
		return bad("invite_keys holds at most %d keys.", MaxInviteKeys)
	}
	for i, k := range c.InviteKeys {
		if _, err := ParseInviteKey(k); err != nil {
			return bad("invite_keys[%d]: %s", i, err)
		}
	}
	switch c.Challenge {
	case "", ChallengePoW:
	default:
		return bad("challenge must be \"pow\" or absent, not %q.", c.Challenge)
	}
	if c.ChallengeMin < 0 || c.ChallengeMin > MaxChallenge || c.ChallengeMax < 0 || c.ChallengeMax > MaxChallenge {
		return bad("challenge_min and challenge_max must be between 0 and %d.", MaxChallenge)
	}
	if c.ChallengeMin > 0 && c.ChallengeMax > 0 && c.ChallengeMax < c.ChallengeMin {
		return bad("challenge_max must not be below challenge_min.")
	}
	return nil
}

func validTierName(s string) bool {
	if len(s) == 0 || len(s) > 32 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// ParseInviteKey reads an Ed25519 public key of invite_keys: the 32 raw
// bytes in standard or URL-safe base64, padded or not.
func ParseInviteKey(s string) ([]byte, error) {
	if len(s) > 64 {
		return nil, fmt.Errorf("a key is 32 bytes in base64, not %d characters", len(s))
	}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if b, err := enc.Strict().DecodeString(s); err == nil && len(b) == 32 {
			return b, nil
		}
	}
	return nil, fmt.Errorf("%.70q is not a 32-byte Ed25519 public key in base64", s)
}

// TokenKind says what a TokenUse spends.
type TokenKind string

// The token kinds.
const (
	TokenInvite    TokenKind = "invite"
	TokenChallenge TokenKind = "challenge"
)

// TokenUse is one use of a token that a join spends: a store counts the
// uses of each ID in the room until Expires (to the millisecond) and
// refuses a join that would take more than Max (CodeInviteUsed or
// CodeChallengeUsed).
type TokenUse struct {
	Kind    TokenKind
	ID      string
	Max     int
	Expires time.Time
}

// Limits on a token use.
const (
	MaxTokenID   = 128
	MaxTokenUses = 1_000_000
)

// JoinRequest is what Store.JoinWith is asked: the identity key (may be
// empty), the tier ("" for the lowest) and the token uses the join spends.
type JoinRequest struct {
	Key  string
	Tier string
	Uses []TokenUse
	// Contact, when set, makes the join held (see RoomConfig.HoldPlaces):
	// only a trusted caller may set it. A room that does not hold places,
	// or a scheduled room before its draw, refuses it (NotHeld).
	Contact string
}

// MaxJoinUses is the most token uses one join spends (an invite and a
// challenge).
const MaxJoinUses = 2

// CheckJoin returns the CodeInvalidRequest error of a JoinRequest no store
// could accept at now: a bad key, too many uses, a use without an ID, with
// a count out of range, or one that expired (Expires not after now: its
// count would end at once, so it could be spent again and again). Whether
// the tier exists is the room's to say.
func CheckJoin(req JoinRequest, now time.Time) error {
	if req.Key != "" {
		if err := CheckKey(req.Key); err != nil {
			return err
		}
	}
	if len(req.Tier) > 32 {
		return Errorf(CodeInvalidRequest, "A tier name is at most 32 characters.")
	}
	if req.Contact != "" {
		if err := CheckContact(req.Contact); err != nil {
			return err
		}
	}
	if len(req.Uses) > MaxJoinUses {
		return Errorf(CodeInvalidRequest, "A join spends at most %d tokens.", MaxJoinUses)
	}
	for i, u := range req.Uses {
		if u.Kind != TokenInvite && u.Kind != TokenChallenge {
			return Errorf(CodeInvalidRequest, "A token is an invite or a challenge, not %q.", string(u.Kind))
		}
		if u.ID == "" || len(u.ID) > MaxTokenID || u.Max < 1 || u.Max > MaxTokenUses || u.Expires.IsZero() {
			return Errorf(CodeInvalidRequest, "A token use needs an ID of at most %d bytes, 1 to %d uses and an expiry.", MaxTokenID, MaxTokenUses)
		}
		if u.Expires.UnixMilli() <= now.UnixMilli() {
			return Errorf(CodeInvalidRequest, "This %s has expired.", string(u.Kind))
		}
		for _, o := range req.Uses[:i] {
			if o.Kind == u.Kind && o.ID == u.ID {
				return Errorf(CodeInvalidRequest, "A join spends a token once.")
			}
		}
	}
	return nil
}

// UsedError is the error of a join refused because token use u has none
// left.
func UsedError(u TokenUse) *Error {
	if u.Kind == TokenChallenge {
		return Errorf(CodeChallengeUsed, "This challenge was already used for a join; ask for a new one.")
	}
	return Errorf(CodeInviteUsed, "This invite has been used as many times as it allows.")
}

// NoTierError is the error of a join to a tier the room does not have.
func NoTierError(room, tier string) *Error {
	return Errorf(CodeInvalidRequest, "Room %q has no tier named %q.", room, tier)
}

// TiersChangedError is the error of a reconfiguration that would change the
// tiers (names, order or policy) of a room with live sessions.
func TiersChangedError(room string) *Error {
	return Errorf(CodeRoomNotEmpty, "Room %q has people in it: its tiers and tier_policy can change only when it is empty (shares may change at any time).", room)
}
