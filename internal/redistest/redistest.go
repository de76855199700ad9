// Package redistest starts real Redis servers for tests: a standalone
// redis-server, or a three-master Redis Cluster, each on free loopback ports
// with its files in the test's temporary directory, stopped when the test
// ends.
//
// When redis-server or redis-cli is not installed the test is skipped with
// the name of the Debian package to install (redis-server, redis-tools);
// under CI=true that is a failure instead, so a CI machine cannot silently
// skip the Redis tests. Nothing here sleeps for a fixed time: every wait
// polls with a deadline.
package redistest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// startTimeout bounds how long a server may take to answer PING, and a
// cluster to reach cluster_state:ok.
const startTimeout = 20 * time.Second

// loadingTimeout bounds, after startTimeout, how long a server that
// answers LOADING may take to finish loading its data.
const loadingTimeout = 2 * time.Minute

// Option configures a server.
type Option func(*config)

type config struct {
	aof    bool
	dir    string
	args   []string
	prefix string
}

// WithAOF turns on the append-only file with appendfsync always, so every
// write the server acknowledged survives a crash and a restart.
func WithAOF() Option { return func(c *config) { c.aof = true } }

// WithDir keeps the server's files in dir instead of a fresh t.TempDir().
func WithDir(dir string) Option { return func(c *config) { c.dir = dir } }

// WithArgs passes extra command-line arguments to redis-server, such as
// "--maxmemory", "64mb".
func WithArgs(args ...string) Option {
	return func(c *config) { c.args = append(c.args, args...) }
}

// Server starts a standalone redis-server and returns its address
// ("127.0.0.1:port"). The server is killed when the test ends.
func Server(t testing.TB, opts ...Option) (addr string) {
	t.Helper()
	return Start(t, opts...).Addr
}

// Instance is a running (or stopped) redis-server of a test.
type Instance struct {
	// Addr is the server's address; it stays the same across restarts.
	Addr string
	// Dir holds the server's files (log, AOF, RDB, cluster config).
	Dir string

	t    testing.TB
	bin  string
	args []string

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{} // closed when cmd exits
}

// Start starts a standalone redis-server and returns it, for tests that
// stop or restart it. It is killed when the test ends.
func Start(t testing.TB, opts ...Option) *Instance {
	t.Helper()
	c := &config{}
	for _, o := range opts {
		o(c)
	}
	bin := lookPath(t, "redis-server", "redis-server")
	if c.dir == "" {
		c.dir = t.TempDir()
	}
	var lastErr error
	// A free port can be taken by someone else between finding it and the
	// server binding it; try a few.
	for attempt := 0; attempt < 5; attempt++ {
		port, err := freePort()
		if err != nil {
			t.Fatalf("redistest: finding a free port: %v", err)
		}
		in := &Instance{
			Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)),
			Dir:  c.dir,
			t:    t,
			bin:  bin,
			args: serverArgs(port, c),
		}
		if lastErr = in.start(); lastErr == nil {
			t.Cleanup(in.Kill)
			return in
		}
	}
	t.Fatalf("redistest: starting redis-server: %v", lastErr)
	return nil
}

func serverArgs(port int, c *config) []string {
	args := []string{
		"--port", strconv.Itoa(port),
		"--bind", "127.0.0.1",
		"--dir", c.dir,
		"--logfile", "redis.log",
		"--daemonize", "no",
		"--protected-mode", "no",
		"--save", "",
		"--dbfilename", "dump.rdb",
	}
	if c.aof {
		args = append(args, "--appendonly", "yes", "--appendfsync", "always", "--appendfilename", "appendonly.aof")
	} else {
		args = append(args, "--appendonly", "no")
	}
	return append(args, c.args...)
}

// start runs the server and waits until it answers PING.
func (in *Instance) start() error {
	cmd := exec.Command(in.bin, in.args...)
	var stderr bytes.Buffer
	cmd.Stdout = &stderr
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("running %s: %w", in.bin, err)
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(done)
	}()
	in.mu.Lock()
	in.cmd, in.done = cmd, done
	in.mu.Unlock()

	check := func(ctx context.Context) error { return ping(ctx, in.Addr) }
	err := poll(startTimeout, done, check)
	if err != nil && strings.HasPrefix(err.Error(), "LOADING") {
		// Alive, and loading a big data set (a node restarted after a
		// long failover run loads millions of entries from its AOF): it
		// gets longer.
		err = poll(loadingTimeout, done, check)
	}
	if err != nil {
		in.Kill()
		log, _ := os.ReadFile(filepath.Join(in.Dir, "redis.log"))
		return fmt.Errorf("redis-server on %s did not answer PING: %w\n%s%s", in.Addr, err, stderr.Bytes(), tail(log, 2000))
	}
	return nil
}

