package bench

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// batchFunc runs some operations and returns how many it ran and how long
// the timed part took; work it does to restore its starting state (a
// line's length, say) is left out of the time.
type batchFunc func(ctx context.Context) (ops int, took time.Duration, err error)

// tally is what one side of a row measured.
type tally struct {
	ops  int64
	took time.Duration
	// cpu is the CPU time this process used while the batches ran
	// (restores included): with client and server in one process, ops per
	// CPU-second do not depend on what else the machine runs.
	cpu time.Duration
}

// perCPU is operations per CPU-second of this process.
func (t tally) perCPU() float64 {
	if t.ops == 0 || t.cpu <= 0 {
		return 0
	}
	return float64(t.ops) / t.cpu.Seconds()
}

// rate is operations per second of timed work.
func (t tally) rate() float64 {
	if t.ops == 0 || t.took <= 0 {
		return 0
	}
	return float64(t.ops) / t.took.Seconds()
}

// timed runs batches until their timed parts add up to d (at least one
// batch). It also stops after 4·d of wall time, so a side whose untimed
// restore work is slow cannot stretch the run without bound.
func timed(ctx context.Context, d time.Duration, batch batchFunc) (tally, error) {
	var t tally
	wall := time.Now()
	for t.took < d || t.ops == 0 {
		if err := ctx.Err(); err != nil {
			return t, err
		}
		if t.ops > 0 && time.Since(wall) > 4*d {
			break
		}
		cpu := processCPU()
		n, took, err := batch(ctx)
		t.cpu += processCPU() - cpu
		if err != nil {
			return t, err
		}
		t.ops += int64(n)
		t.took += took
	}
	return t, nil
}

// compare measures subject and baseline for d each, alternating in rounds
// so both see the same machine.
//
// Before the rounds, the garbage of earlier rows is collected and each side
// runs once untimed (a tenth of a round at least one batch), so connection
// buffers, caches and goroutine stacks are warm for both.
func compare(ctx context.Context, d time.Duration, rounds int, subject, baseline batchFunc) (s, b tally, err error) {
	per := d / time.Duration(rounds)
	runtime.GC()
	if _, err := timed(ctx, per/10, subject); err != nil {
		return s, b, fmt.Errorf("subject: %w", err)
	}
	if _, err := timed(ctx, per/10, baseline); err != nil {
		return s, b, fmt.Errorf("baseline: %w", err)
	}
	for range rounds {
		x, err := timed(ctx, per, subject)
		if err != nil {
			return s, b, fmt.Errorf("subject: %w", err)
		}
		y, err := timed(ctx, per, baseline)
		if err != nil {
			return s, b, fmt.Errorf("baseline: %w", err)
		}
		s.ops, s.took, s.cpu = s.ops+x.ops, s.took+x.took, s.cpu+x.cpu
		b.ops, b.took, b.cpu = b.ops+y.ops, b.took+y.took, b.cpu+y.cpu
	}
	return s, b, nil
}

// concurrent turns one operation into a batch in which callers goroutines
// call it over and over for about d; op gets the caller's number.
func concurrent(callers int, d time.Duration, op func(ctx context.Context, caller int) error) batchFunc {
	return func(ctx context.Context) (int, time.Duration, error) {
		var ops atomic.Int64
		var first atomic.Value
		var wg sync.WaitGroup
		start := time.Now()
		end := start.Add(d)
		for c := range callers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for time.Now().Before(end) && ctx.Err() == nil {
					if err := op(ctx, c); err != nil {
						first.CompareAndSwap(nil, err)
						return
					}
					ops.Add(1)
				}
			}()
		}
		wg.Wait()
		took := time.Since(start)
		if err, _ := first.Load().(error); err != nil {
			return int(ops.Load()), took, err
		}
		return int(ops.Load()), took, nil
	}
}

// fan runs op for i in [0, n) from callers goroutines.
func fan(ctx context.Context, callers, n int, op func(ctx context.Context, i int) error) error {
	var next atomic.Int64
	var first atomic.Value
	var wg sync.WaitGroup
	for range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= n || ctx.Err() != nil {
					return
				}
				if err := op(ctx, i); err != nil {
					first.CompareAndSwap(nil, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if err, _ := first.Load().(error); err != nil {
		return err
	}
	return ctx.Err()
}
