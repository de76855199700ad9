package client_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/client"
)

// TestHeldPlaceAndClaim holds a place through the Go client: a held join
// with a contact (admin token), refused without the token; a claim
// before the turn refused with not_invited; then, at the turn, the claim
// that makes it active.
func TestHeldPlaceAndClaim(t *testing.T) {
	ctx := context.Background()
	pub, adm, clock := newServer(t)
	cfg := waitroom.DefaultConfig()
	cfg.Capacity = 1
	cfg.HoldPlaces, cfg.ClaimWindow = true, waitroom.Duration(5*time.Minute)
	if _, _, err := adm.PutRoom(ctx, "held", cfg); err != nil {
		t.Fatal(err)
	}
	first, err := pub.Join(ctx, "held", "")
	if err != nil || first.Status != waitroom.StatusActive {
		t.Fatalf("Join = %+v, %v; want active", first, err)
	}

	// Without the token the client sends none, and the server refuses.
	_, err = pub.JoinWith(ctx, "held", client.JoinOptions{Contact: "mailto:ada@example.com"})
	if code := waitroom.ErrorCode(err); code != waitroom.CodeUnauthorized {
		t.Fatalf("held JoinWith without the token: err %v (code %s), want unauthorized", err, code)
	}

	held, err := adm.JoinWith(ctx, "held", client.JoinOptions{Contact: "mailto:ada@example.com"})
	if err != nil || held.Status != waitroom.StatusWaiting || held.Contact != "mailto:ada@example.com" || held.Position != 1 {
		t.Fatalf("held JoinWith = %+v, %v; want waiting at 1 with the contact", held, err)
	}

	_, err = pub.Claim(ctx, "held", held.ID)
	var e *waitroom.Error
	if !errors.As(err, &e) || e.Code != waitroom.CodeNotInvited || e.Message == "" {
		t.Fatalf("Claim while waiting: err %v, want a *waitroom.Error with code not_invited", err)
	}

	if _, err := pub.Leave(ctx, "held", first.ID); err != nil {
		t.Fatal(err)
	}
	inv, err := pub.Session(ctx, "held", held.ID)
	if err != nil || inv.Status != waitroom.StatusInvited || !inv.ClaimBy.Equal(clock.Now().Add(5*time.Minute)) {
		t.Fatalf("Session at its turn = %+v, %v; want invited until %v", inv, err, clock.Now().Add(5*time.Minute))
	}
	clock.Set(clock.Now().Add(time.Minute))
	got, err := pub.Claim(ctx, "held", held.ID)
	if err != nil || got.ID != held.ID || got.Status != waitroom.StatusActive || !got.AdmittedAt.Equal(clock.Now()) {
		t.Fatalf("Claim = %+v, %v; want active, admitted now", got, err)
	}
	if _, err := pub.Claim(ctx, "nope", held.ID); waitroom.ErrorCode(err) != waitroom.CodeRoomNotFound {
		t.Fatalf("Claim in an unknown room: err %v, want room_not_found", err)
	}
}
