package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"slices"
	"strings"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/internal/roomsfile"
	"github.com/waitroom/waitroom/internal/web"
)

// RoomsReport says what one application of the rooms file did.
type RoomsReport struct {
	// File is the rooms file, as Config.RoomsFile names it.
	File string
	// Created, Changed and Deleted name the rooms written, in order.
	Created, Changed, Deleted []string
	// Unchanged counts the declared rooms already as the file says:
	// nothing was written for them, and nothing audited.
	Unchanged int
	// Kept names the rooms that prune would have deleted but that still
	// had people in line: prune never forces a deletion (DELETE with
	// ?force=true does, by an operator's hand).
	Kept []string
}

// String is the report on one line, as the log shows it.
func (r RoomsReport) String() string {
	list := func(names []string) string {
		if len(names) == 0 {
			return "0"
		}
		return fmt.Sprintf("%d (%s)", len(names), strings.Join(names, ", "))
	}
	s := fmt.Sprintf("%s: created %s, changed %s, unchanged %d", r.File, list(r.Created), list(r.Changed), r.Unchanged)
	if len(r.Deleted) > 0 || len(r.Kept) > 0 {
		s += fmt.Sprintf(", deleted %s, kept with people in line %s", list(r.Deleted), list(r.Kept))
	}
	return s
}

// ApplyRooms reads Config.RoomsFile again and applies it: each declared
// room that is missing is created and each that differs from the file is
// changed, audited as action config by actor file; a room already as the
// file says is not written. A room keeps its own pause unless the file
// names paused. With prune: true, the rooms the file does not name are
// deleted (audited as delete by actor file), except the rooms the server
// keeps for itself (the default room, --room under --upstream, and the
// demo's) and those with people in line, which are kept and reported.
//
// The whole file is checked before any room is written: a file with an
// error changes nothing, and the error names the file, the room and the
// setting. `waitroom serve` calls it on SIGHUP. Calls are serialized.
func (s *Server) ApplyRooms(ctx context.Context) (RoomsReport, error) {
	if s.cfg.RoomsFile == "" {
		return RoomsReport{}, errors.New("no rooms file to apply (--rooms)")
	}
	f, err := readRoomsFile(s.cfg.RoomsFile)
	if err != nil {
		s.cfg.Logger.Error("rooms file refused; no room changed", "err", err)
		return RoomsReport{File: s.cfg.RoomsFile}, err
	}
	return s.applyRooms(ctx, f)
}

// readRoomsFile reads and checks a rooms file; its errors start with the
// file's name.
func readRoomsFile(path string) (*roomsfile.File, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("--rooms: %w", err)
	}
	defer fh.Close()
	// One byte more than allowed, so that Parse sees an oversized file as one.
	data, err := io.ReadAll(io.LimitReader(fh, roomsfile.MaxSize+1))
	if err != nil {
		return nil, fmt.Errorf("--rooms: %w", err)
	}
	return roomsfile.Parse(path, data)
}

// applyRooms writes what f changes, one room at a time. A store error
// stops it there: the rooms before it are applied, and applying the same
// file again finishes the work, since applying is idempotent.
func (s *Server) applyRooms(ctx context.Context, f *roomsfile.File) (RoomsReport, error) {
	s.roomsMu.Lock()
	defer s.roomsMu.Unlock()
	rep := RoomsReport{File: s.cfg.RoomsFile}
	err := s.applyRoomsLocked(ctx, f, &rep)
	log := s.cfg.Logger.With("file", s.cfg.RoomsFile, "created", rep.Created, "changed", rep.Changed, "unchanged", rep.Unchanged)
	if f.Prune {
		log = log.With("deleted", rep.Deleted, "kept", rep.Kept)
	}
	if err != nil {
		log.Error("rooms file applied in part", "err", err)
		return rep, err
	}
	log.Info("rooms file applied")
	return rep, nil
}

