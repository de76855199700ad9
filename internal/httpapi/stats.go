package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/internal/roomstats"
)

// The console's numbers: every room at a glance, one room's last hour, and
// the live stream of them. All admin.

// roomSummary is one row of GET /v1/stats.
type roomSummary struct {
	Name     string `json:"name"`
	State    string `json:"state"`
	Waiting  int    `json:"waiting"`
	Active   int    `json:"active"`
	Capacity int    `json:"capacity"`
	Paused   bool   `json:"paused"`
	roomstats.Rates
}

// statsAnswer is the answer of GET /v1/stats.
type statsAnswer struct {
	Rooms []roomSummary `json:"rooms"`
}

// roomState names where a room stands, for the console's badge: sold out,
// closed, scheduled (its pre-queue fills), drawing (the opening came and
// the draw is due), paused, or open.
func roomState(r waitroom.Room, now time.Time) string {
	switch {
	case r.Inventory != nil && r.Remaining != nil && *r.Remaining == 0 && r.Reserved == 0:
		return "sold_out"
	case !r.ClosesAt.IsZero() && !now.Before(r.ClosesAt):
		return "closed"
	case !r.OpensAt.IsZero() && now.Before(r.OpensAt):
		return "scheduled"
	case !r.OpensAt.IsZero() && r.Entrants > 0:
		return "drawing"
	case r.Paused:
		return "paused"
	}
	return "open"
}

// overview: GET /v1/stats, admin.
func (s *server) overview(w http.ResponseWriter, r *http.Request) error {
	if s.stats == nil {
		return errNoStats
	}
	rooms, err := s.store.Rooms(r.Context())
	if err != nil {
		return err
	}
	now := s.now()
	out := statsAnswer{Rooms: make([]roomSummary, 0, len(rooms))}
	for _, room := range rooms {
		rates, err := s.stats.Overview(r.Context(), room.Name, now)
		if err != nil {
			return waitroom.Unavailable(err, "reading the room's stats")
		}
		out.Rooms = append(out.Rooms, roomSummary{Name: room.Name, State: roomState(room, now), Waiting: room.Waiting,
			Active: room.Active, Capacity: room.Capacity, Paused: room.Paused, Rates: rates})
	}
	return writeJSON(w, http.StatusOK, out)
}

// roomStats: GET /v1/rooms/{room}/stats, admin.
func (s *server) roomStats(w http.ResponseWriter, r *http.Request) error {
	name, err := roomName(r)
	if err != nil {
		return err
	}
	if s.stats == nil {
		return errNoStats
	}
	if _, err := s.store.Room(r.Context(), name); err != nil {
		return err
	}
	sum, err := s.stats.Summary(r.Context(), name, s.now())
	if err != nil {
		return waitroom.Unavailable(err, "reading the room's stats")
	}
	return writeJSON(w, http.StatusOK, sum)
}

var errNoStats = waitroom.Errorf(waitroom.CodeNotFound, "This store keeps no stats for the console.")

// adminEventsEvery is how often the console's live stream reads and sends
// its numbers. With the server's recorder writing its counts every quarter
// second, what the console shows is at most three quarters of a second old.
const adminEventsEvery = 500 * time.Millisecond

// adminEvents: GET /v1/rooms/{room}/admin-events, admin. Server-Sent
// Events: "stats" twice a second (the stats answer with only the newest,
// partial point), "room" with the room's configuration and counts whenever
// they change, "audit" with each new audit entry, whichever process
// recorded it. The stream ends when the room is deleted.
func (s *server) adminEvents(w http.ResponseWriter, r *http.Request) error {
	name, err := roomName(r)
	if err != nil {
		return err
	}
	if s.stats == nil {
		return errNoStats
	}
	room, err := s.store.Room(r.Context(), name)
	if err != nil {
		return err
	}
	lastAudit := ""
	if s.ledger != nil {
		newest, _, err := s.ledger.Audit(r.Context(), name, "", waitroom.Page{Limit: 1})
		if err != nil {
			return err
		}
		if len(newest) > 0 {
			lastAudit = newest[0].ID
		}
	}
	if r.Method == http.MethodHead {
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Cache-Control", "no-store")
		w.WriteHeader(http.StatusOK)
		return nil
	}
	if n := s.streams.Add(1); s.maxStreams > 0 && n > s.maxStreams {
		s.streams.Add(-1)
		return waitroom.Errorf(waitroom.CodeUnavailable, "This server holds as many streams as it can; try again shortly.")
	}
	defer s.streams.Add(-1)
	rc := http.NewResponseController(w)
	_ = rc.SetWriteDeadline(time.Time{})
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)

	ctx := r.Context()
	var buf bytes.Buffer
	send := func(event string, v any) error {
		b, err := json.Marshal(v)
		if err != nil {
			return fmt.Errorf("encode %s event: %w", event, err)
		}
		buf.Reset()
		fmt.Fprintf(&buf, "event: %s\ndata: %s\n\n", event, b)
		_ = rc.SetWriteDeadline(time.Now().Add(streamWriteTimeout))
		if _, err := w.Write(buf.Bytes()); err != nil {
			return err
		}
		return rc.Flush()
	}
	lastRoom, _ := json.Marshal(room)
	if err := send("room", room); err != nil {
		return nil // the client went away; the head is sent already
	}
	tick := time.NewTicker(adminEventsEvery)
	defer tick.Stop()
	for {
		if err := s.adminTick(ctx, name, send, &lastRoom, &lastAudit); err != nil {
			if waitroom.ErrorCode(err) == waitroom.CodeRoomNotFound {
				_ = send("deleted", map[string]string{"room": name})
			}
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

// adminTick sends one second's events of the console's stream.
func (s *server) adminTick(ctx context.Context, name string, send func(string, any) error, lastRoom *[]byte, lastAudit *string) error {
	room, err := s.store.Room(ctx, name)
	if err != nil {
		return err
	}
	if b, _ := json.Marshal(room); !bytes.Equal(b, *lastRoom) {
		*lastRoom = b
		if err := send("room", room); err != nil {
			return err
		}
	}
	sum, err := s.stats.Summary(ctx, name, s.now())
	if err == nil {
		if err := send("stats", sum.Latest()); err != nil {
			return err
		}
	} else {
		s.log.Warn("console stream: reading stats failed", "room", name, "err", err)
	}
	if s.ledger == nil {
		return nil
	}
	entries, _, err := s.ledger.Audit(ctx, name, "", waitroom.Page{Limit: 50})
	if err != nil {
		s.log.Warn("console stream: reading the audit log failed", "room", name, "err", err)
		return nil
	}
	// Newest first: send those after the last one sent, oldest first.
	n := 0
	for n < len(entries) && entries[n].ID > *lastAudit {
		n++
	}
	for i := n - 1; i >= 0; i-- {
		if err := send("audit", entries[i]); err != nil {
			return err
		}
		*lastAudit = entries[i].ID
	}
	return nil
}
