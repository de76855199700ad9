// Package admintoken limits guessing of the admin token. Every way in that
// checks the token (the bearer token of the /v1 admin routes, of /metrics
// when it is behind the token, and the console's sign-in) reports each
// token it checks to one Guard, which allows a client address (IPv4 by
// address, IPv6 by /64, through the trusted proxies) DefaultMaxWrong (five) wrong tokens
// in any Window, then refuses everything that address sends with a token,
// the right one included, with 429 rate_limited and Retry-After until the
// oldest wrong token leaves the window. A request without a token (a
// signed-in console's cookie, a public route) is not a guess and is not
// counted or refused.
//
// Why the right token is refused too: were it let through, a limited
// guesser would still learn which guess is right (it alone would not get
// 429), so the limit would stop nothing. The right token from any other
// address is not affected, nor is a console already signed in.
//
// Each refusal is logged (the address, the way in and the route pattern;
// never the token, nor anything derived from it, nor a path that may hold
// a session id) at most logBurst times a
// minute in all, with a summary line for the rest, and counted in
// waitroom_admin_auth_failures_total{via, reason}.
package admintoken

import (
	"cmp"
	"errors"
	"log/slog"
	"net/http"
	"net/netip"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/internal/clientaddr"
	"github.com/waitroom/waitroom/internal/limit"
)

// The limit: at most DefaultMaxWrong wrong tokens in any Window from one
// address. Five a minute lets a person mistype; it lets a guesser try
// 7,200 tokens a day from an address, against a generated token of 256
// bits or one of at least 16 characters set by hand.
const (
	DefaultMaxWrong = 5
	Window          = time.Minute
)

// The ways in, for Check's via: the label of the log lines and metric.
const (
	ViaAPI     = "api"     // a bearer token on the HTTP API (/v1, /metrics)
	ViaConsole = "console" // the console's sign-in
)

const (
	// maxTracked bounds the limiter's memory (about 150 bytes an address,
	// so at most about 10 MB).
	maxTracked = 1 << 16
	// logBurst is how many refusals are logged one by one in a logWindow,
	// over all addresses, so that a flood of guesses from many addresses
	// cannot flood the log; the rest are summed up in one line.
	logBurst  = 20
	logWindow = time.Minute
	// maxSummaryAddrs bounds the distinct addresses a summary counts.
	maxSummaryAddrs = 1024
)

// Config configures a Guard.
type Config struct {
	// Proxies are the trusted proxies whose X-Forwarded-For names the
	// client; empty means the client is always the connection's peer.
	Proxies clientaddr.Trusted
	// Clock tells the time; nil means waitroom.SystemClock.
	Clock waitroom.Clock
	// Logger receives the refusals; nil discards them.
	Logger *slog.Logger
	// Registry receives waitroom_admin_auth_failures_total; nil counts in
	// a counter nobody serves.
	Registry prometheus.Registerer
	// MaxWrong is the wrong tokens an address may send in a Window; 0
	// means DefaultMaxWrong. (Servers use the default; tests that walk
	// every route with a wrong token raise it.)
	MaxWrong int
}

// Guard limits wrong admin tokens per client address. It is safe for
// concurrent use; one per server, shared by every way in, so that each
// address has one allowance.
type Guard struct {
	proxies  clientaddr.Trusted
	clock    waitroom.Clock
	log      *slog.Logger
	tries    *tries
	failures *prometheus.CounterVec

	logMu      sync.Mutex
	logStart   time.Time             // start of the current log window
	logged     int                   // refusals logged one by one in it
	suppressed int64                 // refusals not logged in it
	addrs      map[netip.Prefix]bool // their addresses, at most maxSummaryAddrs
	flushing   bool                  // a summary is scheduled
}

// New returns a Guard configured by cfg.
func New(cfg Config) *Guard {
	if cfg.Clock == nil {
		cfg.Clock = waitroom.SystemClock{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	g := &Guard{
		proxies: cfg.Proxies,
		clock:   cfg.Clock,
		log:     cfg.Logger,
		tries:   newTries(cmp.Or(max(cfg.MaxWrong, 0), DefaultMaxWrong), Window, maxTracked),
		failures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "waitroom_admin_auth_failures_total",
			Help: "Admin tokens refused: reason wrong_token (a wrong token, counted against its address) or rate_limited (any token from an address over its allowance), by the way in (api or console).",
		}, []string{"via", "reason"}),
	}
	for _, via := range []string{ViaAPI, ViaConsole} {
		for _, reason := range []string{reasonWrong, reasonLimited} {
			g.failures.WithLabelValues(via, reason) // every series from zero
		}
	}
	if cfg.Registry != nil {
		if err := cfg.Registry.Register(g.failures); err != nil {
			// A second Guard on one registry (a test's handler built
			// twice) counts in the first one's series.
			var are prometheus.AlreadyRegisteredError
			if errors.As(err, &are) {
				if cv, ok := are.ExistingCollector.(*prometheus.CounterVec); ok {
					g.failures = cv
				}
			} else {
				g.log.Warn("admintoken: registering the failures counter", "err", err)
			}
		}
	}
	return g
}

