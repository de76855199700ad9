package gatekeeper

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/waitroom/waitroom/gate"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/internal/admit"
	"github.com/waitroom/waitroom/internal/clientaddr"
	"github.com/waitroom/waitroom/internal/roomview"
)

// Defaults of Config.
const (
	// DefaultMaxPassTTL caps a pass's life when the room's active_timeout
	// is longer or zero. Passes renew with activity, so a short cap costs
	// little and bounds how long revocation state must be kept.
	DefaultMaxPassTTL = 15 * time.Minute
	// DefaultActivityInterval is the most often one session's activity is
	// written to the store.
	DefaultActivityInterval = 5 * time.Second
	// DefaultResyncWindow is how long passes are checked against the store
	// after a start or a resynchronisation hint, while events may have been
	// missed.
	DefaultResyncWindow = 10 * time.Second
)

// Bounds on the gate's memory.
const (
	maxVerified   = 200_000 // verified-pass cache entries
	maxEnded      = 1_000_000
	maxBeats      = 500_000
	maxPasses     = 500_000
	beatQueue     = 4096
	janitorPeriod = 15 * time.Second
	storeCheckTTL = time.Second
	storeTimeout  = 5 * time.Second
)

// Config holds what a Gate needs.
type Config struct {
	// Store holds the rooms. It is required.
	Store waitroom.Store
	// Rooms is the room view over Store that rooms' configurations are
	// read from (pass lifetimes, activity pacing). It is required.
	Rooms *roomview.View
	// Keys sign and verify passes. It is required; see LoadKeys.
	Keys *gate.KeySet
	// Issuer is the passes' iss claim; "" means DefaultIssuer.
	Issuer string
	// Clock gives the time; nil means waitroom.SystemClock.
	Clock waitroom.Clock
	// Logger receives store failures; nil discards them.
	Logger *slog.Logger
	// PublicURL is the base URL (scheme://host[:port], no path) where
	// browsers reach the waiting page /r/{room}. "" means the host of the
	// request being gated, which is right when the proxy in front sends
	// /r/, /waitroom.js, /waitroom/ and /v1/ to waitroom on the same host.
	PublicURL string
	// TrustedProxies lists the peer addresses whose X-Forwarded-Proto,
	// -Host, -Uri and -Method headers are believed. Those headers from any
	// other peer are ignored.
	TrustedProxies clientaddr.Trusted
	// AllowedOrigins lists further origins (besides PublicURL's) to which
	// the gate may send a visitor back; a gated request on any other host
	// goes to the waiting page without a return_to.
	AllowedOrigins []string
	// Secure marks cookies Secure (and names the pass cookie __Host-…)
	// even on requests that do not look like HTTPS.
	Secure bool
	// MaxPassTTL caps a pass's life; 0 means DefaultMaxPassTTL.
	MaxPassTTL time.Duration
	// ActivityInterval is the most often a session's activity through the
	// gate is written to the store; 0 means DefaultActivityInterval. It is
	// further capped at a quarter of the room's active_timeout.
	ActivityInterval time.Duration
	// ResyncWindow is how long passes are checked against the store after
	// the gate starts or the store hints that events were missed; 0 means
	// DefaultResyncWindow.
	ResyncWindow time.Duration
	// ETA completes a waiting session with its estimated wait for the JSON
	// answers of the gate; nil leaves estimates out.
	ETA func(s *waitroom.Session, now time.Time)
	// Admit makes the sessions the gate joins for visitors without a pass
	// (per-address rate, caps); share the API's and the page's, so every
	// way of joining uses one allowance. The gate joins nobody past a
	// room's door (an invite or a proof of work): such visitors are sent to
	// the waiting page, whose door asks for it. It is required.
	Admit *admit.Admission
	// FailOpen, when set and true, lets requests through the proxy and the
	// middleware without a pass while the store is unreachable (see
	// package outage); otherwise they get 503 (fail closed).
	FailOpen func() bool
}

