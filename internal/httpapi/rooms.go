package httpapi

import (
	"net/http"

	"github.com/waitroom/waitroom"
)

// roomStatus: GET /v1/rooms/{room}, public.
func (s *server) roomStatus(w http.ResponseWriter, r *http.Request) error {
	name, err := roomName(r)
	if err != nil {
		return err
	}
	room, err := s.store.Room(r.Context(), name)
	if err != nil {
		return err
	}
	// The configuration's version, for If-Match on PUT and PATCH.
	w.Header().Set("ETag", room.ETag())
	return writeJSON(w, http.StatusOK, roomStatus{
		Room:      room.Name,
		Mode:      room.Mode,
		Capacity:  room.Capacity,
		Active:    room.Active,
		Waiting:   room.Waiting,
		Paused:    room.Paused,
		OpensAt:   optTime(room.OpensAt),
		ClosesAt:  optTime(room.ClosesAt),
		Entrants:  room.Entrants,
		Remaining: room.Remaining,
	})
}

// draw: GET /v1/rooms/{room}/draw, public. The commitment of a scheduled
// room's draw, and once it took place, the whole draw. A draw that is due
// is held first when this process sweeps the room; in a shared store where
// another process holds the room's sweep lease, that process holds it
// within its sweep interval, so the record may say "not drawn" for that
// long after the opening.
func (s *server) draw(w http.ResponseWriter, r *http.Request) error {
	name, err := roomName(r)
	if err != nil {
		return err
	}
	if _, err := s.store.Sweep(r.Context(), name, s.now()); err != nil {
		return err
	}
	d, err := s.store.Draw(r.Context(), name)
	if err != nil {
		return err
	}
	w.Header().Set("Cache-Control", "no-cache")
	return writeJSON(w, http.StatusOK, d)
}

// putRoom: PUT /v1/rooms/{room}, admin. Absent fields take their defaults:
// the body is the whole configuration, not a patch (PATCH is that:
// roomchange.go). With If-Match it replaces only a room at a version the
// header names.
func (s *server) putRoom(w http.ResponseWriter, r *http.Request) error {
	name, err := roomName(r)
	if err != nil {
		return err
	}
	body, err := readBody(w, r)
	if err != nil {
		return err
	}
	cfg, err := waitroom.ParseRoomConfig(body)
	if err != nil {
		return err
	}
	if cond := ifMatch(r); cond.set {
		return s.putRoomIf(w, r, name, cfg, cond)
	}
	before, beforeErr := s.store.Room(r.Context(), name)
	room, created, err := s.store.PutRoom(r.Context(), name, cfg, s.now())
	if err != nil {
		return err
	}
	s.auditConfig(r, name, before.RoomConfig, beforeErr != nil, room.RoomConfig)
	status := http.StatusOK
	if created {
		status = http.StatusCreated
	}
	return writeRoom(w, status, room)
}

// listRooms: GET /v1/rooms, admin.
func (s *server) listRooms(w http.ResponseWriter, r *http.Request) error {
	rooms, err := s.store.Rooms(r.Context())
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, roomsAnswer{Rooms: nonNil(rooms)})
}

// deleteRoom: DELETE /v1/rooms/{room}?force=true, admin.
func (s *server) deleteRoom(w http.ResponseWriter, r *http.Request) error {
	name, err := roomName(r)
	if err != nil {
		return err
	}
	force, err := forceParam(r.URL.Query())
	if err != nil {
		return err
	}
	if err := s.store.DeleteRoom(r.Context(), name, force, s.now()); err != nil {
		return err
	}
	s.audit(r, waitroom.AuditEntry{Room: name, Action: waitroom.AuditDelete, Detail: auditDetail(map[string]any{"force": force})})
	noContent(w)
	return nil
}

// advanceRequest is the optional body of an advance.
type advanceRequest struct {
	N *int `json:"n"`
}

// advance: POST /v1/rooms/{room}/advance, admin.
func (s *server) advance(w http.ResponseWriter, r *http.Request) error {
	name, err := roomName(r)
	if err != nil {
		return err
	}
	body, err := readBody(w, r)
	if err != nil {
		return err
	}
	var req advanceRequest
	if err := decodeOptional(body, &req); err != nil {
		return err
	}
	n := 1
	if req.N != nil {
		n = *req.N
		if n < 1 || n > waitroom.MaxAdvance {
			return waitroom.Errorf(waitroom.CodeInvalidRequest, "n must be a whole number from 1 to %d.", waitroom.MaxAdvance)
		}
	}
	now := s.now()
	sessions, err := s.store.Advance(r.Context(), name, n, now)
	if err != nil {
		return err
	}
	s.audit(r, waitroom.AuditEntry{Room: name, Action: waitroom.AuditAdvance, Detail: auditDetail(map[string]any{"n": n, "moved": len(sessions)})})
	// Each session as a read of it shows it: an active one with its pass.
	for i := range sessions {
		s.complete(&sessions[i], now)
	}
	return writeJSON(w, http.StatusOK, sessionsAnswer{Sessions: nonNil(sessions)})
}

