package redistest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// ClusterNodeTimeout is the cluster-node-timeout of ClusterHA: a master
// that has not answered for this long is judged failing, and its replica
// takes over about a second or two later.
const ClusterNodeTimeout = time.Second

// HACluster is a six-node Redis Cluster of a test: three masters, each
// with one replica, AOF on every node (appendfsync always).
type HACluster struct {
	// Nodes are the six nodes, in no particular role.
	Nodes []*Instance

	t testing.TB
}

// ClusterHA starts a Redis Cluster of three masters and three replicas
// (cluster-node-timeout ClusterNodeTimeout) and returns once every node
// sees all six, every slot is served, and every replica is in sync. The
// nodes are killed when the test ends.
func ClusterHA(t testing.TB, opts ...Option) *HACluster {
	t.Helper()
	cli := lookPath(t, "redis-cli", "redis-tools")
	base := t.TempDir()
	c := &HACluster{t: t}
	var addrs []string
	for i := 0; i < 6; i++ {
		dir := filepath.Join(base, fmt.Sprintf("node%d", i))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatalf("redistest: %v", err)
		}
		o := append(append([]Option{}, opts...), WithAOF(), WithDir(dir), WithArgs(
			"--cluster-enabled", "yes",
			"--cluster-config-file", "nodes.conf",
			"--cluster-node-timeout", fmt.Sprint(ClusterNodeTimeout.Milliseconds())))
		in := Start(t, o...)
		c.Nodes = append(c.Nodes, in)
		addrs = append(addrs, in.Addr)
	}
	args := append([]string{"--cluster", "create"}, addrs...)
	args = append(args, "--cluster-replicas", "1", "--cluster-yes")
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, cli, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("redistest: redis-cli --cluster create: %v\n%s", err, out)
	}
	if err := poll(failoverWait, nil, c.settled); err != nil {
		t.Fatalf("redistest: the cluster did not become ready: %v", err)
	}
	return c
}

// Addrs returns the six nodes' addresses.
func (c *HACluster) Addrs() []string {
	out := make([]string, len(c.Nodes))
	for i, in := range c.Nodes {
		out[i] = in.Addr
	}
	return out
}

// URL returns the redis+cluster:// URL of the cluster, as redisstore.Open
// reads it.
func (c *HACluster) URL() string {
	return "redis+cluster://" + strings.Join(c.Addrs(), ",")
}

// MasterOf returns the node that serves key's slot as master, as the
// first live node that answers sees it.
func (c *HACluster) MasterOf(key string) *Instance {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	addr, err := c.masterOf(ctx, key, "")
	if err != nil {
		c.t.Fatalf("redistest: the master of %q: %v", key, err)
	}
	return c.node(addr)
}

// masterOf asks the live nodes other than skip, in turn, which address
// serves key's slot as master.
func (c *HACluster) masterOf(ctx context.Context, key, skip string) (string, error) {
	var lastErr error
	for _, in := range c.Nodes {
		if in.Addr == skip || !in.Running() {
			continue
		}
		rc := redis.NewClient(&redis.Options{Addr: in.Addr, MaxRetries: -1, DialTimeout: time.Second})
		slot, err := rc.ClusterKeySlot(ctx, key).Result()
		var slots []redis.ClusterSlot
		if err == nil {
			slots, err = rc.ClusterSlots(ctx).Result()
		}
		rc.Close()
		if err != nil {
			lastErr = err
			continue
		}
		for _, s := range slots {
			if int64(s.Start) <= slot && slot <= int64(s.End) && len(s.Nodes) > 0 {
				return s.Nodes[0].Addr, nil
			}
		}
		lastErr = fmt.Errorf("%s: no node serves slot %d", in.Addr, slot)
	}
	if lastErr == nil {
		lastErr = fmt.Errorf("no live node")
	}
	return "", lastErr
}

// KillMasterOf kills the master of key's slot with SIGKILL and returns it
// and when it died.
func (c *HACluster) KillMasterOf(key string) (*Instance, time.Time) {
	c.t.Helper()
	m := c.MasterOf(key)
	m.Kill()
	return m, time.Now()
}

// WaitNewMaster waits until a live node names a master of key's slot
// other than old, and that node says it is a master; it returns the node
// and when that was first seen (polled every few milliseconds).
func (c *HACluster) WaitNewMaster(key string, old *Instance) (*Instance, time.Time) {
	c.t.Helper()
	deadline := time.Now().Add(failoverWait)
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		addr, err := c.masterOf(ctx, key, old.Addr)
		if err == nil && addr != old.Addr {
			rc := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialTimeout: time.Second})
			info, ierr := rc.Info(ctx, "replication").Result()
			rc.Close()
			if ierr == nil && infoFields(info)["role"] == "master" {
				cancel()
				return c.node(addr), time.Now()
			}
		}
		cancel()
		time.Sleep(5 * time.Millisecond)
	}
	c.t.Fatalf("redistest: no new master of %q within %s of losing %s", key, failoverWait, old.Addr)
	return nil, time.Time{}
}

// Heal restarts old (a killed master) and waits until it has rejoined as
// a replica in sync and the whole cluster is ok again.
func (c *HACluster) Heal(old *Instance) {
	c.t.Helper()
	old.Restart()
	if err := poll(failoverWait, nil, c.settled); err != nil {
		c.t.Fatalf("redistest: the cluster did not heal: %v", err)
	}
}

// settled reports nil when every node sees the cluster ok with all six
// nodes and every slot, and three of them are replicas in sync.
func (c *HACluster) settled(ctx context.Context) error {
	replicas := 0
	for _, in := range c.Nodes {
		if err := clusterOK(ctx, in.Addr, len(c.Nodes)); err != nil {
			return err
		}
		rc := redis.NewClient(&redis.Options{Addr: in.Addr, MaxRetries: -1, DialTimeout: time.Second})
		info, err := rc.Info(ctx, "replication").Result()
		rc.Close()
		if err != nil {
			return fmt.Errorf("%s: %w", in.Addr, err)
		}
		f := infoFields(info)
		switch f["role"] {
		case "slave":
			if f["master_link_status"] != "up" || f["master_sync_in_progress"] != "0" {
				return fmt.Errorf("%s: replica link %s", in.Addr, f["master_link_status"])
			}
			replicas++
		case "master":
			if f["connected_slaves"] != "1" {
				return fmt.Errorf("%s: master with %s replicas", in.Addr, f["connected_slaves"])
			}
		}
	}
	if replicas != 3 {
		return fmt.Errorf("%d replicas in sync, want 3", replicas)
	}
	return nil
}

// node returns the instance at addr.
func (c *HACluster) node(addr string) *Instance {
	c.t.Helper()
	for _, in := range c.Nodes {
		if in.Addr == addr {
			return in
		}
	}
	c.t.Fatalf("redistest: %s is none of the cluster's nodes", addr)
	return nil
}

// Running reports whether the server's process runs: false after Kill,
// until Restart.
func (in *Instance) Running() bool {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.cmd != nil
}
