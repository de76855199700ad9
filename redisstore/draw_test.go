package redisstore_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
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

// The draw of a scheduled room is computed in Go and applied by the script
// in steps (schedule.go). These tests cover what the conformance suite
// cannot see: a draw in many steps, two processes drawing at once, a draw
// that a failed process left half done, batched pre-queue joins, and the
// events other processes hear.

var opens = base.Add(time.Hour)

// scheduledRoom puts room, opening at opens, with capacity.
func scheduledRoom(t *testing.T, s waitroom.Store, room string, capacity int) {
	t.Helper()
	cfg := waitroom.RoomConfig{Mode: waitroom.ModeAuto, Capacity: capacity, Grace: waitroom.Duration(30 * time.Second), OpensAt: opens}
	if _, _, err := s.PutRoom(context.Background(), room, cfg, base); err != nil {
		t.Fatalf("PutRoom(%q): %v", room, err)
	}
}

// fillPreQueue joins n entrants into room, every fifth with a key, one
// millisecond apart.
func fillPreQueue(t *testing.T, s waitroom.Store, room string, n int) []waitroom.Session {
	t.Helper()
	out := make([]waitroom.Session, n)
	for i := range out {
		key := ""
		if i%5 == 0 {
			key = fmt.Sprintf("user-%d", i)
		}
		got, err := s.Join(context.Background(), room, key, base.Add(time.Duration(i)*time.Millisecond))
		if err != nil || got.Ticket != 0 || got.Entry == "" {
			t.Fatalf("Join %d = %+v, %v; want an entrant", i, got, err)
		}
		out[i] = got
	}
	return out
}

// checkDrawn checks room's draw: it verifies, lists exactly the entries of
// want, and every one of want holds the ticket the record gives its entry,
// by its entry id.
func checkDrawn(t *testing.T, s waitroom.Store, room string, want []waitroom.Session) waitroom.DrawRecord {
	t.Helper()
	ctx := context.Background()
	d, err := s.Draw(ctx, room)
	if err != nil {
		t.Fatalf("Draw: %v", err)
	}
	if err := waitroom.VerifyDraw(d); err != nil {
		t.Fatalf("VerifyDraw: %v", err)
	}
	if len(d.Entries) != len(want) {
		t.Fatalf("the draw lists %d entries, want %d", len(d.Entries), len(want))
	}
	ticketOf := make(map[string]int64, len(d.Entries))
	for _, e := range d.Entries {
		ticketOf[e.Entry] = e.Ticket
	}
	ids := make([]string, len(want))
	for i, w := range want {
		ids[i] = w.ID
	}
	got, err := s.Sessions(ctx, room, ids)
	if err != nil {
		t.Fatalf("Sessions: %v", err)
	}
	for i, g := range got {
		tk, ok := ticketOf[want[i].Entry]
		if !ok || g.ID != want[i].ID || g.Ticket != tk || g.Entry != want[i].Entry {
			t.Fatalf("entrant %d after the draw = ticket %d entry %q (id kept %v); want ticket %d (listed %v)",
				i, g.Ticket, g.Entry, g.ID == want[i].ID, tk, ok)
		}
	}
	return d
}

// TestDrawInSteps draws a pre-queue in many script runs, on a standalone
// Redis and on a Cluster: the result is the same single draw, and this
// process's events carry every entrant's ticket and, once, the drawn state.
func TestDrawInSteps(t *testing.T) {
	t.Run("Standalone", func(t *testing.T) { testDrawInSteps(t, standalone(t)) })
	t.Run("Cluster", func(t *testing.T) {
		c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: redistest.Cluster(t)})
		t.Cleanup(func() { _ = c.Close() })
		testDrawInSteps(t, c)
	})
}

