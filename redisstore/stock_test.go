package redisstore_test

import (
	"cmp"
	"context"
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

// checkStock reports what is wrong with a room's stock counts: they must
// be non-negative and add up to the inventory, and nobody may wait once
// everything is sold.
func checkStock(r waitroom.Room) error {
	if r.Inventory == nil || r.Remaining == nil {
		return fmt.Errorf("room %q: inventory %v, remaining %v; want both", r.Name, r.Inventory, r.Remaining)
	}
	if r.Sold < 0 || r.Reserved < 0 || *r.Remaining < 0 || r.Sold+r.Reserved+*r.Remaining != *r.Inventory {
		return fmt.Errorf("room %q: sold %d + reserved %d + remaining %d, want non-negative counts that add up to the inventory %d",
			r.Name, r.Sold, r.Reserved, *r.Remaining, *r.Inventory)
	}
	if r.Sold >= *r.Inventory && (r.Waiting > 0 || r.Entrants > 0) {
		return fmt.Errorf("room %q: everything is sold, but %d wait and %d wait for the draw", r.Name, r.Waiting, r.Entrants)
	}
	return nil
}

// testStockProcesses runs three processes joining, leaving, heartbeating
// and selling in one room with an inventory at once, until it sells out.
// Every Room read, in any process, must show counts that add up; at the
// end every process must agree that the units reserved are exactly those
// the active sessions hold, and that nobody waits once all is sold.
func testStockProcesses(t *testing.T, newClient func() redis.UniversalClient, opts ...redisstore.Option) {
	prefix := freshPrefix()
	ps := []*process{
		newProcess(t, "a", newClient, prefix, opts...),
		newProcess(t, "b", newClient, prefix, opts...),
		newProcess(t, "c", newClient, prefix, opts...),
	}
	ctx := t.Context()
	const (
		capacity  = 8
		inventory = 40
		workers   = 4 // per process
		perWork   = 150
	)
	inv := int64(inventory)
	// Each operation moves the clock 1ms on: active sessions idle out
	// after about a tenth of the run, so admissions go on.
	cfg := waitroom.RoomConfig{
		Mode: waitroom.ModeAuto, Capacity: capacity, Grace: waitroom.Duration(time.Second),
		ActiveTimeout: waitroom.Duration(150 * time.Millisecond), WaitingTimeout: waitroom.Duration(30 * time.Second),
		Inventory: &inv,
	}
	if _, _, err := ps[0].store.PutRoom(ctx, "sale", cfg, base); err != nil {
		t.Fatalf("PutRoom: %v", err)
	}
	var clock atomic.Int64
	now := func() time.Time { return base.Add(time.Duration(clock.Add(1)) * time.Millisecond) }
	rec := &storetest.Recorder{Capacity: capacity}
	report := rec.Report
	var sells, soldOut atomic.Int64
	var wg sync.WaitGroup
	for pi, p := range ps {
		for w := 0; w < workers; w++ {
			wg.Add(1)
			go func(st waitroom.Store, seed uint64) {
				defer wg.Done()
				rng := rand.New(rand.NewPCG(seed, 17))
				var mine []waitroom.Session
				stock := func(op waitroom.StockOp, n int64, id string) {
					r, err := st.Stock(ctx, "sale", op, n, id, now())
					switch waitroom.ErrorCode(err) {
					case "":
						if err := checkStock(r); err != nil {
							report("Stock %s: %v", op, err)
						}
						if op == waitroom.StockSold {
							sells.Add(1)
						}
					case waitroom.CodeStockConflict, waitroom.CodeSessionNotFound:
						// Another process took the unit, or the session ended.
					default:
						report("Stock %s: %v", op, err)
					}
				}
				for i := 0; i < perWork; i++ {
					switch op := rng.IntN(20); {
					case op < 7 || len(mine) == 0:
						s, err := st.Join(ctx, "sale", "", now())
						switch waitroom.ErrorCode(err) {
						case "":
							rec.Issued(s)
							if !s.Stocked {
								report("Join: a session of a stocked room without stock: %+v", s)
							}
							mine = append(mine, s)
						case waitroom.CodeSoldOut:
							soldOut.Add(1)
						default:
							report("Join: %v", err)
						}
					case op < 10:
						s := mine[rng.IntN(len(mine))]
						if _, err := st.Leave(ctx, "sale", s.ID, waitroom.ReasonLeft, now()); err != nil {
							report("Leave(#%d): %v", s.Ticket, err)
						}
					case op < 12:
						s := mine[rng.IntN(len(mine))]
						if got, err := st.Heartbeat(ctx, "sale", s.ID, now()); err != nil {
							report("Heartbeat(#%d): %v", s.Ticket, err)
						} else {
							rec.Check("Heartbeat", got)
						}
					case op < 14:
						stock(waitroom.StockSold, 0, mine[rng.IntN(len(mine))].ID)
					case op < 16:
						stock(waitroom.StockSold, 1, "")
					case op < 17:
						stock(waitroom.StockReleased, 1, "")
					default:
						r, err := st.Room(ctx, "sale")
						if err != nil {
							report("Room: %v", err)
						} else if err := checkStock(r); err != nil {
							report("Room: %v", err)
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
	t.Logf("%d joins, %d sales, %d joins refused as sold out", len(rec.Sessions()), sells.Load(), soldOut.Load())
	issued := rec.Sessions()
	idList := ids(issued)
	for _, p := range ps {
		storetest.CheckInvariants(t, p.store, "sale", issued, capacity)
		r, err := p.store.Room(ctx, "sale")
		if err != nil {
			t.Fatalf("%s: Room: %v", p.name, err)
		}
		if err := checkStock(r); err != nil {
			t.Fatalf("%s: %v", p.name, err)
		}
		all, err := p.store.Sessions(ctx, "sale", idList)
		if err != nil {
			t.Fatalf("%s: Sessions: %v", p.name, err)
		}
		var units int64
		for _, s := range all {
			if s.Status == waitroom.StatusActive && s.Unit {
				units++
			}
			if s.Status.Final() && s.EndReason == waitroom.ReasonSoldOut && r.Sold < *r.Inventory {
				t.Fatalf("%s: #%d ended sold out, but only %d of %d are sold", p.name, s.Ticket, r.Sold, *r.Inventory)
			}
		}
		if units != r.Reserved {
			t.Fatalf("%s: %d units reserved, but %d active sessions hold one", p.name, r.Reserved, units)
		}
	}
}

// TestStockLongLineSoldOut sells out a room with a line and a pre-queue
// many times the expiry batch: the ending takes many script runs, and
// every answer meanwhile is as if it took one.
func TestStockLongLineSoldOut(t *testing.T) {
	t.Parallel()
	client := standalone(t)
	const batch = 50
	st := newStoreOn(client, redisstore.WithExpiryBatch(batch))(t).(*redisstore.Store)
	ctx := t.Context()
	inv := int64(3)
	cfg := waitroom.RoomConfig{Mode: waitroom.ModeAuto, Capacity: 3, Inventory: &inv}
	if _, _, err := st.PutRoom(ctx, "sale", cfg, base); err != nil {
		t.Fatalf("PutRoom: %v", err)
	}
	const n = 40 * batch
	ss := joinMany(t, st, "sale", n, base.Add(time.Second))
	// A pre-queue of the same size, in a room scheduled later.
	sched := cfg
	sched.OpensAt = base.Add(time.Hour)
	if _, _, err := st.PutRoom(ctx, "drop", sched, base); err != nil {
		t.Fatalf("PutRoom: %v", err)
	}
	es := joinMany(t, st, "drop", n, base.Add(time.Second))
	var events atomic.Int64
	cancel := st.Subscribe(func(e waitroom.Event) {
		for _, c := range e.Changes {
			if c.Session.EndReason == waitroom.ReasonSoldOut {
				events.Add(1)
			}
		}
	})
	defer cancel()

	at := base.Add(2 * time.Second)
	r, err := st.Stock(ctx, "sale", waitroom.StockSold, 3, "", at)
	if err != nil {
		t.Fatalf("Stock sold 3: %v", err)
	}
	if r.Waiting != 0 || r.Sold != 3 || r.Active != 3 {
		t.Fatalf("after selling out: %+v, want nobody waiting, 3 sold, 3 active", r)
	}
	r, err = st.Stock(ctx, "drop", waitroom.StockSet, 0, "", at)
	if err != nil {
		t.Fatalf("Stock set 0: %v", err)
	}
	if r.Entrants != 0 || r.Waiting != 0 {
		t.Fatalf("after the inventory went to 0: %+v, want nobody in the pre-queue", r)
	}
	for _, c := range []struct {
		room string
		ss   []waitroom.Session
	}{{"sale", ss[3:]}, {"drop", es}} {
		got, err := st.Sessions(ctx, c.room, ids(c.ss))
		if err != nil {
			t.Fatalf("Sessions: %v", err)
		}
		for i, s := range got {
			if s.Status != waitroom.StatusExpired || s.EndReason != waitroom.ReasonSoldOut || !s.EndedAt.Equal(at) {
				t.Fatalf("%s session %d after the sell-out: %s (%s) ended %s; want expired, sold_out, at %s",
					c.room, i, s.Status, s.EndReason, s.EndedAt, at)
			}
		}
	}
	if got, want := events.Load(), int64(2*n-3); got != want {
		t.Errorf("events tell of %d sessions ending sold out, want %d", got, want)
	}
	if d, err := st.Draw(ctx, "drop"); err != nil || d.Entrants != 0 {
		t.Fatalf("Draw = %+v, %v; want no entrants", d, err)
	}
}

// TestStockReadsEndSoldOutLine leaves a sold-out room with its line not
// yet ended, as a process that died between the runs of a sell-out would,
// and checks that a read ends it before it answers.
func TestStockReadsEndSoldOutLine(t *testing.T) {
	t.Parallel()
	client := standalone(t)
	prefix := freshPrefix()
	st, err := redisstore.New(t.Context(), client, redisstore.WithPrefix(prefix), redisstore.WithExpiryBatch(10))
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	defer st.Close()
	ctx := t.Context()
	inv := int64(5)
	cfg := waitroom.RoomConfig{Mode: waitroom.ModeAuto, Capacity: 0, Inventory: &inv}
	if _, _, err := st.PutRoom(ctx, "sale", cfg, base); err != nil {
		t.Fatalf("PutRoom: %v", err)
	}
	ss := joinMany(t, st, "sale", 100, base.Add(time.Second))
	// Everything sold, nothing ended yet.
	if err := client.HSet(ctx, prefix+":{sale}:room", "sold", "5").Err(); err != nil {
		t.Fatalf("HSET: %v", err)
	}
	for _, read := range []func() (int, error){
		func() (int, error) { r, err := st.Room(ctx, "sale"); return r.Waiting, err },
		func() (int, error) { w, _, err := st.Waiting(ctx, "sale", waitroom.Page{}); return len(w), err },
		func() (int, error) {
			rs, err := st.Rooms(ctx)
			if len(rs) != 1 {
				return -1, err
			}
			return rs[0].Waiting, err
		},
	} {
		if err := client.HSet(ctx, prefix+":{sale}:room", "sold", "5").Err(); err != nil {
			t.Fatalf("HSET: %v", err)
		}
		if w, err := read(); err != nil || w != 0 {
			t.Fatalf("a read of a sold-out room: %d waiting, %v; want 0", w, err)
		}
	}
	got, err := st.Sessions(ctx, "sale", ids(ss))
	if err != nil {
		t.Fatalf("Sessions: %v", err)
	}
	for i, s := range got {
		if s.EndReason != waitroom.ReasonSoldOut || !s.EndedAt.Equal(base.Add(time.Second)) {
			t.Fatalf("session %d: %s (%s) ended %s; want sold_out at the room's clock", i, s.Status, s.EndReason, s.EndedAt)
		}
	}
}

// joinMany joins n sessions to room at now, in parallel, and returns them
// in ticket order.
func joinMany(t *testing.T, st waitroom.Store, room string, n int, now time.Time) []waitroom.Session {
	t.Helper()
	out := make([]waitroom.Session, n)
	errs := make(chan error, n)
	var wg sync.WaitGroup
	for i := range out {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := st.Join(context.Background(), room, "", now)
			if err != nil {
				errs <- err
				return
			}
			out[i] = s
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("Join(%q): %v", room, err)
	}
	slices.SortFunc(out, func(a, b waitroom.Session) int { return cmp.Compare(a.Ticket, b.Ticket) })
	return out
}