// waiting: GET /v1/rooms/{room}/waiting?limit=&after=, admin.
func (s *server) waiting(w http.ResponseWriter, r *http.Request) error {
	name, err := roomName(r)
	if err != nil {
		return err
	}
	page, err := pageParams(r.URL.Query())
	if err != nil {
		return err
	}
	sessions, next, err := s.store.Waiting(r.Context(), name, page)
	if err != nil {
		return err
	}
	now := s.now()
	for i := range sessions {
		s.complete(&sessions[i], now)
	}
	return writeJSON(w, http.StatusOK, pageAnswer{Sessions: nonNil(sessions), Next: next})
}

// history: GET /v1/rooms/{room}/history?status=&limit=&after=, admin.
func (s *server) history(w http.ResponseWriter, r *http.Request) error {
	name, err := roomName(r)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	status, err := historyStatus(q)
	if err != nil {
		return err
	}
	page, err := pageParams(q)
	if err != nil {
		return err
	}
	sessions, next, err := s.store.History(r.Context(), name, status, page)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, pageAnswer{Sessions: nonNil(sessions), Next: next})
}

// fairness: GET /v1/rooms/{room}/fairness, public. What the room counted
// of its own order: every admission (or service), those that came while a
// larger ticket had been let in before (0 unless first come, first served
// broke), and, for a scheduled room, its draw without the entry list
// (which GET …/draw has).
func (s *server) fairness(w http.ResponseWriter, r *http.Request) error {
	name, err := roomName(r)
	if err != nil {
		return err
	}
	room, err := s.store.Room(r.Context(), name)
	if err != nil {
		return err
	}
	out := fairnessAnswer{Room: room.Name, Order: "first_come", Admissions: room.Admissions, Inversions: room.Inversions}
	d, err := s.store.Draw(r.Context(), name)
	switch {
	case err == nil:
		d.Entries = nil
		out.Draw, out.Order = &d, "draw"
	case waitroom.ErrorCode(err) != waitroom.CodeNotFound:
		return err
	}
	w.Header().Set("Cache-Control", "no-cache")
	return writeJSON(w, http.StatusOK, out)
}

// inventoryRequest is the body of POST /v1/rooms/{room}/inventory: exactly
// one of sold, released and set; with session, sold or released of 1 acts
// on that session's unit.
type inventoryRequest struct {
	Sold     *int64  `json:"sold"`
	Released *int64  `json:"released"`
	Set      *int64  `json:"set"`
	Session  *string `json:"session"`
}

// inventory: POST /v1/rooms/{room}/inventory, admin. The app reports what
// became of the units: sold, released (given back), or a new inventory.
func (s *server) inventory(w http.ResponseWriter, r *http.Request) error {
	name, err := roomName(r)
	if err != nil {
		return err
	}
	body, err := readBody(w, r)
	if err != nil {
		return err
	}
	var req inventoryRequest
	if err := waitroom.DecodeJSON(body, &req); err != nil {
		return err
	}
	var op waitroom.StockOp
	var n *int64
	given := 0
	for _, f := range []struct {
		op waitroom.StockOp
		v  *int64
	}{{waitroom.StockSold, req.Sold}, {waitroom.StockReleased, req.Released}, {waitroom.StockSet, req.Set}} {
		if f.v != nil {
			op, n = f.op, f.v
			given++
		}
	}
	if given != 1 {
		return waitroom.Errorf(waitroom.CodeInvalidRequest, `Give exactly one of "sold", "released" and "set", such as {"sold":2}.`)
	}
	id := ""
	if req.Session != nil {
		if op == waitroom.StockSet || *n != 1 {
			return waitroom.Errorf(waitroom.CodeInvalidRequest, `With "session", give {"sold":1} or {"released":1}: a session holds one unit.`)
		}
		if _, err := waitroom.ParseSessionID(*req.Session); err != nil {
			return err
		}
		id = *req.Session
	}
	room, err := s.store.Stock(r.Context(), name, op, *n, id, s.now())
	if err != nil {
		return err
	}
	s.audit(r, waitroom.AuditEntry{Room: name, Action: waitroom.AuditInventory, Session: id,
		Detail: auditDetail(map[string]any{string(op): *n, "sold": room.Sold, "reserved": room.Reserved})})
	return writeJSON(w, http.StatusOK, room)
}
