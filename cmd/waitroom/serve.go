package main

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"math"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"runtime/debug"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/gate"
	"github.com/waitroom/waitroom/internal/clientaddr"
	"github.com/waitroom/waitroom/internal/connguard"
	"github.com/waitroom/waitroom/internal/connlimit"
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
	"github.com/waitroom/waitroom/memstore"
	"github.com/waitroom/waitroom/redisstore"
	"github.com/waitroom/waitroom/sqlitestore"
)

// Server limits. There is no WriteTimeout: event streams stay open for as
// long as a session waits, and a server-wide write deadline would cut them.
const (
	readHeaderTimeout = 5 * time.Second
	idleTimeout       = 2 * time.Minute
	maxHeaderBytes    = 64 << 10
	// shutdownTimeout is how long in-flight requests get to finish after
	// SIGINT/SIGTERM before their connections are closed.
	shutdownTimeout = 10 * time.Second
)

// File names inside the data folder.
const (
	dbFileName    = "waitroom.db"
	tokenFileName = "admin-token"
)

// serveConfig is the serve command's configuration after flags and
// environment are merged.
type serveConfig struct {
	addr       string
	data       string
	store      string
	adminToken string
	logFormat  string
	templates  string
	demo       bool
	// onStoreDown and failOpenAfter are the outage policy (package outage).
	onStoreDown   string
	failOpenAfter string
	// maxConns caps open connections (package connlimit).
	maxConns string
	// The live-update cadence (package push).
	pushRefresh string
	pushFront   string
	// The abuse limits (package limit), as given; parseServe checks them.
	joinLimit      string
	trustedProxies string
	maxSessions    string
	memoryLimit    string
	// The gate (package gate): reverse-proxy mode and passes.
	upstream  string
	room      string
	bypass    string
	publicURL string
	passAlg   string
	passKeys  string
	// Webhooks (package webhook).
	webhookPrivate bool
	webhookLease   string
	webhookBackoff string
}

// serveFlag describes one flag of serve and the environment variable that
// sets it when the flag is not given.
type serveFlag struct {
	name, env, def, help string
	dst                  *string
	// bdst, when set instead of dst, makes a boolean flag (--demo); its
	// environment variable takes true/false, 1/0.
	bdst *bool
}

