package redisstore_test

import (
	"context"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/internal/redistest"
	"github.com/waitroom/waitroom/redisstore"
)

// TestRewindReplicaPromoted makes the rewind with a real replica: the
// replica has the room's first joins, is promoted while the primary goes
// on taking joins (a split brain), then the primary is killed and the
// process's client reconnects to the promoted replica, as Sentinel would
// send it. The joins the old primary took are lost; their tickets are not
// handed out again.
func TestRewindReplicaPromoted(t *testing.T) {
	t.Parallel()
	for _, marks := range []bool{true, false} {
		t.Run(map[bool]string{true: "marks", false: "without marks"}[marks], func(t *testing.T) {
			t.Parallel()
			var opts []redisstore.Option
			if !marks {
				opts = append(opts, redisstore.WithoutRewindMarks())
			}
			dup, last, rewinds := replicaPromoted(t, opts...)
			t.Logf("%v: %d tickets handed out twice, first ticket after the failover %d, %d rewinds", marks, dup, last, rewinds)
			if marks && (dup != 0 || last != 11 || rewinds != 1) {
				t.Errorf("%d tickets twice, ticket %d after the failover, %d rewinds; want 0, 11, 1", dup, last, rewinds)
			}
			if !marks && dup == 0 {
				t.Errorf("without marks no ticket went out twice: the test did not rewind the room")
			}
		})
	}
}

func replicaPromoted(t *testing.T, opts ...redisstore.Option) (dup int, first, rewinds int64) {
	ctx := t.Context()
	primary := redistest.Start(t)
	host, port, _ := net.SplitHostPort(primary.Addr)
	replica := redistest.Start(t, redistest.WithArgs("--replicaof", host, port))

	// The process's client dials whichever server is the primary now.
	var target atomic.Value
	target.Store(primary.Addr)
	client := redis.NewClient(&redis.Options{
		Addr: primary.Addr,
		Dialer: func(ctx context.Context, network, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, network, target.Load().(string))
		},
	})
	t.Cleanup(func() { _ = client.Close() })
	s, err := redisstore.New(ctx, client, append([]redisstore.Option{redisstore.WithPrefix(freshPrefix())}, opts...)...)
	if err != nil {
		t.Fatalf("redisstore.New: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	if _, _, err := s.PutRoom(ctx, "r", waitroom.RoomConfig{Mode: waitroom.ModeManual, Capacity: 1}, base); err != nil {
		t.Fatalf("PutRoom: %v", err)
	}
	l := newLedger()
	joinN(t, s, "r", 5, base, l)
	// The replica has the first five joins...
	admin := redis.NewClient(&redis.Options{Addr: primary.Addr})
	t.Cleanup(func() { _ = admin.Close() })
	deadline := time.Now().Add(30 * time.Second)
	for {
		n, err := admin.Wait(ctx, 1, time.Second).Result()
		if err == nil && n >= 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the replica never confirmed the first joins: %d, %v", n, err)
		}
	}
	// ... and is promoted, while the old primary takes five more.
	rep := redis.NewClient(&redis.Options{Addr: replica.Addr})
	t.Cleanup(func() { _ = rep.Close() })
	if err := rep.SlaveOf(ctx, "NO", "ONE").Err(); err != nil {
		t.Fatalf("REPLICAOF NO ONE: %v", err)
	}
	joinN(t, s, "r", 5, base, l)
	primary.Kill()
	target.Store(replica.Addr)
	// The first join after the failover may meet the dead connection;
	// go-redis dials again (to the promoted replica) and sends it again.
	got := joinN(t, s, "r", 3, base, l)
	return l.ticketDup, got[0].Ticket, s.Rewinds()
}
