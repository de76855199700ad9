package redisstore_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/internal/redistest"
	"github.com/waitroom/waitroom/redisstore"
)

func putHook(t *testing.T, s *redisstore.Store, room, name string, events ...string) {
	t.Helper()
	h := waitroom.Webhook{Room: room, Name: name, URL: "https://example.com/" + name, Events: events,
		Secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}
	if _, _, err := s.PutWebhook(t.Context(), h, base); err != nil {
		t.Fatalf("PutWebhook(%s): %v", name, err)
	}
}

// TestHooksTwoProcesses has two processes (stores with their own
// connections on one Redis) join one room, through the join fast path,
// the batched joins and the general path, while both claim from the
// room's outbox: per webhook and for any, taking the outbox in
// concurrently. Every delivery is claimed exactly once.
func TestHooksTwoProcesses(t *testing.T) {
	t.Parallel()
	addr := redistest.Server(t)
	newClient := func() redis.UniversalClient { return redis.NewClient(&redis.Options{Addr: addr}) }
	prefix := freshPrefix()
	ps := []*process{newProcess(t, "a", newClient, prefix), newProcess(t, "b", newClient, prefix)}
	ctx := t.Context()
	const (
		capacity = 5
		workers  = 4 // joiners per process
		perWork  = 60
		joins    = 2 * workers * perWork
	)
	cfg := waitroom.RoomConfig{Mode: waitroom.ModeAuto, Capacity: capacity, Grace: waitroom.Duration(time.Minute)}
	if _, _, err := ps[0].store.PutRoom(ctx, "r", cfg, base); err != nil {
		t.Fatalf("PutRoom: %v", err)
	}
	putHook(t, ps[0].store, "r", "all", "*")
	putHook(t, ps[1].store, "r", "joins", waitroom.HookSessionJoined)

	var clock atomic.Int64
	var joiners, claimers sync.WaitGroup
	var done atomic.Bool
	for _, p := range ps {
		for w := range workers {
			joiners.Add(1)
			go func() {
				defer joiners.Done()
				for i := range perWork {
					now := base.Add(time.Duration(clock.Add(1)) * time.Millisecond)
					key := ""
					if i%3 == 0 {
						key = fmt.Sprintf("%s-%d-%d", p.name, w, i)
					}
					if _, err := p.store.Join(ctx, "r", key, now); err != nil {
						t.Errorf("Join: %v", err)
						return
					}
				}
			}()
		}
	}

	var mu sync.Mutex
	seen := map[string]int{}              // webhook and message id → claims
	tickets := map[string]map[int64]int{} // webhook → joined ticket → messages
	claimAt := base.Add(time.Hour)        // everything is due; the leases outlast the test
	for _, p := range ps {
		for c, hook := range []string{"", "all", "joins", ""} {
			claimers.Add(1)
			go func() {
				defer claimers.Done()
				for {
					finished := done.Load()
					ds, err := p.store.ClaimDeliveries(ctx, "r", hook, claimAt, time.Hour, 3+c)
					if err != nil {
						t.Errorf("ClaimDeliveries: %v", err)
						return
					}
					if len(ds) == 0 {
						if finished {
							return
						}
						time.Sleep(time.Millisecond)
						continue
					}
					outs := make([]waitroom.DeliveryOutcome, 0, len(ds))
					mu.Lock()
					for _, d := range ds {
						if hook != "" && d.Hook != hook {
							t.Errorf("claim for %q returned a delivery to %q", hook, d.Hook)
						}
						seen[d.Hook+" "+d.Message.ID]++
						if d.Message.Type == waitroom.HookSessionJoined {
							var s waitroom.HookSession
							_ = json.Unmarshal(d.Message.Data, &s)
							if tickets[d.Hook] == nil {
								tickets[d.Hook] = map[int64]int{}
							}
							tickets[d.Hook][s.Ticket]++
						}
						outs = append(outs, waitroom.DeliveryOutcome{Hook: d.Hook, ID: d.Message.ID, OK: true})
					}
					mu.Unlock()
					if err := p.store.SettleDeliveries(ctx, "r", outs, claimAt); err != nil {
						t.Errorf("SettleDeliveries: %v", err)
						return
					}
				}
			}()
		}
	}
	joiners.Wait()
	done.Store(true)
	claimers.Wait()
	if t.Failed() {
		return
	}

	// Every join made session.joined for both webhooks, and the first
	// capacity admissions session.admitted for "all": each claimed once.
	want := map[string]int{"all": joins + capacity, "joins": joins}
	got := map[string]int{}
	for k, n := range seen {
		if n != 1 {
			t.Errorf("delivery %s claimed %d times, want once", k, n)
		}
		got[strings.SplitN(k, " ", 2)[0]]++
	}
	for hook, n := range want {
		if got[hook] != n {
			t.Errorf("deliveries to %s = %d, want %d", hook, got[hook], n)
		}
		if len(tickets[hook]) != joins {
			t.Errorf("tickets joined seen by %s = %d, want %d", hook, len(tickets[hook]), joins)
		}
	}
	st, err := ps[1].store.HookStats(ctx, "r")
	if err != nil {
		t.Fatalf("HookStats: %v", err)
	}
	for hook, n := range want {
		if s := st[hook]; s.Delivered != int64(n) || s.Pending != 0 || s.Dead != 0 || !s.LastDelivered.Equal(claimAt) {
			t.Errorf("HookStats[%s] = %+v, want %d delivered, none pending", hook, s, n)
		}
	}
}

