package httpapi

import (
	"net/http"
	"net/netip"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/internal/clientaddr"
	"github.com/waitroom/waitroom/internal/connlimit"
	"github.com/waitroom/waitroom/internal/limit"
)

// streamCaps holds the per-session and per-address counts of open session
// streams (SSE and WebSocket), beside the process's total (server.streams):
// without them one client could open every stream the process allows on
// one session and leave nothing for anyone else.
type streamCaps struct {
	proxies  clientaddr.Trusted
	sessions *connlimit.Tally[string]
	addrs    *connlimit.Tally[netip.Prefix]
	refusals *prometheus.CounterVec
}

// Reasons a stream is refused, the label of waitroom_stream_refusals_total.
const (
	refusedGlobal     = "global"
	refusedPerSession = "per_session"
	refusedPerAddress = "per_address"
)

// streamRetry is the Retry-After of a stream refused for a per-session or
// per-address cap: streams free up as tabs close, not at once.
const streamRetry = 5 * time.Second

func newStreamCaps(cfg Config) *streamCaps {
	c := &streamCaps{
		proxies:  cfg.TrustedProxies,
		sessions: connlimit.NewTally[string](cfg.MaxStreamsPerSession),
		addrs:    connlimit.NewTally[netip.Prefix](cfg.MaxStreamsPerAddress),
		refusals: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "waitroom_stream_refusals_total",
			Help: "Session event streams (SSE and WebSocket) refused, by reason: global (the process holds as many as it may, 503), per_session or per_address (that session or client address holds its cap, 429).",
		}, []string{"reason"}),
	}
	for _, r := range []string{refusedGlobal, refusedPerSession, refusedPerAddress} {
		c.refusals.WithLabelValues(r) // every reason is exported from the start, at 0
	}
	if err := cfg.Registry.Register(c.refusals); err != nil {
		// A second handler on one registry: the first one's counter stays.
		cfg.Logger.Warn("httpapi: registering the stream refusals counter", "err", err)
	}
	return c
}

// streamHold is what one open stream holds of the caps, given back once:
// a zero field holds nothing.
type streamHold struct {
	session string
	addr    netip.Prefix
}

// takeAddress counts a stream for the client address of r, or refuses it
// (429 rate_limited) when that address holds its cap. A request without
// an IP address (over a Unix socket) cannot be told apart from the others
// and is not counted per address.
func (c *streamCaps) takeAddress(r *http.Request, h *streamHold) error {
	key := connlimit.Key(c.proxies.Client(r))
	if !key.IsValid() {
		return nil
	}
	if c.addrs.Take(key) {
		h.addr = key
		return nil
	}
	c.refusals.WithLabelValues(refusedPerAddress).Inc()
	return &limit.RetryError{After: streamRetry, Err: waitroom.Errorf(waitroom.CodeRateLimited,
		"Your address holds as many live streams as one address may (%d); close some, or poll the session (GET …/sessions/{id}).", c.addrs.Max())}
}

// takeSession counts a stream for the session, or refuses it (429
// rate_limited) when the session holds its cap, giving back what h holds.
func (c *streamCaps) takeSession(room, id string, h *streamHold) error {
	key := room + "\x00" + id
	if c.sessions.Take(key) {
		h.session = key
		return nil
	}
	c.give(*h)
	*h = streamHold{}
	c.refusals.WithLabelValues(refusedPerSession).Inc()
	return &limit.RetryError{After: streamRetry, Err: waitroom.Errorf(waitroom.CodeRateLimited,
		"This session has as many live streams open as one session may (%d); close another tab's, or poll the session (GET …/sessions/{id}).", c.sessions.Max())}
}

// give releases what h holds.
func (c *streamCaps) give(h streamHold) {
	if h.session != "" {
		c.sessions.Give(h.session)
	}
	if h.addr.IsValid() {
		c.addrs.Give(h.addr)
	}
}

// refusedGlobally counts a stream refused for the process's total.
func (c *streamCaps) refusedGlobally() {
	c.refusals.WithLabelValues(refusedGlobal).Inc()
}
