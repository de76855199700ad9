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
		return s.ensureDemoRoom(ctx, now)
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

// ensureDemoRoom creates room web.DemoRoom for Demo, with the demo's
// capacity and target, audited as created by actor demo. A room of that
// name that exists already is never changed: it may be someone's own
// (declared in the rooms file, or made by the API), and --demo is no
// reason to overwrite it. That is logged, since the demo then runs with
// that room's settings.
func (s *Server) ensureDemoRoom(ctx context.Context, now time.Time) error {
	logger := s.cfg.Logger
	room, err := s.store.Room(ctx, web.DemoRoom)
	switch {
	case err == nil:
		logger.Info("the demo room exists; left as it is", "room", web.DemoRoom, "capacity", room.Capacity, "target_url", room.TargetURL)
		return nil
	case waitroom.ErrorCode(err) != waitroom.CodeRoomNotFound:
		return fmt.Errorf("read room %q: %w", web.DemoRoom, err)
	}
	cfg := waitroom.DefaultConfig()
	cfg.Mode = waitroom.ModeAuto
	cfg.Capacity = demoCapacity
	cfg.TargetURL = web.DemoAppPath
	created, isNew, err := s.store.PutRoom(ctx, web.DemoRoom, cfg, now)
	if err != nil {
		return fmt.Errorf("create room %q for --demo: %w", web.DemoRoom, err)
	}
	if !isNew {
		// Another process made it between the read and the write, and
		// PutRoom replaced its settings: the store has no create-only
		// write, and a race this narrow at start is accepted.
		logger.Warn("the demo room appeared while --demo created it; it now has the demo's settings", "room", web.DemoRoom)
		return nil
	}
	s.audit(ctx, waitroom.AuditEntry{At: now, Room: web.DemoRoom, Actor: waitroom.AuditActorDemo, Action: waitroom.AuditConfig,
		Detail: auditDetail(map[string]any{"created": created.RoomConfig})})
	logger.Info("created the demo room", "room", web.DemoRoom, "capacity", demoCapacity)
	return nil
}
