package redisstore

import (
	"context"
	"fmt"
	"io"
	"net"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Open's clients fail fast while a primary is gone: a short dial timeout,
// short pauses between retries, a bounded wait for a pooled connection,
// and a Cluster slot map reloaded every few seconds; a URL that sets its
// own keeps it.
func TestNewClientFailoverDefaults(t *testing.T) {
	type opts struct {
		dial, backoff, pool, reload time.Duration
		dials, poolSize             int
	}
	size := max(10*runtime.GOMAXPROCS(0), minPoolSize)
	for _, tc := range []struct {
		url  string
		want opts
	}{
		{"redis://h:1/0", opts{dialTimeout, retryBackoff, poolTimeout, 0, dialTries, size}},
		{"redis://h:1/0?dial_timeout=3s&max_retry_backoff=1s&pool_timeout=4s&pool_size=7", opts{3 * time.Second, time.Second, 4 * time.Second, 0, dialTries, 7}},
		{"redis+cluster://a:1,b:2", opts{dialTimeout, retryBackoff, poolTimeout, clusterReloadInterval, dialTries, size}},
		{"redis+cluster://a:1?pool_timeout=2s", opts{dialTimeout, retryBackoff, 2 * time.Second, clusterReloadInterval, dialTries, size}},
		{"redis+sentinel://a:1,b:2/m", opts{dialTimeout, retryBackoff, poolTimeout, 0, dialTries, size}},
	} {
		c, err := newClient(tc.url)
		if err != nil {
			t.Fatalf("newClient(%q): %v", tc.url, err)
		}
		var got opts
		switch c := c.(type) {
		case *redis.Client:
			o := c.Options()
			got = opts{o.DialTimeout, o.MaxRetryBackoff, o.PoolTimeout, 0, o.DialerRetries, o.PoolSize}
		case *redis.ClusterClient:
			o := c.Options()
			got = opts{o.DialTimeout, o.MaxRetryBackoff, o.PoolTimeout, o.ClusterStateReloadInterval, o.DialerRetries, o.PoolSize}
		}
		_ = c.Close()
		if got != tc.want {
			t.Errorf("newClient(%q) = %+v, want %+v", tc.url, got, tc.want)
		}
	}
}

// Errors that may mean a node is gone or a slot moved reload the slot
// map; a command's own error, nil and the caller's cancellation do not.
func TestTopologyError(t *testing.T) {
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	bg := context.Background()
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
	for _, tc := range []struct {
		ctx  context.Context
		err  error
		want bool
	}{
		{bg, nil, false},
		{bg, redis.Nil, false},
		{bg, redis.ErrClosed, false},
		{canceled, context.Canceled, false},
		{bg, context.DeadlineExceeded, true},
		{bg, io.EOF, true},
		{bg, refused, true},
		{bg, fmt.Errorf("wrapped: %w", refused), true},
		{bg, redisError("CLUSTERDOWN The cluster is down"), true},
		{bg, redisError("TRYAGAIN Multiple keys request during rehashing of slot"), true},
		{bg, redisError("READONLY You can't write against a read only replica."), true},
		{bg, redisError("LOADING Redis is loading the dataset in memory"), true},
		{bg, redisError("ERR wrong number of arguments"), false},
		{bg, redisError("NOSCRIPT No matching script"), false},
	} {
		if got := topologyError(tc.ctx, tc.err); got != tc.want {
			t.Errorf("topologyError(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}

// redisError is a reply error as go-redis returns one.
type redisError string

func (e redisError) Error() string { return string(e) }
func (e redisError) RedisError()   {}