func (c *serveConfig) flags() []serveFlag {
	return []serveFlag{
		{"addr", "WAITROOM_ADDR", ":8080", "`address` to listen on (host:port; port 0 picks a free one)", &c.addr, nil},
		{"data", "WAITROOM_DATA", "./waitroom-data", "`folder` for the database and the generated admin token", &c.data, nil},
		{"store", "WAITROOM_STORE", "", "storage `backend`: empty for the embedded SQLite store in the data folder,\n\"memory\" for an in-memory store that loses everything on exit (demos only)", &c.store, nil},
		{"admin-token", "WAITROOM_ADMIN_TOKEN", "", "bearer `token` for the admin API; when unset, it is read from <data>/admin-token,\nwhich is generated (mode 0600) on first start", &c.adminToken, nil},
		{"log-format", "WAITROOM_LOG_FORMAT", "text", "log `format` on stderr: text or json", &c.logFormat, nil},
		{"templates", "WAITROOM_TEMPLATES", "", "`folder` of waiting-page templates: page.html for every room, <room>.html for one\n(html/template; see the README's \"Waiting page\" section)", &c.templates, nil},
		{"on-store-down", "WAITROOM_ON_STORE_DOWN", "closed", "`policy` while the store (Redis) is unreachable: closed keeps everyone in line\n(pages say the line is paused; the API answers 503), open sends visitors on to\nthe room's target once it has been down for --fail-open-after", &c.onStoreDown, nil},
		{"fail-open-after", "WAITROOM_FAIL_OPEN_AFTER", "10s", "how long the store must be unreachable before --on-store-down open lets\nvisitors through (a Go `duration`)", &c.failOpenAfter, nil},
		{"max-connections", "WAITROOM_MAX_CONNECTIONS", "auto", "most `connections` open at once; over it a new one is answered 503 unavailable\nand closed; auto: the open-file limit less 256 (kept for the store and logs); 0: no cap", &c.maxConns, nil},
		{"push-refresh", "WAITROOM_PUSH_REFRESH", "5s", "longest a live page away from the front of the line goes without a fresh\nposition and ETA (a Go `duration`; see the README's \"Live updates\")", &c.pushRefresh, nil},
		{"push-front", "WAITROOM_PUSH_FRONT", "100", "how many `people` at the front of a line are told every change at once", &c.pushFront, nil},
		{"join-limit", "WAITROOM_JOIN_LIMIT", "120", "most joins a `minute` per client address (bursts of as many; IPv6 per /64);\nover it a join answers 429 with Retry-After; 0 turns the limit off", &c.joinLimit, nil},
		{"trusted-proxies", "WAITROOM_TRUSTED_PROXIES", "", "comma-separated `CIDRs` of the proxies in front of waitroom; only their\nX-Forwarded-For names the client (for --join-limit); empty trusts nobody", &c.trustedProxies, nil},
		{"max-sessions-per-room", "WAITROOM_MAX_SESSIONS_PER_ROOM", "2000000", "most live `sessions` (waiting and active) per room; a join over it answers\n503 room_full; 0 means no cap", &c.maxSessions, nil},
		{"memory-limit", "WAITROOM_MEMORY_LIMIT", "", "`bytes` of memory in use over which joins answer 503 room_full (suffixes\nKiB, MiB, GiB); empty: 90% of GOMEMLIMIT when that is set, else no guard;\n0: no guard", &c.memoryLimit, nil},
		{"upstream", "WAITROOM_UPSTREAM", "", "`URL` of the app to protect (reverse-proxy mode): requests with a valid pass\ngo through to it, everyone else joins --room and waits; /r/, /waitroom.js,\n/v1/ and the operations endpoints stay waitroom's", &c.upstream, nil},
		{"room", "WAITROOM_ROOM", waitroom.DefaultRoom, "`room` whose pass --upstream requires", &c.room, nil},
		{"bypass", "WAITROOM_BYPASS", "", "comma-separated `paths` that reach --upstream without a pass: prefixes\n(/static/), suffix patterns (*.css) or path.Match patterns", &c.bypass, nil},
		{"public-url", "WAITROOM_PUBLIC_URL", "", "`URL` (scheme://host[:port]) where browsers reach waitroom's pages, for the\nredirects of forward-auth and the claim links webhooks send (claim_url); empty:\nthe host of the gated request, and webhooks carry only the claim path", &c.publicURL, nil},
		{"pass-alg", "WAITROOM_PASS_ALG", gate.AlgEdDSA, "signing `algorithm` of passes: EdDSA (Ed25519, public keys at\n/.well-known/jwks.json) or HS256 (a shared secret, nothing published)", &c.passAlg, nil},
		{"pass-keys", "WAITROOM_PASS_KEYS", "", "`folder` of pass signing keys, generated on first start; empty: <data>/keys", &c.passKeys, nil},
		{"webhook-allow-private", "WAITROOM_WEBHOOK_ALLOW_PRIVATE", "", "let webhooks reach loopback and private-network addresses (off: such URLs\nare refused, and so is any name that resolves to one: SSRF)", nil, &c.webhookPrivate},
		{"webhook-lease", "WAITROOM_WEBHOOK_LEASE", "30s", "how long a process holds a webhook delivery it is trying before another may\ntake it over (a Go `duration`, 3s to 10m; each try may take a third of it)", &c.webhookLease, nil},
		{"webhook-backoff-max", "WAITROOM_WEBHOOK_BACKOFF_MAX", "1h", "longest wait between two tries of a failing webhook delivery (a Go `duration`,\n100ms to 24h); the waits start at 1s and double, with jitter, for up to 24 hours", &c.webhookBackoff, nil},
		{"demo", "WAITROOM_DEMO", "", "create (or update) room \"demo\" (capacity 3, target /demo/app/) and serve the demo app", nil, &c.demo},
	}
}

