// Package httpapi serves waitroom's HTTP API v1: JSON endpoints for sessions
// and rooms, operations endpoints (health, readiness, Prometheus metrics), one
// error writer that maps error codes to statuses, and request metrics.
//
// Every request becomes at most one call on a waitroom.Store; the handler
// holds no room state of its own, so any number of server processes can share
// one store.
package httpapi

import (
	"cmp"
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/internal/admintoken"
	"github.com/waitroom/waitroom/internal/admit"
	"github.com/waitroom/waitroom/internal/clientaddr"
	"github.com/waitroom/waitroom/internal/door"
	"github.com/waitroom/waitroom/internal/push"
	"github.com/waitroom/waitroom/internal/roomstats"
)

// Config holds what the handler needs.
type Config struct {
	// Store holds the rooms. It is required.
	Store waitroom.Store
	// AdminToken guards the admin endpoints (Authorization: Bearer <token>).
	// When it is empty every admin endpoint answers 401.
	AdminToken string
	// Clock gives the now passed to the store; nil means waitroom.SystemClock.
	Clock waitroom.Clock
	// Logger receives internal errors and recovered panics; nil discards them.
	Logger *slog.Logger
	// Registry receives the request metrics and is served at /metrics to
	// the admin (token or console); nil means a new private registry.
	Registry *prometheus.Registry
	// Hub pushes session updates to event streams (SSE and WebSocket); the
	// server closes it on shutdown, which ends every stream. nil serves no
	// streams: they answer 503 unavailable (poll the session instead).
	Hub *push.Hub
	// Fill completes a session on its way out: a waiting one with its
	// estimated wait (the eta.Estimator's Fill), an active one with its pass
	// (the gate's). The hub given by the server should use the same Fill.
	Fill func(s *waitroom.Session, now time.Time)
	// MaxStreams, when positive, is the most event streams (SSE and
	// WebSocket) open at once; over it a new stream is refused with 503
	// unavailable, so that short requests (joins, leaves, polls) still find
	// connections when streams hold nearly all a process can have.
	MaxStreams int
	// MaxStreamsPerSession and MaxStreamsPerAddress, when positive, are
	// the most session streams one session, and one client address (IPv4
	// whole, IPv6 by /64, as TrustedProxies name it), holds open at once;
	// over either a new stream is refused with 429 rate_limited, so that
	// one client cannot take the streams everyone shares.
	MaxStreamsPerSession int
	MaxStreamsPerAddress int
	// TrustedProxies are the proxies whose X-Forwarded-For names the client
	// address MaxStreamsPerAddress counts by.
	TrustedProxies clientaddr.Trusted
	// StreamHeartbeat is how often an idle event stream gets a keep-alive
	// (an SSE comment or a WebSocket ping); default 15s.
	StreamHeartbeat time.Duration
	// StreamPresence, when set, is how often an open stream refreshes its
	// session's presence; by default a third of the room's waiting_timeout,
	// between 1s and 15s.
	StreamPresence time.Duration

	// Admit is the admission every join goes through: the door (invites
	// and proof-of-work challenges, whose challenges and invites this
	// handler also hands out), the per-address rate (which joins carrying
	// the admin token skip), the memory guard and the cap on live sessions
	// per room. Give the waiting page and the gate the same one, so every
	// way of joining draws from one allowance. It is required, with a door.
	Admit *admit.Admission

	// AdminGuard limits wrong admin tokens per client address, on every
	// route that checks the token; give the console the same one, so an
	// address has one allowance. nil makes one for this handler alone
	// (trusting no proxy, counting in Registry).
	AdminGuard *admintoken.Guard

	// Console, when set, lets a signed-in operator console call the admin
	// endpoints without the bearer token: Authorize checks its session
	// cookie and, for changes, its CSRF token. A request with an
	// Authorization header is always checked against AdminToken instead.
	Console Authorizer
	// Stats keeps the console's numbers (GET /v1/stats, /v1/rooms/{room}/stats
	// and the console's live stream); the server builds it with the ETA
	// estimator and closes it on shutdown. nil keeps none: those endpoints
	// answer that the numbers are not kept here.
	Stats *roomstats.Recorder
	// OnAudit, when set, is told every audit entry this handler records
	// (the console's live stream shows them).
	OnAudit func(waitroom.AuditEntry)

	// AllowPrivateWebhooks lets webhooks point at loopback and private
	// addresses (serve --webhook-allow-private); off, such URLs are
	// refused with 400 (SSRF).
	AllowPrivateWebhooks bool
	// OnWebhooks, when set, is told when deliveries may have become due
	// outside a store change (a replay), to wake the deliverer.
	OnWebhooks func()
}

// server is the http.Handler NewHandler returns.
type server struct {
	// admit makes new sessions; door is its door, which hands out
	// challenges and invites.
	admit    *admit.Admission
	door     *door.Door
	hub      *push.Hub
	fill     func(s *waitroom.Session, now time.Time)
	beat     time.Duration
	presence time.Duration
	store    waitroom.Store
	clock    waitroom.Clock
	log      *slog.Logger
	admin    adminToken
	guard    *admintoken.Guard
	console  Authorizer
	ledger   waitroom.Ledger
	onAudit  func(waitroom.AuditEntry)
	// allowPrivateHooks and onHooks: Config's AllowPrivateWebhooks and
	// OnWebhooks.
	allowPrivateHooks bool
	onHooks           func()
	stats             *roomstats.Recorder
	mux               *http.ServeMux
	metrics           http.Handler
	// durations is the request duration histogram; observers caches its
	// series (see instrument.go).
	durations *prometheus.HistogramVec
	// streams counts the event streams (SSE and WebSocket) open now;
	// maxStreams caps it (0: no cap).
	streams    atomic.Int64
	maxStreams int64
	obsMu      sync.Mutex
	observers  atomic.Pointer[map[obsKey]prometheus.Observer]

	// caps counts streams per session and per client address.
	caps *streamCaps
}

