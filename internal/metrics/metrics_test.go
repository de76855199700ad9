package metrics_test

import (
	"context"
	"errors"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/internal/metrics"
	"github.com/waitroom/waitroom/memstore"
)

var t0 = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

// series returns every series of the waitroom metrics as
// `name{label="value",…} value` lines, sorted, so tests compare whole states.
// (prometheus/testutil would do, but its diff dependency is not in go.mod.)
func series(t *testing.T, reg *prometheus.Registry) []string {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatalf("Gather: %v", err)
	}
	var out []string
	for _, f := range families {
		for _, m := range f.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, l.GetName()+"="+l.GetValue())
			}
			v := m.GetCounter().GetValue() + m.GetGauge().GetValue()
			out = append(out, f.GetName()+"{"+strings.Join(labels, ",")+"} "+strconv.FormatFloat(v, 'g', -1, 64))
		}
	}
	sort.Strings(out)
	return out
}

func checkSeries(t *testing.T, reg *prometheus.Registry, want ...string) {
	t.Helper()
	got := series(t, reg)
	want = slices.Sorted(slices.Values(want))
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("metrics:\ngot\n\t%s\nwant\n\t%s", strings.Join(got, "\n\t"), strings.Join(want, "\n\t"))
	}
}

// join joins room at t0 and fails the test on error.
func join(t *testing.T, store waitroom.Store, room string) waitroom.Session {
	t.Helper()
	s, err := store.Join(context.Background(), room, "", t0)
	if err != nil {
		t.Fatalf("Join %s: %v", room, err)
	}
	return s
}

