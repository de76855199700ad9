package httpapi

import (
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/limit"
)

// statusOf is the one map from error code to HTTP status. A code missing
// here is a bug and is answered as internal.
var statusOf = map[waitroom.Code]int{
	waitroom.CodeInvalidRequest:   http.StatusBadRequest,
	waitroom.CodeInvalidJSON:      http.StatusBadRequest,
	waitroom.CodeInvalidRoomName:  http.StatusBadRequest,
	waitroom.CodeInvalidSessionID: http.StatusBadRequest,
	waitroom.CodeInvalidConfig:    http.StatusBadRequest,
	waitroom.CodeInvalidKey:       http.StatusBadRequest,
	waitroom.CodeUnauthorized:     http.StatusUnauthorized,
	waitroom.CodeForbidden:        http.StatusForbidden,
	waitroom.CodeNotFound:         http.StatusNotFound,
	waitroom.CodeRoomNotFound:     http.StatusNotFound,
	waitroom.CodeSessionNotFound:  http.StatusNotFound,
	waitroom.CodeQueueEmpty:       http.StatusNotFound,
	waitroom.CodeMethodNotAllowed: http.StatusMethodNotAllowed,
	waitroom.CodeAlreadyJoined:    http.StatusConflict,
	waitroom.CodeRoomNotEmpty:     http.StatusConflict,
	waitroom.CodeRoomClosed:       http.StatusConflict,
	waitroom.CodeDrawDone:         http.StatusConflict,
	waitroom.CodeSoldOut:          http.StatusConflict,
	waitroom.CodeStockConflict:    http.StatusConflict,
	waitroom.CodeBodyTooLarge:     http.StatusRequestEntityTooLarge,
	waitroom.CodeRateLimited:      http.StatusTooManyRequests,
	waitroom.CodeRoomFull:         http.StatusServiceUnavailable,
	waitroom.CodeUnavailable:      http.StatusServiceUnavailable,
	waitroom.CodeInternal:         http.StatusInternalServerError,
}

// Messages for errors that are not *waitroom.Error, whose text must not be sent.
const (
	msgInternal    = "An internal error occurred."
	msgUnavailable = "The service is unavailable; try again shortly."
)

// retryAfterSeconds is the Retry-After sent with 429 and 503 unless the
// error says better (a *limit.RetryError): the store has no better estimate, and one second keeps well-behaved clients from
// hammering while recovering quickly.
const retryAfterSeconds = "1"

// errorBody is the JSON form of every error answer.
type errorBody struct {
	Error errorDetail `json:"error"`
	// Session is the live session of an already_joined error.
	Session *waitroom.Session `json:"session,omitempty"`
}

type errorDetail struct {
	Code    waitroom.Code `json:"code"`
	Message string        `json:"message"`
}

// writeError is the one function that writes error answers. Internal causes
// are logged; the client sees only the code and the person-readable message.
func (s *server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	code := waitroom.ErrorCode(err)
	status, known := statusOf[code]
	body := errorBody{Error: errorDetail{Code: code, Message: waitroom.ErrorMessage(err)}}
	var e *waitroom.Error
	isDomain := errors.As(err, &e)
	switch {
	case !known:
		s.log.Error("httpapi: error with unknown code", "code", code, "err", err)
		status = http.StatusInternalServerError
		body.Error = errorDetail{Code: waitroom.CodeInternal, Message: msgInternal}
	case !isDomain && code == waitroom.CodeUnavailable:
		// A context error: canceled or timed out talking to the store.
		body.Error.Message = msgUnavailable
	}
	body.Error.Message = clip(body.Error.Message)
	if isDomain && code == waitroom.CodeAlreadyJoined && e.Session != nil {
		body.Session = e.Session
	}

	level := slog.LevelDebug
	if status >= 500 {
		level = slog.LevelError
	}
	s.log.Log(r.Context(), level, "httpapi: request failed",
		"method", r.Method, "path", logPath(r.URL.Path), "status", status, "code", body.Error.Code, "err", err)

	h := w.Header()
	switch status {
	case http.StatusUnauthorized:
		h.Set("WWW-Authenticate", `Bearer realm="waitroom"`)
	case http.StatusTooManyRequests, http.StatusServiceUnavailable:
		if secs, ok := limit.RetryAfter(err); ok {
			h.Set("Retry-After", strconv.FormatInt(secs, 10))
		} else {
			h.Set("Retry-After", retryAfterSeconds)
		}
	}
	b, merr := json.Marshal(body)
	if merr != nil {
		// Cannot happen for these types; keep the answer well-formed anyway.
		s.log.Error("httpapi: encoding error body", "err", merr)
		status = http.StatusInternalServerError
		b = []byte(`{"error":{"code":"internal","message":"` + msgInternal + `"}}`)
	}
	writeBody(w, status, append(b, '\n'))
}

// maxMessage bounds the message of an error answer: messages may quote the
// client's input, which must never come back at length.
const maxMessage = 300

// clip shortens m to at most maxMessage bytes, on a character boundary.
func clip(m string) string {
	if len(m) <= maxMessage {
		return m
	}
	cut := maxMessage - len("…")
	for cut > 0 && !utf8.RuneStart(m[cut]) {
		cut--
	}
	return m[:cut] + "…"
}

// logPath is a request path as it may be logged: a session id is a bearer
// secret, so only its first ten characters, which encode nothing but the
// public ticket, are kept.
func logPath(p string) string {
	const marker = "/sessions/"
	if !strings.Contains(p, marker) {
		return p
	}
	var b strings.Builder
	for {
		i := strings.Index(p, marker)
		if i < 0 {
			b.WriteString(p)
			return b.String()
		}
		start := i + len(marker)
		end := strings.IndexByte(p[start:], '/')
		if end < 0 {
			end = len(p)
		} else {
			end += start
		}
		if end-start <= 10 {
			b.WriteString(p[:end])
		} else {
			b.WriteString(p[:start+10])
			b.WriteString("…")
		}
		p = p[end:]
	}
}
