package redistest

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Replica starts a redis-server replicating primary ("host:port") and
// returns it once the primary lists it online, so a write the primary
// takes next reaches it. opts are as Start's. It is killed when the test
// ends.
func Replica(t testing.TB, primary string, opts ...Option) *Instance {
	t.Helper()
	host, port, err := net.SplitHostPort(primary)
	if err != nil {
		t.Fatalf("redistest: primary address %q: %v", primary, err)
	}
	in := Start(t, append(opts, WithArgs("--replicaof", host, port))...)
	err = poll(startTimeout, nil, func(ctx context.Context) error {
		c := redis.NewClient(&redis.Options{Addr: primary, MaxRetries: -1, DialTimeout: time.Second})
		defer c.Close()
		info, err := c.Info(ctx, "replication").Result()
		if err != nil {
			return err
		}
		_, p, _ := net.SplitHostPort(in.Addr)
		for _, line := range strings.Split(info, "\n") {
			if strings.HasPrefix(line, "slave") && strings.Contains(line, "port="+p+",") && strings.Contains(line, "state=online") {
				return nil
			}
		}
		return fmt.Errorf("replica %s is not online at %s yet", in.Addr, primary)
	})
	if err != nil {
		t.Fatalf("redistest: replica of %s: %v", primary, err)
	}
	linkUp(t, in.Addr)
	return in
}

// ClusterReplica starts a Cluster node that replicates the Cluster master
// at master (one of Cluster's addresses) and returns it once the master
// lists it online. It is killed when the test ends.
func ClusterReplica(t testing.TB, master string) *Instance {
	t.Helper()
	in := Start(t, WithArgs("--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf", "--cluster-node-timeout", "5000"))
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	m := redis.NewClient(&redis.Options{Addr: master})
	defer m.Close()
	r := redis.NewClient(&redis.Options{Addr: in.Addr})
	defer r.Close()
	id, err := m.Do(ctx, "cluster", "myid").Text()
	if err != nil {
		t.Fatalf("redistest: CLUSTER MYID of %s: %v", master, err)
	}
	host, port, _ := net.SplitHostPort(master)
	if err := r.ClusterMeet(ctx, host, port).Err(); err != nil {
		t.Fatalf("redistest: CLUSTER MEET: %v", err)
	}
	_, p, _ := net.SplitHostPort(in.Addr)
	err = poll(startTimeout, nil, func(ctx context.Context) error {
		// The new node must know the master before it can replicate it;
		// once told, it is not told again (that restarts its sync).
		return r.Do(ctx, "cluster", "replicate", id).Err()
	})
	if err != nil {
		t.Fatalf("redistest: CLUSTER REPLICATE %s: %v", master, err)
	}
	err = poll(startTimeout, nil, func(ctx context.Context) error {
		info, err := m.Info(ctx, "replication").Result()
		if err != nil {
			return err
		}
		for _, line := range strings.Split(info, "\n") {
			if strings.HasPrefix(line, "slave") && strings.Contains(line, "port="+p+",") && strings.Contains(line, "state=online") {
				return nil
			}
		}
		log, _ := os.ReadFile(filepath.Join(in.Dir, "redis.log"))
		return fmt.Errorf("replica %s of %s is not online yet: %s", in.Addr, master, tail(log, 1500))
	})
	if err != nil {
		t.Fatalf("redistest: cluster replica of %s: %v", master, err)
	}
	linkUp(t, in.Addr)
	return in
}

// linkUp waits until the replica at addr reports its link to the master
// up: it has loaded the master's data and acknowledges what follows.
func linkUp(t testing.TB, addr string) {
	t.Helper()
	err := poll(startTimeout, nil, func(ctx context.Context) error {
		c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialTimeout: time.Second})
		defer c.Close()
		info, err := c.Info(ctx, "replication").Result()
		if err != nil {
			return err
		}
		if !strings.Contains(info, "master_link_status:up") {
			return fmt.Errorf("replica %s: link to its master not up yet", addr)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("redistest: %v", err)
	}
}

// Freeze stops the server with SIGSTOP, as a frozen host would: its
// connections stay open but it answers nothing until Thaw. The test's end
// thaws it before killing it.
func (in *Instance) Freeze() {
	in.t.Helper()
	in.signal(syscall.SIGSTOP)
	in.t.Cleanup(in.Thaw)
}

// Thaw resumes a server Freeze stopped; a running one is left as it is.
func (in *Instance) Thaw() { in.signal(syscall.SIGCONT) }

func (in *Instance) signal(sig syscall.Signal) {
	in.mu.Lock()
	cmd := in.cmd
	in.mu.Unlock()
	if cmd == nil {
		return
	}
	if err := cmd.Process.Signal(sig); err != nil {
		in.t.Errorf("redistest: signalling %s: %v", in.Addr, err)
	}
}