// parseServe reads serve's flags, then fills each flag not given on the
// command line from its environment variable: flags beat the environment,
// which beats the defaults.
func parseServe(args []string, getenv func(string) string, stderr io.Writer) (serveConfig, error) {
	var c serveConfig
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	specs := c.flags()
	for _, f := range specs {
		if f.bdst != nil {
			fs.BoolVar(f.bdst, f.name, false, f.help)
		} else {
			fs.StringVar(f.dst, f.name, f.def, f.help)
		}
	}
	fs.Usage = func() {
		out := fs.Output()
		fmt.Fprint(out, "Usage: waitroom serve [flags]\n\nRuns the waitroom HTTP server. Each flag may also be set by its environment\nvariable; a flag on the command line wins.\n\nFlags:\n")
		for _, f := range specs {
			name, help := flag.UnquoteUsage(fs.Lookup(f.name))
			if name != "" {
				name = " " + name
			}
			fmt.Fprintf(out, "  --%s%s   (env %s", f.name, name, f.env)
			if f.def != "" {
				fmt.Fprintf(out, ", default %q", f.def)
			}
			fmt.Fprintf(out, ")\n    \t%s\n", strings.ReplaceAll(help, "\n", "\n    \t"))
		}
	}
	if err := parseFlags(fs, args); err != nil {
		return c, err
	}
	given := make(map[string]bool)
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	for _, f := range specs {
		v := getenv(f.env)
		if given[f.name] || v == "" {
			continue
		}
		if f.bdst == nil {
			*f.dst = v
			continue
		}
		b, err := strconv.ParseBool(v)
		if err != nil {
			return c, badUsage(fs, "%s must be true or false, not %q", f.env, v)
		}
		*f.bdst = b
	}

	switch c.logFormat {
	case "text", "json":
	default:
		return c, badUsage(fs, "--log-format must be text or json, not %q", c.logFormat)
	}
	if c.addr == "" {
		return c, badUsage(fs, "--addr must not be empty")
	}
	if c.data == "" {
		return c, badUsage(fs, "--data must not be empty")
	}
	if _, err := outage.ParsePolicy(c.onStoreDown); err != nil {
		return c, badUsage(fs, "--on-store-down must be closed or open, not %q", c.onStoreDown)
	}
	if _, err := maxConnections(c.maxConns); err != nil {
		return c, badUsage(fs, "%v", err)
	}
	if d, err := time.ParseDuration(c.pushRefresh); err != nil || d < 100*time.Millisecond || d > time.Hour {
		return c, badUsage(fs, "--push-refresh must be a duration from 100ms to 1h such as 5s, not %q", c.pushRefresh)
	}
	if n, err := strconv.Atoi(c.pushFront); err != nil || n < 1 || n > 1_000_000 {
		return c, badUsage(fs, "--push-front must be a whole number from 1 to 1000000, not %q", c.pushFront)
	}
	if d, err := time.ParseDuration(c.failOpenAfter); err != nil || d <= 0 {
		return c, badUsage(fs, "--fail-open-after must be a positive duration such as 10s, not %q", c.failOpenAfter)
	}
	if d, err := time.ParseDuration(c.webhookLease); err != nil || d < 3*time.Second || d > 10*time.Minute {
		return c, badUsage(fs, "--webhook-lease must be a duration from 3s to 10m such as 30s, not %q", c.webhookLease)
	}
	if d, err := time.ParseDuration(c.webhookBackoff); err != nil || d < 100*time.Millisecond || d > 24*time.Hour {
		return c, badUsage(fs, "--webhook-backoff-max must be a duration from 100ms to 24h such as 1h, not %q", c.webhookBackoff)
	}
	if c.passAlg != gate.AlgEdDSA && c.passAlg != gate.AlgHS256 {
		return c, badUsage(fs, "--pass-alg must be EdDSA or HS256, not %q", c.passAlg)
	}
	if !waitroom.ValidRoomName(c.room) {
		return c, badUsage(fs, "--room %q is not a valid room name", c.room)
	}
	if c.upstream != "" {
		if u, err := url.Parse(c.upstream); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return c, badUsage(fs, "--upstream must be an absolute http(s) URL, not %q", c.upstream)
		}
	}
	if c.publicURL != "" {
		if u, err := url.Parse(c.publicURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") {
			return c, badUsage(fs, "--public-url must be scheme://host[:port], not %q", c.publicURL)
		}
	}
	if _, err := gatekeeper.ParseTrustedProxies(c.trustedProxies); err != nil {
		return c, badUsage(fs, "--trusted-proxies: %v", err)
	}
	if _, err := c.limits(); err != nil {
		return c, badUsage(fs, "%v", err)
	}
	switch {
	case c.store == "", c.store == "memory", isRedisURL(c.store):
	default:
		return c, badUsage(fs, "--store must be empty (embedded SQLite), \"memory\" or a redis:// URL, not %q", redactURL(c.store))
	}
	return c, nil
}

func isRedisURL(s string) bool {
	scheme, _, ok := strings.Cut(s, "://")
	switch scheme {
	case "redis", "rediss", "redis+cluster", "rediss+cluster", "redis+sentinel", "rediss+sentinel":
		return ok
	}
	return false
}

// redactURL hides a password in a store URL before it is printed.
func redactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil || u.User == nil {
		if strings.Contains(s, "@") {
			return "<a URL with credentials>"
		}
		return s
	}
	return u.Redacted()
}

func newLogger(format string, w io.Writer) *slog.Logger {
	if format == "json" {
		return slog.New(slog.NewJSONHandler(w, nil))
	}
	return slog.New(slog.NewTextHandler(w, nil))
}

