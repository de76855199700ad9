// Package door decides what a join needs before it reaches the store: an
// invite in an invite-only room (and the tier and key an invite gives), and
// a solved proof-of-work challenge in a room with challenge "pow". The API
// and the waiting page both send their joins through one Door, so both ways
// in ask the same.
//
// Invites are checked here (signature, expiry, room) and their uses are
// counted by the store, atomically with the join (waitroom.TokenUse), so an
// invite cannot be replayed through another process. Challenges are the
// same: verified here, spent once in the store.
//
// A valid invite lets its holder skip the challenge: it is signed by the
// operator and scarce already, and the people holding one (presale members,
// accessibility users) are the ones a puzzle should not slow down.
package door

import (
	"context"
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/sha256"
	"fmt"
	"net/netip"
	"sync"
	"time"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/challenge"
	"github.com/waitroom/waitroom/internal/invite"
	"github.com/waitroom/waitroom/internal/roomview"
)

// Door checks invites and challenges. It is safe for concurrent use.
//
// The difficulty follows the join rate this process sees (distinct client
// addresses asking for a challenge, and challenge solutions accepted) and,
// given WithSharedRate, the room's joins across every process. A
// solution of a challenge less than half as hard as the current difficulty
// is refused as expired, with a fresh challenge, so challenges gathered
// while the room was calm are worth nothing once it is busy, and cheap
// ones solved at the start of a rush stop counting as it climbs. (The
// price: while the difficulty more than doubles, some people solve twice;
// the page does so by itself.)
type Door struct {
	shared SharedRate
	view   *roomview.View
	secret []byte
	issuer *challenge.Issuer
	calm   int64
	mu     sync.Mutex
	rooms  map[string]*roomState
}

// roomState is what a Door keeps per room: what it derived from the room's
// configuration and its recent challenge requests, for the difficulty.
type roomState struct {
	conf *roomConf // replaced when the configuration changes, never changed: readers need no lock
	// Solutions accepted in each of the last rateWindow seconds, by the
	// second (unix) each slot counts.
	solved   [rateWindow]int64
	solvedAt [rateWindow]int64
	// The shared rate as last read (see SharedRate), and when.
	sharedRate int64
	sharedAt   time.Time
	// Client addresses (IPv6 by /64) that asked for a challenge, each
	// counted once per rateWindow: the second it was last counted.
	asked    [rateWindow]int64
	askedAt  [rateWindow]int64
	seen     map[netip.Addr]int64
	seenKept int
}

// roomConf is a room's configuration as the door reads it, with its invite
// keys parsed: immutable once made, and made again only when the room
// view's configuration (the pointer from) changes.
type roomConf struct {
	from *waitroom.RoomConfig
	cfg  waitroom.RoomConfig
	keys []ed25519.PublicKey
}

// rateWindow is how many seconds of accepted solutions set the difficulty:
// short, so a rush raises it within a second or two.
const rateWindow = 10

// tooEasy is how many times harder the room's current difficulty must be
// than a solved challenge's for that solution to be refused (as expired,
// with a fresh challenge): challenges stockpiled while the room was calm
// do not buy places in a rush.
const tooEasy = 2

// rate returns the room's join rate per minute as the door sees it: the
// larger of the accepted solutions' and the distinct addresses' asking
// for a challenge, each the larger of the last rateWindow seconds' and
// the current second's, so a rush raises the difficulty within the second
// it starts (before any solution is in) and a lull lowers it only after
// rateWindow. mu must be held.
func (st *roomState) rate(now time.Time) int64 {
	return max(ringRate(&st.solved, &st.solvedAt, now), ringRate(&st.asked, &st.askedAt, now))
}

func ringRate(n, at *[rateWindow]int64, now time.Time) int64 {
	sec := now.Unix()
	var sum, cur int64
	for i := range n {
		if sec-at[i] < rateWindow && at[i] <= sec {
			sum += n[i]
		}
		if at[i] == sec {
			cur = n[i]
		}
	}
	return max(sum*60/rateWindow, cur*60)
}

func ringAdd(n, at *[rateWindow]int64, now time.Time) {
	sec := now.Unix()
	i := int(((sec % rateWindow) + rateWindow) % rateWindow)
	if at[i] != sec {
		at[i], n[i] = sec, 0
	}
	n[i]++
}

// count records an accepted solution at now. mu must be held.
func (st *roomState) count(now time.Time) { ringAdd(&st.solved, &st.solvedAt, now) }

// ask records that client asked for a challenge at now, once per
// rateWindow per address (IPv6 per /64), so that asking from one address
// again and again does not raise the difficulty. mu must be held.
func (st *roomState) ask(client netip.Addr, now time.Time) {
	if !client.IsValid() {
		return
	}
	client = client.Unmap()
	if client.Is6() {
		p, _ := client.Prefix(64)
		client = p.Addr()
	}
	sec := now.Unix()
	if last, ok := st.seen[client]; ok && sec-last < rateWindow && last <= sec {
		return
	}
	if st.seen == nil {
		st.seen = make(map[netip.Addr]int64)
	}
	if len(st.seen) >= max(1024, 2*st.seenKept) {
		for a, last := range st.seen {
			if sec-last >= rateWindow || last > sec {
				delete(st.seen, a)
			}
		}
		st.seenKept = len(st.seen)
	}
	st.seen[client] = sec
	ringAdd(&st.asked, &st.askedAt, now)
}

