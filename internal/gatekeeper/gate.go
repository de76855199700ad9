package gatekeeper

import (
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/gate"
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