func testDrawInSteps(t *testing.T, client redis.UniversalClient) {
	s := newStoreOn(client, redisstore.WithDrawStep(7))(t)
	ctx := t.Context()
	var mu sync.Mutex
	var drawn, states int
	cancel := s.Subscribe(func(e waitroom.Event) {
		mu.Lock()
		defer mu.Unlock()
		for _, c := range e.Changes {
			if c.From == waitroom.StatusWaiting && c.Session.Status == waitroom.StatusWaiting && c.Session.Ticket != 0 {
				drawn++
			}
		}
		if e.Draw != nil && e.Draw.Drawn {
			states++
		}
	})
	defer cancel()
	scheduledRoom(t, s, "drop", 10)
	ss := fillPreQueue(t, s, "drop", 60)
	for _, i := range []int{3, 10, 59} {
		if _, err := s.Leave(ctx, "drop", ss[i].ID, waitroom.ReasonLeft, base.Add(time.Minute)); err != nil {
			t.Fatalf("Leave: %v", err)
		}
	}
	live := slices.Clone(ss)
	live = slices.Delete(live, 59, 60)
	live = slices.Delete(live, 10, 11)
	live = slices.Delete(live, 3, 4)
	if _, err := s.Sweep(ctx, "drop", opens); err != nil {
		t.Fatalf("Sweep at the opening: %v", err)
	}
	d := checkDrawn(t, s, "drop", live)
	if d.FirstTicket != 1 || !d.DrawnAt.Equal(opens) {
		t.Fatalf("record: first ticket %d drawn at %s; want 1 at the opening", d.FirstTicket, d.DrawnAt)
	}
	r, err := s.Room(ctx, "drop")
	if err != nil || r.Active != 10 || r.Waiting != 47 || r.LastTicket != 57 || r.Entrants != 0 {
		t.Fatalf("Room after the draw = %+v, %v; want 10 active, 47 waiting, last ticket 57", r, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if drawn != 57 || states != 1 {
		t.Fatalf("events: %d entrants drawn, %d drawn states; want 57 and 1", drawn, states)
	}
}

// TestDrawTwoProcesses has two processes meet the opening at once, each
// from many goroutines: there is one draw, every ticket is issued once,
// and the joins after the opening queue behind every entrant. The draw's
// lease lapses at once, so both processes drive the draw together, step
// by step.
func TestDrawTwoProcesses(t *testing.T) {
	addr := redistest.Server(t)
	newClient := func() redis.UniversalClient { return redis.NewClient(&redis.Options{Addr: addr}) }
	prefix := freshPrefix()
	a := newProcess(t, "a", newClient, prefix, redisstore.WithDrawStep(3), redisstore.WithDrawLease(time.Millisecond))
	b := newProcess(t, "b", newClient, prefix, redisstore.WithDrawStep(3), redisstore.WithDrawLease(time.Millisecond))
	scheduledRoom(t, a.store, "drop", 0)
	ss := fillPreQueue(t, a.store, "drop", 300)
	ctx := t.Context()

	var wg sync.WaitGroup
	var mu sync.Mutex
	var late []waitroom.Session
	errs := make(chan error, 64)
	for i := range 32 {
		p := a
		if i%2 == 1 {
			p = b
		}
		wg.Go(func() {
			now := opens.Add(time.Duration(i) * time.Millisecond)
			var err error
			switch i % 4 {
			case 0, 1:
				var s waitroom.Session
				if s, err = p.store.Join(ctx, "drop", "", now); err == nil {
					mu.Lock()
					late = append(late, s)
					mu.Unlock()
				}
			case 2:
				_, err = p.store.Sweep(ctx, "drop", now)
			case 3:
				_, err = p.store.Session(ctx, "drop", ss[i].ID, now)
			}
			if err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("an operation at the opening failed: %v", err)
	}
	d := checkDrawn(t, a.store, "drop", ss)
	if db, err := b.store.Draw(ctx, "drop"); err != nil || db.Digest != d.Digest || db.Seed != d.Seed {
		t.Fatalf("b's Draw = digest %s, %v; want a's %s", db.Digest, err, d.Digest)
	}
	seen := map[int64]bool{}
	for _, s := range late {
		if s.Ticket <= 300 || seen[s.Ticket] || s.Entry != "" {
			t.Fatalf("a join after the opening got ticket %d (entry %q); want a fresh one after the 300 drawn", s.Ticket, s.Entry)
		}
		seen[s.Ticket] = true
	}
	r, err := a.store.Room(ctx, "drop")
	if err != nil || r.Waiting != 300+len(late) || r.LastTicket != int64(300+len(late)) {
		t.Fatalf("Room = %+v, %v; want %d waiting, last ticket %d", r, err, 300+len(late), 300+len(late))
	}
}

// failDrawStep fails the script runs of a draw's steps after the first
// pass, as if the process driving the draw died or lost Redis.
type failDrawStep struct{ pass, n *atomic.Int32 }

func (failDrawStep) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h failDrawStep) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if isDrawStep(cmd) && h.n.Add(1) > h.pass.Load() {
			cmd.SetErr(errors.New("injected: the connection broke"))
			return cmd.Err()
		}
		return next(ctx, cmd)
	}
}
func (h failDrawStep) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, cmd := range cmds {
			if isDrawStep(cmd) && h.n.Add(1) > h.pass.Load() {
				return errors.New("injected: the connection broke")
			}
		}
		return next(ctx, cmds)
	}
}