// SharedRate returns room's joins per minute across every process sharing
// the store (the console's numbers: roomstats), for the difficulty of a
// room served by many processes, each of which sees only its share.
type SharedRate func(ctx context.Context, room string, now time.Time) (perMinute int64, err error)

// Option configures a Door.
type Option func(*Door)

// WithSharedRate makes the difficulty follow rate too: the larger of what
// this process sees and rate, read at most once a second per room. rate
// lags (it counts whole 10-second buckets of the last minute) but sees
// every process; this process's own count answers within the second.
func WithSharedRate(rate SharedRate) Option { return func(d *Door) { d.shared = rate } }

// sharedEvery is how often a room's shared rate is read.
const sharedEvery = time.Second

// New returns a Door for the rooms of view (which reads their
// configurations; see package roomview for how fresh they are) whose
// invites (HMAC) and challenges are signed with secret (32 bytes or more,
// the same in every process).
func New(view *roomview.View, secret []byte, opts ...Option) *Door {
	if view == nil {
		panic("door: the room view is nil")
	}
	if len(secret) < 32 {
		panic("door: the secret must be at least 32 bytes")
	}
	// One key each, derived from secret, so a signature made for one
	// purpose is never valid for the other.
	d := &Door{view: view, secret: derive(secret, "waitroom invite v1"), issuer: challenge.New(derive(secret, "waitroom challenge v1"), challenge.DefaultTTL),
		calm: challenge.DefaultCalm, rooms: make(map[string]*roomState)}
	for _, o := range opts {
		o(d)
	}
	return d
}

func derive(secret []byte, purpose string) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(purpose))
	return m.Sum(nil)
}