// serve runs the HTTP server until ctx ends, then shuts down cleanly.
func serve(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) (err error) {
	cfg, err := parseServe(args, getenv, stderr)
	if err != nil {
		return err
	}
	logger := newLogger(cfg.logFormat, stderr)
	clock := waitroom.SystemClock{}
	// A development aid, not a flag: WAITROOM_CPUPROFILE=file profiles the
	// whole run, written at shutdown (for go tool pprof).
	if path := getenv("WAITROOM_CPUPROFILE"); path != "" {
		f, err := os.Create(path)
		if err != nil {
			return fmt.Errorf("cpu profile: %w", err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			f.Close()
			return fmt.Errorf("cpu profile: %w", err)
		}
		defer func() {
			pprof.StopCPUProfile()
			f.Close()
		}()
	}

	store, err := openStore(ctx, cfg, logger)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := store.Close(); cerr != nil {
			err = errors.Join(err, fmt.Errorf("close store: %w", cerr))
		}
	}()

	token, err := adminToken(cfg, stdout, logger)
	if err != nil {
		return err
	}
	if err := ensureDefaultRoom(ctx, store, clock.Now(), logger); err != nil {
		return err
	}
	if cfg.demo {
		if err := ensureDemoRoom(ctx, store, clock.Now(), logger); err != nil {
			return err
		}
	}

	reg := prometheus.NewRegistry()
	stopMetrics := metrics.Register(store, reg)
	defer stopMetrics()

	// The sweeper outlives ctx until the HTTP server has drained, so
	// expiry keeps working for requests still being answered.
	sweepCtx, stopSweeper := context.WithCancel(context.WithoutCancel(ctx))
	var sweeping sync.WaitGroup
	sweeping.Go(func() {
		if err := sweeper.Run(sweepCtx, store, clock, sweeper.Options{Logger: logger}); err != nil {
			logger.Error("sweeper stopped", "err", err)
		}
	})
	defer func() {
		stopSweeper()
		sweeping.Wait()
	}()

	// The webhook deliverer, like the sweeper, outlives ctx until the
	// HTTP server has drained.
	kickHooks, stopHooks := startWebhooks(sweepCtx, store, cfg, clock, logger, reg)
	defer stopHooks()

	// The outage monitor pings the store; under the open policy the pages
	// let visitors through once it has been unreachable for a while.
	lim, _ := cfg.limits()                            // checked by parseServe
	policy, _ := outage.ParsePolicy(cfg.onStoreDown)  // checked by parseServe
	after, _ := time.ParseDuration(cfg.failOpenAfter) // checked by parseServe
	monitor := outage.New(store, outage.Options{Policy: policy, After: after, OnChange: func(down bool, err error) {
		if down {
			logger.Error("the store is unreachable", "err", err, "policy", string(policy))
		} else {
			logger.Info("the store is reachable again")
		}
	}})
	// Waited for with the sweeper, so it never pings a store being closed.
	sweeping.Go(func() { monitor.Run(sweepCtx) })

	// ETAs come from admissions seen in store events; the hub pushes
	// updates to event streams and is closed first on shutdown, so every
	// stream ends and Shutdown need not wait for them.
	estimator := eta.New(store)
	defer estimator.Close()
	// The gate signs passes for active sessions, checks them at
	// forward-auth and in front of --upstream, and revokes them when
	// sessions end. Every session on its way out gets its estimate and,
	// when active, its pass.
	keysDir := cmp.Or(cfg.passKeys, filepath.Join(cfg.data, "keys"))
	keys, err := gate.LoadKeys(keysDir, cfg.passAlg)
	if err != nil {
		return fmt.Errorf("pass keys in %s: %w", keysDir, err)
	}
	doorSecret, err := loadDoorSecret(keysDir)
	if err != nil {
		return err
	}
	// One view of each room, kept by the store's events, for the door,
	// the join cap, the gate and the pages.
	rooms := roomview.New(roomview.Config{Store: store, Clock: clock})
	defer rooms.Close()
	// The console's numbers (below) count every process's joins: the
	// door's difficulty follows them too, not only this process's share.
	var stats *roomstats.Recorder
	dr := door.New(rooms, doorSecret, door.WithSharedRate(func(ctx context.Context, room string, now time.Time) (int64, error) {
		if stats == nil {
			return 0, errors.New("no room statistics")
		}
		r, err := stats.Overview(ctx, room, now)
		return r.JoinsPerMinute, err
	}))
	gateProxies, _ := gatekeeper.ParseTrustedProxies(cfg.trustedProxies) // checked by parseServe
	joins := &limit.Joins{Rate: lim.rate, Proxies: lim.proxies, MaxSessionsPerRoom: lim.maxSessions, Rooms: rooms, Memory: lim.memory}
	gt, err := gatekeeper.New(gatekeeper.Config{
		Store:          store,
		Rooms:          rooms,
		Keys:           keys,
		Clock:          clock,
		Logger:         logger,
		PublicURL:      strings.TrimSuffix(cfg.publicURL, "/"),
		TrustedProxies: gateProxies,
		Secure:         strings.HasPrefix(cfg.publicURL, "https://"),
		ETA:            estimator.Fill,
		Joins:          joins,
		FailOpen:       monitor.FailOpen,
		Door:           dr,
	})
	if err != nil {
		return fmt.Errorf("gate: %w", err)
	}
	defer gt.Close()
	fill := func(s *waitroom.Session, now time.Time) {
		estimator.Fill(s, now)
		gt.Fill(s, now)
	}
	refresh, _ := time.ParseDuration(cfg.pushRefresh) // checked by parseServe
	front, _ := strconv.Atoi(cfg.pushFront)
	hub := push.New(store, push.Options{
		Refresh: refresh,
		Front:   int64(front),
		Clock:   clock,
		Fill:    fill,
		OnError: func(room string, err error) {
			logger.Warn("push: reading sessions", "room", room, "err", err)
		},
	})
	defer hub.Close()
	// The operator console: its numbers kept in the store (every process
	// of a Redis deployment adds its own counts and can serve the charts),
	// its sign-ins too, so signing out ends one everywhere.
	ledger, _ := store.(waitroom.Ledger)
	var cons *console.Console
	var consoleAuth httpapi.Authorizer
	if ledger != nil {
		// Counts go to the store every quarter second, so the console's
		// live view (read twice a second) is under a second behind.
		stats = roomstats.New(store, ledger, roomstats.Options{ETA: roomstats.EstimatorETA(estimator), Sample: 250 * time.Millisecond,
			Clock: clock, Logger: logger})
		defer stats.Close()
		cons = console.New(console.Options{AdminToken: token, Ledger: ledger, Clock: clock, TrustedProxies: lim.proxies, Logger: logger})
		consoleAuth = cons
	}
	handler := httpapi.NewHandler(httpapi.Config{
		Ledger:               ledger,
		Stats:                stats,
		Console:              consoleAuth,
		JoinLimit:            lim.rate,
		TrustedProxies:       lim.proxies,
		MaxSessionsPerRoom:   lim.maxSessions,
		MaxStreams:           maxStreams(cfg.maxConns),
		MemoryGuard:          lim.memory,
		Store:                store,
		AdminToken:           token,
		Clock:                clock,
		Logger:               logger,
		Registry:             reg,
		Hub:                  hub,
		Fill:                 fill,
		Rooms:                rooms,
		Door:                 dr,
		AllowPrivateWebhooks: cfg.webhookPrivate,
		OnWebhooks:           kickHooks,
	})
	// The waiting page, its scripts and the demo live next to the API: the
	// web handler takes its own prefixes, the API everything else.
	webCfg := web.Config{
		Store:     store,
		Rooms:     rooms,
		Clock:     clock,
		ETA:       estimator.Fill,
		Templates: cfg.templates,
		Logger:    logger,
		Demo:      cfg.demo,
		FailOpen:  monitor.FailOpen,
		// The page's and the gate's joins share the API's allowance.
		Joins: joins,
		Door:  dr,
	}
	pages, err := web.New(webCfg)
	if err != nil {
		return fmt.Errorf("--templates: %w", err)
	}
	mux := http.NewServeMux()
	for _, prefix := range web.Prefixes(webCfg) {
		mux.Handle(prefix, pages)
	}
	if cons != nil {
		mux.Handle(console.Prefix, cons.Handler())
	}
	gh := gt.Handler()
	mux.Handle(gatekeeper.Prefix, gh)
	mux.Handle(gatekeeper.JWKSPath, gh)
	if cfg.upstream == "" {
		mux.Handle("/", handler)
	} else {
		// Reverse-proxy mode: waitroom's own paths stay waitroom's, the
		// rest is the protected app's.
		if err := ensureRoom(ctx, store, cfg.room, clock.Now(), logger); err != nil {
			return err
		}
		up, _ := url.Parse(cfg.upstream) // checked by parseServe
		var bypass []string
		for b := range strings.SplitSeq(cfg.bypass, ",") {
			if b = strings.TrimSpace(b); b != "" {
				bypass = append(bypass, b)
			}
		}
		proxy, err := gt.Proxy(gatekeeper.ProxyConfig{Upstream: up, Room: cfg.room, Bypass: bypass, Transport: upstreamTransport()})
		if err != nil {
			return fmt.Errorf("--upstream: %w", err)
		}
		for _, p := range []string{"/v1/", "/healthz", "/readyz", "/metrics"} {
			mux.Handle(p, handler)
		}
		mux.Handle("/", proxy)
		logger.Info("protecting an app", "upstream", up.Redacted(), "room", cfg.room, "bypass", bypass)
	}
	// Runtime and process metrics next to waitroom's own. Registered after
	// the handler, tolerating duplicates, in case a package registers them too.
	for _, c := range []prometheus.Collector{
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	} {
		if err := reg.Register(c); err != nil && !errors.As(err, new(prometheus.AlreadyRegisteredError)) {
			return fmt.Errorf("register runtime metrics: %w", err)
		}
	}
	srv := newHTTPServer(ctx, mux, logger)
	srv.RegisterOnShutdown(hub.Close)
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", cfg.addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", cfg.addr, err)
	}
	if n, _ := maxConnections(cfg.maxConns); n > 0 { // checked by parseServe
		capped := connlimit.New(ln, n)
		ln = capped
		refused := prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "waitroom_connections_refused_total",
			Help: "Connections answered 503 and closed because --max-connections were open.",
		}, func() float64 { return float64(capped.Refused()) })
		if err := reg.Register(refused); err != nil {
			return fmt.Errorf("register connection metrics: %w", err)
		}
		logger.Info("connections capped", "max", n)
	}
	// Outermost, so that the server's ConnState sees the guarded
	// connections: every request head is checked before net/http reads it
	// (package connguard).
	ln = connguard.Guard(srv, ln)
	fmt.Fprintf(stdout, "waitroom listening on %s\n", ln.Addr())
	if cfg.demo {
		base := "http://" + browsable(ln.Addr())
		fmt.Fprintf(stdout, "demo: open %s%s%s (one person per browser) or %s%s (one person per tab)\n",
			base, web.PagePrefix, web.DemoRoom, base, web.DemoPrefix)
	}
	logger.Info("serving", "addr", ln.Addr().String(), "store", storeKind(cfg), "data", cfg.data)

	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err := <-served:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}

	logger.Info("shutting down", "timeout", shutdownTimeout.String())
	shutCtx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(shutCtx); err != nil {
		logger.Warn("requests still running at the shutdown deadline; closing their connections", "err", err)
		srv.Close()
	}
	if err := <-served; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve: %w", err)
	}
	logger.Info("stopped")
	return nil
}

