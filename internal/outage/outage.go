// Package outage decides what waitroom does while its store is unreachable
// (Redis down, a network partition): fail closed, the default, where the
// waiting page says the line is paused and retries, and nobody new gets
// in; or fail open, where after a delay visitors are let through to the
// protected site as if there were no waiting room, because the operator
// would rather be flooded than closed.
//
// A Monitor pings the store on a short interval and remembers since when it
// has been failing. The HTTP API never fails open: API clients get 503
// unavailable, so they know the truth.
package outage

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/waitroom/waitroom"
)

// Policy is what to do while the store is unreachable.
type Policy string

// The policies.
const (
	// Closed keeps everyone in line: pages say the line is paused.
	Closed Policy = "closed"
	// Open lets visitors through once the store has been unreachable for
	// longer than the configured delay.
	Open Policy = "open"
)

// ParsePolicy reads a policy name as given on the command line.
func ParsePolicy(s string) (Policy, error) {
	switch p := Policy(s); p {
	case Closed, Open:
		return p, nil
	}
	return "", fmt.Errorf("outage policy must be %q or %q, not %q", Closed, Open, s)
}

// Pinger is the part of a store a Monitor uses.
type Pinger interface {
	Ping(ctx context.Context) error
}

// Options configure a Monitor.
type Options struct {
	// Policy is Closed (default) or Open.
	Policy Policy
	// After is how long the store must have been unreachable before Open
	// lets visitors through; default 10s. A short blip never opens the gate.
	After time.Duration
	// Interval is how often the store is pinged; default 1s.
	Interval time.Duration
	// Timeout bounds one ping; default the interval.
	Timeout time.Duration
	// Clock tells the time; nil means waitroom.SystemClock.
	Clock waitroom.Clock
	// OnChange, when set, is called when the store goes down or comes back.
	OnChange func(down bool, err error)
}

// Monitor tracks the store's reachability. Its methods are safe for
// concurrent use; FailOpen is one atomic load, cheap on every request.
type Monitor struct {
	store Pinger
	opt   Options
	// downSince is the unix nanoseconds of the first failed ping of the
	// current outage, 0 while the store answers.
	downSince atomic.Int64
}

// New returns a Monitor of store. Call Run to start pinging.
func New(store Pinger, opt Options) *Monitor {
	if opt.Policy == "" {
		opt.Policy = Closed
	}
	if opt.After <= 0 {
		opt.After = 10 * time.Second
	}
	if opt.Interval <= 0 {
		opt.Interval = time.Second
	}
	if opt.Timeout <= 0 {
		opt.Timeout = opt.Interval
	}
	if opt.Clock == nil {
		opt.Clock = waitroom.SystemClock{}
	}
	return &Monitor{store: store, opt: opt}
}

// Run pings the store every interval until ctx ends.
func (m *Monitor) Run(ctx context.Context) {
	t := time.NewTicker(m.opt.Interval)
	defer t.Stop()
	for {
		m.Check(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Check pings the store once and records the answer.
func (m *Monitor) Check(ctx context.Context) {
	pctx, cancel := context.WithTimeout(ctx, m.opt.Timeout)
	err := m.store.Ping(pctx)
	cancel()
	if ctx.Err() != nil {
		return // shutting down: say nothing about the store
	}
	now := m.opt.Clock.Now().UnixNano()
	if err == nil {
		if m.downSince.Swap(0) != 0 && m.opt.OnChange != nil {
			m.opt.OnChange(false, nil)
		}
		return
	}
	if m.downSince.CompareAndSwap(0, now) && m.opt.OnChange != nil {
		m.opt.OnChange(true, err)
	}
}

// Down reports whether the last ping failed, and since when the store has
// been failing.
func (m *Monitor) Down() (since time.Time, down bool) {
	ns := m.downSince.Load()
	if ns == 0 {
		return time.Time{}, false
	}
	return time.Unix(0, ns), true
}

// FailOpen reports whether visitors should be let through now: the policy
// is Open and the store has been unreachable for at least the delay.
func (m *Monitor) FailOpen() bool {
	if m == nil || m.opt.Policy != Open {
		return false
	}
	since, down := m.Down()
	return down && m.opt.Clock.Now().Sub(since) >= m.opt.After
}

// Policy returns the monitor's policy.
func (m *Monitor) Policy() Policy { return m.opt.Policy }