// Gate issues and checks passes for the rooms of one store. One Gate serves
// any number of rooms and handlers; it is safe for concurrent use. Close it
// to stop its background work.
type Gate struct {
	store   waitroom.Store
	view    *roomview.View
	keys    *gate.KeySet
	issuer  string
	clock   waitroom.Clock
	log     *slog.Logger
	public  *url.URL // nil: the gated request's own origin
	trusted clientaddr.Trusted
	origins map[string]bool
	secure  bool
	maxTTL  time.Duration
	beatMax time.Duration
	resync  time.Duration
	eta     func(s *waitroom.Session, now time.Time)
	admit   *admit.Admission
	// failOpen says whether to let requests through while the store is
	// unreachable.
	failOpen func() bool

	// verified caches checked passes by token, so a request with a known
	// pass costs a map lookup rather than a signature check.
	verified   sync.Map // string → *verifiedPass
	verifiedN  atomic.Int64
	storeUntil atomic.Int64 // unix nanos: check passes against the store until then
	// blindAt is the last time this gate may have missed an ending (its
	// start, a resynchronisation hint, a full revocation set), unix nanos.
	// A pass issued before it may belong to a session that ended unseen,
	// so it is checked against the store for as long as it lives; passes
	// issued after it are covered by events.
	blindAt atomic.Int64

	mu        sync.RWMutex
	ended     map[string]time.Time // session id → when it can be forgotten
	requeued  map[string]requeue   // session id → when an operator sent it back to the line
	roomsDead map[string]time.Time // room → deleted at (passes issued before refused)
	passes    map[string]issued    // session id → last pass signed
	beats     map[string]time.Time // session id → last activity written
	checked   map[string]checkedAt // session id → last store check

	beatCh chan beat
	cancel func()
	stop   chan struct{}
	wg     sync.WaitGroup
	closed sync.Once
}

type verifiedPass struct {
	c gate.Claims
}

type issued struct {
	token    string
	iat, exp time.Time
}

type checkedAt struct {
	at     time.Time
	active bool
}

type beat struct {
	room, id string
}

// New returns a Gate for cfg and subscribes it to the store's events.
func New(cfg Config) (*Gate, error) {
	if cfg.Store == nil {
		return nil, errors.New("gate: Config.Store is nil")
	}
	if cfg.Keys == nil {
		return nil, errors.New("gate: Config.Keys is nil")
	}
	if cfg.Rooms == nil {
		return nil, errors.New("gate: Config.Rooms is nil")
	}
	if cfg.Admit == nil {
		return nil, errors.New("gate: Config.Admit is nil")
	}
	g := &Gate{
		store:     cfg.Store,
		view:      cfg.Rooms,
		keys:      cfg.Keys,
		issuer:    cfg.Issuer,
		clock:     cfg.Clock,
		log:       cfg.Logger,
		trusted:   cfg.TrustedProxies,
		origins:   map[string]bool{},
		secure:    cfg.Secure,
		maxTTL:    cfg.MaxPassTTL,
		beatMax:   cfg.ActivityInterval,
		resync:    cfg.ResyncWindow,
		eta:       cfg.ETA,
		admit:     cfg.Admit,
		failOpen:  cfg.FailOpen,
		ended:     map[string]time.Time{},
		requeued:  map[string]requeue{},
		roomsDead: map[string]time.Time{},
		passes:    map[string]issued{},
		beats:     map[string]time.Time{},
		checked:   map[string]checkedAt{},
		beatCh:    make(chan beat, beatQueue),
		stop:      make(chan struct{}),
	}
	if g.issuer == "" {
		g.issuer = gate.DefaultIssuer
	}
	if g.clock == nil {
		g.clock = waitroom.SystemClock{}
	}
	if g.log == nil {
		g.log = slog.New(slog.DiscardHandler)
	}
	if g.maxTTL <= 0 {
		g.maxTTL = DefaultMaxPassTTL
	}
	if g.beatMax <= 0 {
		g.beatMax = DefaultActivityInterval
	}
	if g.resync <= 0 {
		g.resync = DefaultResyncWindow
	}
	if cfg.PublicURL != "" {
		o, err := waitroom.ParseOrigin(strings.TrimSuffix(cfg.PublicURL, "/"))
		if err != nil {
			return nil, fmt.Errorf("gate: PublicURL: %w", err)
		}
		g.public, _ = url.Parse(o)
		g.origins[o] = true
		// Visitors reach the site over HTTPS: cookies must say so even
		// when the proxy in front does not.
		g.secure = g.secure || g.public.Scheme == "https"
	}
	for _, o := range cfg.AllowedOrigins {
		v, err := waitroom.ParseOrigin(o)
		if err != nil {
			return nil, fmt.Errorf("gate: AllowedOrigins: %w", err)
		}
		g.origins[v] = true
	}
	// Until events flow we cannot know what ended before this start (in
	// another process, or before a restart): check against the store.
	g.storeUntil.Store(g.clock.Now().Add(g.resync).UnixNano())
	g.blindAt.Store(g.clock.Now().UnixNano())
	g.cancel = g.store.Subscribe(g.onEvent)
	g.wg.Add(2)
	go g.beatLoop()
	go g.janitor()
	return g, nil
}

