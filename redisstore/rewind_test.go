package redisstore_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/internal/redistest"
	"github.com/waitroom/waitroom/redisstore"
)

// A rewind is what a failover leaves when the replica it promotes lacked
// the primary's last writes: every key of the room as it was some writes
// ago. These tests make one without a failover: they DUMP the room's keys,
// go on, then RESTORE them (REPLACE) and delete the keys made since.

// roomSnapshot is a room's keys as DUMP gave them.
type roomSnapshot map[string]string

// roomKeys lists every key of room under prefix (one hash tag, so one
// node of a Cluster).
func roomKeys(t *testing.T, c redis.UniversalClient, prefix, room string) []string {
	t.Helper()
	pattern := prefix + ":{" + room + "}:*"
	if cc, ok := c.(*redis.ClusterClient); ok {
		var mu sync.Mutex
		var keys []string
		err := cc.ForEachMaster(t.Context(), func(ctx context.Context, n *redis.Client) error {
			k, err := n.Keys(ctx, pattern).Result()
			mu.Lock()
			keys = append(keys, k...)
			mu.Unlock()
			return err
		})
		if err != nil {
			t.Fatalf("KEYS: %v", err)
		}
		return keys
	}
	keys, err := c.Keys(t.Context(), pattern).Result()
	if err != nil {
		t.Fatalf("KEYS: %v", err)
	}
	return keys
}

func snapshotRoom(t *testing.T, c redis.UniversalClient, prefix, room string) roomSnapshot {
	t.Helper()
	snap := roomSnapshot{}
	for _, k := range roomKeys(t, c, prefix, room) {
		v, err := c.Dump(t.Context(), k).Result()
		if err != nil {
			t.Fatalf("DUMP %s: %v", k, err)
		}
		snap[k] = v
	}
	return snap
}

// rewindRoom puts room back as snap had it, as a promoted replica that
// missed every write since would.
func rewindRoom(t *testing.T, c redis.UniversalClient, prefix, room string, snap roomSnapshot) {
	t.Helper()
	ctx := t.Context()
	for _, k := range roomKeys(t, c, prefix, room) {
		if _, ok := snap[k]; !ok {
			if err := c.Del(ctx, k).Err(); err != nil {
				t.Fatalf("DEL %s: %v", k, err)
			}
		}
	}
	for k, v := range snap {
		if err := c.RestoreReplace(ctx, k, 0, v).Err(); err != nil {
			t.Fatalf("RESTORE %s: %v", k, err)
		}
	}
}

// ledger records which session each ticket and entry number was handed
// to, and counts numbers handed to a second session.
type ledger struct {
	mu                  sync.Mutex
	tickets, entries    map[int64]string
	ticketDup, entryDup int
}

func newLedger() *ledger {
	return &ledger{tickets: map[int64]string{}, entries: map[int64]string{}}
}

func (l *ledger) add(t *testing.T, s waitroom.Session) {
	t.Helper()
	id, err := waitroom.ParseSessionID(s.ID)
	if err != nil {
		t.Fatalf("session id %q: %v", s.ID, err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if s.Ticket != 0 {
		if was, ok := l.tickets[s.Ticket]; ok && was != s.ID {
			l.ticketDup++
		}
		l.tickets[s.Ticket] = s.ID
	}
	if id.Entry != 0 {
		if was, ok := l.entries[id.Entry]; ok && was != s.ID {
			l.entryDup++
		}
		l.entries[id.Entry] = s.ID
	}
}

func joinN(t *testing.T, s waitroom.Store, room string, n int, now time.Time, l *ledger) []waitroom.Session {
	t.Helper()
	out := make([]waitroom.Session, n)
	for i := range out {
		got, err := s.Join(t.Context(), room, "", now)
		if err != nil {
			t.Fatalf("Join: %v", err)
		}
		l.add(t, got)
		out[i] = got
	}
	return out
}

// rewindClient is a plain client on a fresh redis-server, for the
// snapshots, and a constructor of clients (one per simulated process).
func rewindClient(t *testing.T) (*redis.Client, func() redis.UniversalClient) {
	t.Helper()
	addr := redistest.Server(t)
	c := redis.NewClient(&redis.Options{Addr: addr})
	t.Cleanup(func() { _ = c.Close() })
	return c, func() redis.UniversalClient { return redis.NewClient(&redis.Options{Addr: addr}) }
}

// rewindScenario joins 5, snapshots, joins 5 more, rewinds the room and
// joins 5 again, one by one and then 20 at once (so the batch join meets
// the rewind too, in a second rewind), all through one process that does
// not subscribe (its marks come from its joins' answers). It returns the
// ledger and the process.
func rewindScenario(t *testing.T, opts ...redisstore.Option) (*ledger, *process) {
	c, newClient := rewindClient(t)
	prefix := freshPrefix()
	a := newProcessQuiet(t, "a", newClient, prefix, opts...)
	ctx := t.Context()
	cfg := waitroom.RoomConfig{Mode: waitroom.ModeManual, Capacity: 1}
	if _, _, err := a.store.PutRoom(ctx, "r", cfg, base); err != nil {
		t.Fatalf("PutRoom: %v", err)
	}
	l := newLedger()
	joinN(t, a.store, "r", 5, base, l)
	snap := snapshotRoom(t, c, prefix, "r")
	joinN(t, a.store, "r", 5, base, l)
	rewindRoom(t, c, prefix, "r", snap)
	joinN(t, a.store, "r", 5, base, l)

	// A second rewind, met by many joins at once: the pipeliner merges
	// them into batch joins.
	snap = snapshotRoom(t, c, prefix, "r")
	joinN(t, a.store, "r", 3, base, l)
	rewindRoom(t, c, prefix, "r", snap)
	var wg sync.WaitGroup
	for range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got, err := a.store.Join(ctx, "r", "", base)
			if err != nil {
				t.Errorf("Join: %v", err)
				return
			}
			l.add(t, got)
		}()
	}
	wg.Wait()
	return l, a
}

