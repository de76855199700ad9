package engine

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/waitroom/waitroom"
)

// TestSlots checks the chunked waiting array: indexing across chunks,
// pointers that survive later pushes, dropping whole chunks, and reset.
func TestSlots(t *testing.T) {
	var s chunked[rec]
	n := 3*chunkLen + 17
	for i := range n {
		if p := s.push(rec{joined: int64(i)}); p.joined != int64(i) {
			t.Fatalf("push %d returned a slot holding %d", i, p.joined)
		}
	}
	if s.len() != n {
		t.Fatalf("len %d, want %d", s.len(), n)
	}
	for i := range n {
		if got := s.at(i).joined; got != int64(i) {
			t.Fatalf("slot %d holds %d", i, got)
		}
	}
	p := s.at(chunkLen + 5) // in a full chunk: never moved again
	for range chunkLen {
		s.push(rec{})
	}
	p.touch = 42
	if s.at(chunkLen+5).touch != 42 {
		t.Error("a pointer into a full chunk no longer reaches its slot after pushes")
	}
	s.dropChunks(2)
	if s.len() != n+chunkLen-2*chunkLen {
		t.Fatalf("len after dropping 2 chunks %d, want %d", s.len(), n-chunkLen)
	}
	for i := range n - 2*chunkLen {
		if got := s.at(i).joined; got != int64(i+2*chunkLen) {
			t.Fatalf("after the drop, slot %d holds %d, want %d", i, got, i+2*chunkLen)
		}
	}
	s.reset()
	if s.len() != 0 || len(s.chunks) != 0 {
		t.Fatalf("after reset: len %d, %d chunks", s.len(), len(s.chunks))
	}
	s.push(rec{joined: 7})
	if s.len() != 1 || s.at(0).joined != 7 {
		t.Error("push after reset")
	}
	// A small room keeps its small first chunk over a reset.
	s.reset()
	if len(s.chunks) != 1 || cap(s.chunks[0]) >= chunkLen {
		t.Errorf("a small room's chunk was not kept: %d chunks", len(s.chunks))
	}
}

// TestRanksDropPrefix compares ranks after dropping a prefix with counting.
func TestRanksDropPrefix(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	var r ranks
	bitsOn := make([]bool, 3*chunkLen+100)
	for i := range bitsOn {
		bitsOn[i] = rng.IntN(3) > 0
		r.push(bitsOn[i])
	}
	r.dropPrefix(chunkLen)
	rest := bitsOn[chunkLen:]
	var want int64
	for i, on := range rest {
		if on {
			want++
		}
		if got := r.rank(i); got != want {
			t.Fatalf("rank(%d) = %d after the drop, want %d", i, got, want)
		}
	}
	// The tree still takes changes and growth.
	r.set(10, !rest[10])
	r.push(true)
	want = 0
	for i := range 11 {
		on := rest[i]
		if i == 10 {
			on = !on
		}
		if on {
			want++
		}
	}
	if got := r.rank(10); got != want {
		t.Errorf("rank(10) after a change = %d, want %d", got, want)
	}
}