// newHTTPServer returns the server for handler. Requests get a context that
// carries ctx's values but is not cancelled with it: on shutdown, requests in
// flight finish (Shutdown waits for them) rather than fail.
func newHTTPServer(ctx context.Context, handler http.Handler, logger *slog.Logger) *http.Server {
	return &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: readHeaderTimeout,
		IdleTimeout:       idleTimeout,
		MaxHeaderBytes:    maxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
		BaseContext:       func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
	}
}

// maxConnections reads --max-connections: auto, 0 (no cap) or a count.
func maxConnections(v string) (int, error) {
	if v == "auto" {
		return connlimit.Auto(), nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 || n > 100_000_000 {
		return 0, fmt.Errorf("--max-connections must be auto, 0 or a whole number of connections, not %q", v)
	}
	return n, nil
}

// maxStreams is the cap on event streams under --max-connections: all but
// a fiftieth (at least 32) of the connections, which short requests keep.
func maxStreams(maxConns string) int {
	n, _ := maxConnections(maxConns) // checked by parseServe
	if n <= 0 {
		return 0
	}
	return max(n-max(n/50, 32), 1)
}

// browsable turns a listening address into a host:port a browser can open:
// an unspecified IP (":8080", "[::]:8080") becomes localhost.
func browsable(addr net.Addr) string {
	host, port, err := net.SplitHostPort(addr.String())
	if err != nil {
		return addr.String()
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "localhost"
	}
	return net.JoinHostPort(host, port)
}

func storeKind(cfg serveConfig) string {
	if cfg.store == "memory" {
		return "memory"
	}
	return "sqlite"
}

// openStore opens the backend cfg names.
func openStore(ctx context.Context, cfg serveConfig, logger *slog.Logger) (waitroom.Store, error) {
	switch {
	case cfg.store == "memory":
		logger.Warn("using the in-memory store: every room and session is lost when the process stops; use it for demos only")
		return memstore.New(), nil
	case isRedisURL(cfg.store):
		st, err := redisstore.Open(ctx, cfg.store)
		if err != nil {
			return nil, fmt.Errorf("open Redis store %s: %w", redactURL(cfg.store), err)
		}
		return st, nil
	}
	if err := os.MkdirAll(cfg.data, 0o700); err != nil {
		return nil, fmt.Errorf("create data folder: %w", err)
	}
	path := filepath.Join(cfg.data, dbFileName)
	st, err := sqlitestore.Open(ctx, path)
	if err != nil {
		return nil, fmt.Errorf("open SQLite store %s: %w", path, err)
	}
	return st, nil
}

// adminToken returns the admin token: from the flag or environment, else
// from <data>/admin-token, else a new random one written there. It prints
// the file's path (never the token) so an operator can find it.
func adminToken(cfg serveConfig, stdout io.Writer, logger *slog.Logger) (string, error) {
	if cfg.adminToken != "" {
		if len(cfg.adminToken) < 16 {
			logger.Warn("the admin token is shorter than 16 characters and easy to guess")
		}
		return cfg.adminToken, nil
	}
	path := filepath.Join(cfg.data, tokenFileName)
	if abs, err := filepath.Abs(path); err == nil {
		path = abs // the printed path must work from any directory
	}
	tok, err := readToken(path, logger)
	switch {
	case err == nil:
		fmt.Fprintf(stdout, "admin token read from %s\n", path)
		return tok, nil
	case !errors.Is(err, fs.ErrNotExist):
		return "", err
	}

	if err := os.MkdirAll(cfg.data, 0o700); err != nil {
		return "", fmt.Errorf("create data folder: %w", err)
	}
	var raw [32]byte
	_, _ = rand.Read(raw[:]) // crypto/rand.Read never fails on supported platforms
	tok = base64.RawURLEncoding.EncodeToString(raw[:])
	// O_EXCL: never overwrite a token another process wrote meanwhile.
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return "", fmt.Errorf("create admin token file: %w", err)
	}
	_, err = f.WriteString(tok + "\n")
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
		return "", fmt.Errorf("write admin token file: %w", err)
	}
	fmt.Fprintf(stdout, "admin token written to %s\n", path)
	return tok, nil
}