const (
	reasonWrong   = "wrong_token"
	reasonLimited = "rate_limited"
)

// Check is told of a token r presented and whether it was the admin
// token (right), after the caller compared it; via is ViaAPI or
// ViaConsole. It returns a *limit.RetryError (rate_limited, 429, with the
// wait) when r's address has had its MaxWrong wrong tokens in the last Window,
// whatever the token; otherwise nil, having counted a wrong token against
// the address, so the caller answers a wrong one its own 401. Call it only
// for requests that present a token: one without a token is no guess.
func (g *Guard) Check(r *http.Request, right bool, via string) error {
	addr := g.proxies.Client(r)
	now := g.clock.Now()
	ok, wait := g.tries.try(addr, now, right)
	switch {
	case !ok:
		g.refused(r, addr, via, reasonLimited, now, wait)
		return &limit.RetryError{After: wait, Err: waitroom.Errorf(waitroom.CodeRateLimited,
			"Too many wrong tokens from your address; try again in %s.", seconds(wait))}
	case !right:
		g.refused(r, addr, via, reasonWrong, now, 0)
	}
	return nil
}

// refused counts and logs one refusal, one by one while the log window's
// budget lasts, then in a summary line at the window's end.
func (g *Guard) refused(r *http.Request, addr netip.Addr, via, reason string, now time.Time, wait time.Duration) {
	g.failures.WithLabelValues(via, reason).Inc()
	g.logMu.Lock()
	defer g.logMu.Unlock()
	if now.Sub(g.logStart) >= logWindow || now.Before(g.logStart) {
		g.summaryLocked()
		g.logStart, g.logged = now, 0
	}
	if g.logged < logBurst {
		g.logged++
		attrs := []any{"via", via, "reason", reason, "addr", addr.String(), "route", route(r)}
		if wait > 0 {
			attrs = append(attrs, "retry_after", wait.Round(time.Second).String())
		}
		g.log.Warn("admin token refused", attrs...)
		return
	}
	g.suppressed++
	if g.addrs == nil {
		g.addrs = make(map[netip.Prefix]bool)
	}
	if len(g.addrs) < maxSummaryAddrs {
		g.addrs[keyOf(addr)] = true
	}
	if !g.flushing {
		// The summary is written at the window's end even if no refusal
		// comes after it.
		g.flushing = true
		time.AfterFunc(logWindow-now.Sub(g.logStart), g.flush)
	}
}

// flush writes the summary of the refusals not logged, if any.
func (g *Guard) flush() {
	g.logMu.Lock()
	defer g.logMu.Unlock()
	g.flushing = false
	g.summaryLocked()
	g.logStart, g.logged = g.clock.Now(), 0
}

// summaryLocked writes one line for the refusals not logged in the window
// and forgets them. logMu must be held.
func (g *Guard) summaryLocked() {
	if g.suppressed == 0 {
		return
	}
	addrs := len(g.addrs)
	g.log.Warn("admin token refusals not logged one by one", "count", g.suppressed, "addresses", addrs,
		"addresses_capped", addrs >= maxSummaryAddrs, "since", g.logStart.UTC().Format(time.RFC3339))
	g.suppressed, g.addrs = 0, nil
}

// seconds says a wait in whole seconds, rounded up, for a person.
func seconds(d time.Duration) string {
	n := max(1, int64((d+time.Second-1)/time.Second))
	if n == 1 {
		return "1 second"
	}
	return strconv.FormatInt(n, 10) + " seconds"
}

// route names r's route for the log: the pattern the mux matched (such as
// "DELETE /v1/rooms/{room}/sessions/{id}"), never the path itself, which
// may hold a session id; without a pattern (the console's fixed sign-in
// path), the method and path.
func route(r *http.Request) string {
	if r.Pattern != "" {
		return clip(r.Pattern, 128)
	}
	return clip(r.Method, 16) + " " + clip(r.URL.Path, 64)
}

// clip shortens s to at most n bytes, for the log.
func clip(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}
