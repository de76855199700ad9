package gatekeeper

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/gate"
)

// roomConfig returns a room's configuration from the room view.
func (g *Gate) roomConfig(ctx context.Context, room string) (*waitroom.RoomConfig, error) {
	snap, err := g.view.Room(ctx, room)
	if err != nil {
		return nil, err
	}
	return snap.Config, nil
}

// passTTL is how long a pass signed at now for a session admitted at
// admitted may live: until its session would idle out, its max_session
// ends, or the gate's cap, whichever is first.
func (g *Gate) passExpiry(cfg *waitroom.RoomConfig, admitted, now time.Time) time.Time {
	ttl := g.maxTTL
	if d := cfg.ActiveTimeout.D(); d > 0 && d < ttl {
		ttl = d
	}
	exp := now.Add(ttl)
	if d := cfg.MaxSession.D(); d > 0 && !admitted.IsZero() {
		if end := admitted.Add(d); end.Before(exp) {
			exp = end
		}
	}
	return exp
}

// Fill sets s.Pass to a pass for s when s is active and clears it
// otherwise. Passes are cached per session and re-signed only past half
// their life, so a burst of updates does not mean a burst of signatures.
// It has the signature of httpapi.Config.Fill.
func (g *Gate) Fill(s *waitroom.Session, now time.Time) {
	if s.Status != waitroom.StatusActive || s.ID == "" {
		s.Pass = ""
		return
	}
	tok, _, err := g.passFor(context.Background(), *s, now)
	if err != nil {
		if !errors.Is(err, gate.ErrRevoked) {
			g.log.Warn("gate: signing a pass failed", "room", s.Room, "err", err)
		}
		s.Pass = ""
		return
	}
	s.Pass = tok
}

// passFor returns a pass for the active session s, from the cache while it
// is less than half through its life.
func (g *Gate) passFor(ctx context.Context, s waitroom.Session, now time.Time) (string, issued, error) {
	g.mu.RLock()
	p, ok := g.passes[s.ID]
	_, ended := g.ended[s.ID]
	g.mu.RUnlock()
	if ended {
		return "", issued{}, gate.ErrRevoked
	}
	if ok && now.Before(p.iat.Add(p.exp.Sub(p.iat)/2)) && !now.Before(p.iat) {
		return p.token, p, nil
	}
	ctx, cancel := context.WithTimeout(ctx, storeTimeout)
	defer cancel()
	cfg, err := g.roomConfig(ctx, s.Room)
	if err != nil {
		return "", issued{}, err
	}
	exp := g.passExpiry(cfg, s.AdmittedAt, now)
	if !exp.After(now) {
		return "", issued{}, gate.ErrRevoked
	}
	// JWT times are whole seconds; round so the cached times match the token.
	iat := now.Truncate(time.Second)
	exp = exp.Truncate(time.Second)
	tok, err := gate.SignPass(g.keys, g.issuer, s, iat, exp)
	if err != nil {
		return "", issued{}, err
	}
	p = issued{token: tok, iat: iat, exp: exp}
	g.mu.Lock()
	if len(g.passes) < maxPasses {
		g.passes[s.ID] = p
	}
	g.mu.Unlock()
	return tok, p, nil
}

// verify checks a pass for room: from the cache when this token was seen
// before, else by its signature.
func (g *Gate) verify(room, token string, now time.Time) (gate.Claims, error) {
	if v, ok := g.verified.Load(token); ok {
		c := v.(*verifiedPass).c
		if c.Room != room {
			return gate.Claims{}, fmt.Errorf("%w: token has invalid audience", gate.ErrInvalidPass)
		}
		if !now.Before(c.Expires.Add(gate.Leeway)) {
			return gate.Claims{}, fmt.Errorf("%w: token is expired", gate.ErrInvalidPass)
		}
		return c, nil
	}
	c, err := gate.Verify(g.keys, g.issuer, room, token, now)
	if err != nil {
		return gate.Claims{}, err
	}
	if c.Session == "" {
		// Signed by a key whose private half the gate lacks: it cannot read
		// the session, so it cannot check, renew or record it.
		return gate.Claims{}, fmt.Errorf("%w: the gate cannot open the pass's session seal", gate.ErrInvalidPass)
	}
	if g.verifiedN.Load() < maxVerified {
		if _, loaded := g.verified.LoadOrStore(token, &verifiedPass{c: c}); !loaded {
			g.verifiedN.Add(1)
		}
	}
	return c, nil
}

// Check verifies token as a pass for room and that its session has not
// ended: the guard "is this session active" for apps that hold a Gate. It
// does not count as activity (Touch does).
func (g *Gate) Check(ctx context.Context, room, token string, now time.Time) (gate.Claims, error) {
	c, err := g.verify(room, token, now)
	if err != nil {
		return gate.Claims{}, err
	}
	if g.isEnded(c) {
		return gate.Claims{}, gate.ErrRevoked
	}
	// Passes are stamped in whole seconds: one stamped in the second of
	// the blind moment counts as issued before it.
	if now.UnixNano() < g.storeUntil.Load() || !c.IssuedAt.After(time.Unix(0, g.blindAt.Load())) {
		if !g.activeInStore(ctx, c, now) {
			return gate.Claims{}, gate.ErrRevoked
		}
	}
	return c, nil
}

// Validate is Check and Touch at the gate's clock: the guard "validate and
// refresh last active" for apps that hold a Gate and check passes
// themselves (the Middleware does this for every request).
func (g *Gate) Validate(ctx context.Context, room, token string) (gate.Claims, error) {
	now := g.clock.Now()
	c, err := g.Check(ctx, room, token, now)
	if err != nil {
		return gate.Claims{}, err
	}
	g.Touch(c, now)
	return c, nil
}

// activeInStore asks the store whether c's session is active, at most once
// a second per session; used while events may have been missed.
func (g *Gate) activeInStore(ctx context.Context, c gate.Claims, now time.Time) bool {
	g.mu.RLock()
	ch, ok := g.checked[c.Session]
	g.mu.RUnlock()
	if ok && now.Sub(ch.at) < storeCheckTTL && !now.Before(ch.at) {
		return ch.active
	}
	ctx, cancel := context.WithTimeout(ctx, storeTimeout)
	defer cancel()
	ss, err := g.store.Sessions(ctx, c.Room, []string{c.Session})
	if err != nil {
		// The store cannot answer: the signed pass is the best evidence.
		g.log.Warn("gate: checking a pass against the store failed", "room", c.Room, "err", err)
		return true
	}
	active := len(ss) == 1 && ss[0].ID == c.Session && ss[0].Status == waitroom.StatusActive
	g.mu.Lock()
	g.checked[c.Session] = checkedAt{at: now, active: active}
	g.mu.Unlock()
	if !active {
		g.markEnded(c.Session, now)
	}
	return active
}
