package redisstore_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/internal/redistest"
	"github.com/waitroom/waitroom/redisstore"
	"github.com/waitroom/waitroom/storetest"
)

// ackHang bounds any one call of these tests: a write waiting for a frozen
// replica must answer within about its ack timeout, never hang.
const ackHang = 10 * time.Second

// waitGuard is a go-redis hook that fails the test when a write reaches
// Redis without a WAIT after it on the same connection: every pipeline
// that holds a write must end with WAIT, and no write may go alone. It
// counts the WAITs it saw.
type waitGuard struct {
	t     *testing.T
	mu    sync.Mutex
	waits int
	bad   []string
}

// readCommands are the commands that write nothing.
var readCommands = map[string]bool{
	"info": true, "ping": true, "smembers": true, "exists": true, "hget": true, "hgetall": true, "hkeys": true,
	"get": true, "xrange": true, "xrevrange": true, "lrange": true, "hscan": true, "zrangebyscore": true,
	"zrange": true, "hello": true, "client": true, "command": true, "select": true, "wait": true,
	"subscribe": true, "psubscribe": true, "ssubscribe": true, "unsubscribe": true, "punsubscribe": true,
	"sunsubscribe": true, "hmget": true, "scan": true, "type": true, "ttl": true, "pttl": true,
	// Events go over pub/sub, which is not data a failover can lose.
	"publish": true, "spublish": true,
}

// writes reports whether cmd may write.
func writes(cmd redis.Cmder) bool {
	name := strings.ToLower(cmd.Name())
	if name == "evalsha" || name == "eval" {
		args := cmd.Args()
		n, _ := strconv.Atoi(fmt.Sprint(args[2]))
		if name == "evalsha" && fmt.Sprint(args[1]) == redisstore.RoomScriptHash() && len(args) > 3+n {
			return !redisstore.ReadOp(fmt.Sprint(args[3+n]))
		}
		return true
	}
	return !readCommands[name]
}

func (g *waitGuard) DialHook(next redis.DialHook) redis.DialHook { return next }

func (g *waitGuard) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if writes(cmd) {
			g.fail(fmt.Sprintf("%v sent alone", cmd.Args()))
		}
		return next(ctx, cmd)
	}
}

func (g *waitGuard) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if len(cmds) > 0 && cmds[0].Name() == "multi" {
			// AddStats' transaction, the one write that does not wait
			// (ledger.go says why).
			return next(ctx, cmds)
		}
		last := cmds[len(cmds)-1]
		if last.Name() == "wait" {
			g.mu.Lock()
			g.waits++
			g.mu.Unlock()
		} else {
			for _, c := range cmds {
				if writes(c) {
					g.fail(fmt.Sprintf("%.120v in a pipeline of %d without WAIT", c.Args(), len(cmds)))
					break
				}
			}
		}
		return next(ctx, cmds)
	}
}

func (g *waitGuard) fail(what string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.bad) < 20 {
		g.bad = append(g.bad, what)
	}
}

// check fails the test for every write the guard saw go without WAIT.
func (g *waitGuard) check(t *testing.T) {
	t.Helper()
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, b := range g.bad {
		t.Errorf("write without WAIT: %s", b)
	}
	if g.waits == 0 {
		t.Errorf("no WAIT was sent at all")
	}
}

// primaryWithReplica starts a primary and one replica of it.
func primaryWithReplica(t *testing.T) (primary string, replica *redistest.Instance) {
	t.Helper()
	primary = redistest.Server(t)
	return primary, redistest.Replica(t, primary)
}