// Close stops the gate's background work and its subscription. Activity
// not yet written is dropped.
func (g *Gate) Close() error {
	g.closed.Do(func() {
		g.cancel()
		close(g.stop)
		g.wg.Wait()
	})
	return nil
}

// Keys returns the gate's key set (whose ServeHTTP is the JWKS).
func (g *Gate) Keys() *gate.KeySet { return g.keys }

// onEvent keeps the revocation set: every session that ended is refused
// from now on, whatever pass it holds. It runs on the store's goroutine,
// so it only takes a lock. (Rooms' configurations are the room view's,
// which follows the same events.)
func (g *Gate) onEvent(ev waitroom.Event) {
	now := g.clock.Now()
	if roomview.IsResync(ev) {
		// Events may have been missed: trust the store, not memory, for a
		// while, and for as long as passes issued before now live.
		g.storeUntil.Store(now.Add(g.resync).UnixNano())
		g.blindAt.Store(now.UnixNano())
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	switch ev.Kind {
	case waitroom.EventConfig:
		if at, ok := g.roomsDead[ev.Room]; ok {
			// Recreated: passes are signed in whole seconds, so from now on
			// refuse only those of seconds wholly before the deletion (the
			// deletion's own ended sessions are in g.ended), else new passes
			// of the same second would be refused too.
			g.roomsDead[ev.Room] = at.Truncate(time.Second).Add(-time.Nanosecond)
		}
	case waitroom.EventDeleted:
		g.roomsDead[ev.Room] = now
	}
	forget := now.Add(g.maxTTL + 2*gate.Leeway)
	for _, c := range ev.Changes {
		if c.From == waitroom.StatusActive && c.Session.Status == waitroom.StatusWaiting {
			// Sent back to the line (queue-all): passes of its admissions
			// until now are refused; a later admission's are not.
			if len(g.requeued) < maxEnded {
				g.requeued[c.Session.ID] = requeue{at: ev.At, forget: forget}
			}
			delete(g.passes, c.Session.ID)
			continue
		}
		// Only an active session can hold a pass.
		if !c.Session.Status.Final() || c.From != waitroom.StatusActive {
			continue
		}
		if len(g.ended) >= maxEnded {
			// Too many to remember: every pass issued until now is checked
			// against the store instead.
			g.storeUntil.Store(now.Add(g.resync).UnixNano())
			g.blindAt.Store(now.UnixNano())
			continue
		}
		g.ended[c.Session.ID] = forget
		delete(g.passes, c.Session.ID)
		delete(g.beats, c.Session.ID)
	}
}

// requeue is a session an operator sent back to the line: passes of
// admissions at or before at are refused until forget, when every pass
// signed before at has expired.
type requeue struct {
	at, forget time.Time
}

// markEnded records that a session ended (learned from the store rather
// than an event).
func (g *Gate) markEnded(id string, now time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.ended) < maxEnded {
		g.ended[id] = now.Add(g.maxTTL + 2*gate.Leeway)
	}
	delete(g.passes, id)
	delete(g.beats, id)
}

