// Package reqbody reads request bodies with a size limit and a read
// deadline, answering a body too large with waitroom.CodeBodyTooLarge. The
// API (httpapi) and the operator console (console) read bodies through it.
package reqbody

import (
	"errors"
	"io"
	"net/http"
	"time"

	"github.com/waitroom/waitroom"
)

// Read reads the whole body of r within timeout, refusing more than maxBytes
// bytes with CodeBodyTooLarge; a body that cannot be read is
// CodeInvalidRequest. An absent body reads as nil, with no deadline set.
func Read(w http.ResponseWriter, r *http.Request, maxBytes int64, timeout time.Duration) ([]byte, error) {
	if r.Body == nil || r.Body == http.NoBody {
		// The server's request for Content-Length: 0: nothing to read, no
		// deadline to set, no buffer.
		return nil, nil
	}
	SetDeadline(w, timeout)
	b, err := io.ReadAll(http.MaxBytesReader(Innermost(w), r.Body, maxBytes))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return nil, TooLarge(maxBytes)
		}
		return nil, &waitroom.Error{Code: waitroom.CodeInvalidRequest, Message: "The body could not be read.", Err: err}
	}
	return b, nil
}

// TooLarge is the error of a body over maxBytes bytes.
func TooLarge(maxBytes int64) error {
	return waitroom.Errorf(waitroom.CodeBodyTooLarge, "The body is larger than %d bytes.", maxBytes)
}

// SetDeadline sets the deadline for reading the body to timeout from now.
// A server without a ReadTimeout (which would cut event streams) needs it,
// or a client could hold a connection and a goroutine by sending a body a
// byte at a time. Writers that cannot (test recorders) are left as they are.
func SetDeadline(w http.ResponseWriter, timeout time.Duration) {
	_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(timeout))
}

// Innermost unwraps w to the server's own writer. MaxBytesReader tells that
// writer (by a type assertion that does not unwrap) to close the connection
// after an oversized body instead of reading the rest of it.
func Innermost(w http.ResponseWriter) http.ResponseWriter {
	for {
		u, ok := w.(interface{ Unwrap() http.ResponseWriter })
		if !ok {
			return w
		}
		w = u.Unwrap()
	}
}