func isDrawStep(cmd redis.Cmder) bool {
	if name := cmd.Name(); name != "evalsha" && name != "eval" {
		return false
	}
	return slices.Contains(cmd.Args(), any("drawstep"))
}

// TestDrawResumes leaves a draw half applied by a process that failed, with
// its lease still held as if it had died: another process waits for the
// lease to lapse, then finishes the same draw.
func TestDrawResumes(t *testing.T) {
	addr := redistest.Server(t)
	prefix := freshPrefix()
	hook := failDrawStep{pass: new(atomic.Int32), n: new(atomic.Int32)}
	hook.pass.Store(3)
	broken := func() redis.UniversalClient {
		c := redis.NewClient(&redis.Options{Addr: addr})
		c.AddHook(hook)
		return c
	}
	newClient := func() redis.UniversalClient { return redis.NewClient(&redis.Options{Addr: addr}) }
	a := newProcess(t, "a", broken, prefix, redisstore.WithDrawStep(10))
	b := newProcess(t, "b", newClient, prefix, redisstore.WithDrawStep(10), redisstore.WithDrawLease(time.Second))
	scheduledRoom(t, a.store, "drop", 5)
	ss := fillPreQueue(t, a.store, "drop", 95)
	ctx := t.Context()

	if _, err := a.store.Sweep(ctx, "drop", opens); waitroom.ErrorCode(err) != waitroom.CodeUnavailable {
		t.Fatalf("Sweep with the draw failing after 3 steps: error %v, want unavailable", err)
	}
	// a gave its lease back when it failed; as if it had died instead, a
	// ghost holds it for a while.
	lease := prefix + ":{drop}:dl"
	if err := newClient().Set(ctx, lease, "ghost", 300*time.Millisecond).Err(); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	got, err := b.store.Join(ctx, "drop", "", opens.Add(time.Second))
	if err != nil || got.Ticket != 96 {
		t.Fatalf("Join after the opening = ticket %d, %v; want 96, after the 95 drawn", got.Ticket, err)
	}
	if waited := time.Since(start); waited < 250*time.Millisecond {
		t.Fatalf("b finished the draw after %s, before the ghost's lease lapsed", waited)
	}
	d := checkDrawn(t, b.store, "drop", ss)
	if !d.DrawnAt.Equal(opens) {
		t.Fatalf("drawn at %s, want the opening, when a froze the pre-queue", d.DrawnAt)
	}
	w, _, err := b.store.Waiting(ctx, "drop", waitroom.Page{Limit: 1000})
	if err != nil || len(w) != 91 {
		t.Fatalf("Waiting = %d sessions, %v; want 91", len(w), err)
	}
	for i, s := range w {
		if s.Ticket != int64(i+6) {
			t.Fatalf("waiting %d has ticket %d, want %d: every ticket once, in order", i, s.Ticket, i+6)
		}
	}
	// a, working again, sees the draw done.
	hook.pass.Store(1 << 30)
	if d2 := checkDrawn(t, a.store, "drop", ss); d2.Digest != d.Digest {
		t.Fatalf("a reads digest %s, b %s", d2.Digest, d.Digest)
	}
}