// state returns the room's state and its configuration, from the room
// view. The state's counters are d.mu's; the configuration is immutable.
func (d *Door) state(ctx context.Context, room string) (*roomState, *roomConf, error) {
	snap, err := d.view.Room(ctx, room)
	if err != nil {
		return nil, nil, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	st := d.rooms[room]
	if st == nil {
		if len(d.rooms) >= 10_000 {
			clear(d.rooms) // many rooms come and go: start again rather than grow
		}
		st = &roomState{}
		d.rooms[room] = st
	}
	if st.conf == nil || st.conf.from != snap.Config {
		st.conf = newRoomConf(snap.Config)
	}
	return st, st.conf, nil
}

// newRoomConf parses cfg's invite keys (a malformed one is left out: the
// store checked them when the room was configured).
func newRoomConf(cfg *waitroom.RoomConfig) *roomConf {
	c := &roomConf{from: cfg, cfg: *cfg}
	for _, k := range cfg.InviteKeys {
		if b, err := waitroom.ParseInviteKey(k); err == nil {
			c.keys = append(c.keys, ed25519.PublicKey(b))
		}
	}
	return c
}

// Guarded reports whether room asks anything at its door (invites or a
// challenge), so callers can skip the door's work for open rooms.
func (d *Door) Guarded(ctx context.Context, room string, now time.Time) (bool, error) {
	_, conf, err := d.state(ctx, room)
	if err != nil {
		return false, err
	}
	return conf.cfg.InviteOnly || conf.cfg.Challenge != "", nil
}

// Admit checks a join's invite and challenge solution (either may be "")
// from client (its address, for the difficulty; the zero Addr when
// unknown) against room's rules at now and returns the request to make of the
// store: its tier and key (from the invite) and the uses it spends. key is
// a key the caller may set itself (a trusted backend); an invite's key
// wins over it. Errors are *waitroom.Error: the invite and challenge codes,
// CodeChallengeRequired carrying a fresh challenge, or the store's.
func (d *Door) Admit(ctx context.Context, room string, client netip.Addr, key, inviteToken, solution string, now time.Time) (waitroom.JoinRequest, error) {
	req := waitroom.JoinRequest{Key: key}
	st, conf, err := d.state(ctx, room)
	if err != nil {
		return req, err
	}
	cfg := conf.cfg
	invited := false
	if inviteToken != "" {
		c, err := invite.Verify(inviteToken, room, now, d.secret, conf.keys)
		if err != nil {
			return req, err
		}
		if cfg.TierIndex(c.Tier) < 0 {
			return req, waitroom.Errorf(waitroom.CodeInviteInvalid, "This invite names tier %q, which room %q does not have.", c.Tier, room)
		}
		req.Tier = c.Tier
		if c.Key != "" {
			req.Key = c.Key
		}
		req.Uses = append(req.Uses, waitroom.TokenUse{Kind: waitroom.TokenInvite, ID: c.ID, Max: max(1, c.Uses), Expires: c.Expires})
		invited = true
	} else if cfg.InviteOnly {
		return req, waitroom.Errorf(waitroom.CodeInviteRequired, "Room %q is by invitation only; join with the link of your invite.", room)
	}
	if cfg.Challenge == waitroom.ChallengePoW && !invited {
		if solution == "" {
			ch, err := d.Challenge(ctx, room, client, now)
			if err != nil {
				return req, err
			}
			return req, &waitroom.Error{Code: waitroom.CodeChallengeRequired, Challenge: (*waitroom.ChallengeDetail)(&ch),
				Message: "This room asks every join for a solved proof-of-work challenge: solve the one given and send it as \"challenge\"."}
		}
		s, err := d.issuer.Verify(solution, room, now)
		if err == nil && s.MaxNumber*tooEasy < d.difficulty(ctx, room, st, cfg, now) {
			err = waitroom.Errorf(waitroom.CodeChallengeExpired, "The line got much busier since this challenge was issued; solve the new one.")
		}
		if err != nil {
			var we *waitroom.Error
			if e, ok := err.(*waitroom.Error); ok && e.Code == waitroom.CodeChallengeExpired {
				we = e
				if ch, cerr := d.Challenge(ctx, room, client, now); cerr == nil {
					we.Challenge = (*waitroom.ChallengeDetail)(&ch)
				}
				return req, we
			}
			return req, err
		}
		req.Uses = append(req.Uses, waitroom.TokenUse{Kind: waitroom.TokenChallenge, ID: s.ID, Max: 1, Expires: s.Expires})
		d.mu.Lock()
		st.count(now)
		d.mu.Unlock()
	}
	return req, nil
}

// difficulty is the maxnumber of a challenge issued now: challenge_min
// while the room's accepted solutions stay under the calm rate, rising in
// proportion above it, at most challenge_max (challenge.Difficulty).
func (d *Door) difficulty(ctx context.Context, room string, st *roomState, cfg waitroom.RoomConfig, now time.Time) int64 {
	lo, hi := cfg.ChallengeMin, cfg.ChallengeMax
	if lo <= 0 {
		lo = challenge.DefaultMin
	}
	if hi <= 0 {
		hi = max(lo, challenge.DefaultMax)
	}
	d.mu.Lock()
	rate := st.rate(now)
	read := d.shared != nil && (st.sharedAt.IsZero() || now.Sub(st.sharedAt) >= sharedEvery || now.Before(st.sharedAt))
	if read {
		st.sharedAt = now // one reader per second; the others use the last value
	}
	shared := st.sharedRate
	d.mu.Unlock()
	if read {
		if r, err := d.shared(ctx, room, now); err == nil {
			shared = r
			d.mu.Lock()
			st.sharedRate = r
			d.mu.Unlock()
		}
	}
	return challenge.Difficulty(lo, hi, max(rate, shared), d.calm)
}

// Challenge issues a challenge for client (its address; the zero Addr when
// unknown) in room, as hard as the room's recent join rate asks: distinct
// addresses asking for a challenge and solutions accepted, in this process
// (see rate and difficulty). One address asking again and again counts
// once per ten seconds, so asking cheaply from a few addresses does not
// raise the difficulty for everyone.
func (d *Door) Challenge(ctx context.Context, room string, client netip.Addr, now time.Time) (challenge.Challenge, error) {
	st, conf, err := d.state(ctx, room)
	if err != nil {
		return challenge.Challenge{}, err
	}
	if conf.cfg.Challenge != waitroom.ChallengePoW {
		return challenge.Challenge{}, waitroom.Errorf(waitroom.CodeNotFound, "Room %q asks no challenge.", room)
	}
	d.mu.Lock()
	st.ask(client, now)
	d.mu.Unlock()
	ch, err := d.issuer.Issue(room, d.difficulty(ctx, room, st, conf.cfg, now), now)
	if err != nil {
		return ch, fmt.Errorf("door: issue a challenge: %w", err)
	}
	return ch, nil
}

// Issue makes count invites for room signed with the door's secret: each
// with its own ID, for tier ("" for the room's lowest), uses joins each,
// valid until expires. key, when set, is the identity the invite joins
// with (count must then be 1).
func (d *Door) Issue(ctx context.Context, room string, count int, tier, key string, uses int, expires time.Time, now time.Time) ([]string, error) {
	_, conf, err := d.state(ctx, room)
	if err != nil {
		return nil, err
	}
	if conf.cfg.TierIndex(tier) < 0 {
		return nil, waitroom.NoTierError(room, tier)
	}
	out := make([]string, 0, count)
	for range count {
		tok, err := invite.SignHMAC(invite.Claims{Room: room, ID: invite.NewID(), Tier: tier, Key: key, Uses: uses, Expires: expires}, d.secret)
		if err != nil {
			return nil, waitroom.Errorf(waitroom.CodeInvalidRequest, "The invite cannot be made: %v", err)
		}
		out = append(out, tok)
	}
	return out, nil
}
