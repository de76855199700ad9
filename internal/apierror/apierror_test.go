package apierror_test

import (
	"context"
	"io"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/internal/apierror"
)

func TestWrite(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	long := strings.Repeat("é", 400)
	for _, tc := range []struct {
		name     string
		wr       apierror.Writer
		err      error
		status   int
		body     string
		hdr, val string
	}{
		{"unauthorized", apierror.Writer{Log: log}, waitroom.Errorf(waitroom.CodeUnauthorized, "No."),
			401, `{"error":{"code":"unauthorized","message":"No."}}`, "WWW-Authenticate", `Bearer realm="waitroom"`},
		{"context error", apierror.Writer{Log: log}, context.DeadlineExceeded,
			503, `{"error":{"code":"unavailable","message":"` + apierror.MsgUnavailable + `"}}`, "Retry-After", "1"},
		{"code not in the map", apierror.Writer{Log: log, Statuses: map[waitroom.Code]int{}, CacheControl: "no-store"},
			waitroom.Errorf(waitroom.CodeNotFound, "No."),
			500, `{"error":{"code":"internal","message":"` + apierror.MsgInternal + `"}}`, "Cache-Control", "no-store"},
		// 297 bytes fit before the "…", cut back to 296 on a character boundary.
		{"long message", apierror.Writer{Log: log}, waitroom.Errorf(waitroom.CodeInvalidRequest, "%s", long),
			400, `{"error":{"code":"invalid_request","message":"` + long[:296] + `…"}}`, "Content-Type", apierror.ContentType},
	} {
		w := httptest.NewRecorder()
		tc.wr.Write(w, httptest.NewRequest("GET", "/x", nil), tc.err)
		if w.Code != tc.status || w.Body.String() != tc.body+"\n" || w.Header().Get(tc.hdr) != tc.val {
			t.Errorf("%s: %d %s %v, want %d %s with %s: %s", tc.name, w.Code, w.Body, w.Header(), tc.status, tc.body, tc.hdr, tc.val)
		}
	}
}