// newProcessQuiet is newProcess without a subscription.
func newProcessQuiet(t *testing.T, name string, newClient func() redis.UniversalClient, prefix string, opts ...redisstore.Option) *process {
	t.Helper()
	client := newClient()
	t.Cleanup(func() { _ = client.Close() })
	opts = append([]redisstore.Option{redisstore.WithPrefix(prefix), redisstore.WithProcessID(name)}, opts...)
	s, err := redisstore.New(t.Context(), client, opts...)
	if err != nil {
		t.Fatalf("redisstore.New(%s): %v", name, err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return &process{name: name, store: s, events: &recorder{}}
}

// TestRewindNoTicketTwice: after the room is rewound, no ticket goes to a
// second person; the rewinds are counted (twice: two rewinds) in the
// process and in Redis, and tickets go on increasing. Without the marks
// (the store before rewinds were detected) the same run hands tickets out
// twice: the test shows it can fail.
func TestRewindNoTicketTwice(t *testing.T) {
	t.Parallel()
	l, a := rewindScenario(t)
	t.Logf("with marks: %d tickets handed out, %d of them twice", len(l.tickets), l.ticketDup)
	if l.ticketDup != 0 {
		t.Errorf("%d tickets went to a second session", l.ticketDup)
	}
	if len(l.tickets) != 38 {
		t.Errorf("%d distinct tickets, want 38", len(l.tickets))
	}
	if got := a.store.Rewinds(); got != 2 {
		t.Errorf("Rewinds() = %d, want 2", got)
	}
	// Tickets only increase: the first join after the first rewind got 11.
	for tk := int64(1); tk <= 15; tk++ {
		if _, ok := l.tickets[tk]; !ok {
			t.Errorf("ticket %d was never handed out; want 1..15 in order", tk)
		}
	}

	t.Run("WithoutMarks", func(t *testing.T) {
		t.Parallel()
		l, a := rewindScenario(t, redisstore.WithoutRewindMarks())
		t.Logf("without marks: %d tickets handed out, %d of them twice", len(l.tickets), l.ticketDup)
		if l.ticketDup == 0 || a.store.Rewinds() != 0 {
			t.Errorf("without marks: %d tickets twice, %d rewinds; want some and none", l.ticketDup, a.store.Rewinds())
		}
	})
}

// TestRewindSeenByAnotherProcess: process a hands out tickets that b never
// sees but in a's events over pub/sub; the room is rewound; b's next join
// still follows every ticket a handed out, and b counts the rewind. The
// room's own count (rw) says 1, and a, joining after, finds nothing to
// repair. Without marks b's join gets ticket 5 again.
func TestRewindSeenByAnotherProcess(t *testing.T) {
	t.Parallel()
	for _, marks := range []bool{true, false} {
		t.Run(fmt.Sprintf("marks=%v", marks), func(t *testing.T) {
			t.Parallel()
			var opts []redisstore.Option
			if !marks {
				opts = append(opts, redisstore.WithoutRewindMarks())
			}
			c, newClient := rewindClient(t)
			testRewindSeenByAnotherProcess(t, c, newClient, marks, opts...)
		})
	}
	// On a Cluster b hears a's events over sharded pub/sub.
	t.Run("Cluster", func(t *testing.T) {
		t.Parallel()
		addrs := redistest.Cluster(t)
		newClient := func() redis.UniversalClient { return redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs}) }
		c := newClient()
		t.Cleanup(func() { _ = c.Close() })
		testRewindSeenByAnotherProcess(t, c, newClient, true)
	})
}

