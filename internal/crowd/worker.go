package crowd

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/waitroom/waitroom"
)

// Commands a worker reads on its input, one per line.
const (
	cmdFreeze = "freeze" // stop arrivals and every user's own actions
	cmdThaw   = "thaw"
	cmdSnap   = "snap" // report every live user's latest status and position
	cmdStop   = "stop" // end the run and report results
)

// line is one JSON line a worker writes.
type line struct {
	Kind  string      `json:"k"`
	At    int64       `json:"at,omitempty"`
	Snap  [][3]int64  `json:"s,omitempty"` // ticket, position, status code
	User  *UserResult `json:"user,omitempty"`
	Count int         `json:"n,omitempty"` // joined so far (progress)
	Admit int         `json:"a,omitempty"` // admitted so far (progress)
	Upd   int64       `json:"u,omitempty"` // stream updates received so far (progress)
	Fail  int         `json:"f,omitempty"` // joins that failed for good so far (progress)
	Cause string      `json:"c,omitempty"` // what the latest of them met (progress)
}

// Status codes in snapshots.
const (
	snapWaiting = 1
	snapActive  = 2
	snapEnded   = 3
	snapEntrant = 4 // waiting in a pre-queue, before the draw: no ticket, no position
)

// Worker plays users first to first+count-1 of cfg. It reads commands from
// in, writes JSON lines to out, and returns when told to stop, when in
// closes, or when ctx ends, after writing one result line per user.
func Worker(ctx context.Context, cfg Config, first, count int, in io.Reader, out io.Writer) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	enc := json.NewEncoder(out)
	var encMu sync.Mutex
	write := func(l line) {
		encMu.Lock()
		defer encMu.Unlock()
		_ = enc.Encode(l)
	}
	var frozen atomic.Bool
	cls := clients(cfg.Sources)
	users := make([]*user, count)
	var joined, admitted, busy, updates, failed atomic.Int64
	var lastCause atomic.Pointer[string]
	for i := range users {
		n := first + i
		users[i] = &user{
			cfg: &cfg, n: n, client: cls[n%len(cls)],
			rng: rand.New(rand.NewPCG(cfg.Seed, uint64(n))), frozen: &frozen, joined: &joined, admitted: &admitted, busy: &busy, updates: &updates,
		}
		users[i].target.Store(int64(n)) // users spread over the servers
	}
	go func() {
		sc := bufio.NewScanner(in)
		for sc.Scan() {
			switch sc.Text() {
			case cmdFreeze:
				frozen.Store(true)
				// Acknowledge once the users' own requests in flight have
				// landed, so a check never counts a person's own leave
				// against them.
				for deadline := time.Now().Add(10 * time.Second); busy.Load() > 0 && time.Now().Before(deadline); {
					time.Sleep(5 * time.Millisecond)
				}
				write(line{Kind: "ack"})
			case cmdThaw:
				frozen.Store(false)
				write(line{Kind: "ack"})
			case cmdSnap:
				write(line{Kind: "snap", At: time.Now().UnixMilli(), Snap: snapshot(users)})
			case cmdStop:
				cancel()
				return
			}
		}
		cancel()
	}()
	go func() {
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				l := line{Kind: "progress", Count: int(joined.Load()), Admit: int(admitted.Load()), Upd: updates.Load(), Fail: int(failed.Load())}
				if c := lastCause.Load(); c != nil {
					l.Cause = *c
				}
				write(l)
			}
		}
	}()
	var wg sync.WaitGroup
	results := make([]UserResult, count)
	start := time.Now()
	if !cfg.Start.IsZero() {
		start = cfg.Start
	}
	for i, u := range users {
		if cfg.Rate > 0 {
			// This worker's share of the arrivals, evenly paced.
			due := start.Add(time.Duration(float64(i) / cfg.Rate * float64(time.Second)))
			select {
			case <-ctx.Done():
			case <-time.After(time.Until(due)):
			}
		}
		for frozen.Load() && ctx.Err() == nil {
			time.Sleep(10 * time.Millisecond)
		}
		if ctx.Err() != nil {
			results[i] = UserResult{User: u.n, JoinError: "not started: the run ended"}
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = u.run(ctx)
			if c := results[i].JoinCause; c != "" {
				failed.Add(1)
				lastCause.Store(&c)
			}
		}()
	}
	wg.Wait()
	<-ctx.Done()
	for i := range results {
		write(line{Kind: "user", User: &results[i]})
	}
	write(line{Kind: "done"})
	return nil
}

// snapshot lists every user's latest view.
func snapshot(users []*user) [][3]int64 {
	out := make([][3]int64, 0, len(users))
	for _, u := range users {
		u.mu.Lock()
		s := u.sess
		u.mu.Unlock()
		if s.ID == "" {
			continue
		}
		code := int64(snapEnded)
		switch s.Status {
		case waitroom.StatusWaiting:
			code = snapWaiting
			if s.Ticket == 0 {
				code = snapEntrant
			}
		case waitroom.StatusActive:
			code = snapActive
		}
		out = append(out, [3]int64{s.Ticket, s.Position, code})
	}
	return out
}
