package redisstore

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// Failover. A Sentinel setup needs nothing here: go-redis' FailoverClient
// asks a sentinel for the primary on every dial, hears +switch-master and
// then closes its pooled connections to the old primary, and a call to a
// dead primary fails at once (connection refused or reset), so calls fail
// fast while there is no primary and succeed as soon as one is named.
//
// A Cluster client learns who serves a slot from its slot map, which
// go-redis refreshes only on MOVED or ASK, or once a minute: a refused
// connection to a dead master does not refresh it, so the client went on
// dialing the dead node for up to a minute after its replica had taken
// over (41-55 s measured, issue 25). clusterRefresher reloads the map on
// every error that may mean the topology changed, and keeps reloading it
// every slotsEvery for slotsFor after the last such error, so a
// caller that comes back after a quiet spell finds the new master.

// Cluster slot-map refresh timing.
const (
	// clusterReloadInterval replaces go-redis' 60 s periodic reload: one
	// CLUSTER SLOTS every few seconds per process costs nothing, and a
	// change nobody's error revealed is picked up within it.
	clusterReloadInterval = 5 * time.Second
	// slotsEvery is how often the map is reloaded while errors last;
	// go-redis coalesces reloads with a 200 ms cool-down anyway.
	slotsEvery = 250 * time.Millisecond
	// slotsFor is how long after the last error the reloads go on: a
	// Cluster names a new master within a few cluster-node-timeouts.
	slotsFor = 15 * time.Second
)

// clusterRefresher is a go-redis hook on a ClusterClient that reloads its
// slot map after errors that may mean a failover.
type clusterRefresher struct {
	c *redis.ClusterClient

	mu      sync.Mutex
	until   time.Time // reload until then
	running bool      // a reload loop runs
}

// watchCluster installs the refresher on c.
func watchCluster(c *redis.ClusterClient) {
	c.AddHook(&clusterRefresher{c: c})
}

var _ redis.Hook = (*clusterRefresher)(nil)

// DialHook implements redis.Hook.
func (h *clusterRefresher) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		cn, err := next(ctx, network, addr)
		h.saw(ctx, err)
		return cn, err
	}
}

// ProcessHook implements redis.Hook.
func (h *clusterRefresher) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		h.saw(ctx, err)
		return err
	}
}

// ProcessPipelineHook implements redis.Hook. Each command's error counts:
// a pipeline's own error is only its first command's.
func (h *clusterRefresher) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		h.saw(ctx, err)
		for _, cmd := range cmds {
			if h.saw(ctx, cmd.Err()) {
				break
			}
		}
		return err
	}
}

// saw reloads the slot map, and keeps reloading it for slotsFor, when
// err may mean the topology changed; it reports whether it did.
func (h *clusterRefresher) saw(ctx context.Context, err error) bool {
	if !topologyError(ctx, err) {
		return false
	}
	h.c.ReloadState(context.Background())
	h.mu.Lock()
	h.until = time.Now().Add(slotsFor)
	start := !h.running
	h.running = true
	h.mu.Unlock()
	if start {
		go h.loop()
	}
	return true
}

// loop reloads the slot map every slotsEvery until slotsFor has
// passed since the last error. It ends on its own, also after the client
// is closed (its errors then are not topology errors).
func (h *clusterRefresher) loop() {
	t := time.NewTicker(slotsEvery)
	defer t.Stop()
	for range t.C {
		h.mu.Lock()
		if time.Now().After(h.until) {
			h.running = false
			h.mu.Unlock()
			return
		}
		h.mu.Unlock()
		h.c.ReloadState(context.Background())
	}
}

// topologyError reports whether err may mean a node is gone or a slot has
// moved: a network error (refused, reset, timed out), or a Redis error
// that says the cluster is changing. Errors of the command itself, nil,
// and the caller's own cancellation are not.
func topologyError(ctx context.Context, err error) bool {
	switch {
	case err == nil, errors.Is(err, redis.Nil), errors.Is(err, redis.ErrClosed):
		return false
	case errors.Is(err, context.Canceled) && ctx.Err() != nil:
		return false
	}
	var rerr redis.Error
	if errors.As(err, &rerr) {
		msg := rerr.Error()
		for _, p := range []string{"CLUSTERDOWN", "TRYAGAIN", "MASTERDOWN", "READONLY", "LOADING"} {
			if strings.HasPrefix(msg, p) {
				return true
			}
		}
		// A reply error is Redis answering: the node is up. go-redis'
		// own errors (a pool timeout) implement redis.Error too, but
		// say nothing of the topology.
		return false
	}
	// io.EOF, a reset, a refused dial, a read timeout, a deadline: the
	// node may be gone.
	return true
}