func testRewindSeenByAnotherProcess(t *testing.T, c redis.UniversalClient, newClient func() redis.UniversalClient, marks bool,
	opts ...redisstore.Option) {
	prefix := freshPrefix()
	a := newProcessQuiet(t, "a", newClient, prefix, opts...)
	b := newProcess(t, "b", newClient, prefix, opts...)
	ctx := t.Context()
	if _, _, err := a.store.PutRoom(ctx, "r", waitroom.RoomConfig{Mode: waitroom.ModeManual, Capacity: 1}, base); err != nil {
		t.Fatalf("PutRoom: %v", err)
	}
	l := newLedger()
	joinN(t, a.store, "r", 4, base, l)
	snap := snapshotRoom(t, c, prefix, "r")
	joinN(t, a.store, "r", 6, base, l)
	// b hears a's joins over pub/sub; wait until it has the last (a hang
	// guard, not a verdict on speed).
	deadline := time.Now().Add(30 * time.Second)
	for !sawTicket(b.events.snapshot(), 10) {
		if time.Now().After(deadline) {
			t.Fatal("b never heard of ticket 10")
		}
		time.Sleep(10 * time.Millisecond)
	}
	rewindRoom(t, c, prefix, "r", snap)
	got := joinN(t, b.store, "r", 1, base, l)
	t.Logf("marks %v: b's join after the rewind got ticket %d; %d tickets handed out twice", marks, got[0].Ticket, l.ticketDup)
	if !marks {
		if got[0].Ticket != 5 || l.ticketDup != 1 {
			t.Errorf("without marks b's join got ticket %d (%d twice), want 5 (1)", got[0].Ticket, l.ticketDup)
		}
		return
	}
	if got[0].Ticket != 11 {
		t.Errorf("b's join after the rewind got ticket %d, want 11", got[0].Ticket)
	}
	got = joinN(t, a.store, "r", 1, base, l)
	if got[0].Ticket != 12 {
		t.Errorf("a's join after b's got ticket %d, want 12", got[0].Ticket)
	}
	if l.ticketDup != 0 {
		t.Errorf("%d tickets went to a second session", l.ticketDup)
	}
	if a.store.Rewinds() != 0 || b.store.Rewinds() != 1 {
		t.Errorf("rewinds: a %d, b %d; want 0 and 1", a.store.Rewinds(), b.store.Rewinds())
	}
	if n, err := c.Get(ctx, prefix+":{r}:rw").Int(); err != nil || n != 1 {
		t.Errorf("the room's rewind count = %d (%v), want 1", n, err)
	}
}

func sawTicket(evs []waitroom.Event, ticket int64) bool {
	for _, e := range evs {
		if e.LastTicket >= ticket {
			return true
		}
	}
	return false
}

// TestRewindPrequeue: entry numbers of a scheduled room's pre-queue are not
// handed out twice either, and the draw that follows gives tickets that
// follow every ticket seen, also when the rewind undid a draw and the joins
// after it.
func TestRewindPrequeue(t *testing.T) {
	t.Parallel()
	for _, marks := range []bool{true, false} {
		t.Run(fmt.Sprintf("marks=%v", marks), func(t *testing.T) {
			t.Parallel()
			var opts []redisstore.Option
			if !marks {
				opts = append(opts, redisstore.WithoutRewindMarks())
			}
			entryDup, ticketDup, rewinds := rewindPrequeue(t, opts...)
			t.Logf("marks %v: %d entry numbers and %d tickets handed out twice, %d rewinds", marks, entryDup, ticketDup, rewinds)
			if marks && (entryDup != 0 || ticketDup != 0 || rewinds != 2) {
				t.Errorf("with marks: %d entries and %d tickets twice, %d rewinds; want 0, 0, 2", entryDup, ticketDup, rewinds)
			}
			if !marks && (entryDup == 0 || ticketDup == 0) {
				t.Errorf("without marks: %d entries and %d tickets twice; want both above 0", entryDup, ticketDup)
			}
		})
	}
}

func rewindPrequeue(t *testing.T, opts ...redisstore.Option) (entryDup, ticketDup int, rewinds int64) {
	c, newClient := rewindClient(t)
	prefix := freshPrefix()
	a := newProcessQuiet(t, "a", newClient, prefix, opts...)
	ctx := t.Context()
	opens := base.Add(time.Hour)
	cfg := waitroom.RoomConfig{Mode: waitroom.ModeManual, Capacity: 1, OpensAt: opens}
	if _, _, err := a.store.PutRoom(ctx, "r", cfg, base); err != nil {
		t.Fatalf("PutRoom: %v", err)
	}
	l := newLedger()
	joinN(t, a.store, "r", 3, base, l)
	snap := snapshotRoom(t, c, prefix, "r")
	joinN(t, a.store, "r", 3, base, l)
	rewindRoom(t, c, prefix, "r", snap)
	// Entries 4-6 are lost; the next entrants must not get their numbers.
	entrants := append([]waitroom.Session(nil), joinN(t, a.store, "r", 2, base, l)...)

	// Before the opening; then the draw (at the first operation after it),
	// and joins after it.
	snap = snapshotRoom(t, c, prefix, "r")
	after := opens.Add(time.Second)
	joinN(t, a.store, "r", 3, after, l)
	rewindRoom(t, c, prefix, "r", snap)
	// The draw and the joins after it are lost; the draw is made again.
	joinN(t, a.store, "r", 2, after, l)
	for _, e := range entrants {
		got, err := a.store.Session(ctx, "r", e.ID, after)
		if err != nil {
			t.Fatalf("Session of an entrant after the draw: %v", err)
		}
		l.add(t, got)
	}
	return l.entryDup, l.ticketDup, a.store.Rewinds()
}