// TestPreQueueJoinsBatched sends many concurrent joins to a pre-queue: they
// go out in batches, each gets its own entry number, keys stay unique, and
// the draw lists every entrant.
func TestPreQueueJoinsBatched(t *testing.T) {
	addr := redistest.Server(t)
	client := redis.NewClient(&redis.Options{Addr: addr, PoolSize: 80})
	defer client.Close()
	ctx := t.Context()
	s, err := redisstore.New(ctx, client, redisstore.WithPrefix(freshPrefix()), redisstore.WithPipelines(1))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	scheduledRoom(t, s, "drop", 1)
	before := evalshaCalls(t, client)
	const callers, each, keys = 64, 30, 50
	var mu sync.Mutex
	var joined []waitroom.Session
	var wg sync.WaitGroup
	for c := range callers {
		wg.Go(func() {
			for i := range each {
				key := ""
				if i%3 == 0 {
					key = fmt.Sprintf("k%d", (c*each+i)%keys)
				}
				got, err := s.Join(ctx, "drop", key, base.Add(time.Second))
				if waitroom.ErrorCode(err) == waitroom.CodeAlreadyJoined && key != "" {
					continue
				}
				if err != nil || got.Ticket != 0 || got.Entry == "" || got.Key != key || !got.OpensAt.Equal(opens) {
					t.Errorf("Join(key %q) = %+v, %v; want an entrant", key, got, err)
					return
				}
				mu.Lock()
				joined = append(joined, got)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	calls := evalshaCalls(t, client) - before
	if calls >= int64(len(joined)) {
		t.Errorf("%d joins took %d script runs; want them batched", len(joined), calls)
	}
	entries := map[int64]bool{}
	byKey := map[string]bool{}
	for _, j := range joined {
		sid, err := waitroom.ParseSessionID(j.ID)
		if err != nil || sid.Entry == 0 || entries[sid.Entry] {
			t.Fatalf("entrant id %s: entry %d, %v; want a fresh entry number", j.ID, sid.Entry, err)
		}
		entries[sid.Entry] = true
		if j.Key != "" {
			if byKey[j.Key] {
				t.Fatalf("key %q holds two entrants", j.Key)
			}
			byKey[j.Key] = true
		}
	}
	if len(byKey) != keys {
		t.Fatalf("%d keys hold an entrant, want %d", len(byKey), keys)
	}
	r, err := s.Room(ctx, "drop")
	if err != nil || r.Entrants != len(joined) || r.Waiting != 0 || r.LastTicket != 0 {
		t.Fatalf("Room = %+v, %v; want %d entrants and nobody in line", r, err, len(joined))
	}
	if _, err := s.Sweep(ctx, "drop", opens); err != nil {
		t.Fatal(err)
	}
	checkDrawn(t, s, "drop", joined)
}

// TestScheduleRemoteEvents checks what another process hears of a pre-queue
// and its draw: each entrant's join and ticket, with its entry; never the
// seed.
func TestScheduleRemoteEvents(t *testing.T) {
	addr := redistest.Server(t)
	newClient := func() redis.UniversalClient { return redis.NewClient(&redis.Options{Addr: addr}) }
	prefix := freshPrefix()
	a := newProcess(t, "a", newClient, prefix)
	b := newProcess(t, "b", newClient, prefix)
	scheduledRoom(t, a.store, "drop", 1)
	ss := fillPreQueue(t, a.store, "drop", 3)
	if _, err := a.store.Sweep(t.Context(), "drop", opens); err != nil {
		t.Fatal(err)
	}
	d := checkDrawn(t, a.store, "drop", ss)
	ticketOf := map[string]int64{}
	for _, e := range d.Entries {
		ticketOf[e.Entry] = e.Ticket
	}
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		var joins, draws int
		for _, e := range b.events.snapshot() {
			if !e.Remote {
				continue
			}
			if e.Draw != nil {
				t.Fatalf("a remote event carries the draw state %+v: the seed must not go over pub/sub", e.Draw)
			}
			for _, c := range e.Changes {
				i := slices.IndexFunc(ss, func(s waitroom.Session) bool { return s.ID == c.Session.ID })
				switch {
				case i < 0:
				case c.From == "" && c.Session.Ticket == 0 && c.Session.Entry == ss[i].Entry && c.Session.OpensAt.Equal(opens):
					joins++
				case c.From == waitroom.StatusWaiting && c.Session.Status == waitroom.StatusWaiting &&
					c.Session.Ticket == ticketOf[ss[i].Entry] && c.Session.Entry == ss[i].Entry:
					draws++
				}
			}
		}
		if joins == 3 && draws == 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("b heard %d pre-queue joins and %d draws, want 3 and 3", joins, draws)
		}
	}
	var local int
	for _, e := range a.events.snapshot() {
		if e.Draw != nil && !e.Remote {
			local++
		}
	}
	if local != 2 {
		t.Fatalf("a's own events carry %d draw states, want 2: the schedule's seed, then the draw", local)
	}
	if !strings.HasPrefix(ss[0].Entry, "k:") {
		t.Fatalf("entrant 0 joined with a key but has entry %q", ss[0].Entry)
	}
}

// TestPreQueueJoinSentTwice resends pre-queue joins whose replies were
// lost, as go-redis does after a broken connection: each still makes one
// entrant and answers with it, alone and batched, keyless and keyed.
func TestPreQueueJoinSentTwice(t *testing.T) {
	addr := redistest.Server(t)
	ctx := context.Background()
	for _, tc := range resentJoins {
		t.Run(tc.name, func(t *testing.T) {
			client, proxy := resendingClient(t, addr, tc.marker)
			s, err := redisstore.New(ctx, client, redisstore.WithPrefix(freshPrefix()), redisstore.WithPipelines(1))
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			scheduledRoom(t, s, "drop", 1)
			results := joinResent(t, proxy, s, "drop", tc.key, tc.callers, base)
			seen := map[string]bool{}
			for i, r := range results {
				if r.Ticket != 0 || r.Entry == "" || seen[r.ID] {
					t.Fatalf("Join %d = %+v; want its own entrant (a resent join must answer with it)", i, r)
				}
				seen[r.ID] = true
				got, err := s.Session(ctx, "drop", r.ID, base)
				if err != nil || got.Entry != r.Entry {
					t.Errorf("Session(%s) = %+v, %v", r.ID, got, err)
				}
			}
			if r, err := s.Room(ctx, "drop"); err != nil || r.Entrants != tc.callers {
				t.Errorf("Room = %+v, %v; want %d entrants (a resent join made another)", r, err, tc.callers)
			}
		})
	}
}

// drawEntrants is the size of the draw the benchmark times.
const drawEntrants = 100_000

// BenchmarkDraw100k times the draw of a pre-queue of 100,000 entrants (one
// in ten keyed), with a subscriber as a server has: the Sweep at the
// opening that freezes the pre-queue, reads it, orders it, applies the
// order in steps (delivering their events) and admits the first 100. The
// pre-queue is filled by concurrent joins, outside the timing.
//
//	go test -run '^$' -bench Draw100k -benchtime 3x ./redisstore
func BenchmarkDraw100k(b *testing.B) {
	addr := redistest.Server(b)
	ctx := context.Background()
	client := benchClient(addr, 64)
	defer client.Close()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		s, err := redisstore.New(ctx, client, redisstore.WithPrefix(freshPrefix()))
		if err != nil {
			b.Fatal(err)
		}
		// A server always listens (its push hub), so the draw's events
		// come back to this process and are decoded, as they would be.
		var heard atomic.Int64
		cancel := s.Subscribe(func(e waitroom.Event) { heard.Add(int64(len(e.Changes))) })
		cfg := waitroom.RoomConfig{Mode: waitroom.ModeAuto, Capacity: 100, Grace: waitroom.Duration(30 * time.Second),
			WaitingTimeout: waitroom.Duration(time.Minute), OpensAt: opens}
		if _, _, err := s.PutRoom(ctx, "drop", cfg, base); err != nil {
			b.Fatal(err)
		}
		fillStart := time.Now()
		var next atomic.Int64
		var wg sync.WaitGroup
		var failed atomic.Value
		for range 64 {
			wg.Go(func() {
				for {
					n := next.Add(1) - 1
					if n >= drawEntrants {
						return
					}
					key := ""
					if n%10 == 0 {
						key = fmt.Sprintf("user-%d", n)
					}
					if _, err := s.Join(ctx, "drop", key, base.Add(time.Second)); err != nil {
						failed.CompareAndSwap(nil, err)
						return
					}
				}
			})
		}
		wg.Wait()
		if err, _ := failed.Load().(error); err != nil {
			b.Fatalf("Join: %v", err)
		}
		fill := time.Since(fillStart)
		b.StartTimer()
		start := time.Now()
		res, err := s.Sweep(ctx, "drop", opens)
		took := time.Since(start)
		b.StopTimer()
		if err != nil || res.Admitted != 100 {
			b.Fatalf("Sweep at the opening = %+v, %v; want 100 admitted", res, err)
		}
		r, err := s.Room(ctx, "drop")
		if err != nil || r.Waiting+r.Active != drawEntrants || r.LastTicket != drawEntrants {
			b.Fatalf("Room after the draw = %+v, %v", r, err)
		}
		readStart := time.Now()
		d, err := s.Draw(ctx, "drop")
		if err != nil {
			b.Fatal(err)
		}
		if err := waitroom.VerifyDraw(d); err != nil || len(d.Entries) != drawEntrants {
			b.Fatalf("VerifyDraw = %v with %d entries", err, len(d.Entries))
		}
		b.Logf("filled %d entrants in %s (%.0f joins/s); draw %s; Draw() read %s; %d changes heard",
			drawEntrants, fill.Round(time.Millisecond), drawEntrants/fill.Seconds(), took.Round(time.Millisecond),
			time.Since(readStart).Round(time.Millisecond), heard.Load())
		cancel()
		b.ReportMetric(float64(took.Milliseconds()), "draw-ms")
		_ = s.DeleteRoom(ctx, "drop", true, opens)
		_ = s.Close()
		b.StartTimer()
	}
}
