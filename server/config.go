package server

import (
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/gate"
	"github.com/waitroom/waitroom/internal/clientaddr"
	"github.com/waitroom/waitroom/redisstore"
)

// Config is a whole server's configuration, typed and already parsed:
// `waitroom serve` turns its flags and environment into one, once, and an
// embedder fills one in Go, best starting from Defaults(). A zero duration,
// PushFront, Room or PassAlg takes its default; a zero limit
// (JoinsPerMinute, MaxSessionsPerRoom, MemoryLimit, MaxConnections) is no
// limit, as 0 is on the command line.
type Config struct {
	// Store is an open store to serve. When it is nil, New opens the one
	// StoreURL names and closes it in Close; a Store given here is the
	// caller's to close.
	Store waitroom.Store
	// StoreURL names the backend when Store is nil: "" for the embedded
	// SQLite store in DataDir, "memory" for an in-memory store that loses
	// everything on exit, or a Redis URL (redis://, rediss://,
	// redis+cluster://, redis+sentinel://, and their rediss+ forms).
	StoreURL string
	// RedisAckReplicas is, with a Redis store, how many replicas must have
	// each write before it is answered: a count, redisstore.AckAuto (the
	// default: every replica online, at least one once any was seen) or 0
	// (do not wait). RedisAckTimeout bounds the wait; a write not confirmed
	// in it answers unavailable. See redisstore.WithAckReplicas.
	RedisAckReplicas int
	RedisAckTimeout  time.Duration
	// DataDir holds the SQLite database, the generated admin token and
	// (unless PassKeysDir says otherwise) the pass and door keys. Required.
	DataDir string

	// AdminToken guards the admin API and the console. Empty: read from
	// DataDir/admin-token, which is generated (mode 0600) on first start.
	// Set by hand (here or in the file), it must be at least 16 characters.
	AdminToken string

	// Logger receives the server's log; nil discards it.
	Logger *slog.Logger
	// Stdout receives the few lines meant for the person who started the
	// server (where the admin token is); nil discards them.
	Stdout io.Writer
	// Clock gives the time; nil means waitroom.SystemClock.
	Clock waitroom.Clock

	// Templates is a folder of waiting-page templates ("" for the built-in
	// page).
	Templates string
	// Demo creates room web.DemoRoom (unless it exists, which is left as
	// it is) and serves the demo app.
	Demo bool
	// RoomsFile is a rooms file (YAML or JSON; see ApplyRooms) applied
	// after the store opens, and again by each ApplyRooms; "" for none.
	RoomsFile string

	// FailOpen lets visitors through to a room's target once the store has
	// been unreachable for FailOpenAfter; off, everyone stays in line.
	FailOpen      bool
	FailOpenAfter time.Duration

	// MaxConnections caps the connections open at once (0: no cap). Event
	// streams may take all but a fiftieth of them (at least 32 are kept for
	// short requests).
	MaxConnections int
	// MaxConnectionsPerAddress caps the connections one client address
	// holds at once: the TCP peer, IPv4 whole, IPv6 by /64; a trusted proxy
	// (TrustedProxies), which carries everyone's connections, is not capped
	// per address. AutoCap: a tenth of MaxConnections, at least 16 (no cap
	// when MaxConnections is 0). 0: no cap.
	MaxConnectionsPerAddress int
	// MaxStreamsPerAddress caps the live streams (SSE and WebSocket) of one
	// client address, as TrustedProxies name it. AutoCap: three quarters of
	// the per-address connection cap (of its auto value when that cap is
	// off), so an address at its stream cap still has connections for
	// joins and polls. 0: no cap.
	MaxStreamsPerAddress int
	// MaxStreamsPerSession caps the live streams of one session (its tabs
	// and devices); 0: no cap.
	MaxStreamsPerSession int

	// PushRefresh is the longest a live page away from the front goes
	// without a fresh position; PushFront how many people at the front are
	// told every change at once.
	PushRefresh time.Duration
	PushFront   int64

	// JoinsPerMinute limits joins per client address (bursts of as many;
	// IPv6 per /64); 0 turns the limit off.
	JoinsPerMinute int
	// TrustedProxies are the proxies whose X-Forwarded-For names the
	// client. IPv4-mapped forms are read as IPv4; zones are refused.
	TrustedProxies []netip.Prefix
	// MaxSessionsPerRoom caps live sessions per room; 0 is no cap.
	MaxSessionsPerRoom int
	// MemoryLimit is the bytes in use over which joins answer 503
	// room_full; 0 means no guard.
	MemoryLimit uint64

	// Upstream, when set, is the app to protect (reverse-proxy mode):
	// requests with a valid pass for Room go through to it, everyone else
	// waits; Bypass lists paths that reach it without a pass.
	Upstream *url.URL
	Room     string
	Bypass   []string
	// PublicURL is where browsers reach waitroom's pages (scheme://host),
	// for forward-auth redirects and webhook claim links; nil: the gated
	// request's host.
	PublicURL *url.URL
	// ConsoleHost, when set, is the one host (host, or host:port as the
	// browser's Host header says) that serves the operator console and on
	// which the admin API takes its sign-in cookie: the console then keeps
	// off the protected app's origin. "" serves it on every host.
	ConsoleHost string
	// PassAlg is gate.AlgEdDSA or gate.AlgHS256; PassKeysDir the folder of
	// pass keys ("" for DataDir/keys).
	PassAlg     string
	PassKeysDir string

	// WebhookAllowPrivate lets webhooks reach loopback and private
	// addresses. WebhookLease is how long a process holds a delivery;
	// WebhookBackoffMax the longest wait between tries.
	WebhookAllowPrivate bool
	WebhookLease        time.Duration
	WebhookBackoffMax   time.Duration

	// MetricsAddr, when set, is a host:port where New listens for GET
	// /metrics alone, without the admin token, for a scraper that has none:
	// bind it to loopback or a private network. The main listener's
	// /metrics always needs the token.
	MetricsAddr string
}

