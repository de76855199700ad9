package redisstore_test

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/internal/redistest"
)

// The shared suites check holding places and near telling through one
// process's own events. These check what the Redis store adds: the wire
// format another process and the webhook outbox decode, the batched joins
// of the fast path in a room with notify_at, and the window of positions
// an operation that took sessions off the line looks at.

// TestHoldsEventsTwoProcesses has process a join held and plain sessions in
// a room with notify_at and admit the held one, and b claim it: each
// process hears every change once, the other's over pub/sub decoding to
// the same change (contact, claim window, near position), and the webhook
// outbox makes session.near, session.invited and session.claimed with
// what they carry.
func TestHoldsEventsTwoProcesses(t *testing.T) {
	t.Parallel()
	addr := redistest.Server(t)
	newClient := func() redis.UniversalClient { return redis.NewClient(&redis.Options{Addr: addr}) }
	prefix := freshPrefix()
	a, b := newProcess(t, "a", newClient, prefix), newProcess(t, "b", newClient, prefix)
	ctx := t.Context()
	cfg := waitroom.RoomConfig{Mode: waitroom.ModeAuto, Capacity: 1, HoldPlaces: true,
		ClaimWindow: waitroom.Duration(time.Minute), NotifyAt: 2}
	if _, _, err := a.store.PutRoom(ctx, "r", cfg, base); err != nil {
		t.Fatalf("PutRoom: %v", err)
	}
	if _, err := b.store.Room(ctx, "r"); err != nil { // b follows the room from here
		t.Fatalf("Room: %v", err)
	}
	putHook(t, a.store, "r", "all", "*")
	at := func(d time.Duration) time.Time { return base.Add(d) }
	first, err := a.store.Join(ctx, "r", "", at(0))
	if err != nil {
		t.Fatalf("Join: %v", err)
	}
	const contact = "sms:+1 555 0100 (evenings)"
	held, err := a.store.JoinWith(ctx, "r", waitroom.JoinRequest{Key: "k", Contact: contact}, at(time.Millisecond))
	if err != nil || held.Contact != contact || held.Position != 1 {
		t.Fatalf("held JoinWith = %+v, %v; want waiting first with the contact", held, err)
	}
	var plain []waitroom.Session
	for i := range 3 { // the first is told at its join; the others join past notify_at
		s, err := a.store.Join(ctx, "r", "", at(time.Duration(2+i)*time.Millisecond))
		if err != nil {
			t.Fatalf("Join: %v", err)
		}
		plain = append(plain, s)
	}
	if _, err := a.store.Leave(ctx, "r", first.ID, waitroom.ReasonLeft, at(time.Second)); err != nil {
		t.Fatalf("Leave: %v", err)
	}
	waitHeard(t, b, "a", a)
	got, err := b.store.Claim(ctx, "r", held.ID, at(2*time.Second))
	if err != nil || got.Status != waitroom.StatusActive || got.Contact != contact {
		t.Fatalf("Claim = %+v, %v; want active with the contact", got, err)
	}
	waitHeard(t, a, "b", b)

	ca, cb := changeMap(t, a.events.snapshot()), changeMap(t, b.events.snapshot())
	if !reflect.DeepEqual(ca, cb) {
		t.Fatalf("a and b heard different changes:\n a %+v\n b %+v", ca, cb)
	}
	for _, w := range []struct {
		s   waitroom.Session
		pos int64
	}{{held, 1}, {plain[0], 2}, {plain[1], 2}} {
		c, ok := ca[changeKey(w.s.Ticket, waitroom.StatusWaiting, waitroom.StatusWaiting, true)]
		if !ok || c.Session.Position != w.pos || c.Session.Contact != w.s.Contact || c.Session.Key != w.s.Key {
			t.Fatalf("near change of #%d = %+v (%v), want position %d", w.s.Ticket, c, ok, w.pos)
		}
	}
	if n := countNear(ca); n != 3 {
		t.Fatalf("%d near changes, want 3: %+v", n, ca)
	}
	inv := ca[changeKey(held.Ticket, waitroom.StatusWaiting, waitroom.StatusInvited, false)].Session
	if inv.Contact != contact || !inv.ClaimBy.Equal(at(time.Second+time.Minute)) || !inv.AdmittedAt.Equal(at(time.Second)) {
		t.Fatalf("invited change = %+v, want the contact and claim_by a minute after the leave", inv)
	}
	if c := ca[changeKey(held.Ticket, waitroom.StatusInvited, waitroom.StatusActive, false)].Session; c.Contact != contact || !c.ClaimBy.IsZero() {
		t.Fatalf("claimed change = %+v, want the contact and no claim_by", c)
	}

	// The webhook outbox.
	ds, err := a.store.ClaimDeliveries(ctx, "r", "", at(time.Hour), time.Hour, 100)
	if err != nil {
		t.Fatalf("ClaimDeliveries: %v", err)
	}
	byType := map[string][]waitroom.HookSession{}
	for _, d := range ds {
		var s waitroom.HookSession
		if err := json.Unmarshal(d.Message.Data, &s); err != nil {
			t.Fatalf("message %s: %v", d.Message.ID, err)
		}
		byType[d.Message.Type] = append(byType[d.Message.Type], s)
	}
	if near := byType[waitroom.HookSessionNear]; len(near) != 3 || near[0].Ticket != held.Ticket ||
		near[0].Position != 1 || near[0].Contact != contact {
		t.Fatalf("session.near messages = %+v, want three, the first the held session's at 1 with its contact", near)
	}
	if inv := byType[waitroom.HookSessionInvited]; len(inv) != 1 || inv[0].ClaimBy == nil ||
		!inv[0].ClaimBy.Equal(at(time.Second+time.Minute)) || inv[0].ClaimPath != waitroom.ClaimPath("r", held.ID) ||
		inv[0].Contact != contact {
		t.Fatalf("session.invited messages = %+v, want one with claim_by, claim_path and the contact", inv)
	}
	if cl := byType[waitroom.HookSessionClaimed]; len(cl) != 1 || cl[0].Session != held.ID {
		t.Fatalf("session.claimed messages = %+v, want the held session's", cl)
	}
}

