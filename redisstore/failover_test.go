package redisstore_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/internal/redistest"
	"github.com/waitroom/waitroom/redisstore"
)

// The failover tests kill the primary (Sentinel) or the room's master
// (Cluster) with SIGKILL while 16 goroutines join one room through a
// store opened with the default settings, then read every acknowledged
// join back. They check what issue 25 asks: no acknowledged join lost, no
// ticket issued twice, every refused call an unavailable error that came
// back without hanging, and joins succeeding again after the failover.
// The times are reported, not judged (a busy machine is slow), except
// for generous hang guards.
//
// WAITROOM_FAILOVER_CYCLES=N runs N Sentinel kills and N/4 (at least 2)
// Cluster kills (the long form: 20 and 5); the default is 2 and 2. Two
// Cluster kills make a node master a second time, with its replica the
// one that died.

const (
	failoverJoiners = 16
	// callGuard is the longest one call may take: refused calls must come
	// back fast (within 3 s by design, see Open); ten is the hang guard.
	callGuard = 10 * time.Second
	// recoveryGuard is how long after the new primary is named joins
	// must succeed again at the latest (a Cluster whose slot map went
	// stale took 41-55 s; the design target is 1 s).
	recoveryGuard = 30 * time.Second
)

// failoverCycles returns the number of Sentinel and Cluster kills.
func failoverCycles(t *testing.T) (sentinel, cluster int) {
	sentinel, cluster = 2, 2
	if v := os.Getenv("WAITROOM_FAILOVER_CYCLES"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("WAITROOM_FAILOVER_CYCLES=%q: want a positive number", v)
		}
		sentinel, cluster = n, max(2, n/4)
	}
	return sentinel, cluster
}

// TestSentinelFailoverUnderLoad kills the primary of a Sentinel set under
// a join load, cycle after cycle.
func TestSentinelFailoverUnderLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("the failover tests take a while; not in -short")
	}
	sentinelFailover(t)
}

// sentinelFailover runs the Sentinel failover load, the store opened with
// opts.
func sentinelFailover(t *testing.T, opts ...redisstore.Option) {
	cycles, _ := failoverCycles(t)
	set := redistest.Sentinel(t)
	var old *redistest.Instance
	runFailover(t, set.URL(), cycles, func() (time.Time, time.Time) {
		var killed time.Time
		old, killed = set.KillPrimary()
		_, named := set.WaitNewPrimary(old)
		return killed, named
	}, func() { set.Heal(old) }, opts...)
}

// TestSentinelFailoverWithoutAck is the Sentinel run with
// --redis-ack-replicas 0: a write is answered before any replica has it,
// so a kill may lose the last joins, and the run reports how many. It
// must still hand no ticket to two people: the rewind marks (rewind.go)
// number the new primary's joins above every ticket this process saw.
func TestSentinelFailoverWithoutAck(t *testing.T) {
	if testing.Short() {
		t.Skip("the failover tests take a while; not in -short")
	}
	sentinelFailover(t, redisstore.WithAckReplicas(0))
}

// TestClusterFailoverUnderLoad kills the master of the room's slot in a
// six-node Cluster under a join load.
func TestClusterFailoverUnderLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("the failover tests take a while; not in -short")
	}
	_, cycles := failoverCycles(t)
	cl := redistest.ClusterHA(t)
	var old *redistest.Instance
	runFailover(t, cl.URL(), cycles, func() (time.Time, time.Time) {
		var killed time.Time
		old, killed = cl.KillMasterOf(roomKey)
		_, named := cl.WaitNewMaster(roomKey, old)
		return killed, named
	}, func() { cl.Heal(old) })
}

// The room of the failover tests, and a key in its slot.
const (
	failoverRoom = "fo"
	roomKey      = "wr:{fo}:room"
)

// ack is one acknowledged join.
type ack struct {
	id     string
	ticket int64
}

// failoverLoad is the join load and what it saw.
type failoverLoad struct {
	store *redisstore.Store

	mu       sync.Mutex
	acks     []ack
	refused  int
	wrong    []error // refusals that were not unavailable
	slowest  time.Duration
	over3s   int       // calls that took more than 3 s
	slow     []string  // the first of them
	killedAt time.Time // of the current cycle; zero between cycles
	back     time.Time // first success of a call begun after killedAt
	seq      atomic.Int64
}