// TestAckEveryWritePath runs the conformance, ledger and webhook paths on a
// primary with a replica, through a client that fails the test for any
// write sent without a WAIT after it on its connection.
func TestAckEveryWritePath(t *testing.T) {
	t.Parallel()
	primary, _ := primaryWithReplica(t)
	client := redis.NewClient(&redis.Options{Addr: primary})
	t.Cleanup(func() { _ = client.Close() })
	guard := &waitGuard{t: t}
	client.AddHook(guard)
	open := newStoreOn(client)
	t.Run("Conformance", func(t *testing.T) { storetest.Run(t, open) })
	t.Run("Ledger", func(t *testing.T) {
		storetest.Ledger(t, func(t *testing.T) waitroom.Ledger { return open(t).(waitroom.Ledger) })
	})
	t.Run("Webhooks", func(t *testing.T) {
		st := open(t).(*redisstore.Store)
		ctx, now := t.Context(), time.Now()
		if _, _, err := st.PutRoom(ctx, "r", waitroom.DefaultConfig(), now); err != nil {
			t.Fatal(err)
		}
		h := waitroom.Webhook{Room: "r", Name: "h", URL: "https://example.com/h", Events: []string{"*"},
			Secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}
		if _, _, err := st.PutWebhook(ctx, h, now); err != nil {
			t.Fatalf("PutWebhook: %v", err)
		}
		if _, err := st.Join(ctx, "r", "", now); err != nil {
			t.Fatal(err)
		}
		ds, err := st.ClaimDeliveries(ctx, "r", "h", now, time.Minute, 10)
		if err != nil {
			t.Fatalf("ClaimDeliveries: %v", err)
		}
		if len(ds) == 0 {
			t.Fatalf("ClaimDeliveries claimed nothing")
		}
		if err := st.DeleteWebhook(ctx, "r", "h"); err != nil {
			t.Fatalf("DeleteWebhook: %v", err)
		}
		if err := st.DeleteRoom(ctx, "r", true, now); err != nil {
			t.Fatalf("DeleteRoom: %v", err)
		}
	})
	guard.check(t)
}

// TestAckReplicaHasEveryJoin checks that a join answered has reached the
// replica: read from the replica at once after each answer, every session
// is there.
func TestAckReplicaHasEveryJoin(t *testing.T) {
	t.Parallel()
	primary, replica := primaryWithReplica(t)
	ctx := t.Context()
	prefix := freshPrefix()
	st, err := redisstore.Open(ctx, "redis://"+primary, redisstore.WithPrefix(prefix))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	// A store on the replica only reads (Sessions is a read).
	ro, err := redisstore.Open(ctx, "redis://"+replica.Addr, redisstore.WithPrefix(prefix), redisstore.WithAckReplicas(0))
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	now := time.Now()
	if _, _, err := st.PutRoom(ctx, "r", waitroom.DefaultConfig(), now); err != nil {
		t.Fatal(err)
	}
	// Concurrent callers, so joins share pipelines (and their WAIT).
	const callers, each = 16, 20
	var wg sync.WaitGroup
	errs := make(chan error, callers)
	for c := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				s, err := st.Join(ctx, "r", fmt.Sprintf("k%d-%d", c, i), now)
				if err != nil {
					errs <- fmt.Errorf("join: %w", err)
					return
				}
				got, err := ro.Sessions(ctx, "r", []string{s.ID})
				if err != nil {
					errs <- fmt.Errorf("reading the replica: %w", err)
					return
				}
				if len(got) != 1 || got[0].ID != s.ID || got[0].Ticket != s.Ticket {
					errs <- fmt.Errorf("join of ticket %d answered, but the replica has %+v", s.Ticket, got)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n := st.AckTimeouts(); n != 0 {
		t.Errorf("AckTimeouts = %d with a live replica", n)
	}
}

// TestAckFrozenReplica freezes the replica: a join then answers unavailable
// within about the ack timeout, saying it may have happened, and is
// counted; with 0 replicas asked for it succeeds without waiting.
func TestAckFrozenReplica(t *testing.T) {
	t.Parallel()
	primary, replica := primaryWithReplica(t)
	ctx := t.Context()
	prefix := freshPrefix()
	const timeout = 200 * time.Millisecond
	auto, err := redisstore.Open(ctx, "redis://"+primary, redisstore.WithPrefix(prefix), redisstore.WithAckTimeout(timeout))
	if err != nil {
		t.Fatal(err)
	}
	defer auto.Close()
	none, err := redisstore.Open(ctx, "redis://"+primary, redisstore.WithPrefix(prefix), redisstore.WithAckReplicas(0))
	if err != nil {
		t.Fatal(err)
	}
	defer none.Close()
	two, err := redisstore.Open(ctx, "redis://"+primary, redisstore.WithPrefix(prefix), redisstore.WithAckReplicas(2), redisstore.WithAckTimeout(timeout))
	if err != nil {
		t.Fatal(err)
	}
	defer two.Close()
	now := time.Now()
	if _, _, err := auto.PutRoom(ctx, "r", waitroom.DefaultConfig(), now); err != nil {
		t.Fatal(err)
	}
	// Two replicas asked for, one there: refused even with it live.
	wantRefused(t, two, "two replicas asked for, one there")

	replica.Freeze()
	for i := range 3 {
		wantRefused(t, auto, fmt.Sprintf("frozen replica, join %d", i))
	}
	if n := auto.AckTimeouts(); n < 3 {
		t.Errorf("AckTimeouts = %d after 3 unconfirmed joins", n)
	}
	jctx, cancel := context.WithTimeout(ctx, ackHang)
	defer cancel()
	if _, err := none.Join(jctx, "r", "", now); err != nil {
		t.Errorf("join with --redis-ack-replicas 0 and a frozen replica: %v", err)
	}
	// Reads wait for nothing.
	if _, err := auto.Room(jctx, "r"); err != nil {
		t.Errorf("Room with a frozen replica: %v", err)
	}
	replica.Thaw()
	// Once the replica is back, joins are confirmed again.
	deadline := time.Now().Add(ackHang)
	for {
		_, err := auto.Join(jctx, "r", "", now)
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("joins still refused after the replica came back: %v", err)
		}
	}
}

