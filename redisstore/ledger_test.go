package redisstore_test

import (
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/internal/redistest"
	"github.com/waitroom/waitroom/redisstore"
	"github.com/waitroom/waitroom/storetest"
)

// TestLedger runs the ledger suite on a standalone redis-server and on a
// three-master Cluster (every key of a room is in its slot, so the
// transactions and pipelines work there too), and checks that two
// processes see each other's writes.
func TestLedger(t *testing.T) {
	t.Parallel()
	t.Run("Standalone", func(t *testing.T) {
		t.Parallel()
		client := standalone(t)
		open := newStoreOn(client)
		storetest.Ledger(t, func(t *testing.T) waitroom.Ledger { return open(t) })
		t.Run("TwoProcesses", func(t *testing.T) { testLedgerProcesses(t, client) })
	})
	t.Run("Cluster", func(t *testing.T) {
		t.Parallel()
		client := redis.NewClusterClient(&redis.ClusterOptions{Addrs: redistest.Cluster(t)})
		t.Cleanup(func() { _ = client.Close() })
		open := newStoreOn(client)
		storetest.Ledger(t, func(t *testing.T) waitroom.Ledger { return open(t) })
		t.Run("TwoProcesses", func(t *testing.T) { testLedgerProcesses(t, client) })
	})
}

// testLedgerProcesses runs two stores on one prefix, as two processes
// would: counts each adds to one bucket add up, gauges are the last set,
// and audit entries and sign-ins of one are the other's.
func testLedgerProcesses(t *testing.T, client redis.UniversalClient) {
	ctx := t.Context()
	prefix := freshPrefix()
	open := func() *redisstore.Store {
		s, err := redisstore.New(ctx, client, redisstore.WithPrefix(prefix))
		if err != nil {
			t.Fatalf("redisstore.New: %v", err)
		}
		t.Cleanup(func() { _ = s.Close() })
		return s
	}
	a, b := open(), open()
	at := base.Add(time.Minute)
	for i := range 10 {
		ba := waitroom.StatsBucket{At: at, Joins: 1, Admissions: 2}
		ba.Waits[waitroom.WaitBin(3*time.Second)] = 1
		bb := waitroom.StatsBucket{At: at.Add(time.Second), Joins: 10, Abandons: 1, HasGauges: true, Waiting: i, Active: 4, ETALastMs: 9000}
		if err := a.AddStats(ctx, "shared", ba); err != nil {
			t.Fatalf("a.AddStats: %v", err)
		}
		if err := b.AddStats(ctx, "shared", bb); err != nil {
			t.Fatalf("b.AddStats: %v", err)
		}
	}
	for name, s := range map[string]*redisstore.Store{"a": a, "b": b} {
		got, err := s.Stats(ctx, "shared", base)
		if err != nil {
			t.Fatalf("%s.Stats: %v", name, err)
		}
		if len(got) != 1 {
			t.Fatalf("%s.Stats = %d buckets, want 1", name, len(got))
		}
		g := got[0]
		if !g.At.Equal(at) || g.Joins != 110 || g.Admissions != 20 || g.Abandons != 10 || g.Waits[waitroom.WaitBin(3*time.Second)] != 10 ||
			!g.HasGauges || g.Waiting != 9 || g.Active != 4 || g.ETALastMs != 9000 {
			t.Fatalf("%s.Stats = %+v; want 110 joins, 20 admissions, 10 abandons, 10 waits of 3s, gauges 9/4/9000", name, g)
		}
	}

	e := waitroom.AuditEntry{At: at, Room: "shared", Actor: waitroom.AuditActorConsole, Action: waitroom.AuditPause}
	if err := a.AddAudit(ctx, e); err != nil {
		t.Fatalf("a.AddAudit: %v", err)
	}
	e.Action = waitroom.AuditResume
	if err := b.AddAudit(ctx, e); err != nil {
		t.Fatalf("b.AddAudit: %v", err)
	}
	got, _, err := a.Audit(ctx, "shared", "", waitroom.Page{})
	if err != nil || len(got) != 2 || got[0].Action != waitroom.AuditResume || got[1].Action != waitroom.AuditPause {
		t.Fatalf("a.Audit = %+v, %v; want resume (by b) then pause (by a)", got, err)
	}

	if err := a.PutConsoleSession(ctx, "op", at.Add(time.Hour)); err != nil {
		t.Fatalf("a.PutConsoleSession: %v", err)
	}
	if live, err := b.ConsoleSession(ctx, "op", at); err != nil || !live {
		t.Fatalf("b.ConsoleSession = %v, %v; want live", live, err)
	}
	if err := b.DeleteConsoleSession(ctx, "op"); err != nil {
		t.Fatalf("b.DeleteConsoleSession: %v", err)
	}
	if live, err := a.ConsoleSession(ctx, "op", at); err != nil || live {
		t.Fatalf("a.ConsoleSession after b deleted it = %v, %v; want not live", live, err)
	}
}