// join joins once and records the outcome.
func (l *failoverLoad) join(ctx context.Context, worker int) {
	key := fmt.Sprintf("w%d-%d", worker, l.seq.Add(1))
	start := time.Now()
	s, err := l.store.Join(ctx, failoverRoom, key, start)
	end := time.Now()
	var e *waitroom.Error
	if waitroom.ErrorCode(err) == waitroom.CodeAlreadyJoined && errors.As(err, &e) && e.Session != nil {
		// go-redis sent the join again after a lost reply: the first run
		// took, and this is its session.
		s, err = *e.Session, nil
	}
	pause := false
	defer func() { // after the unlock below
		if pause {
			refusedPause(ctx)
		}
	}()
	l.mu.Lock()
	defer l.mu.Unlock()
	took := end.Sub(start)
	l.slowest = max(l.slowest, took)
	if took > 3*time.Second && ctx.Err() == nil {
		l.over3s++
		if len(l.slow) < 5 {
			l.slow = append(l.slow, fmt.Sprintf("%s at %s: %v", took.Round(time.Millisecond), start.Format("15:04:05.000"), err))
		}
	}
	switch {
	case err == nil:
		l.acks = append(l.acks, ack{id: s.ID, ticket: s.Ticket})
		if !l.killedAt.IsZero() && start.After(l.killedAt) && l.back.IsZero() {
			l.back = end
		}
	case ctx.Err() != nil:
		// The load is over; this call says nothing.
	case waitroom.ErrorCode(err) == waitroom.CodeUnavailable:
		l.refused++
		pause = true
	default:
		l.refused++
		if len(l.wrong) < 5 {
			l.wrong = append(l.wrong, err)
		}
		pause = true
	}
}

