package main

import (
	"flag"
	"fmt"
	"io"
	"math"
	"net"
	"net/url"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/gate"
	"github.com/waitroom/waitroom/internal/clientaddr"
	"github.com/waitroom/waitroom/internal/connlimit"
	"github.com/waitroom/waitroom/redisstore"
	"github.com/waitroom/waitroom/server"
)

// serveOptions is what serve's command line says: the server's
// configuration, each value parsed once, and what only the command uses.
type serveOptions struct {
	addr      string
	logFormat string
	cfg       server.Config
}

// serveFlag describes one flag of serve, the environment variable that
// sets it when the flag is not given, and how its text becomes a value.
type serveFlag struct {
	name, env, def, help string
	// boolean makes a flag without a value (--demo); its environment
	// variable takes true/false, 1/0.
	boolean bool
	// set parses the flag's final text (flag, else environment, else
	// default) into o; its error is the usage message.
	set func(o *serveOptions, v string) error
}

// serveFlags lists serve's flags in the order -h shows them.
var serveFlags = []serveFlag{
	{name: "addr", env: "WAITROOM_ADDR", def: ":8080", help: "`address` to listen on (host:port; port 0 picks a free one)",
		set: func(o *serveOptions, v string) error { o.addr = v; return nonEmpty("--addr", v) }},
	{name: "metrics-addr", env: "WAITROOM_METRICS_ADDR", help: "`address` (host:port) of a second listener serving GET /metrics without the admin\ntoken, for a scraper that has none; bind it to loopback or a private network (the\nmetrics name every room). Empty: only --addr's /metrics, which needs the token",
		set: func(o *serveOptions, v string) error {
			o.cfg.MetricsAddr = v
			if _, _, err := net.SplitHostPort(v); v != "" && err != nil {
				return fmt.Errorf("--metrics-addr must be host:port such as 127.0.0.1:9090, not %q", v)
			}
			return nil
		}},
	{name: "data", env: "WAITROOM_DATA", def: "./waitroom-data", help: "`folder` for the database and the generated admin token",
		set: func(o *serveOptions, v string) error { o.cfg.DataDir = v; return nonEmpty("--data", v) }},
	{name: "store", env: "WAITROOM_STORE", help: "storage `backend`, one of:\n" +
		"  (empty) — the embedded SQLite store: the file waitroom.db in the data folder\n" +
		"  memory — in memory, lost when the process stops (demos only)\n" +
		"  redis://[user:password@]host:port[/db][?options] — one Redis; rediss:// over TLS\n" +
		"  redis+sentinel://[user:password@]host:port[,host:port…]/master[/db][?options] — the master " +
		"that the sentinels at these addresses name; rediss+sentinel:// over TLS; the sentinels' own " +
		"credentials go in the options sentinel_username and sentinel_password\n" +
		"  redis+cluster://[user:password@]host:port[,host:port…][?options] — a Redis Cluster found " +
		"from these seed nodes; rediss+cluster:// over TLS\n" +
		"  The options are go-redis' URL options (dial_timeout, pool_size, …). Logs and errors never show the password.",
		set: func(o *serveOptions, v string) error { o.cfg.StoreURL = v; return nil }},
	{name: "redis-ack-replicas", env: "WAITROOM_REDIS_ACK_REPLICAS", def: "auto", help: "with a Redis store, how many `replicas` must have each write before it is answered,\nso that an answered write survives the loss of the primary: auto — every replica the\nprimary reports online, and at least one once any was seen (a primary cut off from its\nreplicas confirms nothing); none on a Redis that has no replicas; a number — that many;\n0 — do not wait (an answered write can be lost when a replica is promoted). A write not\nconfirmed within --redis-ack-timeout answers 503 unavailable: it may have been made, and\na client tries again with its key",
		set: func(o *serveOptions, v string) (err error) {
			if v == "auto" {
				o.cfg.RedisAckReplicas = redisstore.AckAuto
				return nil
			}
			o.cfg.RedisAckReplicas, err = count("--redis-ack-replicas", v, 1000, "auto, 0 or a number of replicas")
			return err
		}},
	{name: "redis-ack-timeout", env: "WAITROOM_REDIS_ACK_TIMEOUT", def: "1s", help: "longest a write waits for its replicas (--redis-ack-replicas) before it answers\n503 unavailable (a Go `duration` from 1ms, shorter than the Redis read_timeout, 1.5s\nunless the store URL sets it)",
		set: func(o *serveOptions, v string) (err error) {
			o.cfg.RedisAckTimeout, err = duration("--redis-ack-timeout", v, time.Millisecond, time.Minute, "a duration from 1ms to 1m such as 1s")
			return err
		}},
	{name: "admin-token", env: "WAITROOM_ADMIN_TOKEN", help: "bearer `token` for the admin API, at least 16 characters; when unset, it is read from\n<data>/admin-token, which is generated (mode 0600) on first start",
		set: func(o *serveOptions, v string) error { o.cfg.AdminToken = v; return nil }},
	{name: "log-format", env: "WAITROOM_LOG_FORMAT", def: "text", help: "log `format` on stderr: text or json",
		set: func(o *serveOptions, v string) error {
			o.logFormat = v
			if v != "text" && v != "json" {
				return fmt.Errorf("--log-format must be text or json, not %q", v)
			}
			return nil
		}},
	{name: "templates", env: "WAITROOM_TEMPLATES", help: "`folder` of waiting-page templates: page.html for every room, <room>.html for one\n(html/template; see the README's \"Waiting page\" section)",
		set: func(o *serveOptions, v string) error { o.cfg.Templates = v; return nil }},
	{name: "on-store-down", env: "WAITROOM_ON_STORE_DOWN", def: "closed", help: "`policy` while the store (Redis) is unreachable: closed keeps everyone in line\n(pages say the line is paused; the API answers 503), open sends visitors on to\nthe room's target once it has been down for --fail-open-after",
		set: func(o *serveOptions, v string) error {
			if v != "closed" && v != "open" {
				return fmt.Errorf("--on-store-down must be closed or open, not %q", v)
			}
			o.cfg.FailOpen = v == "open"
			return nil
		}},
	{name: "fail-open-after", env: "WAITROOM_FAIL_OPEN_AFTER", def: "10s", help: "how long the store must be unreachable before --on-store-down open lets\nvisitors through (a Go `duration`)",
		set: func(o *serveOptions, v string) (err error) {
			o.cfg.FailOpenAfter, err = duration("--fail-open-after", v, time.Nanosecond, math.MaxInt64, "a positive duration such as 10s")
			return err
		}},
	{name: "max-connections", env: "WAITROOM_MAX_CONNECTIONS", def: "auto", help: "most `connections` open at once; over it a new one is answered 503 unavailable\nand closed; auto: the open-file limit less 256 (kept for the store and logs); 0: no cap",
		set: func(o *serveOptions, v string) (err error) {
			if v == "auto" {
				o.cfg.MaxConnections = connlimit.Auto()
				return nil
			}
			o.cfg.MaxConnections, err = count("--max-connections", v, 100_000_000, "auto, 0 or a whole number of connections")
			return err
		}},
	{name: "max-connections-per-address", env: "WAITROOM_MAX_CONNECTIONS_PER_ADDRESS", def: "auto", help: "most `connections` one client address holds at once (the TCP peer, IPv6 per /64;\n--trusted-proxies are not capped per address); over it a new one is answered 429\nrate_limited and closed; auto: a tenth of --max-connections, at least 16; 0: no cap",
		set: func(o *serveOptions, v string) (err error) {
			if v == "auto" {
				o.cfg.MaxConnectionsPerAddress = server.AutoCap
				return nil
			}
			o.cfg.MaxConnectionsPerAddress, err = count("--max-connections-per-address", v, 100_000_000, "auto, 0 or a whole number of connections")
			return err
		}},
	{name: "max-streams-per-address", env: "WAITROOM_MAX_STREAMS_PER_ADDRESS", def: "auto", help: "most live `streams` (SSE and WebSocket) one client address holds (IPv6 per /64,\nas --trusted-proxies name it); over it a stream answers 429 rate_limited; auto: three\nquarters of --max-connections-per-address; 0: no cap",
		set: func(o *serveOptions, v string) (err error) {
			if v == "auto" {
				o.cfg.MaxStreamsPerAddress = server.AutoCap
				return nil
			}
			o.cfg.MaxStreamsPerAddress, err = count("--max-streams-per-address", v, 100_000_000, "auto, 0 or a whole number of streams")
			return err
		}},
	{name: "max-streams-per-session", env: "WAITROOM_MAX_STREAMS_PER_SESSION", def: "4", help: "most live `streams` one session holds (its tabs and devices); over it a stream\nanswers 429 rate_limited and the page polls instead; 0: no cap",
		set: func(o *serveOptions, v string) (err error) {
			o.cfg.MaxStreamsPerSession, err = count("--max-streams-per-session", v, 1_000_000, "0 or a whole number of streams")
			return err
		}},
	{name: "push-refresh", env: "WAITROOM_PUSH_REFRESH", def: "5s", help: "longest a live page away from the front of the line goes without a fresh\nposition and ETA (a Go `duration`; see the README's \"Live updates\")",
		set: func(o *serveOptions, v string) (err error) {
			o.cfg.PushRefresh, err = duration("--push-refresh", v, 100*time.Millisecond, time.Hour, "a duration from 100ms to 1h such as 5s")
			return err
		}},
	{name: "push-front", env: "WAITROOM_PUSH_FRONT", def: "100", help: "how many `people` at the front of a line are told every change at once",
		set: func(o *serveOptions, v string) error {
			n, err := count("--push-front", v, 1_000_000, "a whole number from 1 to 1000000")
			if err == nil && n < 1 {
				err = fmt.Errorf("--push-front must be a whole number from 1 to 1000000, not %q", v)
			}
			o.cfg.PushFront = int64(n)
			return err
		}},
	{name: "join-limit", env: "WAITROOM_JOIN_LIMIT", def: "120", help: "most `joins` a minute per client address (bursts of as many; IPv6 per /64);\nover it a join answers 429 with Retry-After; 0 turns the limit off",
		set: func(o *serveOptions, v string) (err error) {
			o.cfg.JoinsPerMinute, err = count("--join-limit", v, math.MaxInt32, "a whole number of joins a minute, 0 for none")
			return err
		}},
	{name: "trusted-proxies", env: "WAITROOM_TRUSTED_PROXIES", help: "comma-separated `CIDRs` of the proxies in front of waitroom; only their\nX-Forwarded-For names the client (for --join-limit); empty trusts nobody",
		set: func(o *serveOptions, v string) error {
			t, err := clientaddr.Parse(v)
			if err != nil {
				return fmt.Errorf("--trusted-proxies: %w", err)
			}
			o.cfg.TrustedProxies = t.Prefixes()
			return nil
		}},
	{name: "max-sessions-per-room", env: "WAITROOM_MAX_SESSIONS_PER_ROOM", def: "2000000", help: "most live `sessions` (waiting and active) per room; a join over it answers\n503 room_full; 0 means no cap",
		set: func(o *serveOptions, v string) (err error) {
			o.cfg.MaxSessionsPerRoom, err = count("--max-sessions-per-room", v, math.MaxInt32, "a whole number, 0 for no cap")
			return err
		}},
	{name: "memory-limit", env: "WAITROOM_MEMORY_LIMIT", help: "`bytes` of memory in use over which joins answer 503 room_full (suffixes\nKiB, MiB, GiB); empty: 90% of GOMEMLIMIT when that is set, else no guard;\n0: no guard",
		set: func(o *serveOptions, v string) (err error) { o.cfg.MemoryLimit, err = memoryLimit(v); return err }},
	{name: "upstream", env: "WAITROOM_UPSTREAM", help: "`URL` of the app to protect (reverse-proxy mode): requests with a valid pass\ngo through to it, everyone else joins --room and waits; /r/, /waitroom.js,\n/v1/ and the operations endpoints stay waitroom's",
		set: func(o *serveOptions, v string) (err error) {
			o.cfg.Upstream, err = absoluteURL("--upstream", v, "an absolute http(s) URL")
			return err
		}},
	{name: "room", env: "WAITROOM_ROOM", def: waitroom.DefaultRoom, help: "`room` whose pass --upstream requires",
		set: func(o *serveOptions, v string) error {
			o.cfg.Room = v
			if !waitroom.ValidRoomName(v) {
				return fmt.Errorf("--room %q is not a valid room name", v)
			}
			return nil
		}},
	{name: "bypass", env: "WAITROOM_BYPASS", help: "comma-separated `paths` that reach --upstream without a pass: prefixes\n(/static/), suffix patterns (*.css) or path.Match patterns",
		set: func(o *serveOptions, v string) error {
			for b := range strings.SplitSeq(v, ",") {
				if b = strings.TrimSpace(b); b != "" {
					o.cfg.Bypass = append(o.cfg.Bypass, b)
				}
			}
			return nil
		}},
	{name: "public-url", env: "WAITROOM_PUBLIC_URL", help: "`URL` (scheme://host[:port]) where browsers reach waitroom's pages, for the\nredirects of forward-auth and the claim links webhooks send (claim_url); empty:\nthe host of the gated request, and webhooks carry only the claim path",
		set: func(o *serveOptions, v string) (err error) {
			o.cfg.PublicURL, err = absoluteURL("--public-url", v, "scheme://host[:port]")
			if err == nil && o.cfg.PublicURL != nil && o.cfg.PublicURL.Path != "" && o.cfg.PublicURL.Path != "/" {
				err = fmt.Errorf("--public-url must be scheme://host[:port], not %q", v)
			}
			return err
		}},
	{name: "console-host", env: "WAITROOM_CONSOLE_HOST", help: "the one `host` (or host:port) that serves the operator console at /admin/ and on which\nthe admin API takes its sign-in cookie, e.g. admin.example.com: keeps the console off the\nprotected app's origin, where the app's scripts could use it; empty: every host",
		set: func(o *serveOptions, v string) error { o.cfg.ConsoleHost = v; return nil }},
	{name: "pass-alg", env: "WAITROOM_PASS_ALG", def: gate.AlgEdDSA, help: "signing `algorithm` of passes: EdDSA (Ed25519, public keys at\n/.well-known/jwks.json) or HS256 (a shared secret, nothing published)",
		set: func(o *serveOptions, v string) error {
			o.cfg.PassAlg = v
			if v != gate.AlgEdDSA && v != gate.AlgHS256 {
				return fmt.Errorf("--pass-alg must be EdDSA or HS256, not %q", v)
			}
			return nil
		}},
	{name: "pass-keys", env: "WAITROOM_PASS_KEYS", help: "`folder` of pass signing keys, generated on first start; empty: <data>/keys",
		set: func(o *serveOptions, v string) error { o.cfg.PassKeysDir = v; return nil }},
	{name: "webhook-allow-private", env: "WAITROOM_WEBHOOK_ALLOW_PRIVATE", boolean: true, help: "let webhooks reach loopback and private-network addresses (off: such URLs\nare refused, and so is any name that resolves to one: SSRF)",
		set: func(o *serveOptions, v string) (err error) {
			o.cfg.WebhookAllowPrivate, err = strconv.ParseBool(v)
			return err
		}},
	{name: "webhook-lease", env: "WAITROOM_WEBHOOK_LEASE", def: "30s", help: "how long a process holds a webhook delivery it is trying before another may\ntake it over (a Go `duration`, 3s to 10m; each try may take a third of it)",
		set: func(o *serveOptions, v string) (err error) {
			o.cfg.WebhookLease, err = duration("--webhook-lease", v, 3*time.Second, 10*time.Minute, "a duration from 3s to 10m such as 30s")
			return err
		}},
	{name: "webhook-backoff-max", env: "WAITROOM_WEBHOOK_BACKOFF_MAX", def: "1h", help: "longest wait between two tries of a failing webhook delivery (a Go `duration`,\n100ms to 24h); the waits start at 1s and double, with jitter, for up to 24 hours",
		set: func(o *serveOptions, v string) (err error) {
			o.cfg.WebhookBackoffMax, err = duration("--webhook-backoff-max", v, 100*time.Millisecond, 24*time.Hour, "a duration from 100ms to 24h such as 1h")
			return err
		}},
	{name: "rooms", env: "WAITROOM_ROOMS", help: "rooms `file` (YAML or JSON) declaring rooms and their settings, applied at start\nand again on SIGHUP; see the README's \"Rooms as a file\"",
		set: func(o *serveOptions, v string) error { o.cfg.RoomsFile = v; return nil }},
	{name: "demo", env: "WAITROOM_DEMO", boolean: true, help: "create room \"demo-room\" (capacity 3, target /demo/app/) unless it exists, and serve the demo app",
		set: func(o *serveOptions, v string) (err error) { o.cfg.Demo, err = strconv.ParseBool(v); return err }},
}

