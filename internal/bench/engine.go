package bench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/memstore"
)

// t0 is the engine rows' fixed now: with time standing still nobody's
// timer runs out, so the line keeps its length while it is measured.
var t0 = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

// engineBatch is how many operations an engine or SQL batch runs before
// the line is restored: at most a tenth of the line, so its length stays
// within 10% of the row's size.
func engineBatch(n int) int { return max(1, min(1000, n/10)) }

// engineRows measures the engine's join, position and leave with n waiting
// against the seed's SQL design at the same size, in a SQLite file at path.
func engineRows(ctx context.Context, opt Options, n int, path string) []Row {
	size := sizeName(n)
	rows := []Row{
		{Name: "engine position, " + size + " waiting", Unit: "ops/s", Baseline: "seed SQL COUNT(*) position (SQLite)"},
		{Name: "engine join, " + size + " waiting", Unit: "ops/s", Baseline: "seed SQL INSERT join (SQLite)"},
		{Name: "engine leave, " + size + " waiting", Unit: "ops/s", Baseline: "seed SQL UPDATE leave (SQLite)"},
	}
	if n == 1_000_000 {
		rows[0].Goal = 10_000
	}
	eng, err := newEngine(ctx, n)
	if err != nil {
		return skipped("engine setup failed: "+err.Error(), rows...)
	}
	defer eng.s.Close()
	sq, err := openSeedSQL(ctx, path, "OFF", n)
	if err != nil {
		return skipped("seed SQL setup failed: "+err.Error(), rows...)
	}
	defer sq.close()

	batch := engineBatch(n)
	type pair struct{ subject, baseline batchFunc }
	pairs := []pair{
		{eng.positions(1024), sq.positions()},
		{eng.joins(batch), sq.joins(batch)},
		{eng.leaves(batch), sq.leaves(batch)},
	}
	for i, p := range pairs {
		s, b, err := compare(ctx, opt.Time, opt.Rounds, p.subject, p.baseline)
		if err != nil {
			rows[i].Skipped = "failed: " + err.Error()
			continue
		}
		rows[i].Value, rows[i].BaselineValue = s.rate(), b.rate()
		rows[i].Note = fmt.Sprintf("1 caller; %s SQL ops timed", Group(b.ops))
	}
	return rows
}

// sizeName is 10k, 100k, 1M and so on.
func sizeName(n int) string {
	switch {
	case n >= 1_000_000 && n%1_000_000 == 0:
		return fmt.Sprintf("%dM", n/1_000_000)
	case n >= 1000 && n%1000 == 0:
		return fmt.Sprintf("%dk", n/1000)
	}
	return Group(int64(n))
}

// engine is a memstore room "r" with a line of waiting sessions.
type engine struct {
	s   *memstore.Store
	ids []string // the sessions waiting now
	rng *rand.Rand
}

func newEngine(ctx context.Context, n int) (*engine, error) {
	s := memstore.New()
	cfg := waitroom.DefaultConfig()
	cfg.Capacity = 0 // nobody is admitted: everyone waits
	if _, _, err := s.PutRoom(ctx, "r", cfg, t0); err != nil {
		s.Close()
		return nil, err
	}
	e := &engine{s: s, ids: make([]string, 0, n), rng: rand.New(rand.NewPCG(1, 2))}
	for range n {
		x, err := s.Join(ctx, "r", "", t0)
		if err != nil {
			s.Close()
			return nil, err
		}
		e.ids = append(e.ids, x.ID)
	}
	return e, nil
}

// positions reads random sessions' exact positions (Store.Session, which
// also records presence, as a waiting page's poll does).
func (e *engine) positions(n int) batchFunc {
	pick := make([]string, n)
	return func(ctx context.Context) (int, time.Duration, error) {
		for i := range pick {
			pick[i] = e.ids[e.rng.IntN(len(e.ids))]
		}
		start := time.Now()
		for _, id := range pick {
			x, err := e.s.Session(ctx, "r", id, t0)
			if err != nil {
				return 0, 0, err
			}
			if x.Position < 1 {
				return 0, 0, fmt.Errorf("session %s has position %d", id, x.Position)
			}
		}
		return n, time.Since(start), nil
	}
}

// joins times n joins at the back of the line, then (untimed) makes them
// leave again.
func (e *engine) joins(n int) batchFunc {
	joined := make([]string, n)
	return func(ctx context.Context) (int, time.Duration, error) {
		start := time.Now()
		for i := range joined {
			x, err := e.s.Join(ctx, "r", "", t0)
			if err != nil {
				return 0, 0, err
			}
			joined[i] = x.ID
		}
		took := time.Since(start)
		for _, id := range joined {
			if _, err := e.s.Leave(ctx, "r", id, waitroom.ReasonLeft, t0); err != nil {
				return 0, 0, err
			}
		}
		return n, took, nil
	}
}

// leaves times n leaves from random places in the line, then (untimed)
// joins n newcomers so the line keeps its length.
func (e *engine) leaves(n int) batchFunc {
	return func(ctx context.Context) (int, time.Duration, error) {
		// Take the leavers out of ids first: each leaves once.
		idx := make([]int, n)
		left := make([]string, n)
		for i := range idx {
			j := e.rng.IntN(len(e.ids) - i)
			idx[i] = j
			left[i] = e.ids[j]
			e.ids[j], e.ids[len(e.ids)-1-i] = e.ids[len(e.ids)-1-i], e.ids[j]
		}
		start := time.Now()
		for _, id := range left {
			if _, err := e.s.Leave(ctx, "r", id, waitroom.ReasonLeft, t0); err != nil {
				return 0, 0, err
			}
		}
		took := time.Since(start)
		for i := range n {
			x, err := e.s.Join(ctx, "r", "", t0)
			if err != nil {
				return 0, 0, err
			}
			e.ids[len(e.ids)-1-i] = x.ID
		}
		return n, took, nil
	}
}
