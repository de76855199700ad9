package redistest

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Sentinel failover settings of the harness: a primary is judged down
// after a second without answers, two of the three sentinels must agree,
// and a failover that stalls is given up (and may be tried again) after
// FailoverTimeout. Sentinel tries again against the same master only
// after twice that, so Heal waits that long after a switch. (With 2 s, a
// promotion slowed by a busy machine was given up, and the sentinels then
// turned the promoted replica back into a replica of the dead primary and
// found no replica fit to promote for over a minute.)
const (
	MasterName      = "mymaster"
	DownAfter       = time.Second
	FailoverTimeout = 5 * time.Second
	sentinelQuorum  = 2
)

// failoverWait bounds how long a failover, or the healing after it, may
// take before the harness gives up on it (a hang guard, not a verdict).
const failoverWait = 60 * time.Second

// SentinelSet is a primary, two replicas and three sentinels of a test,
// all on loopback with AOF on every data node (appendfsync always).
type SentinelSet struct {
	// Nodes are the data nodes; Nodes[0] was the primary at the start.
	Nodes []*Instance
	// Sentinels are the three sentinels.
	Sentinels []*Instance

	t          testing.TB
	lastSwitch time.Time
}

// Sentinel starts a primary, two replicas replicating from it and three
// sentinels monitoring it as MasterName (quorum 2, down after DownAfter),
// and returns once every sentinel knows both replicas and the other two
// sentinels and both replicas are in sync. redis-sentinel comes with the
// Debian package redis-sentinel; it is skipped without it (a failure under
// CI=true). opts apply to the data nodes. Everything is killed when the
// test ends.
func Sentinel(t testing.TB, opts ...Option) *SentinelSet {
	t.Helper()
	bin := lookPath(t, "redis-sentinel", "redis-sentinel")
	s := &SentinelSet{t: t}
	base := t.TempDir()
	node := func(i int, extra ...string) *Instance {
		dir := filepath.Join(base, fmt.Sprintf("node%d", i))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatalf("redistest: %v", err)
		}
		o := append(append([]Option{}, opts...), WithAOF(), WithDir(dir), WithArgs(extra...))
		return Start(t, o...)
	}
	primary := node(0)
	_, pport, _ := net.SplitHostPort(primary.Addr)
	s.Nodes = []*Instance{primary,
		node(1, "--replicaof", "127.0.0.1", pport),
		node(2, "--replicaof", "127.0.0.1", pport)}
	for i := 0; i < 3; i++ {
		dir := filepath.Join(base, fmt.Sprintf("sentinel%d", i))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatalf("redistest: %v", err)
		}
		s.Sentinels = append(s.Sentinels, startSentinel(t, bin, dir, pport))
	}
	if err := poll(failoverWait, nil, s.settled); err != nil {
		t.Fatalf("redistest: the sentinels did not settle: %v\n%s", err, s.logs())
	}
	return s
}

// startSentinel runs a sentinel monitoring the primary on port pport.
func startSentinel(t testing.TB, bin, dir, pport string) *Instance {
	t.Helper()
	var lastErr error
	for attempt := 0; attempt < 5; attempt++ {
		port, err := freePort()
		if err != nil {
			t.Fatalf("redistest: finding a free port: %v", err)
		}
		conf := filepath.Join(dir, "sentinel.conf")
		text := fmt.Sprintf(`port %d
bind 127.0.0.1
daemonize no
protected-mode no
dir %s
logfile sentinel.log
sentinel resolve-hostnames no
sentinel monitor %s 127.0.0.1 %s %d
sentinel down-after-milliseconds %s %d
sentinel failover-timeout %s %d
sentinel parallel-syncs %s 2
`, port, dir, MasterName, pport, sentinelQuorum, MasterName, DownAfter.Milliseconds(),
			MasterName, FailoverTimeout.Milliseconds(), MasterName)
		if err := os.WriteFile(conf, []byte(text), 0o644); err != nil {
			t.Fatalf("redistest: %v", err)
		}
		in := &Instance{
			Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)),
			Dir:  dir, t: t, bin: bin, args: []string{conf},
		}
		if lastErr = in.start(); lastErr == nil {
			t.Cleanup(in.Kill)
			return in
		}
	}
	t.Fatalf("redistest: starting redis-sentinel: %v", lastErr)
	return nil
}

