package crowd

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/internal/admit"
	"github.com/waitroom/waitroom/internal/door"
	"github.com/waitroom/waitroom/internal/httpapi"
	"github.com/waitroom/waitroom/internal/push"
	"github.com/waitroom/waitroom/internal/roomview"
	"github.com/waitroom/waitroom/internal/sweeper"
	"github.com/waitroom/waitroom/memstore"
)

// TestCrowdDrop plays a drop against a real API server: the run schedules
// the room's opening, the crowd arrives before it, and the report must
// show every entrant reaching a place in line, the published draw
// verified and listing each entrant with the ticket its session reached,
// and exact positions after the draw. No timing figure is asserted.
func TestCrowdDrop(t *testing.T) {
	const token = "crowd-test-token"
	store := memstore.New()
	defer store.Close()
	hub := push.New(store, push.Options{Interval: 50 * time.Millisecond, Refresh: 300 * time.Millisecond})
	rooms := roomview.New(roomview.Config{Store: store})
	dr := door.New(rooms, []byte("a test door secret of 32 bytes or more"))
	defer rooms.Close()
	srv := httptest.NewServer(httpapi.NewHandler(httpapi.Config{Store: store, AdminToken: token, Hub: hub,
		Admit: admit.New(admit.Config{Store: store, Door: dr})}))
	defer srv.Close()
	defer hub.Close()
	sweepCtx, stopSweeper := context.WithCancel(context.Background())
	sweepDone := make(chan struct{})
	go func() {
		defer close(sweepDone)
		_ = sweeper.Run(sweepCtx, store, waitroom.SystemClock{}, sweeper.Options{})
	}()
	defer func() { stopSweeper(); <-sweepDone }()
	cfg := waitroom.DefaultConfig()
	cfg.Capacity = 5
	cfg.WaitingTimeout = waitroom.Duration(time.Hour) // kept through the run's PUTs
	if _, _, err := store.PutRoom(context.Background(), "drop", cfg, time.Now()); err != nil {
		t.Fatal(err)
	}
	const users = 120
	rep, err := Play(context.Background(), Config{
		Targets: []string{srv.URL}, Room: "drop", Users: users, Rate: 80, // arrivals end well before the opening
		Hold: 200 * time.Millisecond, Seed: 1,
	}, Options{OpensIn: 2500 * time.Millisecond, Duration: 6 * time.Second, Overtime: time.Minute, CheckEvery: 1500 * time.Millisecond, Settle: time.Second, AdminToken: token})
	if err != nil {
		t.Fatal(err)
	}
	d := rep.Drop
	if d == nil {
		t.Fatalf("no drop in the report (errors %v)", rep.Errors)
	}
	t.Logf("entrants %d late %d lost %d; opening to position p50 %.0fms p99 %.0fms; draw %d entries, verified %v %s; errors %v",
		d.Entrants, d.Late, d.Lost, d.PositionMillis.P50, d.PositionMillis.P99, d.DrawEntries, d.Verified, d.DrawError, rep.Errors)
	if rep.Joined != users || d.Entrants+d.Late != users || d.Entrants == 0 {
		t.Errorf("joined %d, %d entrants and %d late: want all %d joined, most of them entrants", rep.Joined, d.Entrants, d.Late, users)
	}
	if !d.Verified || d.Lost != 0 || d.LeftEarly != 0 || d.PositionMillis.N != d.Entrants {
		t.Errorf("draw verified %v (%s), %d lost, %d left early, %d saw a position of %d entrants: want verified, 0, 0, all",
			d.Verified, d.DrawError, d.Lost, d.LeftEarly, d.PositionMillis.N, d.Entrants)
	}
	if d.Listed != d.Entrants || d.Missing+d.WrongTicket+d.ListedGone+d.Others != 0 || d.DrawEntries != d.Entrants {
		t.Errorf("draw: %d of %d entrants listed, %d missing, %d wrong ticket, %d listed after leaving, %d others, %d entries (%s): want all listed, no others",
			d.Listed, d.Entrants, d.Missing, d.WrongTicket, d.ListedGone, d.Others, d.DrawEntries, d.FirstDiff)
	}
	if d.FirstTicket != 1 || !d.OpensAt.Equal(rep.Config.Start.Add(2500*time.Millisecond).Truncate(time.Millisecond)) {
		t.Errorf("first ticket %d, opens at %v: want 1, 2.5s after arrivals start (%v)", d.FirstTicket, d.OpensAt, rep.Config.Start)
	}
	if rep.Inversions != 0 || rep.DuplicateTickets != 0 || rep.PositionUps != 0 || rep.Lost != 0 || rep.Admitted < 10 {
		t.Errorf("%d inversions, %d duplicate tickets, %d positions up, %d lost, %d admitted: want 0, 0, 0, 0, ≥ 10",
			rep.Inversions, rep.DuplicateTickets, rep.PositionUps, rep.Lost, rep.Admitted)
	}
	if len(rep.Checks) == 0 {
		t.Fatalf("no position checks ran: %v", rep.Errors)
	}
	for _, c := range rep.Checks {
		if c.At.Before(d.OpensAt) || c.Wrong != 0 || c.Compared == 0 {
			t.Errorf("check at %v (opening %v): %d of %d users wrong (%s), want after the opening, 0 of many", c.At, d.OpensAt, c.Wrong, c.Compared, c.FirstDiff)
		}
	}
	// A room holds one draw: a second drop in it is refused, saying why.
	_, err = Play(context.Background(), Config{Targets: []string{srv.URL}, Room: "drop", Users: 1, Seed: 1},
		Options{OpensIn: time.Second, Duration: 3 * time.Second, AdminToken: token})
	if err == nil || !strings.Contains(err.Error(), "new room") {
		t.Errorf("a second drop in a drawn room: error %v, want one that says to use a new room", err)
	}
	// The run kept the room's configuration while scheduling it.
	room, err := store.Room(context.Background(), "drop")
	if err != nil {
		t.Fatal(err)
	}
	if room.WaitingTimeout != cfg.WaitingTimeout || room.Capacity != 5 || room.Paused || !room.OpensAt.Equal(d.OpensAt) {
		t.Errorf("room after the run: waiting_timeout %v, capacity %d, paused %v, opens_at %v; want %v, 5, false, %v",
			room.WaitingTimeout, room.Capacity, room.Paused, room.OpensAt, cfg.WaitingTimeout, d.OpensAt)
	}
}