// readToken reads a token file; a missing file is an fs.ErrNotExist error.
func readToken(path string, logger *slog.Logger) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return "", err
		}
		return "", fmt.Errorf("read admin token: %w", err)
	}
	tok := strings.TrimSpace(string(b))
	if tok == "" {
		return "", fmt.Errorf("admin token file %s is empty; delete it to have a new token generated, or set --admin-token", path)
	}
	if fi, err := os.Stat(path); err == nil && fi.Mode().Perm()&0o077 != 0 {
		logger.Warn("the admin token file can be read by other users; chmod 600 it", "path", path, "mode", fi.Mode().Perm().String())
	}
	return tok, nil
}

// ensureDefaultRoom creates the default room with the default configuration
// when no room by that name exists. An existing one keeps its configuration.
func ensureDefaultRoom(ctx context.Context, store waitroom.Store, now time.Time, logger *slog.Logger) error {
	return ensureRoom(ctx, store, waitroom.DefaultRoom, now, logger)
}

// ensureRoom creates room with the default configuration unless it exists.
func ensureRoom(ctx context.Context, store waitroom.Store, room string, now time.Time, logger *slog.Logger) error {
	_, err := store.Room(ctx, room)
	switch {
	case err == nil:
		return nil
	case waitroom.ErrorCode(err) != waitroom.CodeRoomNotFound:
		return fmt.Errorf("read room %q: %w", room, err)
	}
	if _, _, err := store.PutRoom(ctx, room, waitroom.DefaultConfig(), now); err != nil {
		return fmt.Errorf("create room %q: %w", room, err)
	}
	logger.Info("created a room", "room", room)
	return nil
}

