package gatekeeper

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/waitroom/waitroom/gate"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/internal/admit"
	"github.com/waitroom/waitroom/memstore"
)

// TestQueueAllRevokesPasses checks that an operator's queue-all revokes the
// passes of the sessions it sends back to the line, and that the same
// sessions' passes of their next admission are good while the old ones stay
// refused.
func TestQueueAllRevokesPasses(t *testing.T) {
	ctx := context.Background()
	store := memstore.New()
	defer store.Close()
	keys, err := gate.NewKeySet(gate.AlgEdDSA)
	if err != nil {
		t.Fatal(err)
	}
	g, err := New(Config{Store: store, Rooms: newRooms(t, store, nil), Keys: keys, ResyncWindow: time.Nanosecond, Admit: admit.New(admit.Config{Store: store})})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	cfg := waitroom.DefaultConfig()
	cfg.Capacity = 1
	t0 := time.Now()
	if _, _, err := store.PutRoom(ctx, "r", cfg, t0); err != nil {
		t.Fatal(err)
	}
	s, err := store.Join(ctx, "r", "", t0)
	if err != nil || s.Status != waitroom.StatusActive {
		t.Fatalf("Join: %+v %v, want active", s, err)
	}
	g.Fill(&s, t0)
	old := s.Pass
	if _, err := g.Check(ctx, "r", old, t0); err != nil {
		t.Fatalf("pass before queue-all: %v, want valid", err)
	}
	t1 := t0.Add(2 * time.Second)
	if _, _, err := store.QueueAll(ctx, "r", t1); err != nil {
		t.Fatal(err)
	}
	if _, err := g.Check(ctx, "r", old, t1); !errors.Is(err, gate.ErrRevoked) {
		t.Fatalf("pass after queue-all: %v, want revoked", err)
	}
	cfg.Paused = false
	t2 := t1.Add(time.Second)
	if _, _, err := store.PutRoom(ctx, "r", cfg, t2); err != nil {
		t.Fatal(err)
	}
	again, err := store.Session(ctx, "r", s.ID, t2)
	if err != nil || again.Status != waitroom.StatusActive {
		t.Fatalf("after resume: %+v %v, want active", again, err)
	}
	g.Fill(&again, t2)
	if again.Pass == "" || again.Pass == old {
		t.Fatalf("after resume: pass %q, want a new one", again.Pass)
	}
	c, err := g.Check(ctx, "r", again.Pass, t2)
	if err != nil {
		t.Fatalf("pass of the new admission: %v, want valid", err)
	}
	if !c.AdmittedAt.Equal(t2.Truncate(time.Millisecond)) {
		t.Fatalf("pass admitted_at %v, want %v", c.AdmittedAt, t2)
	}
	if _, err := g.Check(ctx, "r", old, t2); !errors.Is(err, gate.ErrRevoked) {
		t.Fatalf("old pass after the new admission: %v, want still revoked", err)
	}
}
