// Package apierror is the server's one HTTP error vocabulary: the status
// of every code (the one map), the codes only the server's HTTP layers
// give, the Retry-After and WWW-Authenticate headers, the JSON body
// {"error":{"code":"…","message":"…"}} and the writers of it. Every part of
// the server that answers an error answers through it: the API (httpapi),
// the gate (gatekeeper, and gate.WriteError), the operator console
// (console), the connection guards (connguard, connlimit), and the waiting
// pages (web), whose HTML error pages take their status from Status.
package apierror

import (
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/waitroom/waitroom"
)

// Codes of answers no Store returns and the Go client never meets: they
// belong to the server's HTTP layers alone.
const (
	// CodeForbidden is a request refused whoever makes it: a cross-origin
	// WebSocket handshake, a console request without its CSRF proof.
	CodeForbidden waitroom.Code = "forbidden"
	// CodeHeaderTooLarge is the 431 of a request head over the server's
	// limit (package connguard, before any route).
	CodeHeaderTooLarge waitroom.Code = "header_too_large"
	// CodeExpectationFailed is the 417 of an Expect other than
	// 100-continue (package connguard, before any route).
	CodeExpectationFailed waitroom.Code = "expectation_failed"
)

// statuses is the one map from error code to HTTP status. A code missing
// here is a bug and is answered as internal.
var statuses = map[waitroom.Code]int{
	waitroom.CodeInvalidRequest:     http.StatusBadRequest,
	waitroom.CodeInvalidJSON:        http.StatusBadRequest,
	waitroom.CodeInvalidRoomName:    http.StatusBadRequest,
	waitroom.CodeInvalidSessionID:   http.StatusBadRequest,
	waitroom.CodeInvalidConfig:      http.StatusBadRequest,
	waitroom.CodeInvalidKey:         http.StatusBadRequest,
	waitroom.CodeUnauthorized:       http.StatusUnauthorized,
	CodeForbidden:                   http.StatusForbidden,
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
	waitroom.CodePreconditionFailed: http.StatusPreconditionFailed,
	waitroom.CodeChallengeRequired:  http.StatusPreconditionRequired,
	waitroom.CodeChallengeInvalid:   http.StatusBadRequest,
	waitroom.CodeChallengeExpired:   http.StatusPreconditionRequired,
	waitroom.CodeChallengeWrongRoom: http.StatusBadRequest,
	waitroom.CodeChallengeUsed:      http.StatusConflict,
	waitroom.CodeStockConflict:      http.StatusConflict,
	waitroom.CodeNotInvited:         http.StatusConflict,
	waitroom.CodeBodyTooLarge:       http.StatusRequestEntityTooLarge,
	CodeExpectationFailed:           http.StatusExpectationFailed,
	CodeHeaderTooLarge:              http.StatusRequestHeaderFieldsTooLarge,
	waitroom.CodeRateLimited:        http.StatusTooManyRequests,
	waitroom.CodeRoomFull:           http.StatusServiceUnavailable,
	waitroom.CodeUnavailable:        http.StatusServiceUnavailable,
	waitroom.CodeInternal:           http.StatusInternalServerError,
}

// Status is the HTTP status of code (500 for a code the map does not know).
func Status(code waitroom.Code) int {
	if st, ok := statuses[code]; ok {
		return st
	}
	return http.StatusInternalServerError
}

