package httpapi_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/internal/eta"
	"github.com/waitroom/waitroom/internal/httpapi"
	"github.com/waitroom/waitroom/internal/push"
	"github.com/waitroom/waitroom/memstore"
)

// discard is a ResponseWriter that keeps nothing, so the benchmarks
// measure the handler rather than a recorder's buffers.
type discard struct{ h http.Header }

func (d *discard) Header() http.Header         { return d.h }
func (d *discard) Write(b []byte) (int, error) { return len(b), nil }
func (d *discard) WriteHeader(int)             {}

// SetReadDeadline lets the handler's body-time limit work as it does on a
// real connection (through http.ResponseController).
func (d *discard) SetReadDeadline(time.Time) error { return nil }

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
	h := httpapi.NewHandler(httpapi.Config{Store: st, Admit: admission(b, st, nil, nil)})
	versusHello(b, "session", h, func() *http.Request {
		return httptest.NewRequest(http.MethodGet, "/v1/rooms/r/sessions/"+id, nil)
	})
}

// versusHello runs h, as name, and a hello-world handler as sub-benchmarks
// on requests from newReq. Each goroutine sends one request again and
// again: the server makes a new one per request, but that cost is the same
// for both handlers and not what is measured here.
func versusHello(b *testing.B, name string, h http.Handler, newReq func() *http.Request) {
	hello := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		_, _ = w.Write([]byte("hello\n"))
	})
	for _, tc := range []struct {
		name string
		h    http.Handler
	}{{"hello", hello}, {name, h}} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				req := newReq()
				w := &discard{h: make(http.Header)}
				for pb.Next() {
					clear(w.h)
					tc.h.ServeHTTP(w, req)
				}
			})
		})
	}
}

// BenchmarkHandlerJoinPOST is the handler's own cost of a join on the
// memory store, wired as `waitroom serve` wires it (push hub, ETA fill),
// next to a hello-world handler's:
//
//	go test -run '^$' -bench HandlerJoin -benchmem ./httpapi
func BenchmarkHandlerJoinPOST(b *testing.B) {
	ctx := context.Background()
	st := memstore.New()
	defer st.Close()
	cfg := waitroom.DefaultConfig()
	cfg.Capacity = 0
	cfg.WaitingTimeout = waitroom.Duration(time.Hour)
	if _, _, err := st.PutRoom(ctx, "r", cfg, time.Now()); err != nil {
		b.Fatal(err)
	}
	est := eta.New(st)
	defer est.Close()
	hub := push.New(st, push.Options{Fill: est.Fill})
	defer hub.Close()
	h := httpapi.NewHandler(httpapi.Config{Store: st, Hub: hub, Fill: est.Fill, Admit: admission(b, st, nil, nil)})
	versusHello(b, "join", h, func() *http.Request {
		return httptest.NewRequest(http.MethodPost, "/v1/rooms/r/sessions", http.NoBody)
	})
}
