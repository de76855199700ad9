// Package apierror writes the API's error answers: the JSON body
// {"error":{"code":"…","message":"…"}}, the HTTP status of each
// waitroom.Code, and the WWW-Authenticate and Retry-After headers that go
// with them. The API (httpapi) and the operator console (console) answer
// errors through it, so the two cannot drift apart.
package apierror

import (
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"unicode/utf8"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/internal/limit"
)

// statuses is the one map from error code to HTTP status, the API's. A
// code missing here is a bug and is answered as internal.
var statuses = map[waitroom.Code]int{
	waitroom.CodeInvalidRequest:     http.StatusBadRequest,
	waitroom.CodeInvalidJSON:        http.StatusBadRequest,
	waitroom.CodeInvalidRoomName:    http.StatusBadRequest,
	waitroom.CodeInvalidSessionID:   http.StatusBadRequest,
	waitroom.CodeInvalidConfig:      http.StatusBadRequest,
	waitroom.CodeInvalidKey:         http.StatusBadRequest,
	waitroom.CodeUnauthorized:       http.StatusUnauthorized,
	waitroom.CodeForbidden:          http.StatusForbidden,
	waitroom.CodeNotFound:           http.StatusNotFound,
	waitroom.CodeRoomNotFound:       http.StatusNotFound,
	waitroom.CodeSessionNotFound:    http.StatusNotFound,
	waitroom.CodeQueueEmpty:         http.StatusNotFound,
	waitroom.CodeMethodNotAllowed:   http.StatusMethodNotAllowed,
	waitroom.CodeAlreadyJoined:      http.StatusConflict,
	waitroom.CodeRoomNotEmpty:       http.StatusConflict,
	waitroom.CodeRoomClosed:         http.StatusConflict,
	waitroom.CodeDrawDone:           http.StatusConflict,
	waitroom.CodeSoldOut:            http.StatusConflict,
	waitroom.CodeInviteRequired:     http.StatusForbidden,
	waitroom.CodeInviteInvalid:      http.StatusForbidden,
	waitroom.CodeInviteExpired:      http.StatusForbidden,
	waitroom.CodeInviteWrongRoom:    http.StatusForbidden,
	waitroom.CodeInviteUsed:         http.StatusConflict,
	waitroom.CodeChallengeRequired:  http.StatusPreconditionRequired,
	waitroom.CodeChallengeInvalid:   http.StatusBadRequest,
	waitroom.CodeChallengeExpired:   http.StatusPreconditionRequired,
	waitroom.CodeChallengeWrongRoom: http.StatusBadRequest,
	waitroom.CodeChallengeUsed:      http.StatusConflict,
	waitroom.CodeStockConflict:      http.StatusConflict,
	waitroom.CodeNotInvited:         http.StatusConflict,
	waitroom.CodeBodyTooLarge:       http.StatusRequestEntityTooLarge,
	waitroom.CodeRateLimited:        http.StatusTooManyRequests,
	waitroom.CodeRoomFull:           http.StatusServiceUnavailable,
	waitroom.CodeUnavailable:        http.StatusServiceUnavailable,
	waitroom.CodeInternal:           http.StatusInternalServerError,
}

// Status is the HTTP status the API answers code with (500 for a code it
// does not know).
func Status(code waitroom.Code) int {
	if st, ok := statuses[code]; ok {
		return st
	}
	return http.StatusInternalServerError
}

// Messages for errors that are not *waitroom.Error, whose text must not be sent.
const (
	// MsgInternal is the message of every internal error.
	MsgInternal = "An internal error occurred."
	// MsgUnavailable is the message of a context error (canceled or timed
	// out talking to the store).
	MsgUnavailable = "The service is unavailable; try again shortly."
)

// ContentType is the Content-Type of every JSON answer.
const ContentType = "application/json; charset=utf-8"

// retryAfterSeconds is the Retry-After sent with 429 and 503 unless the
// error says better (a *limit.RetryError): the store has no better
// estimate, and one second keeps well-behaved clients from hammering while
// recovering quickly.
const retryAfterSeconds = "1"

// MaxMessage bounds the message of an error answer: messages may quote the
// client's input, which must never come back at length.
const MaxMessage = 300

// Body is the JSON form of every error answer.
type Body struct {
	Error Detail `json:"error"`
	// Session is the live session of an already_joined error.
	Session *waitroom.Session `json:"session,omitempty"`
	// Challenge is the challenge to solve of a challenge_required (or
	// challenge_expired) error.
	Challenge any `json:"challenge,omitempty"`
}