// TestHookIDsNotReused checks that a room deleted and made again never
// names a message as its earlier self did: the outbox keeps its last id.
func TestHookIDsNotReused(t *testing.T) {
	t.Parallel()
	s := newStoreOn(standalone(t))(t).(*redisstore.Store)
	ctx := t.Context()
	ids := map[string]bool{}
	last := ""
	for round := range 3 {
		now := base.Add(time.Duration(round) * time.Second)
		if _, _, err := s.PutRoom(ctx, "r", waitroom.RoomConfig{Mode: waitroom.ModeManual, Capacity: 1}, now); err != nil {
			t.Fatalf("PutRoom: %v", err)
		}
		putHook(t, s, "r", "a", waitroom.HookSessionJoined)
		for range 2 {
			if _, err := s.Join(ctx, "r", "", now); err != nil {
				t.Fatalf("Join: %v", err)
			}
		}
		ds, err := s.ClaimDeliveries(ctx, "r", "a", now, time.Minute, 10)
		if err != nil || len(ds) != 2 {
			t.Fatalf("round %d: claimed %d, %v; want 2", round, len(ds), err)
		}
		for _, d := range ds {
			if ids[d.Message.ID] {
				t.Fatalf("round %d: message id %s given again", round, d.Message.ID)
			}
			ids[d.Message.ID] = true
			last = d.Message.ID
		}
		if err := s.DeleteRoom(ctx, "r", true, now); err != nil {
			t.Fatalf("DeleteRoom: %v", err)
		}
	}
	if !strings.HasPrefix(last, "msg_r_") {
		t.Fatalf("message id %q, want msg_r_…", last)
	}
}

// TestEventFlags checks that an event's flags travel in the wire format's
// optional 14th head field, and that the store sets them on the events of
// the changes that pause, resume and sell out a room.
func TestEventFlags(t *testing.T) {
	t.Parallel()
	head := "1\tpid\tr\tconfig\t1000\t2\t1\t7\t{\"mode\":\"auto\",\"capacity\":1,\"paused\":false}\t3\t0\t3\t1"
	for _, tc := range []struct {
		flags              string
		paused, sold, draw bool
	}{
		{"", false, false, false},
		{"p", true, false, false},
		{"s", false, true, false},
		{"d", false, false, true},
		{"psd", true, true, true},
	} {
		msg := head
		if tc.flags != "" {
			msg += "\t" + tc.flags
		}
		e, ok := redisstore.DecodeEvent(msg)
		if !ok || e.PausedBefore != tc.paused || e.SoldOut != tc.sold || e.DrawDone != tc.draw ||
			e.Sold != 1 || e.Admissions != 3 || e.Config == nil || e.LastTicket != 7 {
			t.Errorf("flags %q: decoded %+v, %v", tc.flags, e, ok)
		}
	}
	if _, ok := redisstore.DecodeEvent(head + "\tp\textra"); ok {
		t.Errorf("a head of 15 fields decoded")
	}

	s := newStoreOn(standalone(t))(t).(*redisstore.Store)
	ctx := t.Context()
	var mu sync.Mutex
	var evs []waitroom.Event
	defer s.Subscribe(func(e waitroom.Event) {
		mu.Lock()
		evs = append(evs, e)
		mu.Unlock()
	})()
	one := int64(1)
	cfg := waitroom.RoomConfig{Mode: waitroom.ModeAuto, Capacity: 1, Paused: true, Inventory: &one}
	steps := []func(now time.Time) error{
		func(now time.Time) error { _, _, err := s.PutRoom(ctx, "r", cfg, now); return err }, // made paused
		func(now time.Time) error { _, _, err := s.PutRoom(ctx, "r", cfg, now); return err }, // still paused
		func(now time.Time) error {
			c := cfg
			c.Paused = false
			_, _, err := s.PutRoom(ctx, "r", c, now)
			return err
		},
		func(now time.Time) error { _, err := s.Join(ctx, "r", "", now); return err },
		func(now time.Time) error { _, err := s.Stock(ctx, "r", waitroom.StockSold, 1, "", now); return err },
	}
	for i, step := range steps {
		if err := step(base.Add(time.Duration(i) * time.Second)); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	var got []string
	for _, e := range evs {
		got = append(got, fmt.Sprintf("%s paused_before=%v sold_out=%v", e.Kind, e.PausedBefore, e.SoldOut))
	}
	want := []string{
		"config paused_before=false sold_out=false",
		"config paused_before=true sold_out=false",
		"config paused_before=true sold_out=false",
		"sessions paused_before=false sold_out=false",
		"sessions paused_before=false sold_out=true",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("events:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
