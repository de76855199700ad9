package bench

import (
	"context"
	"fmt"
	mrand "math/rand/v2"
	"net"
	"path/filepath"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/waitroom/waitroom/redisstore"
)

// The acknowledgement rows (issue 25) measure what "acknowledged means
// replicated" costs: redisstore joins and position reads on a primary with
// one replica, every write waiting for it (WAIT, --redis-ack-replicas
// auto), against the same on a Redis without replicas, where auto waits
// for nothing. Both Redis are started for the run, on this machine.

// ackRows measures the acknowledgement rows at callers.
func ackRows(ctx context.Context, opt Options, dir string, callers int) []Row {
	rows := []Row{
		{Name: fmt.Sprintf("redisstore join, %d callers, acknowledged by 1 replica", callers), Unit: "ops/s",
			Baseline: "the same on a Redis without replicas", Goal: 0.7},
		{Name: fmt.Sprintf("redisstore position, %d callers, with 1 replica", callers), Unit: "ops/s",
			Baseline: "the same on a Redis without replicas", Goal: 0.7},
		{Name: fmt.Sprintf("redisstore join, %d callers, the wait for 1 replica alone", callers), Unit: "ops/s",
			Baseline: "the same primary and replica, not waiting (--redis-ack-replicas 0)", Goal: 0.7},
	}
	if opt.RedisServer == "" {
		return skipped(RedisMissing, rows...)
	}
	alone, err := startRedis(ctx, opt.RedisServer, filepath.Join(dir, "redis-alone"))
	if err != nil {
		return skipped("could not start redis-server: "+err.Error(), rows...)
	}
	defer alone.stop()
	primary, err := startRedis(ctx, opt.RedisServer, filepath.Join(dir, "redis-primary"))
	if err != nil {
		return skipped("could not start redis-server: "+err.Error(), rows...)
	}
	defer primary.stop()
	host, port, _ := net.SplitHostPort(primary.addr)
	replica, err := startRedis(ctx, opt.RedisServer, filepath.Join(dir, "redis-replica"), "--replicaof", host, port)
	if err != nil {
		return skipped("could not start the replica: "+err.Error(), rows...)
	}
	defer replica.stop()
	if err := replicaOnline(ctx, primary.addr); err != nil {
		return skipped(err.Error(), rows...)
	}
	per := opt.Time / time.Duration(opt.Rounds)
	open := func(addr string) *redis.Client {
		return redis.NewClient(&redis.Options{Addr: addr, PoolSize: callers + 8, ReadTimeout: 1500 * time.Millisecond})
	}
	pc, ac := open(primary.addr), open(alone.addr)
	defer pc.Close()
	defer ac.Close()
	if err := ackJoinRow(ctx, pc, ac, callers, opt, per, &rows[0], &rows[2]); err != nil {
		rows[0].Skipped = "failed: " + err.Error()
		rows[2].Skipped = rows[0].Skipped
	}
	if err := ackPositionRow(ctx, pc, ac, callers, opt, per, &rows[1]); err != nil {
		rows[1].Skipped = "failed: " + err.Error()
	}
	return rows
}

// ackJoinRow compares joins on the primary (each waiting for the replica)
// with joins on the Redis without replicas (row), and with joins on the
// same primary that do not wait (waitRow): on one machine the replica's
// own work (it applies every write) takes CPU from the primary and the
// callers, which row counts and waitRow does not.
func ackJoinRow(ctx context.Context, primary, alone *redis.Client, callers int, opt Options, per time.Duration, row, waitRow *Row) error {
	subject, err := fullStore(ctx, primary, "ack-join")
	if err != nil {
		return err
	}
	defer subject.Close()
	base, err := fullStore(ctx, alone, "ack-join")
	if err != nil {
		return err
	}
	defer base.Close()
	join := func(st *redisstore.Store) func(ctx context.Context, _ int) error {
		return func(ctx context.Context, _ int) error {
			_, err := st.Join(ctx, "r", "", time.Now())
			return err
		}
	}
	s, b, err := compare(ctx, opt.Time, opt.Rounds, concurrent(callers, per, join(subject)), concurrent(callers, per, join(base)))
	if err != nil {
		return err
	}
	row.Value, row.BaselineValue = s.rate(), b.rate()
	// The same primary and replica without the WAIT (--redis-ack-replicas
	// 0) tells what the waiting costs apart from replication itself,
	// which on one machine takes CPU from the primary and the callers.
	noWait, err := fullStore(ctx, primary, "ack-join-0", redisstore.WithAckReplicas(0))
	if err != nil {
		return err
	}
	defer noWait.Close()
	w, n, err := compare(ctx, opt.Time, opt.Rounds, concurrent(callers, per, join(subject)), concurrent(callers, per, join(noWait)))
	if err != nil {
		return err
	}
	waitRow.Value, waitRow.BaselineValue = w.rate(), n.rate()
	row.Note = fmt.Sprintf("%d writes not confirmed; replicated without waiting (0): %s ops/s, %.2f× the Redis without replicas",
		subject.AckTimeouts(), Group(int64(n.rate())), n.rate()/b.rate())
	waitRow.Note = "what WAIT itself costs: both sides feed the replica"
	return nil
}

// ackPositionRow compares position reads (Session) of redisWaiting people
// on the primary with the same on the Redis without replicas.
func ackPositionRow(ctx context.Context, primary, alone *redis.Client, callers int, opt Options, per time.Duration, row *Row) error {
	reader := func(client *redis.Client) (*redisstore.Store, func(ctx context.Context, c int) error, error) {
		st, err := fullStore(ctx, client, "ack-pos")
		if err != nil {
			return nil, nil, err
		}
		ids := make([]string, redisWaiting)
		if err := fan(ctx, callers, redisWaiting, func(ctx context.Context, i int) error {
			got, err := st.Join(ctx, "r", "", time.Now())
			ids[i] = got.ID
			return err
		}); err != nil {
			st.Close()
			return nil, nil, err
		}
		rngs := make([]*mrand.Rand, callers)
		for i := range rngs {
			rngs[i] = mrand.New(mrand.NewPCG(uint64(i), 11))
		}
		return st, func(ctx context.Context, c int) error {
			_, err := st.Session(ctx, "r", ids[rngs[c].IntN(len(ids))], time.Now())
			return err
		}, nil
	}
	subject, sop, err := reader(primary)
	if err != nil {
		return err
	}
	defer subject.Close()
	base, bop, err := reader(alone)
	if err != nil {
		return err
	}
	defer base.Close()
	s, b, err := compare(ctx, opt.Time, opt.Rounds, concurrent(callers, per, sop), concurrent(callers, per, bop))
	if err != nil {
		return err
	}
	row.Value, row.BaselineValue = s.rate(), b.rate()
	row.Note = fmt.Sprintf("%s waiting; %d writes not confirmed", Group(redisWaiting), subject.AckTimeouts())
	return nil
}

// replicaOnline waits until the Redis at addr lists a replica online.
func replicaOnline(ctx context.Context, addr string) error {
	c := redis.NewClient(&redis.Options{Addr: addr})
	defer c.Close()
	deadline := time.Now().Add(redisStartMax)
	for {
		info, err := c.Info(ctx, "replication").Result()
		if err == nil && strings.Contains(info, "state=online") {
			return nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("the replica of %s did not come online within %v (%v)", addr, redisStartMax, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
