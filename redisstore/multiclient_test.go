package redisstore_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/redisstore"
	"github.com/waitroom/waitroom/storetest"
)

var base = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

// process is one simulated waitroom process: its own connection pool and
// Store on the shared Redis, and a recorder of the events it sees.
type process struct {
	name   string
	store  *redisstore.Store
	events *recorder
}

func newProcess(t *testing.T, name string, newClient func() redis.UniversalClient, prefix string, opts ...redisstore.Option) *process {
	t.Helper()
	client := newClient()
	t.Cleanup(func() { _ = client.Close() })
	opts = append([]redisstore.Option{redisstore.WithPrefix(prefix), redisstore.WithProcessID(name)}, opts...)
	s, err := redisstore.New(t.Context(), client, opts...)
	if err != nil {
		t.Fatalf("redisstore.New(%s): %v", name, err)
	}
	t.Cleanup(func() { _ = s.Close() })
	p := &process{name: name, store: s, events: &recorder{}}
	cancel := s.Subscribe(p.events.add)
	t.Cleanup(cancel)
	return p
}

// recorder keeps every event a store delivers.
type recorder struct {
	mu     sync.Mutex
	events []waitroom.Event
}

func (r *recorder) add(e waitroom.Event) {
	r.mu.Lock()
	r.events = append(r.events, e)
	r.mu.Unlock()
}

func (r *recorder) snapshot() []waitroom.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.events)
}

// change is one status change reduced to what is compared.
type change struct {
	ticket   int64
	from, to waitroom.Status
}

// changes returns the status changes in the events of room, and how many
// of those events were remote.
func changes(es []waitroom.Event, room string) (out []change, remote int) {
	for _, e := range es {
		if e.Room != room {
			continue
		}
		if e.Remote {
			remote++
		}
		for _, c := range e.Changes {
			out = append(out, change{c.Session.Ticket, c.From, c.Session.Status})
		}
	}
	return out, remote
}

func sortChanges(cs []change) []change {
	cs = slices.Clone(cs)
	slices.SortFunc(cs, func(a, b change) int {
		if a.ticket != b.ticket {
			return int(a.ticket - b.ticket)
		}
		return order(a.from) - order(b.from)
	})
	return cs
}

func order(s waitroom.Status) int {
	switch s {
	case "":
		return 0
	case waitroom.StatusWaiting:
		return 1
	case waitroom.StatusActive:
		return 2
	}
	return 3
}

