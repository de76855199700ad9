package httpapi

import (
	"encoding/json"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/waitroom/waitroom"
)

const contentTypeJSON = "application/json; charset=utf-8"

// writeBody writes a JSON answer that is already encoded.
func writeBody(w http.ResponseWriter, status int, b []byte) {
	h := w.Header()
	h["Content-Type"] = hdrJSON
	h["Content-Length"] = []string{strconv.Itoa(len(b))}
	w.WriteHeader(status)
	// A failed write means the client went away; there is no one to tell.
	_, _ = w.Write(b)
}

// writeJSON encodes v and writes it with status.
func writeJSON(w http.ResponseWriter, status int, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return &waitroom.Error{Code: waitroom.CodeInternal, Message: msgInternal, Err: err}
	}
	writeBody(w, status, append(b, '\n'))
	return nil
}

// writeSession writes one Session object. It skips encoding/json, because
// reading one's own session is the hottest path of the server.
func writeSession(w http.ResponseWriter, status int, s waitroom.Session) {
	bp := sessionBuffers.Get().(*[]byte)
	b := append(s.AppendJSON((*bp)[:0]), '\n')
	writeBody(w, status, b)
	// net/http has copied b by now, so the buffer serves the next answer.
	if cap(b) <= 4096 {
		*bp = b
		sessionBuffers.Put(bp)
	}
}

// sessionBuffers hold encoded Session objects on their way out.
var sessionBuffers = sync.Pool{New: func() any {
	b := make([]byte, 0, 512)
	return &b
}}

// noContent answers 204.
func noContent(w http.ResponseWriter) {
	w.WriteHeader(http.StatusNoContent)
}

// sessionsAnswer is the answer of advance.
type sessionsAnswer struct {
	Sessions []waitroom.Session `json:"sessions"`
}

// pageAnswer is the answer of the paged listings.
type pageAnswer struct {
	Sessions []waitroom.Session `json:"sessions"`
	Next     string             `json:"next"`
}

// roomsAnswer is the answer of the room list.
type roomsAnswer struct {
	Rooms []waitroom.Room `json:"rooms"`
}

// statusAnswer is the answer of /healthz and /readyz.
type statusAnswer struct {
	Status string `json:"status"`
}

// roomStatus is the public view of a room: its counts and what a waiting
// person may know, without timeouts or tickets.
type roomStatus struct {
	Room     string        `json:"room"`
	Mode     waitroom.Mode `json:"mode"`
	Capacity int           `json:"capacity"`
	Active   int           `json:"active"`
	Waiting  int           `json:"waiting"`
	Paused   bool          `json:"paused"`
	// A scheduled room's opening and pre-queue, and its closing.
	OpensAt  *apiTime `json:"opens_at,omitempty"`
	ClosesAt *apiTime `json:"closes_at,omitempty"`
	Entrants int      `json:"entrants,omitempty"`
	// Remaining is what is left to sell in a room with an inventory.
	Remaining *int64 `json:"remaining,omitempty"`
}

// fairnessAnswer is the body of GET /v1/rooms/{room}/fairness.
type fairnessAnswer struct {
	Room string `json:"room"`
	// Order is "first_come", or "draw" for a scheduled room: its
	// entrants in the order of the draw, later arrivals first come,
	// first served.
	Order      string               `json:"order"`
	Admissions int64                `json:"admissions"`
	Inversions int64                `json:"inversions"`
	Draw       *waitroom.DrawRecord `json:"draw,omitempty"`
}

// apiTime writes a time in the API's format (milliseconds, UTC).
type apiTime time.Time

// MarshalJSON implements json.Marshaler.
func (t apiTime) MarshalJSON() ([]byte, error) {
	return []byte(`"` + time.Time(t).UTC().Format(waitroom.TimeFormat) + `"`), nil
}

func optTime(t time.Time) *apiTime {
	if t.IsZero() {
		return nil
	}
	v := apiTime(t)
	return &v
}

// nonNil returns s, or an empty slice for nil, so lists encode as [] not null.
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
