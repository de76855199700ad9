package storetest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/waitroom/waitroom"
)

// testConcurrency runs many goroutines joining, leaving, reading,
// heartbeating and sweeping one room at once, then checks the invariants on what the store
// reports: active never above capacity (no Advance is used), exact
// positions, unique tickets, at most one live session per key, FIFO.
func testConcurrency(f *fixture) {
	const (
		workers  = 16
		perWork  = 150
		capacity = 5
		nKeys    = 8
	)
	cfg := quiet(capacity)
	cfg.ActiveTimeout = dur(2 * sec)
	cfg.WaitingTimeout = dur(30 * sec)
	f.put("r", cfg, at(0))

	// A shared clock that only moves forward; each call takes the next
	// millisecond, so goroutines pass times in roughly increasing order and
	// the store clamps the rest.
	var clock atomic.Int64
	now := func() time.Time { return at(time.Duration(clock.Add(1)) * msec) }

	rec := &Recorder{Capacity: capacity}
	report, checkTotals := rec.Report, rec.Check

	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 7))
			var mine []waitroom.Session
			for i := 0; i < perWork; i++ {
				switch op := rng.IntN(10); {
				case op < 4 || len(mine) == 0:
					key := ""
					if rng.IntN(2) == 0 {
						key = fmt.Sprintf("k%d", rng.IntN(nKeys))
					}
					s, err := f.s.Join(f.ctx, "r", key, now())
					switch waitroom.ErrorCode(err) {
					case "":
						rec.Issued(s)
						mine = append(mine, s)
					case waitroom.CodeAlreadyJoined:
					default:
						report("Join(key %q) error = %v", key, err)
					}
				case op < 6:
					s := mine[rng.IntN(len(mine))]
					got, err := f.s.Leave(f.ctx, "r", s.ID, waitroom.ReasonLeft, now())
					if err != nil {
						report("Leave(ticket %d) error = %v", s.Ticket, err)
					} else if got.Status.Live() {
						report("Leave(ticket %d) = %s, want ended", s.Ticket, got.Status)
					} else {
						checkTotals("Leave", got)
					}
				case op < 8:
					s := mine[rng.IntN(len(mine))]
					read, name := f.s.Heartbeat, "Heartbeat"
					if rng.IntN(2) == 0 {
						read, name = f.s.Session, "Session"
					}
					got, err := read(f.ctx, "r", s.ID, now())
					if err != nil {
						report("%s(ticket %d) error = %v", name, s.Ticket, err)
					} else {
						checkTotals(name, got)
					}
				case op < 9 && rng.IntN(2) == 0:
					// Reads without now, concurrently with the writes.
					got, err := f.s.Sessions(f.ctx, "r", ids(mine...))
					if err != nil {
						report("Sessions error = %v", err)
					}
					for _, s := range got {
						checkTotals("Sessions", s)
					}
					page, _, err := f.s.Waiting(f.ctx, "r", waitroom.Page{Limit: 3})
					if err != nil {
						report("Waiting error = %v", err)
					}
					for i, s := range page {
						if s.Position != int64(i+1) {
							report("Waiting first page: entry %d at position %d", i, s.Position)
						}
					}
					if r, err := f.s.Room(f.ctx, "r"); err != nil || r.Active > capacity {
						report("Room = %+v, %v; want active at most %d", r, err, capacity)
					}
				default:
					if _, err := f.s.Sweep(f.ctx, "r", now()); err != nil {
						report("Sweep error = %v", err)
					}
				}
			}
		}(w)
	}
	wg.Wait()
	for _, e := range rec.Errors() {
		f.t.Error(e)
	}
	if f.t.Failed() {
		return
	}
	checkRoomInvariants(f.t, f, "r", rec.Sessions(), capacity)
}

// checkRoomInvariants reads the room, its waiting line and every issued
// session and checks the invariants that hold whatever happened.
func checkRoomInvariants(t T, f *fixture, room string, issued []waitroom.Session, capacity int) {
	t.Helper()
	CheckInvariants(t, f.s, room, issued, capacity)
}

// T is what CheckInvariants needs of *testing.T (and *rapid.T).
type T interface {
	Helper()
	Fatalf(format string, args ...any)
}