// Kill stops the server at once with SIGKILL, as a crash would, and waits
// for it to exit. Killing a stopped server does nothing.
func (in *Instance) Kill() {
	in.mu.Lock()
	cmd, done := in.cmd, in.done
	in.cmd = nil
	in.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Kill()
	<-done
}

// Restart kills the server (if it runs) and starts it again on the same
// address with the same files and configuration.
func (in *Instance) Restart() {
	in.t.Helper()
	in.Kill()
	if err := in.start(); err != nil {
		in.t.Fatalf("redistest: restarting redis-server: %v", err)
	}
}

// Cluster starts a Redis Cluster of three masters without replicas and
// returns their addresses once every node reports cluster_state:ok. The
// nodes are killed when the test ends.
func Cluster(t testing.TB, opts ...Option) (addrs []string) {
	t.Helper()
	cli := lookPath(t, "redis-cli", "redis-tools")
	base := &config{}
	for _, o := range opts {
		o(base)
	}
	if base.dir == "" {
		base.dir = t.TempDir()
	}
	for i := 0; i < 3; i++ {
		dir := filepath.Join(base.dir, fmt.Sprintf("node%d", i))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatalf("redistest: %v", err)
		}
		node := *base
		node.dir = dir
		node.args = append(append([]string{}, base.args...),
			"--cluster-enabled", "yes",
			"--cluster-config-file", "nodes.conf",
			"--cluster-node-timeout", "5000")
		in := Start(t, withConfig(node))
		addrs = append(addrs, in.Addr)
	}

	args := append([]string{"--cluster", "create"}, addrs...)
	args = append(args, "--cluster-replicas", "0", "--cluster-yes")
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, cli, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("redistest: redis-cli --cluster create: %v\n%s", err, out)
	}
	err = poll(startTimeout, nil, func(ctx context.Context) error {
		for _, a := range addrs {
			if err := clusterOK(ctx, a, len(addrs)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("redistest: cluster did not become ready: %v", err)
	}
	return addrs
}

// withConfig replaces the whole configuration; Cluster uses it to pass each
// node its own arguments.
func withConfig(c config) Option { return func(dst *config) { *dst = c } }

// clusterOK reports nil when the node at addr sees the whole cluster as ok
// with n known masters, so a client that connects to any node gets the
// final slot map.
func clusterOK(ctx context.Context, addr string, n int) error {
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialTimeout: time.Second})
	defer c.Close()
	info, err := c.ClusterInfo(ctx).Result()
	if err != nil {
		return err
	}
	if !strings.Contains(info, "cluster_state:ok") {
		return fmt.Errorf("%s: cluster_state is not ok", addr)
	}
	if !strings.Contains(info, "cluster_known_nodes:"+strconv.Itoa(n)) {
		return fmt.Errorf("%s: not every node is known yet", addr)
	}
	slots, err := c.ClusterSlots(ctx).Result()
	if err != nil {
		return err
	}
	covered := 0
	for _, s := range slots {
		covered += int(s.End-s.Start) + 1
	}
	if covered != 16384 {
		return fmt.Errorf("%s: %d of 16384 slots assigned", addr, covered)
	}
	return nil
}

// lookPath finds a binary, or skips (fails under CI=true) naming the
// Debian package that provides it.
func lookPath(t testing.TB, name, pkg string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err == nil {
		return p
	}
	msg := fmt.Sprintf("redistest: %s not found on PATH; install the Debian package %s (apt-get install %s)", name, pkg, pkg)
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func ping(ctx context.Context, addr string) error {
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialTimeout: time.Second})
	defer c.Close()
	return c.Ping(ctx).Err()
}

// errExited says the process being waited for is gone.
var errExited = errors.New("the process exited")

// poll calls check until it returns nil, the deadline passes, or exited is
// closed. It waits a little longer between attempts each time, starting at
// a few milliseconds.
func poll(timeout time.Duration, exited <-chan struct{}, check func(ctx context.Context) error) error {
	deadline := time.Now().Add(timeout)
	wait := 5 * time.Millisecond
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err := check(ctx)
		cancel()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return err
		}
		select {
		case <-exited:
			return fmt.Errorf("%w: %v", errExited, err)
		case <-time.After(wait):
		}
		wait = min(wait*2, 200*time.Millisecond)
	}
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}
