package redisstore

import (
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"runtime"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Open connects to the Redis that url names and returns a Store on it; the
// Store's Close closes the connection. The forms are:
//
//	redis://[user:password@]host:port[/db][?options]
//	rediss://…                                   the same over TLS
//	redis+cluster://[user:password@]host:port[,host:port…][?options]
//	rediss+cluster://…                           a Cluster over TLS
//	redis+sentinel://[user:password@]host:port[,host:port…]/master[/db][?options]
//	rediss+sentinel://…                          Sentinel over TLS
//
// The cluster hosts are seed nodes; the client discovers the rest. The
// sentinel hosts are the sentinels, master is the monitored master's name,
// and user:password are the data nodes' credentials (the sentinels' go in
// the options sentinel_username and sentinel_password). Options are
// go-redis' URL options (dial_timeout, pool_size, …).
//
// Unless the URL says otherwise, each call is bounded: dial_timeout 1s,
// read_timeout and write_timeout 1.5s, max_retries 1, so that a Redis that
// hangs (a frozen host, a network dropping packets) makes calls fail with
// unavailable in about 3 seconds instead of go-redis' default of about 10;
// the outage policy (fail closed or open) then takes over. A primary that
// is gone (killed, restarting, being replaced) refuses connections, so
// calls fail at once, until Sentinel or the Cluster names a new one; a
// Cluster client then reloads its slot map at once (failover.go), not on
// go-redis' 60 s schedule; while Redis refuses, calls fail without
// dialing it, one probe at a time (outage.go). An operation on a room
// waits at most 1.5 seconds more for a pipeline to Redis, so it fails
// within 4.5 seconds in all (pipeline.go's callBound), however many tries
// go-redis makes. A script that runs longer than the read timeout (a
// forced DeleteRoom of a huge room) still completes in Redis, though its
// caller is told it failed.
func Open(ctx context.Context, rawURL string, opts ...Option) (*Store, error) {
	client, err := newClient(rawURL)
	if err != nil {
		return nil, err
	}
	s, err := New(ctx, client, opts...)
	if err != nil {
		_ = client.Close()
		return nil, err
	}
	s.ownClient = true
	return s, nil
}

// newClient builds the go-redis client for a URL.
func newClient(rawURL string) (redis.UniversalClient, error) {
	scheme, rest, ok := strings.Cut(rawURL, "://")
	if !ok {
		return nil, fmt.Errorf("redisstore: %q is not a redis:// URL", redact(rawURL))
	}
	_, rawQuery, _ := strings.Cut(rest, "?")
	query, _ := url.ParseQuery(rawQuery) // a bad query fails in the parsers below
	switch scheme {
	case "redis", "rediss":
		o, err := redis.ParseURL(rawURL)
		if err != nil {
			return nil, fmt.Errorf("redisstore: %w", err)
		}
		bound(query, &o.DialTimeout, &o.ReadTimeout, &o.WriteTimeout, &o.MaxRetries, &o.MaxRetryBackoff, &o.PoolTimeout, &o.DialerRetries, &o.PoolSize)
		return redis.NewClient(o), nil
	case "redis+cluster", "rediss+cluster":
		o, err := parseClusterURL(strings.TrimSuffix(scheme, "+cluster"), rest)
		if err != nil {
			return nil, err
		}
		bound(query, &o.DialTimeout, &o.ReadTimeout, &o.WriteTimeout, &o.MaxRetries, &o.MaxRetryBackoff, &o.PoolTimeout, &o.DialerRetries, &o.PoolSize)
		o.ClusterStateReloadInterval = clusterReloadInterval
		c := redis.NewClusterClient(o)
		watchCluster(c)
		return c, nil
	case "redis+sentinel", "rediss+sentinel":
		o, err := parseSentinelURL(strings.TrimSuffix(scheme, "+sentinel"), rest)
		if err != nil {
			return nil, err
		}
		bound(query, &o.DialTimeout, &o.ReadTimeout, &o.WriteTimeout, &o.MaxRetries, &o.MaxRetryBackoff, &o.PoolTimeout, &o.DialerRetries, &o.PoolSize)
		return redis.NewFailoverClient(o), nil
	}
	return nil, fmt.Errorf("redisstore: unknown URL scheme %q (want redis, rediss, redis+cluster, redis+sentinel)", scheme)
}

// Per-call bounds Open sets unless the URL gives its own; see Open.
const (
	// dialTimeout is short: go-redis' 5 s default held every call to a
	// primary whose host vanished (packets dropped, not refused) that long.
	dialTimeout = time.Second
	callTimeout = 1500 * time.Millisecond
	callRetries = 1
	// retryBackoff caps go-redis' pause before a retry (512 ms by
	// default): a Cluster client tries a dead master up to four times
	// (max_redirects 3), which with the default pauses held each call
	// about two seconds while the master was gone, where a refusal should
	// come back at once.
	retryBackoff = 100 * time.Millisecond
	// poolTimeout bounds the wait for a pooled connection (go-redis:
	// read_timeout + 1 s) to the read timeout.
	poolTimeout = callTimeout
	// dialTries is how many times go-redis' pool dials for one
	// connection (5 by default, 100 ms apart): against a killed primary
	// each dial for a call took 400 ms and more to fail, and twice that
	// with the call's own retry, so calls queued behind it for seconds
	// where a refusal should come back at once. A call still retries
	// (max_retries), and a host that drops packets costs one dial
	// timeout per try, not five.
	dialTries = 1
)

// bound applies the per-call bounds that query does not set.
func bound(query url.Values, dial, read, write *time.Duration, retries *int, backoff, poolWait *time.Duration, dialerRetries, poolSize *int) {
	*dialerRetries = dialTries
	if !query.Has("pool_size") {
		// go-redis' default is 10 per CPU; see minPoolSize.
		*poolSize = max(*poolSize, 10*runtime.GOMAXPROCS(0), minPoolSize)
	}
	if !query.Has("dial_timeout") {
		*dial = dialTimeout
	}
	if !query.Has("max_retry_backoff") {
		*backoff = retryBackoff
	}
	if !query.Has("pool_timeout") {
		*poolWait = poolTimeout
	}
	if !query.Has("read_timeout") {
		*read = callTimeout
	}
	if !query.Has("write_timeout") {
		*write = callTimeout
	}
	if !query.Has("max_retries") {
		*retries = callRetries
	}
}

// splitHosts splits "[userinfo@]h1,h2[/path][?query]" into its parts.
func splitHosts(rest string) (userinfo string, hosts []string, path, query string) {
	rest, query, _ = strings.Cut(rest, "?")
	if i := strings.IndexByte(rest, '/'); i >= 0 {
		rest, path = rest[:i], rest[i:]
	}
	if i := strings.LastIndexByte(rest, '@'); i >= 0 {
		userinfo, rest = rest[:i+1], rest[i+1:]
	}
	for _, h := range strings.Split(rest, ",") {
		if h = strings.TrimSpace(h); h != "" {
			hosts = append(hosts, h)
		}
	}
	return userinfo, hosts, path, query
}

// parseClusterURL turns the cluster form into go-redis' own (the first
// seed in the host, the others as addr options).
func parseClusterURL(scheme, rest string) (*redis.ClusterOptions, error) {
	userinfo, hosts, path, query := splitHosts(rest)
	if len(hosts) == 0 {
		return nil, fmt.Errorf("redisstore: a cluster URL names at least one host")
	}
	if path != "" && path != "/" {
		return nil, fmt.Errorf("redisstore: a cluster URL has no database path (%q)", path)
	}
	q, err := url.ParseQuery(query)
	if err != nil {
		return nil, fmt.Errorf("redisstore: cluster URL options: %w", err)
	}
	for _, h := range hosts[1:] {
		q.Add("addr", h)
	}
	o, err := redis.ParseClusterURL(scheme + "://" + userinfo + hosts[0] + "?" + q.Encode())
	if err != nil {
		return nil, fmt.Errorf("redisstore: %w", err)
	}
	return o, nil
}

// parseSentinelURL turns the sentinel form into go-redis' failover options.
func parseSentinelURL(scheme, rest string) (*redis.FailoverOptions, error) {
	userinfo, hosts, path, query := splitHosts(rest)
	if len(hosts) == 0 {
		return nil, fmt.Errorf("redisstore: a sentinel URL names at least one sentinel")
	}
	parts := strings.FieldsFunc(path, func(r rune) bool { return r == '/' })
	if len(parts) == 0 || len(parts) > 2 {
		return nil, fmt.Errorf("redisstore: a sentinel URL ends in /master-name[/db], not %q", path)
	}
	q, err := url.ParseQuery(query)
	if err != nil {
		return nil, fmt.Errorf("redisstore: sentinel URL options: %w", err)
	}
	sentUser, sentPass := q.Get("sentinel_username"), q.Get("sentinel_password")
	q.Del("sentinel_username")
	q.Del("sentinel_password")
	q.Set("master_name", parts[0])
	for _, h := range hosts[1:] {
		q.Add("addr", h)
	}
	db := ""
	if len(parts) == 2 {
		db = "/" + parts[1]
	}
	o, err := redis.ParseFailoverURL(scheme + "://" + hosts[0] + db + "?" + q.Encode())
	if err != nil {
		return nil, fmt.Errorf("redisstore: %w", err)
	}
	o.SentinelUsername, o.SentinelPassword = sentUser, sentPass
	if userinfo != "" {
		u, err := url.Parse(scheme + "://" + userinfo + "x")
		if err != nil || u.User == nil {
			return nil, fmt.Errorf("redisstore: bad credentials in sentinel URL")
		}
		o.Username = u.User.Username()
		o.Password, _ = u.User.Password()
		if _, hasPass := u.User.Password(); !hasPass {
			// redis://secret@host means a password, as go-redis reads it.
			o.Username, o.Password = "", u.User.Username()
		}
	}
	return o, nil
}

// redact hides credentials in a URL for error messages.
func redact(raw string) string {
	if u, err := url.Parse(raw); err == nil && u.User != nil {
		u.User = url.User("xxx")
		return u.String()
	}
	return raw
}

// SetClientLogger sends the lines go-redis logs itself (a dial that
// failed, a pub/sub connection dropped), which it otherwise prints raw to
// stderr, to l at debug level; nil discards them. go-redis has one logger
// for the whole process, so this sets it for every client in it. The
// Store reports the same failures as errors (unavailable), which a server
// logs in its own way.
func SetClientLogger(l *slog.Logger) { redis.SetLogger(clientLogger{l}) }

// clientLogger is go-redis' logger over an slog.Logger.
type clientLogger struct{ l *slog.Logger }

func (c clientLogger) Printf(ctx context.Context, format string, v ...any) {
	if c.l != nil {
		c.l.DebugContext(ctx, fmt.Sprintf(format, v...), "from", "go-redis")
	}
}
