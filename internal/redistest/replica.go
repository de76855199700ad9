package redistest

import (
	"context"
	"fmt"
	"net"
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
	return in
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