// parseServe reads serve's flags, then fills each flag not given on the
// command line from its environment variable: flags beat the environment,
// which beats the defaults. Each flag's text is parsed once, into the
// server's typed Config.
func parseServe(args []string, getenv func(string) string, stderr io.Writer) (serveOptions, error) {
	o := serveOptions{cfg: server.Defaults()}
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	for _, f := range serveFlags {
		if f.boolean {
			fs.Bool(f.name, false, f.help)
			continue
		}
		fs.String(f.name, f.def, f.help)
	}
	setHelp(fs, serveHelp)
	if err := parseFlags(fs, args); err != nil {
		return o, err
	}
	given := make(map[string]bool)
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	for _, f := range serveFlags {
		v := fs.Lookup(f.name).Value.String()
		if env := getenv(f.env); !given[f.name] && env != "" {
			if _, err := strconv.ParseBool(env); f.boolean && err != nil {
				return o, badUsage(fs, "%s must be true or false, not %q", f.env, env)
			}
			v = env
		}
		if err := f.set(&o, v); err != nil {
			return o, badUsage(fs, "%v", err)
		}
	}
	if err := o.cfg.Check(); err != nil {
		return o, badUsage(fs, "%v", err)
	}
	return o, nil
}

// serveHelp is serve's -h; each flag shows its environment variable.
var serveHelp = helpText{
	usage: "waitroom serve [flags]",
	about: "Runs the waitroom server: the JSON API, the waiting pages, the operator console (/admin/) " +
		"and the health and metrics endpoints, on one address, until it is interrupted. Rooms and sessions " +
		"live in the store (--store): by default an SQLite file in the data folder, which also holds the " +
		"generated admin token and the signing keys; nothing is written there until the address is bound " +
		"and the store is open. Each flag may also be set by its environment variable; a flag on the " +
		"command line wins.",
	examples: []string{
		"waitroom serve --demo",
		"waitroom serve --addr :8080 --data /var/lib/waitroom --join-limit 0",
		"WAITROOM_ADMIN_TOKEN=… waitroom serve --store redis://:password@10.0.0.5:6379/0",
	},
	order: func() []string {
		var names []string
		for _, f := range serveFlags {
			names = append(names, f.name)
		}
		return names
	}(),
	env: func(name string) string {
		for _, f := range serveFlags {
			if f.name == name {
				return f.env
			}
		}
		return ""
	},
}

func nonEmpty(flag, v string) error {
	if v == "" {
		return fmt.Errorf("%s must not be empty", flag)
	}
	return nil
}

// duration reads a Go duration within [lo, hi]; want says what is asked.
func duration(flag, v string, lo, hi time.Duration, want string) (time.Duration, error) {
	d, err := time.ParseDuration(v)
	if err != nil || d < lo || d > hi {
		return 0, fmt.Errorf("%s must be %s, not %q", flag, want, v)
	}
	return d, nil
}

// count reads a whole number from 0 to most; want says what is asked.
func count(flag, v string, most int, want string) (int, error) {
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 || n > most {
		return 0, fmt.Errorf("%s must be %s, not %q", flag, want, v)
	}
	return n, nil
}

// absoluteURL reads an absolute http(s) URL; "" is none.
func absoluteURL(flag, v, want string) (*url.URL, error) {
	if v == "" {
		return nil, nil
	}
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("%s must be %s, not %q", flag, want, v)
	}
	return u, nil
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
