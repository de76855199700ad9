package redisstore_test

import (
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/internal/redistest"
	"github.com/waitroom/waitroom/redisstore"
	"github.com/waitroom/waitroom/storetest"
)

// prefixes gives every store of the package's tests its own key prefix, so
// stores on one Redis never see each other's rooms.
var prefixes atomic.Int64

func freshPrefix() string { return fmt.Sprintf("t%d", prefixes.Add(1)) }

// newStoreOn returns a constructor of stores on client, each with a fresh
// prefix and the given options.
func newStoreOn(client redis.UniversalClient, opts ...redisstore.Option) func(t *testing.T) waitroom.Store {
	return func(t *testing.T) waitroom.Store {
		t.Helper()
		s, err := redisstore.New(t.Context(), client, append([]redisstore.Option{redisstore.WithPrefix(freshPrefix())}, opts...)...)
		if err != nil {
			t.Fatalf("redisstore.New: %v", err)
		}
		t.Cleanup(func() { _ = s.Close() })
		return s
	}
}

func standalone(t *testing.T) redis.UniversalClient {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: redistest.Server(t)})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// TestStandalone runs the conformance suite and the model test against one
// real redis-server, the model also with an expiry batch of one, so nearly
// every expiry takes the path where an operation runs its script again for
// what is left; two processes sharing a room; three selling one room's
// stock; and three joining a tiered room. The subtests run in
// parallel on fresh key prefixes.
func TestStandalone(t *testing.T) {
	t.Parallel()
	addr := redistest.Server(t)
	runSuites(t, func() redis.UniversalClient { return redis.NewClient(&redis.Options{Addr: addr}) }, true)
}

// TestCluster runs the same against a three-master Redis Cluster, where
// events go over sharded pub/sub, and two processes again on classic
// pub/sub.
func TestCluster(t *testing.T) {
	t.Parallel()
	addrs := redistest.Cluster(t)
	runSuites(t, func() redis.UniversalClient { return redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs}) }, false)
}

// runSuites runs the suites on clients from newClient, in parallel. On a
// standalone server the model also runs with an expiry batch of one; on a
// Cluster the two processes also run on classic pub/sub.
func runSuites(t *testing.T, newClient func() redis.UniversalClient, standalone bool) {
	client := newClient()
	t.Cleanup(func() { _ = client.Close() })
	suites := map[string]func(t *testing.T){
		"Conformance":  func(t *testing.T) { storetest.Run(t, newStoreOn(client)) },
		"Model":        func(t *testing.T) { storetest.RunModel(t, newStoreOn(client)) },
		"TwoProcesses": func(t *testing.T) { testProcesses(t, newClient) },
		// Three processes selling one room's stock at once.
		"StockProcesses": func(t *testing.T) { testStockProcesses(t, newClient) },
		// Three processes joining a tiered room, racing for an invite.
		"TierProcessesStrict":   func(t *testing.T) { testTierProcesses(t, newClient, waitroom.TierStrict) },
		"TierProcessesWeighted": func(t *testing.T) { testTierProcesses(t, newClient, waitroom.TierWeighted) },
	}
	if standalone {
		suites["ModelSmallBatches"] = func(t *testing.T) {
			storetest.RunModel(t, newStoreOn(client, redisstore.WithExpiryBatch(1)))
		}
	} else {
		suites["TwoProcessesClassicPubSub"] = func(t *testing.T) {
			testProcesses(t, newClient, redisstore.WithShardedPubSub(false))
		}
	}
	for name, run := range suites {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			run(t)
		})
	}
}