// demoCapacity is the demo room's capacity: small, so a few tabs show the
// line at work.
const demoCapacity = 3

// ensureDemoRoom creates room web.DemoRoom for --demo, or updates an
// existing one to the demo's capacity and target while keeping the rest of
// its configuration.
func ensureDemoRoom(ctx context.Context, store waitroom.Store, now time.Time, logger *slog.Logger) error {
	cfg := waitroom.DefaultConfig()
	room, err := store.Room(ctx, web.DemoRoom)
	switch {
	case err == nil:
		cfg = room.RoomConfig
	case waitroom.ErrorCode(err) != waitroom.CodeRoomNotFound:
		return fmt.Errorf("read room %q: %w", web.DemoRoom, err)
	}
	cfg.Mode = waitroom.ModeAuto
	cfg.Capacity = demoCapacity
	cfg.TargetURL = web.DemoAppPath
	if err == nil && cfg.Equal(room.RoomConfig) {
		return nil
	}
	if _, created, err := store.PutRoom(ctx, web.DemoRoom, cfg, now); err != nil {
		return fmt.Errorf("set up room %q for --demo: %w", web.DemoRoom, err)
	} else if created {
		logger.Info("created the demo room", "room", web.DemoRoom, "capacity", demoCapacity)
	} else {
		logger.Info("updated the demo room", "room", web.DemoRoom, "capacity", demoCapacity)
	}
	return nil
}