// Addrs returns the sentinels' addresses.
func (s *SentinelSet) Addrs() []string {
	out := make([]string, len(s.Sentinels))
	for i, in := range s.Sentinels {
		out[i] = in.Addr
	}
	return out
}

// URL returns the redis+sentinel:// URL of the set, as redisstore.Open
// reads it.
func (s *SentinelSet) URL() string {
	return "redis+sentinel://" + strings.Join(s.Addrs(), ",") + "/" + MasterName
}

// PrimaryAddr returns the primary's address as the first sentinel that
// answers names it.
func (s *SentinelSet) PrimaryAddr(ctx context.Context) (string, error) {
	var lastErr error
	for _, in := range s.Sentinels {
		addr, err := masterAddr(ctx, in.Addr)
		if err == nil {
			return addr, nil
		}
		lastErr = err
	}
	return "", lastErr
}

// Primary returns the data node the sentinels name as the primary.
func (s *SentinelSet) Primary() *Instance {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	addr, err := s.PrimaryAddr(ctx)
	if err != nil {
		s.t.Fatalf("redistest: asking the sentinels for the primary: %v", err)
	}
	for _, in := range s.Nodes {
		if in.Addr == addr {
			return in
		}
	}
	s.t.Fatalf("redistest: the sentinels name %s, which is none of the data nodes", addr)
	return nil
}

// KillPrimary kills the current primary with SIGKILL, as a crash would,
// and returns it and when it died.
func (s *SentinelSet) KillPrimary() (*Instance, time.Time) {
	s.t.Helper()
	p := s.Primary()
	p.Kill()
	return p, time.Now()
}

// WaitNewPrimary waits until a sentinel names a primary other than old
// and returns it and the moment it was first seen named (polled every few
// milliseconds).
func (s *SentinelSet) WaitNewPrimary(old *Instance) (*Instance, time.Time) {
	s.t.Helper()
	deadline := time.Now().Add(failoverWait)
	for time.Now().Before(deadline) {
		for _, sen := range s.Sentinels {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			addr, err := masterAddr(ctx, sen.Addr)
			cancel()
			if err != nil || addr == old.Addr {
				continue
			}
			at := time.Now()
			s.lastSwitch = at
			for _, in := range s.Nodes {
				if in.Addr == addr {
					return in, at
				}
			}
			s.t.Fatalf("redistest: the sentinels name %s, which is none of the data nodes", addr)
		}
		time.Sleep(5 * time.Millisecond)
	}
	s.t.Fatalf("redistest: no new primary within %s of losing %s\n%s", failoverWait, old.Addr, s.logs())
	return nil, time.Time{}
}

// Heal restarts old (a killed primary) and waits until it is a replica of
// the current primary in sync, every sentinel agrees on the primary and
// knows both replicas up, and the same primary has stood for twice
// FailoverTimeout since the last switch (Sentinel would fail over again),
// so the next kill starts from the same place as the first.
func (s *SentinelSet) Heal(old *Instance) {
	s.t.Helper()
	primary := s.Primary()
	// It comes back as a replica of the new primary at once: left to
	// Sentinel, a node that restarts as a primary is turned into a replica
	// only some 8 s later, a primary nobody writes to meanwhile.
	host, port, _ := net.SplitHostPort(primary.Addr)
	old.mu.Lock()
	if i := slices.Index(old.args, "--replicaof"); i >= 0 {
		old.args = slices.Delete(slices.Clone(old.args), i, i+3)
	}
	old.args = append(old.args, "--replicaof", host, port)
	old.mu.Unlock()
	old.Restart()
	// Settled, then quiet: Sentinel sometimes fails over a second time on
	// its own right after a switch (issue 25 saw it); the set is healed
	// once the same primary has stood for twice FailoverTimeout. On a
	// saturated machine the sentinels may flap for a while (they judge a
	// busy primary down after a second): twice failoverWait, a hang guard.
	deadline := time.Now().Add(2 * failoverWait)
	for {
		if err := poll(time.Until(deadline), nil, s.settled); err != nil {
			s.t.Fatalf("redistest: the set did not heal: %v\n%s", err, s.logs())
		}
		before := s.Primary()
		if wait := time.Until(s.lastSwitch.Add(2*FailoverTimeout + 100*time.Millisecond)); wait > 0 {
			time.Sleep(wait)
		}
		after := s.Primary()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err := s.settled(ctx)
		cancel()
		if after == before && err == nil {
			return
		}
		s.lastSwitch = time.Now()
		if time.Now().After(deadline) {
			s.t.Fatalf("redistest: the set did not heal: the primary keeps changing\n%s", s.logs())
		}
	}
}