// isEnded reports whether a pass for c must be refused because its session
// ended or its room was deleted after the pass was issued.
func (g *Gate) isEnded(c gate.Claims) bool {
	g.mu.RLock()
	defer g.mu.RUnlock()
	if _, ok := g.ended[c.Session]; ok {
		return true
	}
	if q, ok := g.requeued[c.Session]; ok && !c.AdmittedAt.After(q.at) {
		return true
	}
	if at, ok := g.roomsDead[c.Room]; ok && !c.IssuedAt.After(at) {
		return true
	}
	return false
}

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

// Touch records activity of c's session, written to the store at most once
// per activity interval and off the caller's path: the guard "refresh last
// active" for apps that hold a Gate.
func (g *Gate) Touch(c gate.Claims, now time.Time) {
	interval := g.beatMax
	// The room's configuration as last known: pacing never waits on the store.
	if snap := g.view.Known(c.Room); snap != nil {
		if d := snap.Config.ActiveTimeout.D() / 4; d > 0 && d < interval {
			interval = d
		}
	}
	g.mu.RLock()
	last, ok := g.beats[c.Session]
	g.mu.RUnlock()
	if ok && now.Sub(last) < interval && !now.Before(last) {
		return
	}
	g.mu.Lock()
	if last, ok := g.beats[c.Session]; ok && now.Sub(last) < interval && !now.Before(last) {
		g.mu.Unlock()
		return
	}
	if len(g.beats) >= maxBeats {
		g.mu.Unlock()
		return
	}
	g.beats[c.Session] = now
	g.mu.Unlock()
	select {
	case g.beatCh <- beat{room: c.Room, id: c.Session}:
	default:
		// The store is behind; the next interval tries again.
	}
}

// beatLoop writes queued activity to the store.
func (g *Gate) beatLoop() {
	defer g.wg.Done()
	for {
		select {
		case <-g.stop:
			return
		case b := <-g.beatCh:
			ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
			now := g.clock.Now()
			s, err := g.store.Heartbeat(ctx, b.room, b.id, now)
			cancel()
			switch {
			case err == nil && s.Status != waitroom.StatusActive:
				g.markEnded(b.id, now)
			case err != nil && waitroom.ErrorCode(err) == waitroom.CodeSessionNotFound:
				g.markEnded(b.id, now)
			case err != nil:
				g.log.Warn("gate: recording activity failed", "room", b.room, "err", err)
			}
		}
	}
}

// janitor forgets what can no longer matter, keeping memory bounded.
func (g *Gate) janitor() {
	defer g.wg.Done()
	t := time.NewTicker(janitorPeriod)
	defer t.Stop()
	for {
		select {
		case <-g.stop:
			return
		case <-t.C:
			g.prune(g.clock.Now())
		}
	}
}

// prune drops expired cache entries and revocations no pass can outlive.
func (g *Gate) prune(now time.Time) {
	g.verified.Range(func(k, v any) bool {
		if !now.Before(v.(*verifiedPass).c.Expires.Add(gate.Leeway)) {
			g.verified.Delete(k)
			g.verifiedN.Add(-1)
		}
		return true
	})
	g.mu.Lock()
	defer g.mu.Unlock()
	for id, until := range g.ended {
		if now.After(until) {
			delete(g.ended, id)
		}
	}
	for id, q := range g.requeued {
		if now.After(q.forget) {
			delete(g.requeued, id)
		}
	}
	for room, at := range g.roomsDead {
		if now.Sub(at) > g.maxTTL+2*gate.Leeway {
			delete(g.roomsDead, room)
		}
	}
	for id, p := range g.passes {
		if !now.Before(p.exp) {
			delete(g.passes, id)
		}
	}
	for id, at := range g.beats {
		if now.Sub(at) > 4*g.beatMax {
			delete(g.beats, id)
		}
	}
	for id, c := range g.checked {
		if now.Sub(c.at) > storeCheckTTL {
			delete(g.checked, id)
		}
	}
}