// serveLimits are the abuse limits built from serve's flags.
type serveLimits struct {
	rate        *limit.Limiter // nil: no per-address limit
	proxies     clientaddr.Trusted
	maxSessions int
	memory      *limit.MemoryGuard // nil: no guard
}

// limits parses the limit flags.
func (c *serveConfig) limits() (serveLimits, error) {
	var l serveLimits
	perMinute, err := strconv.Atoi(c.joinLimit)
	if err != nil || perMinute < 0 {
		return l, fmt.Errorf("--join-limit must be a whole number of joins a minute, 0 for none, not %q", c.joinLimit)
	}
	l.rate = limit.NewLimiter(perMinute, perMinute, 0)
	if l.proxies, err = clientaddr.Parse(c.trustedProxies); err != nil {
		return l, fmt.Errorf("--trusted-proxies: %w", err)
	}
	if l.maxSessions, err = strconv.Atoi(c.maxSessions); err != nil || l.maxSessions < 0 {
		return l, fmt.Errorf("--max-sessions-per-room must be a whole number, 0 for no cap, not %q", c.maxSessions)
	}
	bytes, err := memoryLimit(c.memoryLimit)
	if err != nil {
		return l, err
	}
	l.memory = limit.NewMemoryGuard(bytes, nil)
	return l, nil
}

// memoryLimit reads --memory-limit: bytes with an optional KiB/MiB/GiB
// suffix; empty means 90% of the Go runtime's memory limit (GOMEMLIMIT)
// when one is set, else none.
func memoryLimit(s string) (uint64, error) {
	if s == "" {
		if soft := debug.SetMemoryLimit(-1); soft < math.MaxInt64 {
			return uint64(soft) / 10 * 9, nil
		}
		return 0, nil
	}
	mult := uint64(1)
	for _, u := range []struct {
		suffix string
		mult   uint64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}} {
		if rest, ok := strings.CutSuffix(s, u.suffix); ok {
			s, mult = rest, u.mult
			break
		}
	}
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil || n > math.MaxUint64/mult {
		return 0, fmt.Errorf("--memory-limit must be a number of bytes (optionally KiB, MiB or GiB), not %q", s)
	}
	return n * mult, nil
}

// upstreamTransport carries requests to --upstream: many idle connections
// per host, since every visitor's request goes to the same app.
func upstreamTransport() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConns = 1024
	t.MaxIdleConnsPerHost = 1024
	return t
}

// doorSecretFile holds the secret that signs invites and challenges (package
// door), next to the pass keys: processes sharing a store share the folder.
const doorSecretFile = "door.key"

// loadDoorSecret reads the door's secret from dir, making one (32 random
// bytes, mode 0600) on first start.
func loadDoorSecret(dir string) ([]byte, error) {
	path := filepath.Join(dir, doorSecretFile)
	b, err := os.ReadFile(path)
	if err == nil {
		if len(b) < 32 {
			return nil, fmt.Errorf("door secret %s: %d bytes, want at least 32", path, len(b))
		}
		return b, nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("door secret: %w", err)
	}
	b = make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return nil, fmt.Errorf("door secret: %w", err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("door secret: %w", err)
	}
	// Written aside, then linked in: another process never reads half a
	// secret, and the first to link wins.
	tmp := fmt.Sprintf("%s.%d.tmp", path, os.Getpid())
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return nil, fmt.Errorf("door secret: %w", err)
	}
	defer os.Remove(tmp)
	if err := os.Link(tmp, path); errors.Is(err, os.ErrExist) {
		return loadDoorSecret(dir)
	} else if err != nil {
		return nil, fmt.Errorf("door secret: %w", err)
	}
	return b, nil
}
