package server

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/internal/web"
)

// setUpRooms creates the default room (and, with Demo, the demo room) when
// missing. An existing room keeps its configuration.
func (s *Server) setUpRooms(ctx context.Context) error {
	now := s.cfg.Clock.Now()
	if err := ensureRoom(ctx, s.store, waitroom.DefaultRoom, now, s.cfg.Logger); err != nil {
		return err
	}
	if s.cfg.Demo {
		return ensureDemoRoom(ctx, s.store, now, s.cfg.Logger)
	}
	return nil
}

// ensureRoom creates room with the default configuration unless it exists.
func ensureRoom(ctx context.Context, store waitroom.Store, room string, now time.Time, logger *slog.Logger) error {
	_, err := store.Room(ctx, room)
	switch {
	case err == nil:
		return nil
	case waitroom.ErrorCode(err) != waitroom.CodeRoomNotFound:
		return fmt.Errorf("read room %q: %w", room, err)
	}
	if _, _, err := store.PutRoom(ctx, room, waitroom.DefaultConfig(), now); err != nil {
		return fmt.Errorf("create room %q: %w", room, err)
	}
	logger.Info("created a room", "room", room)
	return nil
}

// demoCapacity is the demo room's capacity: small, so a few tabs show the
// line at work.
const demoCapacity = 3

// ensureDemoRoom creates room web.DemoRoom for Demo, or updates an
// existing one to the demo's capacity and target while keeping the rest of
// its configuration.
func ensureDemoRoom(ctx context.Context, store waitroom.Store, now time.Time, logger *slog.Logger) error {
	cfg := waitroom.DefaultConfig()
	room, err := store.Room(ctx, web.DemoRoom)
	switch {
	case err == nil:
		cfg = room.RoomConfig
	case waitroom.ErrorCode(err) != waitroom.CodeRoomNotFound:
		return fmt.Errorf("read room %q: %w", web.DemoRoom, err)
	}
	cfg.Mode = waitroom.ModeAuto
	cfg.Capacity = demoCapacity
	cfg.TargetURL = web.DemoAppPath
	if err == nil && cfg.Equal(room.RoomConfig) {
		return nil
	}
	if _, created, err := store.PutRoom(ctx, web.DemoRoom, cfg, now); err != nil {
		return fmt.Errorf("set up room %q for --demo: %w", web.DemoRoom, err)
	} else if created {
		logger.Info("created the demo room", "room", web.DemoRoom, "capacity", demoCapacity)
	} else {
		logger.Info("updated the demo room", "room", web.DemoRoom, "capacity", demoCapacity)
	}
	return nil
}