// waitHeard waits until p has heard over pub/sub every event process from
// (named name) made itself.
func waitHeard(t *testing.T, p *process, name string, from *process) {
	t.Helper()
	count := func(es []waitroom.Event, remote bool) (n int) {
		for _, e := range es {
			if e.Remote == remote && len(e.Changes) > 0 {
				n++
			}
		}
		return n
	}
	want := count(from.events.snapshot(), false)
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if count(p.events.snapshot(), true) >= want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s heard %d of %s's %d events", p.name, count(p.events.snapshot(), true), name, want)
		}
	}
}

func changeKey(ticket int64, from, to waitroom.Status, near bool) string {
	return fmt.Sprintf("%d %s %s %v", ticket, from, to, near)
}

// changeMap keys the changes of es by ticket, from, to and near; the
// totals, which differ from the change's moment to the event's, are left
// out, and each change must come once.
func changeMap(t *testing.T, es []waitroom.Event) map[string]waitroom.Change {
	t.Helper()
	out := map[string]waitroom.Change{}
	for _, e := range es {
		for _, c := range e.Changes {
			k := changeKey(c.Session.Ticket, c.From, c.Session.Status, c.Near)
			if _, dup := out[k]; dup {
				t.Fatalf("change %s heard twice", k)
			}
			out[k] = c
		}
	}
	return out
}

func countNear(cs map[string]waitroom.Change) (n int) {
	for _, c := range cs {
		if c.Near {
			n++
		}
	}
	return n
}

// TestHoldsNearWindow joins a line at once from many goroutines, so the
// pipeliner batches the joins, in a room with notify_at: the batch takes
// the general path while a join would stand within it, and every session
// there is told once, at its position. Raising notify_at tells the newly
// covered ones; a Front tells the one it moved; and admissions that take
// sessions off the line tell those that move up into it, looking only at
// the positions they uncovered.
func TestHoldsNearWindow(t *testing.T) {
	t.Parallel()
	s := newStoreOn(standalone(t))(t)
	ctx := t.Context()
	var mu sync.Mutex
	var near []waitroom.Change
	cancel := s.Subscribe(func(e waitroom.Event) {
		mu.Lock()
		defer mu.Unlock()
		for _, c := range e.Changes {
			if c.Near {
				near = append(near, c)
			}
		}
	})
	t.Cleanup(cancel)
	told := func() []waitroom.Change {
		mu.Lock()
		defer mu.Unlock()
		out := near
		near = nil
		return out
	}
	want := func(what string, tickets, positions []int64) {
		t.Helper()
		got := told()
		var gt, gp []int64
		for _, c := range got {
			gt, gp = append(gt, c.Session.Ticket), append(gp, c.Session.Position)
		}
		if !slices.Equal(gt, tickets) || !slices.Equal(gp, positions) {
			t.Fatalf("%s told tickets %v at %v, want %v at %v", what, gt, gp, tickets, positions)
		}
	}
	span := func(from, to int64) []int64 {
		var out []int64
		for i := from; i <= to; i++ {
			out = append(out, i)
		}
		return out
	}

	cfg := waitroom.RoomConfig{Mode: waitroom.ModeAuto, Capacity: 0, NotifyAt: 40}
	if _, _, err := s.PutRoom(ctx, "n", cfg, base); err != nil {
		t.Fatalf("PutRoom: %v", err)
	}
	const workers, each = 8, 25
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				if _, err := s.Join(ctx, "n", "", base.Add(time.Second)); err != nil {
					t.Errorf("Join: %v", err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	// Nobody is admitted, so ticket t stands at position t.
	got := told()
	slices.SortFunc(got, func(a, b waitroom.Change) int { return int(a.Session.Ticket - b.Session.Ticket) })
	if len(got) != 40 {
		t.Fatalf("concurrent joins told %d sessions, want the first 40", len(got))
	}
	for i, c := range got {
		if c.Session.Ticket != int64(i+1) || c.Session.Position != int64(i+1) {
			t.Fatalf("near change %d: #%d at %d, want #%d at %d", i, c.Session.Ticket, c.Session.Position, i+1, i+1)
		}
	}

	cfg.NotifyAt = 60
	if _, _, err := s.PutRoom(ctx, "n", cfg, base.Add(2*time.Second)); err != nil {
		t.Fatalf("PutRoom: %v", err)
	}
	want("raising notify_at", span(41, 60), span(41, 60))

	w, _, err := s.Waiting(ctx, "n", waitroom.Page{Limit: 100})
	if err != nil || len(w) != 100 {
		t.Fatalf("Waiting = %d, %v", len(w), err)
	}
	if _, err := s.Front(ctx, "n", w[99].ID, base.Add(3*time.Second)); err != nil {
		t.Fatalf("Front: %v", err)
	}
	want("a Front", []int64{100}, []int64{1})

	// Five admissions (#100, #1..#4): positions 56..60 are looked at, and
	// #61..#64 moved up into them (#60, pushed back by the Front, was told).
	cfg.Capacity = 5
	if _, _, err := s.PutRoom(ctx, "n", cfg, base.Add(4*time.Second)); err != nil {
		t.Fatalf("PutRoom: %v", err)
	}
	want("five admissions", span(61, 64), span(57, 60))
}