// Detail is the "error" object of an error answer.
type Detail struct {
	Code    waitroom.Code `json:"code"`
	Message string        `json:"message"`
}

// Writer writes error answers. Its zero value is not usable: Log must be
// set. A Writer is small and may be built for each answer.
type Writer struct {
	// Statuses maps the codes answered to their statuses; any other code is
	// logged as a bug and answered as internal. Nil means the API's map,
	// which has every code of package waitroom.
	Statuses map[waitroom.Code]int
	// Log receives every failed request (errors at 5xx, the rest at debug).
	Log *slog.Logger
	// Name prefixes the log messages, as in "httpapi: request failed".
	Name string
	// LogMethod and LogPath shorten or redact the request's method and path
	// for the log; nil logs them as they are.
	LogMethod, LogPath func(string) string
	// CacheControl, if set, is the Cache-Control of every error answer.
	CacheControl string
	// WriteBody writes the encoded answer; nil means WriteBody.
	WriteBody func(w http.ResponseWriter, status int, b []byte)
}

// Write answers err: the code and the person-readable message go to the
// client, the internal cause only to the log.
func (wr Writer) Write(w http.ResponseWriter, r *http.Request, err error) {
	statusOf := wr.Statuses
	if statusOf == nil {
		statusOf = statuses
	}
	code := waitroom.ErrorCode(err)
	status, known := statusOf[code]
	body := Body{Error: Detail{Code: code, Message: waitroom.ErrorMessage(err)}}
	var e *waitroom.Error
	isDomain := errors.As(err, &e)
	switch {
	case !known:
		wr.Log.Error(wr.Name+": error with unknown code", "code", code, "err", err)
		status = http.StatusInternalServerError
		body.Error = Detail{Code: waitroom.CodeInternal, Message: MsgInternal}
	case !isDomain && code == waitroom.CodeUnavailable:
		// A context error: canceled or timed out talking to the store.
		body.Error.Message = MsgUnavailable
	}
	body.Error.Message = Clip(body.Error.Message)
	if known && isDomain && (code == waitroom.CodeAlreadyJoined || code == waitroom.CodeNotInvited) && e.Session != nil {
		body.Session = e.Session
	}
	if known && isDomain && (code == waitroom.CodeChallengeRequired || code == waitroom.CodeChallengeExpired) {
		body.Challenge = e.Challenge
	}

	level := slog.LevelDebug
	if status >= 500 {
		level = slog.LevelError
	}
	if ctx := r.Context(); wr.Log.Enabled(ctx, level) {
		method, path := r.Method, r.URL.Path
		if wr.LogMethod != nil {
			method = wr.LogMethod(method)
		}
		if wr.LogPath != nil {
			path = wr.LogPath(path)
		}
		wr.Log.Log(ctx, level, wr.Name+": request failed",
			"method", method, "path", path, "status", status, "code", body.Error.Code, "err", err)
	}

	h := w.Header()
	if wr.CacheControl != "" {
		h.Set("Cache-Control", wr.CacheControl)
	}
	setHeaders(h, status, err)
	b, merr := json.Marshal(body)
	if merr != nil {
		// Cannot happen for these types; keep the answer well-formed anyway.
		wr.Log.Error(wr.Name+": encoding error body", "err", merr)
		status = http.StatusInternalServerError
		b = []byte(`{"error":{"code":"internal","message":"` + MsgInternal + `"}}`)
	}
	writeBody := wr.WriteBody
	if writeBody == nil {
		writeBody = WriteBody
	}
	writeBody(w, status, append(b, '\n'))
}

// setHeaders sets the headers an error answer with status carries:
// WWW-Authenticate with 401, Retry-After with 429 and 503 (the wait err
// names, else one second).
func setHeaders(h http.Header, status int, err error) {
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
}

// WriteBody writes an encoded JSON answer with its Content-Type and
// Content-Length.
func WriteBody(w http.ResponseWriter, status int, b []byte) {
	h := w.Header()
	h.Set("Content-Type", ContentType)
	h.Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(status)
	// A failed write means the client went away; there is no one to tell.
	_, _ = w.Write(b)
}

// Clip shortens m to at most MaxMessage bytes, on a character boundary,
// ending it with "…" when cut.
func Clip(m string) string {
	if len(m) <= MaxMessage {
		return m
	}
	cut := MaxMessage - len("…")
	for cut > 0 && !utf8.RuneStart(m[cut]) {
		cut--
	}
	return m[:cut] + "…"
}