func (s *Server) applyRoomsLocked(ctx context.Context, f *roomsfile.File, rep *RoomsReport) error {
	now := s.cfg.Clock.Now()
	declared := make(map[string]bool, len(f.Rooms))
	for _, r := range f.Rooms {
		declared[r.Name] = true
		cur, err := s.store.Room(ctx, r.Name)
		exists := err == nil
		if err != nil && waitroom.ErrorCode(err) != waitroom.CodeRoomNotFound {
			return fmt.Errorf("read room %q: %w", r.Name, err)
		}
		cfg := r.Config
		if exists && !r.SetsPaused {
			cfg.Paused = cur.Paused
		}
		if exists && cfg.Equal(cur.RoomConfig) {
			rep.Unchanged++
			continue
		}
		room, created, err := s.store.PutRoom(ctx, r.Name, cfg, now)
		if err != nil {
			return fmt.Errorf("room %q: %w", r.Name, err)
		}
		detail := map[string]any{"created": room.RoomConfig}
		switch changes := configChanges(cur.RoomConfig, room.RoomConfig); {
		case created:
			rep.Created = append(rep.Created, r.Name)
		case !exists:
			// Made by someone else (another process applying the same
			// file, say) between the read and the write: what it was
			// before is not known, so the entry says what it is now.
			rep.Changed = append(rep.Changed, r.Name)
			detail = map[string]any{"set": room.RoomConfig}
		default:
			rep.Changed = append(rep.Changed, r.Name)
			detail = map[string]any{"changed": changes}
		}
		s.audit(ctx, waitroom.AuditEntry{At: now, Room: r.Name, Actor: waitroom.AuditActorFile, Action: waitroom.AuditConfig, Detail: auditDetail(detail)})
	}
	if !f.Prune {
		return nil
	}
	rooms, err := s.store.Rooms(ctx)
	if err != nil {
		return fmt.Errorf("list rooms to prune: %w", err)
	}
	spared := s.ownRooms()
	for _, room := range rooms {
		if declared[room.Name] || slices.Contains(spared, room.Name) {
			continue
		}
		// Never forced: editing a file must not throw people out of a
		// line. The room is kept and reported until it is empty.
		switch err := s.store.DeleteRoom(ctx, room.Name, false, now); {
		case waitroom.ErrorCode(err) == waitroom.CodeRoomNotEmpty:
			rep.Kept = append(rep.Kept, room.Name)
			continue
		case waitroom.ErrorCode(err) == waitroom.CodeRoomNotFound:
			continue // deleted by someone else meanwhile
		case err != nil:
			return fmt.Errorf("prune room %q: %w", room.Name, err)
		}
		rep.Deleted = append(rep.Deleted, room.Name)
		s.audit(ctx, waitroom.AuditEntry{At: now, Room: room.Name, Actor: waitroom.AuditActorFile, Action: waitroom.AuditDelete,
			Detail: auditDetail(map[string]any{"force": false, "prune": true})})
	}
	return nil
}

// ownRooms are the rooms the server keeps for itself, which prune spares:
// the default room, the room --upstream requires, the demo's.
func (s *Server) ownRooms() []string {
	own := []string{waitroom.DefaultRoom}
	if s.cfg.Upstream != nil {
		own = append(own, s.cfg.Room)
	}
	if s.cfg.Demo {
		own = append(own, web.DemoRoom)
	}
	return own
}

// audit records an action the server itself took (the rooms file, the
// demo). As for the API's, a lost entry is logged, not fatal: the change
// itself was made.
func (s *Server) audit(ctx context.Context, e waitroom.AuditEntry) {
	if err := s.store.AddAudit(ctx, e); err != nil {
		s.cfg.Logger.Warn("audit entry lost", "room", e.Room, "action", e.Action, "actor", e.Actor, "err", err)
	}
}

// auditDetail encodes what an action changed; nil when it would not fit
// an audit entry (as the API does).
func auditDetail(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil || len(b) > waitroom.MaxAuditDetail {
		return nil
	}
	return b
}

// configChanges lists the settings that differ, each as [before, after],
// in the shape the API's audit entries of a PUT have.
func configChanges(before, after waitroom.RoomConfig) map[string][2]any {
	var x, y map[string]any
	a, _ := json.Marshal(before)
	b, _ := json.Marshal(after)
	_ = json.Unmarshal(a, &x)
	_ = json.Unmarshal(b, &y)
	out := map[string][2]any{}
	for k, v := range y {
		if old, ok := x[k]; !ok || !reflect.DeepEqual(old, v) {
			out[k] = [2]any{x[k], v}
		}
	}
	for k, v := range x {
		if _, ok := y[k]; !ok {
			out[k] = [2]any{v, nil}
		}
	}
	return out
}
