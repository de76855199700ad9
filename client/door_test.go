package client_test

import (
	"context"
	"errors"
	"testing"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/client"
)

// TestJoinPastTheDoor: a client joins a proof-of-work room by solving when
// told to (and gets the challenge in the error when not), and an invite
// made through the admin API joins into its tier, once.
func TestJoinPastTheDoor(t *testing.T) {
	ctx := context.Background()
	pub, adm, _ := newServer(t)
	cfg := waitroom.DefaultConfig()
	cfg.Capacity = 0
	cfg.Challenge, cfg.ChallengeMin, cfg.ChallengeMax = waitroom.ChallengePoW, 2000, 2000
	cfg.Tiers = []waitroom.Tier{{Name: "presale"}, {Name: "general"}}
	if _, _, err := adm.PutRoom(ctx, "drop", cfg); err != nil {
		t.Fatal(err)
	}
	_, err := pub.JoinWith(ctx, "drop", client.JoinOptions{})
	var e *waitroom.Error
	if !errors.As(err, &e) || e.Code != waitroom.CodeChallengeRequired {
		t.Fatalf("join without solving: %v, want challenge_required", err)
	}
	if e.Challenge == nil || e.Challenge.MaxNumber != 2000 {
		t.Fatalf("the error's challenge = %#v, want one of maxnumber 2000", e.Challenge)
	}
	s, err := pub.JoinWith(ctx, "drop", client.JoinOptions{Solve: true})
	if err != nil || s.Tier != "general" || s.Position != 1 {
		t.Fatalf("join solving = %+v, %v; want general at 1", s, err)
	}
	invs, err := adm.Invites(ctx, "drop", client.InviteRequest{Count: 2, Tier: "presale", Expiry: "1h"})
	if err != nil || len(invs) != 2 || invs[0].Uses != 1 || invs[0].Tier != "presale" {
		t.Fatalf("Invites = %+v, %v", invs, err)
	}
	v, err := pub.JoinWith(ctx, "drop", client.JoinOptions{Invite: invs[0].Token})
	if err != nil || v.Tier != "presale" || v.Position != 1 {
		t.Fatalf("join with an invite = %+v, %v; want presale at 1", v, err)
	}
	if _, err := pub.JoinWith(ctx, "drop", client.JoinOptions{Invite: invs[0].Token}); waitroom.ErrorCode(err) != waitroom.CodeInviteUsed {
		t.Fatalf("the invite again: %v, want invite_used", err)
	}
	if _, err := pub.Invites(ctx, "drop", client.InviteRequest{}); waitroom.ErrorCode(err) != waitroom.CodeUnauthorized {
		t.Fatalf("Invites without the token: %v, want unauthorized", err)
	}
}