// wantRefused checks that a join on st answers unavailable, saying it may
// have happened, within the hang guard.
func wantRefused(t *testing.T, st *redisstore.Store, what string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), ackHang)
	defer cancel()
	_, err := st.Join(ctx, "r", "", time.Now())
	if ctx.Err() != nil {
		t.Fatalf("%s: the join hung for %s", what, ackHang)
	}
	if waitroom.ErrorCode(err) != waitroom.CodeUnavailable {
		t.Fatalf("%s: join error = %v, want unavailable", what, err)
	}
	var we *waitroom.Error
	if !errors.As(err, &we) || !strings.Contains(we.Message, "may or may not") {
		t.Errorf("%s: message %q does not say the join may have happened", what, waitroom.ErrorMessage(err))
	}
}

// TestAckNoReplicas checks that auto on a single Redis waits for nothing:
// no WAIT reaches it, and joins work as without replicas.
func TestAckNoReplicas(t *testing.T) {
	t.Parallel()
	addr := redistest.Server(t)
	ctx := t.Context()
	st, err := redisstore.Open(ctx, "redis://"+addr, redisstore.WithPrefix(freshPrefix()))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	now := time.Now()
	if _, _, err := st.PutRoom(ctx, "r", waitroom.DefaultConfig(), now); err != nil {
		t.Fatal(err)
	}
	for range 20 {
		if _, err := st.Join(ctx, "r", "", now); err != nil {
			t.Fatal(err)
		}
	}
	c := redis.NewClient(&redis.Options{Addr: addr})
	defer c.Close()
	stats, err := c.Info(ctx, "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(stats, "cmdstat_wait:") {
		t.Errorf("a single Redis received WAIT: %s", stats)
	}
}

// TestAckOptions checks the options' bounds.
func TestAckOptions(t *testing.T) {
	t.Parallel()
	addr := redistest.Server(t)
	for _, tc := range []struct {
		name string
		opts []redisstore.Option
	}{
		{"replicas below auto", []redisstore.Option{redisstore.WithAckReplicas(-2)}},
		{"timeout under 1ms", []redisstore.Option{redisstore.WithAckTimeout(time.Microsecond)}},
		{"timeout past the read timeout", []redisstore.Option{redisstore.WithAckTimeout(2 * time.Second)}},
	} {
		st, err := redisstore.Open(t.Context(), "redis://"+addr, tc.opts...)
		if err == nil {
			st.Close()
			t.Errorf("%s: Open succeeded", tc.name)
		}
	}
}

