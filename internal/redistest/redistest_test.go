package redistest_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/waitroom/waitroom/internal/redistest"
)

func TestServer(t *testing.T) {
	addr := redistest.Server(t)
	c := redis.NewClient(&redis.Options{Addr: addr})
	defer c.Close()
	if got, err := c.Ping(t.Context()).Result(); err != nil || got != "PONG" {
		t.Fatalf("PING = %q, %v; want PONG", got, err)
	}
	if got, err := c.ConfigGet(t.Context(), "appendonly").Result(); err != nil || got["appendonly"] != "no" {
		t.Fatalf("appendonly = %v, %v; want no (no persistence unless asked)", got, err)
	}
}

func TestRestartKeepsAOF(t *testing.T) {
	in := redistest.Start(t, redistest.WithAOF())
	ctx := t.Context()
	c := redis.NewClient(&redis.Options{Addr: in.Addr})
	defer c.Close()
	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatalf("SET: %v", err)
	}
	in.Restart()
	if got, err := c.Get(ctx, "k").Result(); err != nil || got != "v" {
		t.Fatalf("GET after a kill and restart = %q, %v; want v (appendfsync always)", got, err)
	}
}

func TestCluster(t *testing.T) {
	addrs := redistest.Cluster(t)
	if len(addrs) != 3 {
		t.Fatalf("Cluster returned %d addresses, want 3", len(addrs))
	}
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs})
	defer c.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	// Keys in different slots land on different masters and all work.
	for _, k := range []string{"a", "b", "c", "d", "e", "{x}1", "{y}2"} {
		if err := c.Set(ctx, k, k, 0).Err(); err != nil {
			t.Fatalf("SET %s: %v", k, err)
		}
	}
	var masters atomic.Int32 // ForEachMaster calls concurrently
	err := c.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error {
		masters.Add(1)
		return m.Ping(ctx).Err()
	})
	if err != nil || masters.Load() != 3 {
		t.Fatalf("ForEachMaster = %d masters, %v; want 3", masters.Load(), err)
	}
}
