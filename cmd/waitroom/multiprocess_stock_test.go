package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/client"
	"github.com/waitroom/waitroom/internal/redistest"
)

// TestThreeProcessesOneRedisStock: three `waitroom serve` processes share
// one Redis and one room with an inventory. Through all three at once,
// people join and leave, admitted ones buy or give back their units, and
// an operator sells and releases in bulk. Every reading of the room, from
// any process, has sold + reserved + remaining = inventory with none
// negative; at the end the sales the servers acknowledged are exactly the
// units sold, and reserved is exactly the active sessions holding a unit.
func TestThreeProcessesOneRedisStock(t *testing.T) {
	if testing.Short() {
		t.Skip("runs three servers on one Redis")
	}
	addr := redistest.Server(t)
	bin := buildBinary(t)
	const token = "stock-admin-token"
	var clients []*client.Client
	for i := range 3 {
		args := append([]string{"--store", "redis://" + addr + "/0", "--admin-token", token}, noJoinLimitFlags(bin)...)
		p := startProcess(t, bin, filepath.Join(t.TempDir(), "data"+strconv.Itoa(i)), args...)
		clients = append(clients, newCrashClient(p.url, token))
	}
	const inventory = 400
	cfg := waitroom.DefaultConfig()
	cfg.Capacity = 15
	cfg.ActiveTimeout, cfg.WaitingTimeout = 0, 0
	inv := int64(inventory)
	cfg.Inventory = &inv
	if _, _, err := clients[0].PutRoom(ctx(t), "sale", cfg); err != nil {
		t.Fatal(err)
	}

	var (
		mu       sync.Mutex
		ids      []string
		problems []string
		sold     atomic.Int64 // units the servers acknowledged as sold
		readings atomic.Int64
	)
	fail := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		if len(problems) < 10 {
			problems = append(problems, fmt.Sprintf(format, args...))
		}
	}
	check := func(r waitroom.Room, via string) {
		readings.Add(1)
		if r.Remaining == nil || r.Inventory == nil {
			fail("%s: a room without stock: %+v", via, r)
			return
		}
		if r.Sold < 0 || r.Reserved < 0 || *r.Remaining < 0 || r.Sold+r.Reserved+*r.Remaining != *r.Inventory || r.Reserved > int64(r.Active) {
			fail("%s: sold %d + reserved %d + remaining %d vs inventory %d, active %d", via, r.Sold, r.Reserved, *r.Remaining, *r.Inventory, r.Active)
		}
	}
	stop := time.Now().Add(6 * time.Second)
	var wg sync.WaitGroup
	for w := range 9 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 9))
			c := clients[w%3]
			var mine []string
			for time.Now().Before(stop) {
				cctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				switch n := rng.IntN(10); {
				case n < 4 || len(mine) == 0:
					s, err := c.Join(cctx, "sale", "")
					switch {
					case err == nil:
						mine = append(mine, s.ID)
						mu.Lock()
						ids = append(ids, s.ID)
						mu.Unlock()
					case waitroom.ErrorCode(err) != waitroom.CodeSoldOut:
						fail("join: %v", err)
					}
				case n < 6:
					id := mine[rng.IntN(len(mine))]
					if _, err := c.Leave(cctx, "sale", id); err != nil {
						fail("leave: %v", err)
					}
				default:
					op := waitroom.StockSold
					if n == 9 {
						op = waitroom.StockReleased
					}
					id := mine[rng.IntN(len(mine))]
					r, err := c.Stock(cctx, "sale", op, 0, id)
					switch {
					case err == nil:
						if op == waitroom.StockSold {
							sold.Add(1)
						}
						check(r, "per-session "+string(op))
						// Bought or not, the visitor is done: the slot goes on.
						if _, err := c.Leave(cctx, "sale", id); err != nil {
							fail("leave after %s: %v", op, err)
						}
					case waitroom.ErrorCode(err) == waitroom.CodeStockConflict:
						// Waiting, or its unit went in a bulk sale: it
						// leaves, so the line moves on.
						if _, err := c.Leave(cctx, "sale", id); err != nil {
							fail("leave: %v", err)
						}
					case waitroom.ErrorCode(err) != waitroom.CodeSessionNotFound:
						fail("%s of a session: %v", op, err)
					}
				}
				cancel()
			}
		}()
	}
	// The operator, and a reader on every process.
	wg.Add(2)
	go func() {
		defer wg.Done()
		rng := rand.New(rand.NewPCG(99, 9))
		// The operator stops two seconds early, so the line moves on and
		// the end finds units reserved as well as sold.
		for time.Now().Before(stop.Add(-2 * time.Second)) {
			op, n := waitroom.StockSold, int64(1+rng.IntN(3))
			if rng.IntN(3) == 0 {
				op = waitroom.StockReleased
			}
			r, err := clients[rng.IntN(3)].Stock(ctx(t), "sale", op, n, "")
			switch {
			case err == nil:
				if op == waitroom.StockSold {
					sold.Add(n)
				}
				check(r, "bulk "+string(op))
			case waitroom.ErrorCode(err) != waitroom.CodeStockConflict:
				fail("bulk %s: %v", op, err)
			}
			time.Sleep(20 * time.Millisecond) // an operator's pace
		}
	}()
	go func() {
		defer wg.Done()
		for i := 0; time.Now().Before(stop); i++ {
			rooms, err := clients[i%3].Rooms(ctx(t))
			if err != nil {
				fail("list rooms: %v", err)
				continue
			}
			for _, r := range rooms {
				if r.Name == "sale" {
					check(r, "process "+strconv.Itoa(i%3))
				}
			}
		}
	}()
	wg.Wait()

	r, err := clients[0].Room(ctx(t), "sale")
	if err != nil {
		t.Fatal(err)
	}
	rooms, err := clients[1].Rooms(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	var final waitroom.Room
	for _, x := range rooms {
		if x.Name == "sale" {
			final = x
		}
	}
	check(final, "the end")
	holding := int64(0)
	for _, id := range ids {
		s, err := clients[2].Session(ctx(t), "sale", id)
		if err != nil {
			t.Fatalf("session %s: %v", id, err)
		}
		if s.Status == waitroom.StatusActive && s.Unit {
			holding++
		}
	}
	t.Logf("%d sessions, %d readings; sold %d (acknowledged %d), reserved %d, remaining %v, active %d, waiting %d",
		len(ids), readings.Load(), final.Sold, sold.Load(), final.Reserved, *final.Remaining, final.Active, final.Waiting)
	if r.Remaining == nil || *r.Remaining != *final.Remaining {
		t.Errorf("the public status says remaining %v, the admin listing %d", r.Remaining, *final.Remaining)
	}
	if final.Sold != sold.Load() {
		t.Errorf("sold %d, but the servers acknowledged %d sales", final.Sold, sold.Load())
	}
	if final.Reserved != holding {
		t.Errorf("reserved %d, but %d active sessions hold a unit", final.Reserved, holding)
	}
	if final.Sold == 0 || readings.Load() < 50 {
		t.Errorf("sold %d with %d readings: want a real run", final.Sold, readings.Load())
	}
	for _, p := range problems {
		t.Error(p)
	}
}
