package httpapi_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/httpapi"
	"github.com/waitroom/waitroom/memstore"
)

// discard is a ResponseWriter that keeps nothing, so the benchmarks
// measure the handler rather than a recorder's buffers.
type discard struct{ h http.Header }

func (d *discard) Header() http.Header         { return d.h }
func (d *discard) Write(b []byte) (int, error) { return len(b), nil }
func (d *discard) WriteHeader(int)             {}

// BenchmarkHandlerSessionGET is the handler's own cost of the hottest
// request, reading one's session, next to a hello-world handler's:
//
//	go test -run '^$' -bench HandlerSession -benchmem ./httpapi
func BenchmarkHandlerSessionGET(b *testing.B) {
	ctx := context.Background()
	st := memstore.New()
	now := time.Now()
	if _, _, err := st.PutRoom(ctx, "r", waitroom.DefaultConfig(), now); err != nil {
		b.Fatal(err)
	}
	var id string
	for range 200 {
		s, err := st.Join(ctx, "r", "", now)
		if err != nil {
			b.Fatal(err)
		}
		id = s.ID
	}
	h := httpapi.NewHandler(httpapi.Config{Store: st})
	hello := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		_, _ = w.Write([]byte("hello\n"))
	})
	for _, tc := range []struct {
		name string
		h    http.Handler
	}{{"hello", hello}, {"session", h}} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				// One request per goroutine, used again: the server makes
				// a new one per request, but that cost is the same for
				// both handlers and not what is measured here.
				req := httptest.NewRequest(http.MethodGet, "/v1/rooms/r/sessions/"+id, nil)
				w := &discard{h: make(http.Header)}
				for pb.Next() {
					clear(w.h)
					tc.h.ServeHTTP(w, req)
				}
			})
		})
	}
}