// TestLongLineDropsChunks runs a line long enough for the waiting array to
// drop chunks as people are admitted or leave, and checks every position
// against a count of the tickets still waiting ahead.
func TestLongLineDropsChunks(t *testing.T) {
	ctx := context.Background()
	s := New()
	defer s.Close()
	cfg := waitroom.DefaultConfig()
	cfg.Capacity = 50
	cfg.WaitingTimeout = waitroom.Duration(time.Hour)
	cfg.ActiveTimeout = waitroom.Duration(time.Hour)
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	if _, _, err := s.PutRoom(ctx, "r", cfg, now); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(5, 6))
	ids := map[int64]string{}
	waiting := map[int64]bool{}
	var active []int64
	join := func() {
		x, err := s.Join(ctx, "r", "", now)
		if err != nil {
			t.Fatal(err)
		}
		ids[x.Ticket] = x.ID
		if x.Status == waitroom.StatusActive {
			active = append(active, x.Ticket)
		} else {
			waiting[x.Ticket] = true
		}
	}
	leave := func(tk int64) {
		x, err := s.Leave(ctx, "r", ids[tk], waitroom.ReasonLeft, now)
		if err != nil {
			t.Fatalf("leave %d: %v", tk, err)
		}
		if x.Status != waitroom.StatusLeft {
			t.Fatalf("leave %d: status %s", tk, x.Status)
		}
		delete(waiting, tk)
	}
	check := func(stage string) {
		t.Helper()
		// Every 97th waiting person, and the first and last.
		var lowest, highest int64 = -1, -1
		for tk := range waiting {
			if lowest < 0 || tk < lowest {
				lowest = tk
			}
			highest = max(highest, tk)
		}
		for tk := range waiting {
			if tk%97 != 0 && tk != lowest && tk != highest {
				continue
			}
			var ahead int64
			for o := range waiting {
				if o < tk {
					ahead++
				}
			}
			x, err := s.Session(ctx, "r", ids[tk], now)
			if err != nil {
				t.Fatalf("%s: session %d: %v", stage, tk, err)
			}
			if x.Status != waitroom.StatusWaiting || x.Position != ahead+1 {
				t.Fatalf("%s: ticket %d is %s at %d, want waiting at %d", stage, tk, x.Status, x.Position, ahead+1)
			}
		}
	}
	for range 4*chunkLen + 300 {
		join()
	}
	check("after the joins")
	startBase := s.rooms["r"].base
	dropped := false
	for round := 0; len(waiting) > 0; round++ {
		// The active leave, each admitting the head of the line; a few
		// waiting people give up; a few join at the back.
		for range 400 {
			if len(active) == 0 {
				break
			}
			leave(active[0])
			active = active[1:]
		}
		for tk := range waiting {
			if rng.IntN(50) == 0 {
				leave(tk)
			}
		}
		if round < 6 {
			for range 100 {
				join()
			}
		}
		// Whoever was admitted is now active: the store tells.
		for tk := range waiting {
			x, err := s.Session(ctx, "r", ids[tk], now)
			if err != nil {
				t.Fatal(err)
			}
			if x.Status == waitroom.StatusActive {
				delete(waiting, tk)
				active = append(active, tk)
			}
		}
		check("round")
		if len(waiting) > 0 && s.rooms["r"].base != startBase {
			dropped = true
		}
	}
	if !dropped {
		t.Error("the line emptied but the array never dropped a chunk on the way")
	}
}

// TestDeadlineHeapAcrossChunks pushes and pops deadlines across chunk
// boundaries, back and forth, and checks they come out in order.
func TestDeadlineHeapAcrossChunks(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	var h deadlines
	var model []deadline
	popMin := func() deadline {
		best := 0
		for i, d := range model {
			if d.at < model[best].at || (d.at == model[best].at && d.ticket < model[best].ticket) {
				best = i
			}
		}
		d := model[best]
		model[best] = model[len(model)-1]
		model = model[:len(model)-1]
		return d
	}
	ticket := int64(0)
	for round := range 6 {
		// Grow past a boundary, then shrink back over it.
		for range chunkLen + 700 {
			ticket++
			d := deadline{at: rng.Int64N(5000), ticket: ticket}
			h.push(d)
			model = append(model, d)
		}
		for range chunkLen/2 + 300*round {
			if h.len() == 0 {
				break
			}
			if got, want := h.pop(), popMin(); got != want {
				t.Fatalf("round %d: popped %+v, want %+v", round, got, want)
			}
		}
		if h.len() != len(model) {
			t.Fatalf("round %d: heap holds %d, want %d", round, h.len(), len(model))
		}
	}
	for h.len() > 0 {
		if got, want := h.pop(), popMin(); got != want {
			t.Fatalf("draining: popped %+v, want %+v", got, want)
		}
	}
	if len(model) != 0 {
		t.Fatalf("%d deadlines never came out", len(model))
	}
}
