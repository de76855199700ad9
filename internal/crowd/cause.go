package crowd

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"syscall"
)

// statusError is an answer other than the one a request wanted.
type statusError struct {
	status int
	code   string // the error code of the JSON body, if any
	body   string
}

func (e *statusError) Error() string {
	if e.body == "" {
		return fmt.Sprintf("%d %s", e.status, http.StatusText(e.status))
	}
	return fmt.Sprintf("%d %s", e.status, e.body)
}

// newStatusError reads the error code of a waitroom error body
// ({"error":{"code":…}}) when there is one.
func newStatusError(status int, body []byte) *statusError {
	var b struct {
		Error struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	_ = json.Unmarshal(body, &b)
	return &statusError{status: status, code: b.Error.Code, body: string(trimBody(body))}
}

// trimBody keeps an error body short enough for one line.
func trimBody(b []byte) []byte {
	if len(b) > 300 {
		b = append(b[:300:300], "…"...)
	}
	return b
}

// causeOf names what a failed request met, short and without what differs
// from one request to the next, so that failures can be counted by it: the
// status and error code of an answer ("429 rate_limited"), or what the
// transport met ("connection refused", "timeout", …).
func causeOf(err error) string {
	var se *statusError
	if errors.As(err, &se) {
		if se.code != "" {
			return fmt.Sprintf("%d %s", se.status, se.code)
		}
		return fmt.Sprintf("%d %s", se.status, http.StatusText(se.status))
	}
	var dns *net.DNSError
	switch {
	case err == nil:
		return ""
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.Is(err, syscall.ECONNRESET):
		return "connection reset"
	case errors.Is(err, syscall.EPIPE):
		return "broken pipe"
	case errors.Is(err, syscall.EADDRNOTAVAIL):
		return "no local port free (EADDRNOTAVAIL)"
	case errors.Is(err, syscall.EMFILE):
		return "too many open files"
	case errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH):
		return "no route to host"
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return "connection closed"
	case errors.As(err, &dns):
		return "DNS: " + dns.Err
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return "timeout"
	}
	for u := errors.Unwrap(err); u != nil; u = errors.Unwrap(err) {
		err = u
	}
	return err.Error()
}

// transport reports whether err is a failure to reach the server at all
// (no answer), as opposed to an answer it did not want.
func transport(err error) bool {
	var se *statusError
	return err != nil && !errors.As(err, &se)
}