// CheckInvariants reads room through st and checks what holds whatever
// concurrent operations happened, when no Advance was used: active within
// capacity, tickets unique and all accounted for (issued holds every session
// a Join returned), exact positions in ticket order, one live session per
// key, FIFO. Backends shared by several processes use it on each process.
func CheckInvariants(t T, st waitroom.Store, room string, issued []waitroom.Session, capacity int) {
	t.Helper()
	ctx := context.Background()
	r, err := st.Room(ctx, room)
	if err != nil {
		t.Fatalf("Room(%q) error = %v", room, err)
	}
	if r.Active > capacity {
		t.Fatalf("Room active %d > capacity %d", r.Active, capacity)
	}
	seenTicket := map[int64]bool{}
	for _, s := range issued {
		if seenTicket[s.Ticket] {
			t.Fatalf("ticket %d issued twice", s.Ticket)
		}
		seenTicket[s.Ticket] = true
		if s.Ticket < 1 || s.Ticket > r.LastTicket {
			t.Fatalf("ticket %d outside 1..LastTicket %d", s.Ticket, r.LastTicket)
		}
	}
	if int64(len(issued)) != r.LastTicket {
		t.Fatalf("%d joins succeeded but LastTicket = %d", len(issued), r.LastTicket)
	}

	waiting := collectPages(t, fmt.Sprintf("Waiting(%q)", room), func(after string) ([]waitroom.Session, string, error) {
		return st.Waiting(ctx, room, waitroom.Page{After: after, Limit: 7})
	}, 7)
	if len(waiting) != r.Waiting {
		t.Fatalf("Waiting lists %d sessions, Room says %d", len(waiting), r.Waiting)
	}
	for i, s := range waiting {
		if s.Position != int64(i+1) || s.Status != waitroom.StatusWaiting {
			t.Fatalf("Waiting entry %d: ticket %d %s at position %d, want waiting at %d", i, s.Ticket, s.Status, s.Position, i+1)
		}
		if i > 0 && s.Ticket <= waiting[i-1].Ticket {
			t.Fatalf("Waiting not in ticket order: %d after %d", s.Ticket, waiting[i-1].Ticket)
		}
	}

	all, err := st.Sessions(ctx, room, ids(issued...))
	if err != nil {
		t.Fatalf("Sessions error = %v", err)
	}
	var nWaiting, nActive int
	liveKey := map[string]int64{}
	var maxAdmitted int64
	for i, s := range all {
		if s.ID != issued[i].ID {
			t.Fatalf("Sessions[%d] = %q, want %q (the history must hold every ended session here)", i, s.ID, issued[i].ID)
		}
		switch s.Status {
		case waitroom.StatusWaiting:
			nWaiting++
			if s.Position != waitingPosition(waiting, s.Ticket) {
				t.Fatalf("ticket %d: Sessions position %d, Waiting position %d", s.Ticket, s.Position, waitingPosition(waiting, s.Ticket))
			}
		case waitroom.StatusActive:
			nActive++
		}
		if s.Status.Live() && s.Key != "" {
			if other, ok := liveKey[s.Key]; ok {
				t.Fatalf("key %q has two live sessions: tickets %d and %d", s.Key, other, s.Ticket)
			}
			liveKey[s.Key] = s.Ticket
		}
		if !s.AdmittedAt.IsZero() {
			maxAdmitted = max(maxAdmitted, s.Ticket)
		}
	}
	if nWaiting != r.Waiting || nActive != r.Active {
		t.Fatalf("sessions read: %d waiting, %d active; Room: %d waiting, %d active", nWaiting, nActive, r.Waiting, r.Active)
	}
	if len(waiting) > 0 && waiting[0].Ticket < maxAdmitted {
		t.Fatalf("FIFO broken: ticket %d was admitted while ticket %d still waits", maxAdmitted, waiting[0].Ticket)
	}
}

func waitingPosition(waiting []waitroom.Session, ticket int64) int64 {
	for i, s := range waiting {
		if s.Ticket == ticket {
			return int64(i + 1)
		}
	}
	return 0
}
