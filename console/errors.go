package console

import (
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/limit"
)

// statusOf maps the codes the console answers with to their statuses, as
// the admin API does (httpapi's map); any other code is answered as internal.
var statusOf = map[waitroom.Code]int{
	waitroom.CodeInvalidRequest:   http.StatusBadRequest,
	waitroom.CodeInvalidJSON:      http.StatusBadRequest,
	waitroom.CodeUnauthorized:     http.StatusUnauthorized,
	waitroom.CodeForbidden:        http.StatusForbidden,
	waitroom.CodeNotFound:         http.StatusNotFound,
	waitroom.CodeMethodNotAllowed: http.StatusMethodNotAllowed,
	waitroom.CodeBodyTooLarge:     http.StatusRequestEntityTooLarge,
	waitroom.CodeRateLimited:      http.StatusTooManyRequests,
	waitroom.CodeUnavailable:      http.StatusServiceUnavailable,
	waitroom.CodeInternal:         http.StatusInternalServerError,
}

const (
	contentTypeJSON = "application/json; charset=utf-8"
	msgInternal     = "An internal error occurred."
	msgUnavailable  = "The service is unavailable; try again shortly."
	// maxMessage bounds an error message, which may quote the client's input.
	maxMessage = 300
)

// errorBody is the JSON of every error answer, the API's shape:
// {"error":{"code":"…","message":"…"}}.
type errorBody struct {
	Error errorDetail `json:"error"`
}

type errorDetail struct {
	Code    waitroom.Code `json:"code"`
	Message string        `json:"message"`
}

// writeError writes err as the API does: the code and the person-readable
// message go to the client, the internal cause only to the log.
func (c *Console) writeError(w http.ResponseWriter, r *http.Request, err error) {
	code := waitroom.ErrorCode(err)
	status, known := statusOf[code]
	body := errorBody{Error: errorDetail{Code: code, Message: waitroom.ErrorMessage(err)}}
	var e *waitroom.Error
	isDomain := errors.As(err, &e)
	switch {
	case !known:
		c.log.Error("console: error with unknown code", "code", code, "err", err)
		status = http.StatusInternalServerError
		body.Error = errorDetail{Code: waitroom.CodeInternal, Message: msgInternal}
	case !isDomain && code == waitroom.CodeUnavailable:
		body.Error.Message = msgUnavailable
	}
	body.Error.Message = clip(body.Error.Message)

	level := slog.LevelDebug
	if status >= 500 {
		level = slog.LevelError
	}
	c.log.Log(r.Context(), level, "console: request failed",
		"method", clipMethod(r.Method), "path", clipPath(r.URL.Path), "status", status, "code", body.Error.Code, "err", err)

	h := w.Header()
	h.Set("Cache-Control", "no-store")
	switch status {
	case http.StatusUnauthorized:
		h.Set("WWW-Authenticate", `Bearer realm="waitroom"`)
	case http.StatusTooManyRequests, http.StatusServiceUnavailable:
		secs, ok := limit.RetryAfter(err)
		if !ok {
			secs = 1
		}
		h.Set("Retry-After", strconv.FormatInt(secs, 10))
	}
	b, merr := json.Marshal(body)
	if merr != nil {
		status = http.StatusInternalServerError
		b = []byte(`{"error":{"code":"internal","message":"` + msgInternal + `"}}`)
	}
	writeBody(w, status, append(b, '\n'))
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

// writeBody writes an encoded JSON answer.
func writeBody(w http.ResponseWriter, status int, b []byte) {
	h := w.Header()
	h.Set("Content-Type", contentTypeJSON)
	h.Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(status)
	// A failed write means the client went away; there is no one to tell.
	_, _ = w.Write(b)
}

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

// clipMethod and clipPath keep what a client sends short in messages and
// logs.
func clipMethod(m string) string {
	if len(m) > 16 {
		return m[:16] + "…"
	}
	return m
}

func clipPath(p string) string {
	const most = 200
	if len(p) <= most {
		return p
	}
	cut := most
	for cut > 0 && !utf8.RuneStart(p[cut]) {
		cut--
	}
	return p[:cut] + "…"
}

// seconds says a wait in whole seconds, rounded up, for a person.
func seconds(d time.Duration) string {
	n := max(1, int64((d+time.Second-1)/time.Second))
	if n == 1 {
		return "1 second"
	}
	return strconv.FormatInt(n, 10) + " seconds"
}