// noErr fails the test on a non-nil error.
func noErr(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestCounters drives a store through joins, admissions, leaves, expiry,
// serving and deletion and checks every series after each step.
func TestCounters(t *testing.T) {
	ctx := context.Background()
	store := memstore.New()
	defer store.Close()
	reg := prometheus.NewRegistry()
	stop := metrics.Register(store, reg)
	defer stop()

	checkSeries(t, reg, "waitroom_store_up{} 1")

	cfg := waitroom.DefaultConfig()
	cfg.Capacity = 1
	cfg.ActiveTimeout = waitroom.Duration(time.Minute)
	cfg.WaitingTimeout = 0
	if _, _, err := store.PutRoom(ctx, "shop", cfg, t0); err != nil {
		t.Fatal(err)
	}
	a := join(t, store, "shop")
	join(t, store, "shop")
	join(t, store, "shop")
	checkSeries(t, reg,
		"waitroom_store_up{} 1",
		"waitroom_joins_total{room=shop} 3",
		"waitroom_admissions_total{room=shop} 1",
		"waitroom_active{room=shop} 1",
		"waitroom_waiting{room=shop} 2",
	)

	// A leave frees the slot for the next in line.
	_, err := store.Leave(ctx, "shop", a.ID, waitroom.ReasonLeft, t0)
	noErr(t, err)
	// The admitted one idles out and the last is admitted in its place.
	_, err = store.Sweep(ctx, "shop", t0.Add(time.Minute))
	noErr(t, err)
	checkSeries(t, reg,
		"waitroom_store_up{} 1",
		"waitroom_joins_total{room=shop} 3",
		"waitroom_admissions_total{room=shop} 3",
		"waitroom_ends_total{reason=left,room=shop,status=left} 1",
		"waitroom_ends_total{reason=idle,room=shop,status=expired} 1",
		"waitroom_active{room=shop} 1",
		"waitroom_waiting{room=shop} 0",
	)

	// A manual room: two served by one advance.
	manual := waitroom.DefaultConfig()
	manual.Mode = waitroom.ModeManual
	if _, _, err := store.PutRoom(ctx, "desk", manual, t0); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		join(t, store, "desk")
	}
	_, err = store.Advance(ctx, "desk", 2, t0)
	noErr(t, err)
	checkSeries(t, reg,
		"waitroom_store_up{} 1",
		"waitroom_joins_total{room=desk} 3",
		"waitroom_ends_total{reason=served,room=desk,status=served} 2",
		"waitroom_active{room=desk} 0",
		"waitroom_waiting{room=desk} 1",
		"waitroom_joins_total{room=shop} 3",
		"waitroom_admissions_total{room=shop} 3",
		"waitroom_ends_total{reason=left,room=shop,status=left} 1",
		"waitroom_ends_total{reason=idle,room=shop,status=expired} 1",
		"waitroom_active{room=shop} 1",
		"waitroom_waiting{room=shop} 0",
	)

	// Deleting a room drops its series.
	if err := store.DeleteRoom(ctx, "shop", true, t0.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	checkSeries(t, reg,
		"waitroom_store_up{} 1",
		"waitroom_joins_total{room=desk} 3",
		"waitroom_ends_total{reason=served,room=desk,status=served} 2",
		"waitroom_active{room=desk} 0",
		"waitroom_waiting{room=desk} 1",
	)

	// After stop nothing is registered and events are no longer counted.
	stop()
	join(t, store, "desk")
	checkSeries(t, reg)
	stop() // a second stop is harmless
}

// spyStore passes everything to a memstore and lets the test publish events
// of its own, such as events from another process.
type spyStore struct {
	*memstore.Store
	mu  sync.Mutex
	fns []func(waitroom.Event)
}

func (s *spyStore) Subscribe(fn func(waitroom.Event)) func() {
	s.mu.Lock()
	s.fns = append(s.fns, fn)
	s.mu.Unlock()
	return s.Store.Subscribe(fn)
}

func (s *spyStore) publish(ev waitroom.Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, fn := range s.fns {
		fn(ev)
	}
}

// TestRemoteEventsSkipped checks that changes another process made are left
// to that process to count, while its deletions still drop series.
func TestRemoteEventsSkipped(t *testing.T) {
	store := &spyStore{Store: memstore.New()}
	defer store.Close()
	reg := prometheus.NewRegistry()
	defer metrics.Register(store, reg)()

	joined := waitroom.Change{Session: waitroom.Session{Room: "r", Status: waitroom.StatusActive}}
	store.publish(waitroom.Event{Room: "r", Kind: waitroom.EventSessions, Changes: []waitroom.Change{joined}, Remote: true})
	checkSeries(t, reg, "waitroom_store_up{} 1")

	store.publish(waitroom.Event{Room: "r", Kind: waitroom.EventSessions, Changes: []waitroom.Change{joined}})
	checkSeries(t, reg,
		"waitroom_store_up{} 1",
		"waitroom_joins_total{room=r} 1",
		"waitroom_admissions_total{room=r} 1",
	)

	// A deletion by another process still drops the room's series here.
	store.publish(waitroom.Event{Room: "r", Kind: waitroom.EventDeleted, Remote: true})
	checkSeries(t, reg, "waitroom_store_up{} 1")
}

// downStore fails to list rooms.
type downStore struct{ *memstore.Store }

func (downStore) Rooms(context.Context) ([]waitroom.Room, error) {
	return nil, waitroom.Unavailable(errors.New("connection refused"), "listing rooms")
}

// TestStoreDown checks that a failing store makes the gauges go missing
// and says so in waitroom_store_up, without failing the whole scrape.
func TestStoreDown(t *testing.T) {
	store := downStore{memstore.New()}
	defer store.Close()
	reg := prometheus.NewRegistry()
	defer metrics.Register(store, reg)()
	checkSeries(t, reg, "waitroom_store_up{} 0")
}

// TestCountersHeldPlaces: a held session's invitation is its admission;
// its claim is not a second one; an invitation left unclaimed ends with
// reason unclaimed.
func TestCountersHeldPlaces(t *testing.T) {
	ctx := context.Background()
	store := memstore.New()
	defer store.Close()
	reg := prometheus.NewRegistry()
	stop := metrics.Register(store, reg)
	defer stop()
	cfg := waitroom.DefaultConfig()
	cfg.Capacity, cfg.WaitingTimeout = 2, 0
	cfg.HoldPlaces, cfg.ClaimWindow = true, waitroom.Duration(time.Minute)
	if _, _, err := store.PutRoom(ctx, "clinic", cfg, t0); err != nil {
		t.Fatal(err)
	}
	a, err := store.JoinWith(ctx, "clinic", waitroom.JoinRequest{Contact: "sms:1"}, t0)
	noErr(t, err)
	_, err = store.JoinWith(ctx, "clinic", waitroom.JoinRequest{Contact: "sms:2"}, t0)
	noErr(t, err)
	_, err = store.Claim(ctx, "clinic", a.ID, t0.Add(time.Second))
	noErr(t, err)
	_, err = store.Sweep(ctx, "clinic", t0.Add(time.Minute))
	noErr(t, err)
	checkSeries(t, reg,
		"waitroom_store_up{} 1",
		"waitroom_joins_total{room=clinic} 2",
		"waitroom_admissions_total{room=clinic} 2",
		"waitroom_ends_total{reason=unclaimed,room=clinic,status=expired} 1",
		"waitroom_active{room=clinic} 1",
		"waitroom_waiting{room=clinic} 0",
	)
}

// ackStore is a store that counts unconfirmed writes, as redisstore does.
type ackStore struct {
	waitroom.Store
	n uint64
}

func (s *ackStore) AckTimeouts() uint64 { return s.n }

// TestAckTimeouts checks that a store counting writes its replicas did not
// confirm is exported as waitroom_redis_ack_timeouts_total, and that a
// store without the count has no such series.
func TestAckTimeouts(t *testing.T) {
	store := &ackStore{Store: memstore.New(), n: 3}
	defer store.Close()
	reg := prometheus.NewRegistry()
	defer metrics.Register(store, reg)()
	checkSeries(t, reg, "waitroom_redis_ack_timeouts_total{} 3", "waitroom_store_up{} 1")
	store.n = 5
	checkSeries(t, reg, "waitroom_redis_ack_timeouts_total{} 5", "waitroom_store_up{} 1")
}
