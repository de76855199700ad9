package roomview_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/internal/redistest"
	"github.com/waitroom/waitroom/internal/roomview"
	"github.com/waitroom/waitroom/redisstore"
)

// TestRedisTwoProcesses: two stores over one Redis stand for two server
// processes. A view over the first follows the second's changes through
// pub/sub, with a TTL far too long to hide a missed event: configuration,
// counts and deletion.
func TestRedisTwoProcesses(t *testing.T) {
	addr := redistest.Server(t)
	ctx := context.Background()
	open := func() *redisstore.Store {
		c := redis.NewClient(&redis.Options{Addr: addr})
		t.Cleanup(func() { _ = c.Close() })
		s, err := redisstore.New(ctx, c, redisstore.WithPrefix("roomview-test"))
		if err != nil {
			t.Fatalf("redisstore.New: %v", err)
		}
		t.Cleanup(func() { _ = s.Close() })
		return s
	}
	a, b := open(), open()
	now := time.Now()
	if _, _, err := b.PutRoom(ctx, "r", waitroom.DefaultConfig(), now); err != nil {
		t.Fatal(err)
	}
	v := roomview.New(roomview.Config{Store: a, TTL: time.Hour})
	t.Cleanup(v.Close)
	first, err := v.Room(ctx, "r")
	if err != nil {
		t.Fatal(err)
	}
	if first.Config.Capacity != waitroom.DefaultConfig().Capacity {
		t.Fatalf("first read: capacity %d, want the default", first.Config.Capacity)
	}
	eventually := func(what string, ok func(s *roomview.Snapshot) bool) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for {
			s, err := v.Room(ctx, "r")
			if err == nil && ok(s) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: the view never saw it (last: %+v, %v)", what, s, err)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	cfg := waitroom.DefaultConfig()
	cfg.Capacity = 1
	cfg.TargetURL = "/elsewhere/"
	if _, _, err := b.PutRoom(ctx, "r", cfg, now); err != nil {
		t.Fatal(err)
	}
	eventually("the other process's configuration", func(s *roomview.Snapshot) bool {
		return s.Config.Capacity == 1 && s.Config.TargetURL == "/elsewhere/"
	})
	for range 3 {
		if _, err := b.Join(ctx, "r", "", now); err != nil {
			t.Fatal(err)
		}
	}
	eventually("the other process's joins", func(s *roomview.Snapshot) bool {
		return s.Active == 1 && s.Waiting == 2 && s.LastTicket == 3
	})
	if err := b.DeleteRoom(ctx, "r", true, now); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for v.Known("r") != nil {
		if time.Now().After(deadline) {
			t.Fatalf("the other process deleted the room; the view still holds it")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if _, err := v.Room(ctx, "r"); waitroom.ErrorCode(err) != waitroom.CodeRoomNotFound {
		t.Fatalf("Room after the deletion: %v, want room_not_found", err)
	}
}