// testProcesses runs two processes joining, leaving, reading and sweeping
// one room at once, then checks the invariants on the shared state and that
// each process saw every change exactly once: its own as local events, the
// other's as remote ones.
func testProcesses(t *testing.T, newClient func() redis.UniversalClient, opts ...redisstore.Option) {
	prefix := freshPrefix()
	ps := []*process{
		newProcess(t, "a", newClient, prefix, opts...),
		newProcess(t, "b", newClient, prefix, opts...),
	}
	ctx := t.Context()
	const (
		capacity = 5
		workers  = 6 // per process
		perWork  = 120
		nKeys    = 6
	)
	cfg := waitroom.RoomConfig{
		Mode: waitroom.ModeAuto, Capacity: capacity, Grace: waitroom.Duration(time.Second),
		ActiveTimeout: waitroom.Duration(2 * time.Second), WaitingTimeout: waitroom.Duration(30 * time.Second),
	}
	if _, _, err := ps[0].store.PutRoom(ctx, "r", cfg, base); err != nil {
		t.Fatalf("PutRoom: %v", err)
	}
	// A process follows a room's events from its first use of the room
	// (on a Cluster, from when it hears of the room); b uses it before
	// anyone joins, so it misses nothing.
	if _, err := ps[1].store.Room(ctx, "r"); err != nil {
		t.Fatalf("Room: %v", err)
	}

	var clock atomic.Int64
	now := func() time.Time { return base.Add(time.Duration(clock.Add(1)) * time.Millisecond) }
	rec := &storetest.Recorder{Capacity: capacity}
	report, check := rec.Report, rec.Check
	var wg sync.WaitGroup
	for pi, p := range ps {
		for w := 0; w < workers; w++ {
			wg.Add(1)
			go func(st waitroom.Store, seed uint64) {
				defer wg.Done()
				rng := rand.New(rand.NewPCG(seed, 11))
				var mine []waitroom.Session
				for i := 0; i < perWork; i++ {
					switch op := rng.IntN(10); {
					case op < 4 || len(mine) == 0:
						key := ""
						if rng.IntN(2) == 0 {
							key = fmt.Sprintf("k%d", rng.IntN(nKeys))
						}
						s, err := st.Join(ctx, "r", key, now())
						switch waitroom.ErrorCode(err) {
						case "":
							rec.Issued(s)
							mine = append(mine, s)
						case waitroom.CodeAlreadyJoined:
						default:
							report("Join: %v", err)
						}
					case op < 6:
						s := mine[rng.IntN(len(mine))]
						got, err := st.Leave(ctx, "r", s.ID, waitroom.ReasonLeft, now())
						if err != nil || got.Status.Live() {
							report("Leave(#%d) = %s, %v; want ended", s.Ticket, got.Status, err)
						} else {
							check("Leave", got)
						}
					case op < 8:
						s := mine[rng.IntN(len(mine))]
						got, err := st.Heartbeat(ctx, "r", s.ID, now())
						if err != nil {
							report("Heartbeat(#%d): %v", s.Ticket, err)
						} else {
							check("Heartbeat", got)
						}
					case op < 9:
						got, err := st.Sessions(ctx, "r", ids(mine))
						if err != nil {
							report("Sessions: %v", err)
						}
						for _, s := range got {
							check("Sessions", s)
						}
					default:
						if _, err := st.Sweep(ctx, "r", now()); err != nil {
							report("Sweep: %v", err)
						}
					}
				}
			}(p.store, uint64(pi*100+w))
		}
	}
	wg.Wait()
	for _, e := range rec.Errors() {
		t.Error(e)
	}
	if t.Failed() {
		return
	}
	issued := rec.Sessions()
	// Both processes read the same state.
	for _, p := range ps {
		storetest.CheckInvariants(t, p.store, "r", issued, capacity)
	}

	// Each process saw every change exactly once, and the other's as
	// remote events. Pub/sub is asynchronous: wait for it to catch up.
	var want []change
	deadline := time.Now().Add(10 * time.Second)
	for {
		a, remoteA := changes(ps[0].events.snapshot(), "r")
		b, remoteB := changes(ps[1].events.snapshot(), "r")
		a, b = sortChanges(a), sortChanges(b)
		if slices.Equal(a, b) {
			if remoteA == 0 || remoteB == 0 {
				t.Fatalf("remote events: a saw %d, b saw %d; want some in both", remoteA, remoteB)
			}
			want = a
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the processes saw different changes: a %d, b %d", len(a), len(b))
		}
		time.Sleep(20 * time.Millisecond) // polling pub/sub delivery, not waiting for expiry
	}
	// The changes of every ticket form one valid life: born, maybe
	// admitted, maybe ended, each step once.
	life := map[int64][]change{}
	for _, c := range want {
		life[c.ticket] = append(life[c.ticket], c)
	}
	if len(life) != len(issued) {
		t.Errorf("events tell of %d sessions, %d joined", len(life), len(issued))
	}
	for tk, cs := range life {
		prev := waitroom.Status("")
		for _, c := range cs {
			if c.from != prev || !validStep(c.from, c.to) {
				t.Fatalf("ticket %d: changes %v are not one valid life", tk, cs)
			}
			prev = c.to
		}
	}
}

func validStep(from, to waitroom.Status) bool {
	switch from {
	case "":
		return to == waitroom.StatusWaiting || to == waitroom.StatusActive
	case waitroom.StatusWaiting:
		return to != waitroom.StatusWaiting && to != ""
	case waitroom.StatusActive:
		return to.Final()
	}
	return false
}

func ids(ss []waitroom.Session) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = s.ID
	}
	return out
}
