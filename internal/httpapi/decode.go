package httpapi

import (
	"bytes"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/internal/reqbody"
)

// maxBody is the largest request body read, 1 MiB.
const maxBody = 1 << 20

// bodyReadTimeout bounds the time to read a request body. The server has no
// ReadTimeout (it would cut event streams), so without this a client could
// hold a connection and a goroutine by sending a body a byte at a time.
var bodyReadTimeout = 10 * time.Second

// limitBodyTime sets the body read deadline; writers that cannot (test
// recorders) are left as they are.
func limitBodyTime(w http.ResponseWriter) {
	reqbody.SetDeadline(w, bodyReadTimeout)
}

// readBody reads the whole body within bodyReadTimeout, refusing more than
// maxBody bytes with CodeBodyTooLarge. A request without a body (a join
// without a key, the most common POST) reads as nil.
func readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	return reqbody.Read(w, r, maxBody, bodyReadTimeout)
}

// limitBody refuses a request whose body is over maxBody with 413
// body_too_large, and reports whether the request may go on to its
// handler. A declared length over the limit is refused at once, unread
// (and the connection closed after the answer, lingering: Serve's
// connection guard reads and drops the rest of the body for a while, so
// that a client that sends it all before reading still gets the 413
// rather than a reset); a body of unknown length
// (chunked) is read here, up to the limit, and handed on from memory, as
// every handler that reads a body reads it whole anyway.
func (s *server) limitBody(w http.ResponseWriter, r *http.Request) bool {
	switch {
	case r.ContentLength > maxBody:
		w.Header().Set("Connection", "close")
		s.writeError(w, r, reqbody.TooLarge(maxBody))
		return false
	case r.ContentLength >= 0 || r.Body == nil || r.Body == http.NoBody:
		// Declared within the limit: net/http reads no more than that.
		return true
	}
	b, err := readBody(w, r)
	if err != nil {
		w.Header().Set("Connection", "close")
		s.writeError(w, r, err)
		return false
	}
	// Streams must not inherit the deadline of the body's read.
	_ = http.NewResponseController(w).SetReadDeadline(time.Time{})
	r.ContentLength = int64(len(b))
	if len(b) == 0 {
		r.Body = http.NoBody
	} else {
		r.Body = io.NopCloser(bytes.NewReader(b))
	}
	return true
}

// discardBody reads and drops at most maxBody bytes, for endpoints that
// accept any body (sendBeacon) but have no use for it. Reading it lets the
// connection be reused.
func discardBody(w http.ResponseWriter, r *http.Request) {
	limitBodyTime(w)
	_, _ = io.Copy(io.Discard, io.LimitReader(r.Body, maxBody))
}

// decodeOptional decodes a body that may be absent: an empty or blank body
// leaves v as it is.
func decodeOptional(body []byte, v any) error {
	if len(bytes.TrimSpace(body)) == 0 {
		return nil
	}
	return waitroom.DecodeJSON(body, v)
}

// roomName returns the {room} path value, checked.
func roomName(r *http.Request) (string, error) {
	name := r.PathValue("room")
	if err := waitroom.CheckRoomName(name); err != nil {
		return "", err
	}
	return name, nil
}

// maxCursorLen bounds the after cursor. Every store's cursors are short (a
// number, or a Redis stream id of at most 41 characters); a longer one
// cannot have been issued and is refused before the store sees it.
const maxCursorLen = 256

// pageParams reads limit (1..MaxPageLimit, default DefaultPageLimit) and
// after (an opaque cursor the store checks).
func pageParams(q url.Values) (waitroom.Page, error) {
	p := waitroom.Page{After: q.Get("after"), Limit: waitroom.DefaultPageLimit}
	if len(p.After) > maxCursorLen {
		return p, waitroom.Errorf(waitroom.CodeInvalidRequest, "after must be a cursor from a previous answer.")
	}
	if s, ok := q["limit"]; ok {
		n, err := strconv.Atoi(s[0])
		if err != nil || n < 1 || n > waitroom.MaxPageLimit {
			return p, waitroom.Errorf(waitroom.CodeInvalidRequest,
				"limit must be a whole number from 1 to %d.", waitroom.MaxPageLimit)
		}
		p.Limit = n
	}
	return p, nil
}

// historyStatus reads the optional status filter of the history.
func historyStatus(q url.Values) (waitroom.Status, error) {
	s, ok := q["status"]
	if !ok {
		return "", nil
	}
	switch st := waitroom.Status(s[0]); st {
	case waitroom.StatusServed, waitroom.StatusLeft, waitroom.StatusExpired:
		return st, nil
	}
	return "", waitroom.Errorf(waitroom.CodeInvalidRequest, "status must be served, left or expired.")
}

// forceParam reads the optional force flag of a room deletion.
func forceParam(q url.Values) (bool, error) {
	s, ok := q["force"]
	if !ok {
		return false, nil
	}
	force, err := strconv.ParseBool(s[0])
	if err != nil {
		return false, waitroom.Errorf(waitroom.CodeInvalidRequest, "force must be true or false.")
	}
	return force, nil
}
