package redistest_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/waitroom/waitroom/internal/redistest"
)

// TestSentinelFailover: the sentinels replace a killed primary with a
// replica that has its data, and the killed node comes back as a replica.
// (redisstore's failover test kills and heals again and again.)
func TestSentinelFailover(t *testing.T) {
	s := redistest.Sentinel(t)
	c := redis.NewFailoverClient(&redis.FailoverOptions{MasterName: redistest.MasterName, SentinelAddrs: s.Addrs()})
	defer c.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatalf("SET: %v", err)
	}
	if err := c.Wait(ctx, 2, time.Second).Err(); err != nil {
		t.Fatalf("WAIT: %v", err)
	}
	old, killed := s.KillPrimary()
	p, named := s.WaitNewPrimary(old)
	if p == old || old.Running() {
		t.Fatalf("the new primary is the killed one, or it still runs")
	}
	t.Logf("%s named %v after the kill", p.Addr, named.Sub(killed).Round(time.Millisecond))
	rc := redis.NewClient(&redis.Options{Addr: p.Addr})
	got, err := rc.Get(ctx, "k").Result()
	rc.Close()
	if err != nil || got != "v" {
		t.Fatalf("GET on the new primary = %q, %v; want v", got, err)
	}
	s.Heal(old)
	if !old.Running() || s.Primary() == old {
		t.Fatalf("after healing, the killed node is down or the primary")
	}
}

// TestClusterHAFailover: a killed master's replica takes its slots over,
// with the data, and the healed node comes back as a replica.
func TestClusterHAFailover(t *testing.T) {
	cl := redistest.ClusterHA(t)
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cl.Addrs()})
	defer c.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatalf("SET: %v", err)
	}
	m := cl.MasterOf("k")
	rc := redis.NewClient(&redis.Options{Addr: m.Addr})
	if err := rc.Wait(ctx, 1, time.Second).Err(); err != nil {
		t.Fatalf("WAIT: %v", err)
	}
	rc.Close()
	old, killed := cl.KillMasterOf("k")
	n, named := cl.WaitNewMaster("k", old)
	t.Logf("%s named master after %v", n.Addr, named.Sub(killed).Round(time.Millisecond))
	rc = redis.NewClient(&redis.Options{Addr: n.Addr})
	got, err := rc.Get(ctx, "k").Result()
	rc.Close()
	if err != nil || got != "v" {
		t.Fatalf("GET on the new master = %q, %v; want v", got, err)
	}
	cl.Heal(old)
	if m := cl.MasterOf("k"); m != n {
		t.Fatalf("after healing, %s is the master, want %s", m.Addr, n.Addr)
	}
}
