package redisstore_test

import (
	"testing"
	"time"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/redisstore"
)

// TestUpdateRoomSentTwice: go-redis sends a script again when the reply of
// its first run was lost; an UpdateRoom that ran already answers as it did
// (its nonce is the room's last), instead of failing on the revision it
// raised itself, while another call with the same stale revision fails.
func TestUpdateRoomSentTwice(t *testing.T) {
	s := newStoreOn(standalone(t))(t).(*redisstore.Store)
	cfg := waitroom.DefaultConfig()
	if _, _, err := s.PutRoom(t.Context(), "r", cfg, base); err != nil {
		t.Fatal(err)
	}
	cfg.Capacity = 7
	first, err := s.UpdateRoomNonce("r", cfg, 1, "nonce-1", base)
	if err != nil || first.Revision != 2 || first.Capacity != 7 {
		t.Fatalf("UpdateRoom(rev 1) = revision %d, capacity %d, %v; want 2, 7", first.Revision, first.Capacity, err)
	}
	again, err := s.UpdateRoomNonce("r", cfg, 1, "nonce-1", base)
	if err != nil || again.Revision != 2 || again.Capacity != 7 {
		t.Fatalf("the same run again = revision %d, %v; want its first answer, revision 2", again.Revision, err)
	}
	other := cfg
	other.Capacity = 9
	if _, err := s.UpdateRoomNonce("r", other, 1, "nonce-2", base); waitroom.ErrorCode(err) != waitroom.CodePreconditionFailed {
		t.Fatalf("another call with revision 1: %v, want precondition_failed", err)
	}
	if r, _ := s.Room(t.Context(), "r"); r.Capacity != 7 || r.Revision != 2 {
		t.Fatalf("room after: capacity %d, revision %d; want 7, 2", r.Capacity, r.Revision)
	}
}

// TestRevisionOfAnOlderRoom: a room made before revisions were kept (no
// rev in its hash) is at revision 1; its next change makes it 2, and, once
// deleted, a room made again under its name continues above it.
func TestRevisionOfAnOlderRoom(t *testing.T) {
	client := standalone(t)
	s := newStoreOn(client)(t).(*redisstore.Store)
	ctx := t.Context()
	if _, _, err := s.PutRoom(ctx, "old", waitroom.DefaultConfig(), base); err != nil {
		t.Fatal(err)
	}
	if err := client.HDel(ctx, s.RoomKey("old"), "rev").Err(); err != nil {
		t.Fatal(err)
	}
	if r, err := s.Room(ctx, "old"); err != nil || r.Revision != 1 {
		t.Fatalf("an older room: revision %d, %v; want 1", r.Revision, err)
	}
	if err := s.DeleteRoom(ctx, "old", false, base.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	r, _, err := s.PutRoom(ctx, "old", waitroom.DefaultConfig(), base.Add(2*time.Second))
	if err != nil || r.Revision != 2 {
		t.Fatalf("made again after the delete: revision %d, %v; want 2", r.Revision, err)
	}
}
