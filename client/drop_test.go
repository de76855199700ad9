package client_test

import (
	"context"
	"testing"
	"time"

	"github.com/waitroom/waitroom"
)

// TestDrawAndStock drives a scheduled room with stock through the Go
// client: the commitment before the opening, the verified draw after it,
// the public status's schedule and stock, and sales in bulk and per
// session, with a refused sale answered as the API's error.
func TestDrawAndStock(t *testing.T) {
	ctx := context.Background()
	pub, adm, clock := newServer(t)
	cfg := waitroom.DefaultConfig()
	cfg.Capacity = 5
	inv := int64(2)
	cfg.Inventory = &inv
	cfg.OpensAt = clock.Now().Add(time.Minute)
	if _, _, err := adm.PutRoom(ctx, "drop", cfg); err != nil {
		t.Fatal(err)
	}
	before, err := pub.Draw(ctx, "drop")
	if err != nil || before.Drawn || len(before.Commitment) != 64 {
		t.Fatalf("Draw before the opening = %+v, %v", before, err)
	}
	var ss []waitroom.Session
	for range 3 {
		s, err := pub.Join(ctx, "drop", "")
		if err != nil || s.Entry == "" || s.Entrants == 0 {
			t.Fatalf("Join before the opening = %+v, %v; want an entrant", s, err)
		}
		ss = append(ss, s)
	}
	st, err := pub.Room(ctx, "drop")
	if err != nil || st.Entrants != 3 || !st.OpensAt.Equal(cfg.OpensAt) {
		t.Fatalf("Room = %+v, %v; want 3 entrants and the opening", st, err)
	}
	clock.Set(cfg.OpensAt)
	after, err := pub.Draw(ctx, "drop")
	if err != nil || waitroom.VerifyDraw(after) != nil || after.Commitment != before.Commitment || len(after.Entries) != 3 {
		t.Fatalf("Draw after the opening = %+v, %v", after, err)
	}
	var active []waitroom.Session
	for _, s := range ss {
		got, err := pub.Session(ctx, "drop", s.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.Status == waitroom.StatusActive {
			active = append(active, got)
		}
	}
	if len(active) != 2 || !active[0].Unit || !active[1].Unit {
		t.Fatalf("after the draw %d active (%+v), want 2 holding units", len(active), active)
	}
	r, err := adm.Stock(ctx, "drop", waitroom.StockSold, 0, active[0].ID)
	if err != nil || r.Sold != 1 || r.Reserved != 1 {
		t.Fatalf("Stock(sold, session) = %+v, %v; want sold 1, reserved 1", r, err)
	}
	if _, err := adm.Stock(ctx, "drop", waitroom.StockSold, 2, ""); waitroom.ErrorCode(err) != waitroom.CodeStockConflict {
		t.Fatalf("selling 2 with 1 reserved: %v, want stock_conflict", err)
	}
	if _, err := pub.Stock(ctx, "drop", waitroom.StockSold, 1, ""); waitroom.ErrorCode(err) != waitroom.CodeUnauthorized {
		t.Fatalf("Stock without the token: %v, want unauthorized", err)
	}
	r, err = adm.Stock(ctx, "drop", waitroom.StockSold, 1, "")
	if err != nil || r.Sold != 2 || r.Waiting != 0 {
		t.Fatalf("selling the last = %+v, %v; want sold 2 and nobody waiting", r, err)
	}
	if _, err := pub.Join(ctx, "drop", ""); waitroom.ErrorCode(err) != waitroom.CodeSoldOut {
		t.Fatalf("Join after the sell-out: %v, want sold_out", err)
	}
}