// NewHandler returns the handler of the whole API. It panics if cfg.Store or
// cfg.Admit is nil, since no request (or no join) could be served.
func NewHandler(cfg Config) http.Handler {
	if cfg.Store == nil {
		panic("httpapi: Config.Store is nil")
	}
	if cfg.Clock == nil {
		cfg.Clock = waitroom.SystemClock{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Registry == nil {
		cfg.Registry = prometheus.NewRegistry()
	}
	if cfg.AdminGuard == nil {
		cfg.AdminGuard = admintoken.New(admintoken.Config{Clock: cfg.Clock, Logger: cfg.Logger, Registry: cfg.Registry})
	}
	if cfg.Admit == nil || cfg.Admit.Door() == nil {
		panic("httpapi: Config.Admit is nil or has no door: every join goes through it, and the challenge and invite endpoints hand out its door's")
	}
	s := &server{
		admit:             cfg.Admit,
		door:              cfg.Admit.Door(),
		hub:               cfg.Hub,
		fill:              cfg.Fill,
		beat:              cmp.Or(cfg.StreamHeartbeat, streamHeartbeat),
		maxStreams:        int64(max(cfg.MaxStreams, 0)),
		presence:          cfg.StreamPresence,
		store:             cfg.Store,
		clock:             cfg.Clock,
		log:               cfg.Logger,
		admin:             newAdminToken(cfg.AdminToken),
		guard:             cfg.AdminGuard,
		console:           cfg.Console,
		ledger:            cfg.Store,
		onAudit:           cfg.OnAudit,
		allowPrivateHooks: cfg.AllowPrivateWebhooks,
		onHooks:           cfg.OnWebhooks,
		stats:             cfg.Stats,
		mux:               http.NewServeMux(),
		metrics: promhttp.HandlerFor(cfg.Registry, promhttp.HandlerOpts{
			// One failing collector must not hide every other metric.
			ErrorHandling: promhttp.ContinueOnError,
			ErrorLog:      slog.NewLogLogger(cfg.Logger.Handler(), slog.LevelWarn),
		}),
		durations: requestDurations(cfg.Registry, cfg.Logger),
	}
	openStreams(cfg.Registry, cfg.Logger, &s.streams)
	s.caps = newStreamCaps(cfg)
	s.routes()
	return s
}

// ServeHTTP dispatches through the mux, answering unknown routes and wrong
// methods with JSON errors, recovering from panics and recording metrics.
func (s *server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	rw := &responseWriter{ResponseWriter: w, req: r}
	defer func() {
		v := recover()
		if v == http.ErrAbortHandler {
			// net/http's own signal to abort the response quietly.
			s.observe(rw, r, start)
			panic(v)
		}
		if v != nil {
			s.log.Error("httpapi: panic serving request", "method", r.Method, "path", logPath(r.URL.Path),
				"panic", fmt.Sprint(v), "stack", string(debug.Stack()))
			if !rw.wroteHeader {
				rw.stock, rw.req = 0, nil
				s.writeError(rw, r, &waitroom.Error{Code: waitroom.CodeInternal, Message: "An internal error occurred."})
			}
		}
		s.observe(rw, r, start)
	}()
	// Fixed values set straight into the map: Header.Set would check and
	// canonicalize the keys on every request of the hottest paths.
	h := rw.Header()
	h["Cache-Control"] = hdrNoStore
	h["X-Content-Type-Options"] = hdrNoSniff

	// The body limit holds on every route, before any handler runs, so a
	// handler that never reads bodies cannot let one over it through.
	if !s.limitBody(rw, r) {
		return
	}

	// ServeMux sets r.Pattern and the path values on r itself, so observe
	// sees the route afterwards. A request no pattern matches gets the
	// stock mux's 404 or 405, which responseWriter holds back (see stock)
	// so that it is answered here as a JSON error instead.
	s.mux.ServeHTTP(rw, r)
	code := rw.stock
	rw.stock, rw.req = 0, nil // what follows is this server's own answer
	switch code {
	case 0:
	case http.StatusMethodNotAllowed:
		allow := h.Get("Allow")
		s.writeError(rw, r, waitroom.Errorf(waitroom.CodeMethodNotAllowed,
			"Method %q is not allowed on this path; allowed: %s.", r.Method, allow))
	default:
		s.writeError(rw, r, waitroom.Errorf(waitroom.CodeNotFound, "There is no such endpoint."))
	}
}

// Header values every answer shares. net/http never changes a value slice
// it is given, and Add would copy one whose capacity is full.
var (
	hdrNoStore = []string{"no-store"}
	hdrNoSniff = []string{"nosniff"}
	hdrJSON    = []string{contentTypeJSON}
)

// complete fills in what the store does not know (estimate, pass) before x
// is sent.
func (s *server) complete(x *waitroom.Session, now time.Time) {
	if s.fill != nil {
		s.fill(x, now)
	}
}

// now is the time passed to the store for this request.
func (s *server) now() time.Time { return s.clock.Now() }

// api adapts a handler that returns an error: the error is written by
// writeError, so every failure takes the same path.
func (s *server) api(f func(w http.ResponseWriter, r *http.Request) error) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := f(w, r); err != nil {
			s.writeError(w, r, err)
		}
	})
}