// settled checks that every sentinel names the same primary, with two
// replicas up and two other sentinels, and every other data node
// replicates that primary. It does not insist on a particular primary:
// Sentinel may fail over again on its own (a replica promoted and then
// judged down for a moment, as issue 25 saw).
func (s *SentinelSet) settled(ctx context.Context) error {
	primary := ""
	for _, sen := range s.Sentinels {
		c := redis.NewSentinelClient(&redis.Options{Addr: sen.Addr, MaxRetries: -1, DialTimeout: time.Second})
		m, err := c.Master(ctx, MasterName).Result()
		if err != nil {
			c.Close()
			return fmt.Errorf("sentinel %s: %w", sen.Addr, err)
		}
		addr := net.JoinHostPort(m["ip"], m["port"])
		if primary == "" {
			primary = addr
		}
		if addr != primary || m["flags"] != "master" || m["num-slaves"] != "2" || m["num-other-sentinels"] != "2" {
			c.Close()
			return fmt.Errorf("sentinel %s sees %s (another sees %s) flags %q, %s replicas, %s other sentinels",
				sen.Addr, addr, primary, m["flags"], m["num-slaves"], m["num-other-sentinels"])
		}
		reps, err := c.Replicas(ctx, MasterName).Result()
		c.Close()
		if err != nil {
			return fmt.Errorf("sentinel %s: %w", sen.Addr, err)
		}
		for _, r := range reps {
			if r["flags"] != "slave" || r["master-link-status"] != "ok" {
				return fmt.Errorf("sentinel %s sees replica %s:%s flags %q link %q",
					sen.Addr, r["ip"], r["port"], r["flags"], r["master-link-status"])
			}
		}
	}
	for _, in := range s.Nodes {
		if in.Addr != primary {
			if err := replicaInSync(ctx, in.Addr, primary); err != nil {
				return err
			}
		}
	}
	return nil
}

// replicaInSync reports nil when the node at addr replicates primary with
// its link up.
func replicaInSync(ctx context.Context, addr, primary string) error {
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialTimeout: time.Second})
	defer c.Close()
	info, err := c.Info(ctx, "replication").Result()
	if err != nil {
		return fmt.Errorf("%s: %w", addr, err)
	}
	f := infoFields(info)
	if f["role"] != "slave" || net.JoinHostPort(f["master_host"], f["master_port"]) != primary ||
		f["master_link_status"] != "up" || f["master_sync_in_progress"] != "0" {
		return fmt.Errorf("%s: role %s of %s:%s, link %s", addr, f["role"], f["master_host"], f["master_port"], f["master_link_status"])
	}
	return nil
}

// infoFields parses the key:value lines of an INFO answer.
func infoFields(info string) map[string]string {
	f := make(map[string]string)
	for _, line := range strings.Split(info, "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), ":"); ok {
			f[k] = v
		}
	}
	return f
}

// masterAddr asks the sentinel at addr for the primary's address.
func masterAddr(ctx context.Context, addr string) (string, error) {
	c := redis.NewSentinelClient(&redis.Options{Addr: addr, MaxRetries: -1, DialTimeout: time.Second})
	defer c.Close()
	hp, err := c.GetMasterAddrByName(ctx, MasterName).Result()
	if err != nil {
		return "", err
	}
	if len(hp) != 2 {
		return "", fmt.Errorf("sentinel %s answered %v", addr, hp)
	}
	return net.JoinHostPort(hp[0], hp[1]), nil
}

// logs returns the end of every sentinel's log, for a failure message.
func (s *SentinelSet) logs() string {
	var b strings.Builder
	for _, in := range s.Sentinels {
		log, _ := os.ReadFile(filepath.Join(in.Dir, "sentinel.log"))
		t := tail(log, 4000)
		if i := bytes.IndexByte(t, '\n'); i >= 0 && len(t) < len(log) {
			t = t[i+1:] // whole lines only
		}
		fmt.Fprintf(&b, "--- sentinel %s\n%s\n", in.Addr, t)
	}
	return b.String()
}
