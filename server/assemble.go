package server

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"time"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/gate"
	"github.com/waitroom/waitroom/internal/admintoken"
	"github.com/waitroom/waitroom/internal/admit"
	"github.com/waitroom/waitroom/internal/clientaddr"
	"github.com/waitroom/waitroom/internal/console"
	"github.com/waitroom/waitroom/internal/door"
	"github.com/waitroom/waitroom/internal/eta"
	"github.com/waitroom/waitroom/internal/gatekeeper"
	"github.com/waitroom/waitroom/internal/httpapi"
	"github.com/waitroom/waitroom/internal/limit"
	"github.com/waitroom/waitroom/internal/metrics"
	"github.com/waitroom/waitroom/internal/outage"
	"github.com/waitroom/waitroom/internal/push"
	"github.com/waitroom/waitroom/internal/roomstats"
	"github.com/waitroom/waitroom/internal/roomview"
	"github.com/waitroom/waitroom/internal/sweeper"
	"github.com/waitroom/waitroom/internal/web"
)

// assemble builds every component over the open store, in dependency
// order, and returns the routed handler. Each component that runs
// something is stopped by Close.
func (s *Server) assemble(ctx context.Context) (http.Handler, error) {
	cfg, store, logger, clock := s.cfg, s.store, s.cfg.Logger, s.cfg.Clock
	s.onCloseFunc(metrics.Register(store, s.reg))

	// The background work outlives ctx until the HTTP server has drained,
	// so expiry and deliveries keep working for requests still answered.
	s.bgCtx, s.background = context.WithCancel(context.WithoutCancel(ctx))
	s.goBackground(func(ctx context.Context) {
		if err := sweeper.Run(ctx, store, clock, sweeper.Options{Logger: logger}); err != nil {
			logger.Error("sweeper stopped", "err", err)
		}
	})
	kickHooks, err := s.startWebhooks()
	if err != nil {
		return nil, err
	}
	// The outage monitor pings the store; under the open policy the pages
	// let visitors through once it has been unreachable for a while.
	policy := outage.Closed
	if cfg.FailOpen {
		policy = outage.Open
	}
	monitor := outage.New(store, outage.Options{Policy: policy, After: cfg.FailOpenAfter, OnChange: func(down bool, err error) {
		if down {
			logger.Error("the store is unreachable", "err", err, "policy", string(policy))
		} else {
			logger.Info("the store is reachable again")
		}
	}})
	s.goBackground(monitor.Run)

	// ETAs come from admissions seen in store events.
	estimator := eta.New(store)
	s.onCloseFunc(estimator.Close)
	// The console's numbers count every process's joins (kept in the
	// store); the door's difficulty follows them too.
	stats := roomstats.New(store, store, roomstats.Options{ETA: roomstats.EstimatorETA(estimator), Sample: 250 * time.Millisecond,
		Clock: clock, Logger: logger})
	s.onClose(stats.Close)

	keysDir := cmp.Or(cfg.PassKeysDir, filepath.Join(cfg.DataDir, "keys"))
	keys, err := gate.LoadKeys(keysDir, cfg.PassAlg)
	if err != nil {
		return nil, fmt.Errorf("pass keys in %s: %w", keysDir, err)
	}
	doorSecret, err := loadDoorSecret(keysDir)
	if err != nil {
		return nil, err
	}
	// One view of each room, kept by the store's events, for the door,
	// the join cap, the gate and the pages.
	rooms := roomview.New(roomview.Config{Store: store, Clock: clock})
	s.onCloseFunc(rooms.Close)
	dr := door.New(rooms, doorSecret, door.WithSharedRate(func(ctx context.Context, room string, now time.Time) (int64, error) {
		r, err := stats.Overview(ctx, room, now)
		return r.JoinsPerMinute, err
	}))

	proxies, _ := clientaddr.FromPrefixes(cfg.TrustedProxies) // checked by Config.Check
	// Every join (API, page, gate) goes through one admission: one door,
	// one allowance per address, one live count per room.
	joins := &limit.Joins{Rate: limit.NewLimiter(cfg.JoinsPerMinute, cfg.JoinsPerMinute, 0), Proxies: proxies,
		MaxSessionsPerRoom: cfg.MaxSessionsPerRoom, Rooms: rooms, Memory: limit.NewMemoryGuard(cfg.MemoryLimit, nil)}
	adm := admit.New(admit.Config{Store: store, Door: dr, Joins: joins})
	// Under an https public URL every cookie (pass, waiting page, console)
	// is Secure, whatever a request looks like on its way here.
	secure := cfg.PublicURL != nil && cfg.PublicURL.Scheme == "https"
	gt, err := gatekeeper.New(gatekeeper.Config{
		Store: store, Rooms: rooms, Keys: keys, Clock: clock, Logger: logger,
		PublicURL: cfg.publicURL(), TrustedProxies: proxies,
		Secure: secure,
		ETA:    estimator.Fill, Admit: adm, FailOpen: monitor.FailOpen,
	})
	if err != nil {
		return nil, fmt.Errorf("gate: %w", err)
	}
	s.onClose(gt.Close)
	s.gate = gt
	// Every session on its way out gets its estimate and, when active,
	// its pass.
	fill := func(x *waitroom.Session, now time.Time) {
		estimator.Fill(x, now)
		gt.Fill(x, now)
	}
	hub := push.New(store, push.Options{Refresh: cfg.PushRefresh, Front: cfg.PushFront, Clock: clock, Fill: fill,
		OnError: func(room string, err error) { logger.Warn("push: reading sessions", "room", room, "err", err) }})
	s.onCloseFunc(hub.Close)
	// Closed first on shutdown, so every stream ends and Shutdown need not
	// wait for them.
	s.onShutdown = append(s.onShutdown, hub.Close)

	// One allowance of wrong admin tokens per address, for the API's
	// bearer token and the console's sign-in alike.
	guard := admintoken.New(admintoken.Config{Proxies: proxies, Clock: clock, Logger: logger, Registry: s.reg})
	cons := console.New(console.Options{AdminToken: s.token, Ledger: store, Clock: clock, TrustedProxies: proxies, Secure: secure, Logger: logger, AdminGuard: guard})
	var consoleAuth httpapi.Authorizer = cons
	consoleHandler := cons.Handler()
	if cfg.ConsoleHost != "" {
		consoleAuth = hostAuthorizer{host: cfg.ConsoleHost, next: cons}
		consoleHandler = consoleOnHost(cfg.ConsoleHost, consoleHandler)
	}
	api := httpapi.NewHandler(httpapi.Config{
		Store: store, AdminToken: s.token, AdminGuard: guard, Clock: clock, Logger: logger, Registry: s.reg,
		Stats: stats, Console: consoleAuth, Hub: hub, Fill: fill, Admit: adm, MaxStreams: maxStreams(cfg.MaxConnections),
		MaxStreamsPerSession: cfg.MaxStreamsPerSession, MaxStreamsPerAddress: cfg.streamsPerAddress(), TrustedProxies: proxies,
		AllowPrivateWebhooks: cfg.WebhookAllowPrivate, OnWebhooks: kickHooks,
	})
	webCfg := web.Config{Store: store, Rooms: rooms, Clock: clock, ETA: estimator.Fill, Templates: cfg.Templates, Logger: logger,
		Demo: cfg.Demo, FailOpen: monitor.FailOpen, Admit: adm, Home: cfg.Upstream == nil, Secure: secure,
		PublicURL: cfg.publicURL()}
	pages, err := web.New(webCfg)
	if err != nil {
		return nil, fmt.Errorf("--templates: %w", err)
	}
	mux := http.NewServeMux()
	for _, prefix := range web.Prefixes(webCfg) {
		mux.Handle(prefix, pages)
	}
	mux.Handle(console.Prefix, consoleHandler)
	mux.Handle(console.Path, consoleHandler) // its own 301, not the mux's 307
	gh := gt.Handler()
	mux.Handle(gatekeeper.Prefix, gh)
	mux.Handle(gatekeeper.JWKSPath, gh)
	if cfg.Upstream == nil {
		mux.Handle("/", api)
	} else if err := s.protect(ctx, mux, api, gt); err != nil {
		return nil, err
	}
	if err := registerRuntimeMetrics(s.reg); err != nil {
		return nil, err
	}
	return mux, nil
}

