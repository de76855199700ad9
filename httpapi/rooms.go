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
	return writeJSON(w, http.StatusOK, roomStatus{
		Room:     room.Name,
		Mode:     room.Mode,
		Capacity: room.Capacity,
		Active:   room.Active,
		Waiting:  room.Waiting,
		Paused:   room.Paused,
	})
}

// putRoom: PUT /v1/rooms/{room}, admin. Absent fields take their defaults:
// the body is the whole configuration, not a patch.
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
	room, created, err := s.store.PutRoom(r.Context(), name, cfg, s.now())
	if err != nil {
		return err
	}
	status := http.StatusOK
	if created {
		status = http.StatusCreated
	}
	return writeJSON(w, status, room)
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
	sessions, err := s.store.Advance(r.Context(), name, n, s.now())
	if err != nil {
		return err
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
