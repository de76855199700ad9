package static_test

import (
	"net/http/httptest"
	"testing"

	"github.com/waitroom/waitroom/internal/static"
)

func TestServe(t *testing.T) {
	f := static.New([]byte("body"), "text/plain")
	if len(f.Version) != 12 || f.ETag != `"`+f.Version+`"` {
		t.Fatalf("version %q, etag %q", f.Version, f.ETag)
	}
	for _, tc := range []struct {
		method, inm string
		status      int
		body        string
	}{
		{"GET", "", 200, "body"},
		{"HEAD", "", 200, ""},
		{"GET", `"other", W/` + f.ETag, 304, ""},
		{"GET", "*", 304, ""},
		{"GET", `"other"`, 200, "body"},
	} {
		r := httptest.NewRequest(tc.method, "/f", nil)
		if tc.inm != "" {
			r.Header.Set("If-None-Match", tc.inm)
		}
		w := httptest.NewRecorder()
		f.Serve(w, r, static.Immutable)
		h := w.Header()
		if w.Code != tc.status || w.Body.String() != tc.body || h.Get("ETag") != f.ETag ||
			h.Get("Cache-Control") != static.Immutable || h.Get("Content-Type") != "text/plain" {
			t.Errorf("%s If-None-Match %q: %d %q %v, want %d %q", tc.method, tc.inm, w.Code, w.Body, h, tc.status, tc.body)
		}
		if want := map[int]string{200: "4", 304: ""}[tc.status]; h.Get("Content-Length") != want {
			t.Errorf("%s If-None-Match %q: Content-Length %q, want %q", tc.method, tc.inm, h.Get("Content-Length"), want)
		}
	}
}