// protect routes the reverse-proxy mode: waitroom's own paths stay
// waitroom's, the rest is the protected app's, behind the gate.
func (s *Server) protect(ctx context.Context, mux *http.ServeMux, api http.Handler, gt *gatekeeper.Gate) error {
	cfg := s.cfg
	if err := ensureRoom(ctx, s.store, cfg.Room, cfg.Clock.Now(), cfg.Logger); err != nil {
		return err
	}
	proxy, err := gt.Proxy(gatekeeper.ProxyConfig{Upstream: cfg.Upstream, Room: cfg.Room, Bypass: cfg.Bypass, Transport: upstreamTransport()})
	if err != nil {
		return fmt.Errorf("--upstream: %w", err)
	}
	for _, p := range []string{"/v1/", "/healthz", "/readyz", "/metrics"} {
		mux.Handle(p, api)
	}
	mux.Handle("/", proxy)
	cfg.Logger.Info("protecting an app", "upstream", cfg.Upstream.Redacted(), "room", cfg.Room, "bypass", cfg.Bypass)
	if cfg.ConsoleHost == "" {
		cfg.Logger.Warn("the operator console at /admin/ shares the protected app's origin, where the app's scripts could use an operator's sign-in; give it a host of its own with --console-host")
	}
	return nil
}

// maxStreams is the cap on event streams under maxConns: all but a
// fiftieth (at least 32) of the connections, which short requests keep.
func maxStreams(maxConns int) int {
	if maxConns <= 0 {
		return 0
	}
	return max(maxConns-max(maxConns/50, 32), 1)
}

// upstreamTransport carries requests to the upstream: many idle
// connections per host, since every visitor's request goes to the same app.
func upstreamTransport() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConns = 1024
	t.MaxIdleConnsPerHost = 1024
	return t
}
