package outage_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/internal/outage"
	"github.com/waitroom/waitroom/memstore"
)

// switchable is a real store whose reachability a test turns off: Ping
// answers as memstore does, or unavailable while down is set.
type switchable struct {
	*memstore.Store
	down atomic.Bool
}

func (s *switchable) Ping(ctx context.Context) error {
	if s.down.Load() {
		return waitroom.Unavailable(errors.New("connection refused"), "store unreachable")
	}
	return s.Store.Ping(ctx)
}

func TestFailOpenOnlyAfterTheDelay(t *testing.T) {
	ctx := context.Background()
	clock := waitroom.NewManualClock(time.Unix(1_800_000_000, 0))
	st := &switchable{Store: memstore.New()}
	var changes []bool
	m := outage.New(st, outage.Options{Policy: outage.Open, After: 10 * time.Second, Clock: clock,
		OnChange: func(down bool, _ error) { changes = append(changes, down) }})

	m.Check(ctx)
	if m.FailOpen() {
		t.Fatal("FailOpen with the store up = true, want false")
	}
	st.down.Store(true)
	m.Check(ctx)
	if _, down := m.Down(); !down {
		t.Fatal("Down after a failed ping = false, want true")
	}
	clock.Advance(9 * time.Second)
	m.Check(ctx) // still down: the outage keeps its start
	if m.FailOpen() {
		t.Error("FailOpen 9s into an outage with a 10s delay = true, want false")
	}
	clock.Advance(time.Second)
	if !m.FailOpen() {
		t.Error("FailOpen 10s into an outage with a 10s delay = false, want true")
	}
	st.down.Store(false)
	m.Check(ctx)
	if m.FailOpen() {
		t.Error("FailOpen after the store came back = true, want false")
	}
	// A new outage starts its delay afresh.
	st.down.Store(true)
	m.Check(ctx)
	clock.Advance(5 * time.Second)
	if m.FailOpen() {
		t.Error("FailOpen 5s into a second outage = true, want false")
	}
	if want := []bool{true, false, true}; len(changes) != len(want) || changes[0] != want[0] || changes[1] != want[1] || changes[2] != want[2] {
		t.Errorf("OnChange calls = %v, want %v", changes, want)
	}
}

func TestFailClosedNeverOpens(t *testing.T) {
	clock := waitroom.NewManualClock(time.Unix(1_800_000_000, 0))
	st := &switchable{Store: memstore.New()}
	st.down.Store(true)
	m := outage.New(st, outage.Options{Clock: clock})
	if m.Policy() != outage.Closed {
		t.Fatalf("default policy = %q, want closed", m.Policy())
	}
	m.Check(context.Background())
	clock.Advance(time.Hour)
	if m.FailOpen() {
		t.Error("FailOpen under the closed policy = true, want false")
	}
	var nilMonitor *outage.Monitor
	if nilMonitor.FailOpen() {
		t.Error("a nil Monitor fails open, want closed")
	}
}

func TestParsePolicy(t *testing.T) {
	for in, want := range map[string]outage.Policy{"open": outage.Open, "closed": outage.Closed} {
		if got, err := outage.ParsePolicy(in); err != nil || got != want {
			t.Errorf("ParsePolicy(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"", "Open", "true", "opened"} {
		if _, err := outage.ParsePolicy(in); err == nil {
			t.Errorf("ParsePolicy(%q) error = nil, want one", in)
		}
	}
}
