package console

import (
	"encoding/json"
	"net/http"
	"unicode/utf8"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/internal/apierror"
)

// writeError writes err as the API does (apierror's writer and status
// map), never to be cached: the code and the person-readable message go to
// the client, the internal cause only to the log.
func (c *Console) writeError(w http.ResponseWriter, r *http.Request, err error) {
	apierror.Writer{
		Log:          c.log,
		Name:         "console",
		LogMethod:    clipMethod,
		LogPath:      clipPath,
		CacheControl: "no-store",
	}.Write(w, r, err)
}

// writeJSON encodes v and writes it with status.
func writeJSON(w http.ResponseWriter, status int, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return &waitroom.Error{Code: waitroom.CodeInternal, Message: apierror.MsgInternal, Err: err}
	}
	apierror.WriteBody(w, status, append(b, '\n'))
	return nil
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