// TestOnlineReplicas checks which replicas auto counts: online ones that
// acknowledged lately (a lag of -1 is Redis' cached clock lagging).
func TestOnlineReplicas(t *testing.T) {
	t.Parallel()
	info := "# Replication\r\nrole:master\r\nconnected_slaves:4\r\n" +
		"slave0:ip=127.0.0.1,port=1,state=online,offset=5,lag=-1\r\n" +
		"slave1:ip=127.0.0.1,port=2,state=online,offset=5,lag=1\r\n" +
		"slave2:ip=127.0.0.1,port=3,state=wait_bgsave,offset=0,lag=0\r\n" +
		"slave3:ip=127.0.0.1,port=4,state=online,offset=5,lag=9\r\n" +
		"master_failover_state:no-failover\r\n"
	if got := redisstore.OnlineReplicas(info); got != 2 {
		t.Errorf("OnlineReplicas = %d, want 2", got)
	}
}

// TestAckCluster runs a three-master Cluster with a replica per master:
// every shard's writes wait for its own replica (each master receives its
// own WAITs), and with one replica frozen only the rooms of its shard
// answer unavailable.
func TestAckCluster(t *testing.T) {
	t.Parallel()
	addrs := redistest.Cluster(t)
	replicas := map[string]*redistest.Instance{}
	for _, a := range addrs {
		replicas[a] = redistest.ClusterReplica(t, a)
	}
	client := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs, ReadTimeout: 1500 * time.Millisecond})
	t.Cleanup(func() { _ = client.Close() })
	ctx := t.Context()
	prefix := freshPrefix()
	st, err := redisstore.New(ctx, client, redisstore.WithPrefix(prefix), redisstore.WithAckTimeout(300*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	// One room on each master.
	roomOn := map[string]string{}
	for i := 0; len(roomOn) < len(addrs) && i < 1000; i++ {
		name := fmt.Sprintf("r%d", i)
		node, err := client.MasterForKey(ctx, st.RoomKey(name))
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := roomOn[node.Options().Addr]; !ok {
			roomOn[node.Options().Addr] = name
		}
	}
	if len(roomOn) != len(addrs) {
		t.Fatalf("rooms on %d of %d masters", len(roomOn), len(addrs))
	}
	now := time.Now()
	for _, room := range roomOn {
		if _, _, err := st.PutRoom(ctx, room, waitroom.DefaultConfig(), now); err != nil {
			t.Fatal(err)
		}
		for range 5 {
			if _, err := st.Join(ctx, room, "", now); err != nil {
				t.Fatalf("join in %s: %v", room, err)
			}
		}
	}
	for _, a := range addrs {
		c := redis.NewClient(&redis.Options{Addr: a})
		stats, err := c.Info(ctx, "commandstats").Result()
		_ = c.Close()
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(stats, "cmdstat_wait:") {
			t.Errorf("master %s received no WAIT", a)
		}
	}
	if n := st.AckTimeouts(); n != 0 {
		t.Errorf("AckTimeouts = %d with every replica live", n)
	}
	frozen := addrs[0]
	replicas[frozen].Freeze()
	for a, room := range roomOn {
		jctx, cancel := context.WithTimeout(ctx, ackHang)
		_, err := st.Join(jctx, room, "", now)
		hung := jctx.Err() != nil
		cancel()
		switch {
		case hung:
			t.Fatalf("join in %s hung", room)
		case a == frozen && waitroom.ErrorCode(err) != waitroom.CodeUnavailable:
			t.Errorf("join in %s, whose shard's replica is frozen: %v, want unavailable", room, err)
		case a != frozen && err != nil:
			t.Errorf("join in %s, another shard: %v", room, err)
		}
	}
	replicas[frozen].Thaw()
}
