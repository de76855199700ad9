package redisstore

import (
	"context"
	"errors"
	"io"
	"net"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/internal/redistest"
)

// cmdWith returns a command that failed with err (nil: answered).
func cmdWith(err error) redis.Cmder {
	c := redis.NewCmd(context.Background(), "evalsha")
	if err != nil {
		c.SetErr(err)
	}
	return c
}

// The gate lets every pipeline through while Redis answers; once one finds
// it unreachable, only one probe per probeEvery, and the first probe that
// reaches Redis opens it again. A caller's cancellation says nothing.
func TestOutageGate(t *testing.T) {
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
	var g outageGate
	t0 := time.Unix(1000, 0)
	if ok, probe := g.admit(t0); !ok || probe {
		t.Fatalf("healthy: admit = %v, %v; want true, false", ok, probe)
	}
	reset := &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}
	for _, err := range []error{context.Canceled, context.DeadlineExceeded, io.EOF, reset} {
		g.report(t0, false, []redis.Cmder{cmdWith(err)})
		if ok, _ := g.admit(t0); !ok {
			t.Fatalf("a call that failed with %v closed the gate", err)
		}
	}
	g.report(t0, false, []redis.Cmder{cmdWith(refused), cmdWith(refused)})
	if ok, _ := g.admit(t0.Add(probeEvery / 2)); ok {
		t.Fatal("admitted a pipeline right after Redis refused")
	}
	ok, probe := g.admit(t0.Add(probeEvery))
	if !ok || !probe {
		t.Fatalf("a probe is due: admit = %v, %v", ok, probe)
	}
	if ok, _ := g.admit(t0.Add(3 * probeEvery)); ok {
		t.Fatal("admitted a second pipeline while a probe is in flight")
	}
	g.report(t0.Add(3*probeEvery), true, []redis.Cmder{cmdWith(refused)})
	if ok, _ := g.admit(t0.Add(3*probeEvery + probeEvery/2)); ok {
		t.Fatal("admitted a pipeline right after a failed probe")
	}
	ok, probe = g.admit(t0.Add(4 * probeEvery))
	if !ok || !probe {
		t.Fatalf("the next probe is due: admit = %v, %v", ok, probe)
	}
	// An error reply is an answer: Redis is there.
	g.report(t0.Add(4*probeEvery), true, []redis.Cmder{cmdWith(refused), cmdWith(redisError("NOSCRIPT No matching script"))})
	if ok, probe := g.admit(t0.Add(4 * probeEvery)); !ok || probe {
		t.Fatalf("after a probe that reached Redis: admit = %v, %v; want true, false", ok, probe)
	}
}

// pipelineCounter counts the pipelines a client sends.
type pipelineCounter struct{ n atomic.Int64 }

func (h *pipelineCounter) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *pipelineCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return next
}
func (h *pipelineCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.n.Add(1)
		return next(ctx, cmds)
	}
}

// While Redis is gone, calls fail with unavailable without each dialing
// it: one probe at a time goes out. Once it is back, joins succeed again.
func TestCallsFailFastWhileRedisIsGone(t *testing.T) {
	in := redistest.Start(t, redistest.WithAOF()) // the room survives the restart
	ctx := t.Context()
	s, err := Open(ctx, "redis://"+in.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, _, err := s.PutRoom(ctx, "g", waitroom.RoomConfig{Mode: waitroom.ModeAuto}, time.Now()); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Join(ctx, "g", "", time.Now()); err != nil {
		t.Fatal(err)
	}
	counter := &pipelineCounter{}
	s.client.AddHook(counter)
	in.Kill()

	const calls = 300
	fast := 0
	start := time.Now()
	for i := 0; i < calls; i++ {
		_, err := s.Join(ctx, "g", "", time.Now())
		if waitroom.ErrorCode(err) != waitroom.CodeUnavailable {
			t.Fatalf("join %d with Redis gone: %v, want unavailable", i, err)
		}
		if errors.Is(err, errRedisDown) {
			fast++
		}
	}
	elapsed := time.Since(start)
	sent := counter.n.Load()
	t.Logf("%d joins with Redis gone in %v: %d pipelines sent, %d failed unsent", calls, elapsed.Round(time.Millisecond), sent, fast)
	// One pipeline found Redis gone, then one probe per probeEvery (each
	// may be sent twice: go-redis retries once).
	if limit := 2 * (2 + int64(elapsed/probeEvery)); sent > limit {
		t.Errorf("%d pipelines sent for %d joins in %v; want at most %d (a probe per %v)", sent, calls, elapsed, limit, probeEvery)
	}

	in.Restart()
	deadline := time.Now().Add(30 * time.Second) // a hang guard
	for {
		_, err := s.Join(ctx, "g", "", time.Now())
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("joins did not succeed again after Redis came back: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
