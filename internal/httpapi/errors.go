package httpapi

import (
	"net/http"
	"strings"

	"github.com/waitroom/waitroom/internal/apierror"
)

// msgInternal is the message of an internal error, whose cause must not be
// sent.
const msgInternal = apierror.MsgInternal

// writeError is the one function that writes error answers (apierror's,
// shared with the console). Internal causes are logged; the client sees
// only the code and the person-readable message.
func (s *server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	apierror.Writer{Log: s.log, Name: "httpapi", LogPath: logPath, WriteBody: writeBody}.Write(w, r, err)
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
