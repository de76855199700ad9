package sqlitestore

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/waitroom/waitroom"
)

// TestRestartKeepsTiersAndUses checks that a weighted tiered line, a
// pre-queue with tiers and spent invite uses survive closing and opening
// the file: the line keeps its order and tiers, later joins are placed as
// if nothing happened, and a spent invite stays spent.
func TestRestartKeepsTiersAndUses(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "waitroom.db")
	s := open(t, path, t0)
	cfg := waitroom.DefaultConfig()
	cfg.Capacity = 0
	cfg.ActiveTimeout, cfg.WaitingTimeout = 0, 0
	cfg.Tiers = []waitroom.Tier{{Name: "vip", Share: 0.5}, {Name: "general"}}
	cfg.TierPolicy = waitroom.TierWeighted
	if _, _, err := s.PutRoom(ctx, "r", cfg, t0); err != nil {
		t.Fatal(err)
	}
	sched := cfg
	sched.OpensAt = t0.Add(time.Hour)
	if _, _, err := s.PutRoom(ctx, "drop", sched, t0); err != nil {
		t.Fatal(err)
	}
	inv := waitroom.TokenUse{Kind: waitroom.TokenInvite, ID: "inv", Max: 2, Expires: t0.Add(time.Hour)}
	for i, tier := range []string{"", "", "vip", "vip", ""} {
		req := waitroom.JoinRequest{Tier: tier}
		if i < 2 {
			req.Uses = []waitroom.TokenUse{inv}
		}
		if _, err := s.JoinWith(ctx, "r", req, t0); err != nil {
			t.Fatal(err)
		}
		if _, err := s.JoinWith(ctx, "drop", waitroom.JoinRequest{Tier: tier}, t0); err != nil {
			t.Fatal(err)
		}
	}
	line := func(s *Store, room string) string {
		t.Helper()
		got, _, err := s.Waiting(ctx, room, waitroom.Page{})
		if err != nil {
			t.Fatal(err)
		}
		out := ""
		for _, w := range got {
			out += fmt.Sprintf("#%d/%s@%d ", w.Ticket, w.Tier, w.Position)
		}
		return out
	}
	before := line(s, "r")
	if before != "#3/vip@1 #1/general@2 #4/vip@3 #2/general@4 #5/general@5 " {
		t.Fatalf("line before the restart = %s", before)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = open(t, path, t0)
	if after := line(s, "r"); after != before {
		t.Fatalf("line after the restart = %s, want %s", after, before)
	}
	if _, err := s.JoinWith(ctx, "r", waitroom.JoinRequest{Uses: []waitroom.TokenUse{inv}}, t0.Add(time.Second)); waitroom.ErrorCode(err) != waitroom.CodeInviteUsed {
		t.Fatalf("third use of a two-use invite after the restart: %v, want invite_used", err)
	}
	// A vip joining now lands where it would have without the restart:
	// after vip's last tag (4000), at 6000, tied with #5's general tag and
	// ahead of it (ties go to the higher tier).
	v, err := s.JoinWith(ctx, "r", waitroom.JoinRequest{Tier: "vip"}, t0.Add(time.Second))
	if err != nil || v.Position != 5 || v.Tier != "vip" {
		t.Fatalf("vip join after the restart = pos %d tier %q, %v; want 5, vip", v.Position, v.Tier, err)
	}
	// The pre-queue kept its tiers: at the opening every vip is placed by
	// its tier.
	if _, err := s.Sweep(ctx, "drop", t0.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	got, _, err := s.Waiting(ctx, "drop", waitroom.Page{})
	if err != nil || len(got) != 5 {
		t.Fatalf("the drop's line after the draw: %d, %v; want 5", len(got), err)
	}
	vips := 0
	for _, w := range got {
		if w.Tier == "vip" {
			vips++
		}
	}
	if vips != 2 || got[0].Tier != "vip" {
		t.Fatalf("the drop's line after the draw = %s; want 2 vips, one first", line(s, "drop"))
	}
}

// TestExpiredUsesPruned: a stream of one-use challenges does not leave a
// row per join behind: expired ones are pruned as uses are written.
func TestExpiredUsesPruned(t *testing.T) {
	ctx := context.Background()
	s := open(t, filepath.Join(t.TempDir(), "waitroom.db"), t0)
	cfg := waitroom.DefaultConfig()
	cfg.Capacity, cfg.WaitingTimeout = 0, 0
	if _, _, err := s.PutRoom(ctx, "r", cfg, t0); err != nil {
		t.Fatal(err)
	}
	const n = pruneUsesEvery + 100
	for i := range n {
		now := t0.Add(time.Duration(i) * time.Second)
		use := waitroom.TokenUse{Kind: waitroom.TokenChallenge, ID: fmt.Sprint("c", i), Max: 1, Expires: now.Add(time.Minute)}
		if _, err := s.JoinWith(ctx, "r", waitroom.JoinRequest{Uses: []waitroom.TokenUse{use}}, now); err != nil {
			t.Fatal(err)
		}
	}
	var rows int
	if err := s.rdb.QueryRowContext(ctx, `SELECT count(*) FROM token_uses`).Scan(&rows); err != nil {
		t.Fatal(err)
	}
	if rows > 200 {
		t.Fatalf("%d rows of token uses after %d one-minute challenges a second apart, want at most 200 (the unexpired, and those since the last pruning)", rows, n)
	}
}