// runFailover opens a store on url, joins from 16 goroutines, and cycles
// times kills (kill returns when it killed and when the new primary was
// named), waits for joins to succeed again, and heals; then it reads
// every acknowledged join back.
//
// With opts that make writes wait for no replica (WithAckReplicas(0)),
// acknowledged joins may be lost, and the run only reports them; tickets
// must still not be issued twice.
func runFailover(t *testing.T, url string, cycles int, kill func() (killed, named time.Time), heal func(), opts ...redisstore.Option) {
	ctx := t.Context()
	store, err := redisstore.Open(ctx, url, opts...)
	if err != nil {
		t.Fatalf("Open(%s): %v", url, err)
	}
	t.Cleanup(func() { _ = store.Close() })
	cfg := waitroom.RoomConfig{Mode: waitroom.ModeAuto, Capacity: 0}
	if _, _, err := store.PutRoom(ctx, failoverRoom, cfg, time.Now()); err != nil {
		t.Fatalf("PutRoom: %v", err)
	}
	l := &failoverLoad{store: store}
	loadCtx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for w := 0; w < failoverJoiners; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for loadCtx.Err() == nil {
				l.join(loadCtx, w)
			}
		}()
	}
	stopLoad := sync.OnceFunc(func() { stop(); wg.Wait() })
	t.Cleanup(stopLoad)

	settle := func() { // let the load run a little on a healthy setup
		select {
		case <-time.After(time.Second):
		case <-ctx.Done():
		}
	}
	var toBack, namedToBack []time.Duration
	var toNamed []time.Duration
	for c := 1; c <= cycles; c++ {
		settle()
		l.mu.Lock()
		before := len(l.acks)
		l.mu.Unlock()
		killed, named := kill()
		l.mu.Lock()
		l.killedAt, l.back = killed, time.Time{}
		l.mu.Unlock()
		// Wait for a join begun after the kill to succeed.
		deadline := named.Add(recoveryGuard)
		var back time.Time
		for time.Now().Before(deadline) {
			l.mu.Lock()
			back = l.back
			l.mu.Unlock()
			if !back.IsZero() {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		if back.IsZero() {
			stopLoad()
			t.Fatalf("cycle %d: no join succeeded within %s of the new primary being named", c, recoveryGuard)
		}
		l.mu.Lock()
		l.killedAt = time.Time{}
		acked := len(l.acks) - before
		l.mu.Unlock()
		toNamed = append(toNamed, named.Sub(killed))
		toBack = append(toBack, back.Sub(killed))
		namedToBack = append(namedToBack, back.Sub(named))
		t.Logf("%s cycle %d: primary named %v after the kill; joins succeeded again %v after the kill, %v after it was named (%d joins acknowledged in the cycle so far)",
			killed.Format("15:04:05.000"), c, named.Sub(killed).Round(time.Millisecond), back.Sub(killed).Round(time.Millisecond),
			back.Sub(named).Round(time.Millisecond), acked)
		heal()
	}
	settle()
	stopLoad()

	// Read every acknowledged join back.
	l.mu.Lock()
	defer l.mu.Unlock()
	byTicket := make(map[int64]int, len(l.acks))
	for _, a := range l.acks {
		byTicket[a.ticket]++
	}
	twice := 0
	for _, n := range byTicket {
		if n > 1 {
			twice += n - 1
		}
	}
	lost, moved := 0, 0
	readCtx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for chunk := range slices.Chunk(l.acks, 500) {
		ids := make([]string, len(chunk))
		for i, a := range chunk {
			ids[i] = a.id
		}
		got, err := store.Sessions(readCtx, failoverRoom, ids)
		if err != nil {
			t.Fatalf("reading the acknowledged joins back: %v", err)
		}
		for i, s := range got {
			switch {
			case s.ID == "":
				lost++
			case s.Ticket != chunk[i].ticket:
				moved++
			}
		}
	}
	t.Logf("FIGURES: %d kills, %d joins acknowledged, %d lost, %d read back with another ticket, %d tickets issued twice, %d rooms rewound; %d calls refused (%d not unavailable), slowest call %v, %d calls over 3 s; "+
		"kill to new primary named %s; kill to joins succeeding again %s; named to joins succeeding again %s",
		cycles, len(l.acks), lost, moved, twice, store.Rewinds(), l.refused, len(l.wrong), l.slowest.Round(time.Millisecond), l.over3s,
		spread(toNamed), spread(toBack), spread(namedToBack))
	if len(l.slow) > 0 {
		t.Logf("calls over 3 s (the design bound; %v is the hang guard): %q", callGuard, l.slow)
	}
	if len(l.wrong) > 0 {
		t.Errorf("refused calls that were not unavailable (503), first: %v", l.wrong)
	}
	if l.slowest > callGuard {
		t.Errorf("a call took %v, longer than the %v hang guard", l.slowest, callGuard)
	}
	if len(opts) > 0 {
		// Without waiting, a loss is allowed and reported above; the
		// rewind marks keep every ticket with one person.
		if moved > 0 || twice > 0 {
			t.Errorf("%d acknowledged joins read back with another ticket, %d tickets issued twice; want none", moved, twice)
		}
	} else if lost > 0 || moved > 0 || twice > 0 {
		t.Errorf("%d acknowledged joins lost, %d read back with another ticket, %d tickets issued twice; want none", lost, moved, twice)
	}
	if len(l.acks) == 0 {
		t.Errorf("no join was acknowledged")
	}
}

// refusedPause is a joiner's pause after a refusal, as a client's after a
// 503 (shorter than any Retry-After): refusals come back at once while
// there is no primary, and sixteen joiners asking again in a tight loop
// would only spin the CPU.
func refusedPause(ctx context.Context) {
	select {
	case <-time.After(20 * time.Millisecond):
	case <-ctx.Done():
	}
}

// spread formats durations as "min-max (median m)".
func spread(ds []time.Duration) string {
	if len(ds) == 0 {
		return "-"
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	r := func(d time.Duration) time.Duration { return d.Round(10 * time.Millisecond) }
	if len(s) == 1 {
		return r(s[0]).String()
	}
	return fmt.Sprintf("%v-%v (median %v)", r(s[0]), r(s[len(s)-1]), r(s[len(s)/2]))
}