// Defaults returns the configuration `waitroom serve` starts from: every
// limit at its default, no store or data folder chosen yet.
func Defaults() Config { return defaults }

var defaults = Config{
	RedisAckReplicas:         redisstore.AckAuto,
	RedisAckTimeout:          redisstore.DefaultAckTimeout,
	FailOpenAfter:            10 * time.Second,
	PushRefresh:              5 * time.Second,
	PushFront:                100,
	JoinsPerMinute:           120,
	MaxSessionsPerRoom:       2_000_000,
	MaxConnectionsPerAddress: AutoCap,
	MaxStreamsPerAddress:     AutoCap,
	MaxStreamsPerSession:     DefaultMaxStreamsPerSession,
	Room:                     waitroom.DefaultRoom,
	PassAlg:                  gate.AlgEdDSA,
	WebhookLease:             30 * time.Second,
	WebhookBackoffMax:        time.Hour,
}

// withDefaults returns c with the zero fields that have a default set.
func (c Config) withDefaults() Config {
	d := defaults
	def := func(v *time.Duration, dv time.Duration) {
		if *v == 0 {
			*v = dv
		}
	}
	def(&c.FailOpenAfter, d.FailOpenAfter)
	def(&c.RedisAckTimeout, d.RedisAckTimeout)
	def(&c.PushRefresh, d.PushRefresh)
	def(&c.WebhookLease, d.WebhookLease)
	def(&c.WebhookBackoffMax, d.WebhookBackoffMax)
	if c.PushFront == 0 {
		c.PushFront = d.PushFront
	}
	if c.Room == "" {
		c.Room = d.Room
	}
	if c.PassAlg == "" {
		c.PassAlg = d.PassAlg
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Stdout == nil {
		c.Stdout = io.Discard
	}
	if c.Clock == nil {
		c.Clock = waitroom.SystemClock{}
	}
	return c
}

// Check reports the first field of c (after defaults) that no server can
// run with, naming it as the command line does.
func (c Config) Check() error {
	c = c.withDefaults()
	switch {
	case c.DataDir == "":
		return fmt.Errorf("--data must not be empty")
	case c.AdminToken != "" && utf8.RuneCountInString(c.AdminToken) < minAdminTokenLen:
		return fmt.Errorf("--admin-token must be at least %d characters, not %d (leave it unset to have one generated)",
			minAdminTokenLen, utf8.RuneCountInString(c.AdminToken))
	case c.Store == nil && !knownStore(c.StoreURL):
		return fmt.Errorf("--store must be empty (embedded SQLite), \"memory\" or a Redis URL (redis://, rediss://, redis+cluster://, redis+sentinel://), not %q", RedactURL(c.StoreURL))
	case c.RedisAckReplicas < redisstore.AckAuto:
		return fmt.Errorf("--redis-ack-replicas must be auto, 0 or a number of replicas, not %d", c.RedisAckReplicas)
	case c.RedisAckTimeout < time.Millisecond || c.RedisAckTimeout > time.Minute:
		return fmt.Errorf("--redis-ack-timeout must be a duration from 1ms to 1m such as 1s, not %s", c.RedisAckTimeout)
	case c.FailOpenAfter <= 0:
		return fmt.Errorf("--fail-open-after must be a positive duration such as 10s, not %s", c.FailOpenAfter)
	case c.MaxConnections < 0 || c.MaxConnections > 100_000_000:
		return fmt.Errorf("--max-connections must be auto, 0 or a whole number of connections, not %d", c.MaxConnections)
	case c.MaxConnectionsPerAddress < AutoCap || c.MaxConnectionsPerAddress > 100_000_000:
		return fmt.Errorf("--max-connections-per-address must be auto, 0 or a whole number of connections, not %d", c.MaxConnectionsPerAddress)
	case c.MaxStreamsPerAddress < AutoCap || c.MaxStreamsPerAddress > 100_000_000:
		return fmt.Errorf("--max-streams-per-address must be auto, 0 or a whole number of streams, not %d", c.MaxStreamsPerAddress)
	case c.MaxStreamsPerSession < 0 || c.MaxStreamsPerSession > 1_000_000:
		return fmt.Errorf("--max-streams-per-session must be 0 or a whole number of streams, not %d", c.MaxStreamsPerSession)
	case c.PushRefresh < 100*time.Millisecond || c.PushRefresh > time.Hour:
		return fmt.Errorf("--push-refresh must be a duration from 100ms to 1h such as 5s, not %s", c.PushRefresh)
	case c.PushFront < 1 || c.PushFront > 1_000_000:
		return fmt.Errorf("--push-front must be a whole number from 1 to 1000000, not %d", c.PushFront)
	case c.JoinsPerMinute < 0:
		return fmt.Errorf("--join-limit must be a whole number of joins a minute, 0 for none, not %d", c.JoinsPerMinute)
	case c.MaxSessionsPerRoom < 0:
		return fmt.Errorf("--max-sessions-per-room must be a whole number, 0 for no cap, not %d", c.MaxSessionsPerRoom)
	case c.WebhookLease < 3*time.Second || c.WebhookLease > 10*time.Minute:
		return fmt.Errorf("--webhook-lease must be a duration from 3s to 10m such as 30s, not %s", c.WebhookLease)
	case c.WebhookBackoffMax < 100*time.Millisecond || c.WebhookBackoffMax > 24*time.Hour:
		return fmt.Errorf("--webhook-backoff-max must be a duration from 100ms to 24h such as 1h, not %s", c.WebhookBackoffMax)
	case c.PassAlg != gate.AlgEdDSA && c.PassAlg != gate.AlgHS256:
		return fmt.Errorf("--pass-alg must be EdDSA or HS256, not %q", c.PassAlg)
	case !waitroom.ValidRoomName(c.Room):
		return fmt.Errorf("--room %q is not a valid room name", c.Room)
	case c.Upstream != nil && ((c.Upstream.Scheme != "http" && c.Upstream.Scheme != "https") || c.Upstream.Host == ""):
		return fmt.Errorf("--upstream must be an absolute http(s) URL, not %q", c.Upstream.Redacted())
	case c.PublicURL != nil && ((c.PublicURL.Scheme != "http" && c.PublicURL.Scheme != "https") || c.PublicURL.Host == "" || (c.PublicURL.Path != "" && c.PublicURL.Path != "/")):
		return fmt.Errorf("--public-url must be scheme://host[:port], not %q", c.PublicURL.Redacted())
	case c.ConsoleHost != "" && !validConsoleHost(c.ConsoleHost):
		return fmt.Errorf("--console-host must be a host or host:port, not %q", c.ConsoleHost)
	}
	if _, err := clientaddr.FromPrefixes(c.TrustedProxies); err != nil {
		return fmt.Errorf("--trusted-proxies: %w", err)
	}
	return nil
}

// minAdminTokenLen is the shortest admin token set by hand (--admin-token or
// the token file) that a server starts with: wrong tokens are limited to
// five a minute per address (package admintoken), which is no defence for
// a token short enough to guess.
const minAdminTokenLen = 16

// publicURL is PublicURL without a trailing slash, "" when unset.
func (c Config) publicURL() string {
	if c.PublicURL == nil {
		return ""
	}
	return strings.TrimSuffix(c.PublicURL.String(), "/")
}

// knownStore reports whether s names a backend New can open.
func knownStore(s string) bool { return s == "" || s == "memory" || IsRedisURL(s) }

// IsRedisURL reports whether s is a Redis store URL.
func IsRedisURL(s string) bool {
	scheme, _, ok := strings.Cut(s, "://")
	switch scheme {
	case "redis", "rediss", "redis+cluster", "rediss+cluster", "redis+sentinel", "rediss+sentinel":
		return ok
	}
	return false
}

// RedactURL hides a password in a store URL before it is printed.
func RedactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil || u.User == nil {
		if strings.Contains(s, "@") {
			return "<a URL with credentials>"
		}
		return s
	}
	return u.Redacted()
}