// Codes returns every code the map knows, sorted: package waitroom's and
// this package's own.
func Codes() []waitroom.Code {
	out := make([]waitroom.Code, 0, len(statuses))
	for c := range statuses {
		out = append(out, c)
	}
	slices.Sort(out)
	return out
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

// DefaultRetryAfter is the Retry-After, in seconds, sent with 429 and 503
// unless the error says better (RetryAfter): the store has no better
// estimate, and one second keeps well-behaved clients from hammering while
// recovering quickly.
const DefaultRetryAfter = 1

// MaxMessage bounds the message of an error answer: messages may quote the
// client's input, which must never come back at length.
const MaxMessage = 300

// Body is the JSON form of every error answer.
type Body struct {
	Error Detail `json:"error"`
	// Session is the live session of an already_joined (or not_invited)
	// error.
	Session *waitroom.Session `json:"session,omitempty"`
	// Challenge is the challenge to solve of a challenge_required (or
	// challenge_expired) error.
	Challenge *waitroom.ChallengeDetail `json:"challenge,omitempty"`
}

// Detail is the "error" object of an error answer.
type Detail struct {
	Code    waitroom.Code `json:"code"`
	Message string        `json:"message"`
}

// Encode returns the JSON body of an error answer with code and msg (msg
// clipped to MaxMessage), ending in a newline.
func Encode(code waitroom.Code, msg string) []byte {
	b, _ := json.Marshal(Body{Error: Detail{Code: code, Message: Clip(msg)}}) // cannot fail for these types
	return append(b, '\n')
}

// Writer writes error answers. Its zero value is not usable: Log must be
// set. A Writer is small and may be built for each answer.
type Writer struct {
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
	code := waitroom.ErrorCode(err)
	status, known := statuses[code]
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
	if status == http.StatusUnauthorized {
		h.Set("WWW-Authenticate", `Bearer realm="waitroom"`)
	}
	SetRetryAfter(h, status, err, DefaultRetryAfter)
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

// RetryAfter returns the seconds after which a refused request may be
// tried again, when err says so: when err, or an error it wraps, has a
// RetryAfterSeconds() int64 method (as limit.RetryError has). ok is false
// otherwise.
func RetryAfter(err error) (secs int64, ok bool) {
	var re interface{ RetryAfterSeconds() int64 }
	if errors.As(err, &re) {
		return re.RetryAfterSeconds(), true
	}
	return 0, false
}

// SetRetryAfter sets the Retry-After of an error answer with status: on
// 429 and 503 only, the seconds err names (RetryAfter), else fallback.
func SetRetryAfter(h http.Header, status int, err error, fallback int64) {
	if v, ok := retryAfter(status, err, fallback); ok {
		h.Set("Retry-After", v)
	}
}

// retryAfter is the Retry-After of an answer with status, if it has one.
func retryAfter(status int, err error, fallback int64) (string, bool) {
	if status != http.StatusTooManyRequests && status != http.StatusServiceUnavailable {
		return "", false
	}
	secs, ok := RetryAfter(err)
	if !ok {
		secs = fallback
	}
	return strconv.FormatInt(secs, 10), true
}

// WriteMessage writes an error answer of status with code and msg, with
// X-Content-Type-Options: nosniff and nothing else but the body's headers:
// the gate's answers, which go to a proxy's subrequest as often as to a
// person. Callers take status from Status unless the answer is not
// waitroom's own (a protected app that failed).
func WriteMessage(w http.ResponseWriter, status int, code waitroom.Code, msg string) {
	w.Header().Set("X-Content-Type-Options", "nosniff")
	WriteBody(w, status, Encode(code, msg))
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

// Raw returns the whole HTTP/1.1 answer to a request refused on its
// connection, before net/http reads it, after which the connection
// closes: the status of err's code, the JSON body of its code and message,
// Connection: close, no caching, and Retry-After (err's, else retry
// seconds) on a 429 or 503.
func Raw(err error, retry int64) []byte {
	code := waitroom.ErrorCode(err)
	status := Status(code)
	body := Encode(code, waitroom.ErrorMessage(err))
	h := "HTTP/1.1 " + strconv.Itoa(status) + " " + http.StatusText(status) + "\r\n" +
		"Content-Type: " + ContentType + "\r\n" +
		"Cache-Control: no-store\r\n" +
		"X-Content-Type-Options: nosniff\r\n"
	if v, ok := retryAfter(status, err, retry); ok {
		h += "Retry-After: " + v + "\r\n"
	}
	h += "Connection: close\r\n" +
		"Content-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n"
	return append([]byte(h), body...)
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
