package httpapi

import (
	"errors"
	"log/slog"
	"maps"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// requestDurations registers the request duration histogram on reg. A second
// handler on the same registry shares the first one's histogram.
func requestDurations(reg *prometheus.Registry, log *slog.Logger) *prometheus.HistogramVec {
	h := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "waitroom_http_request_duration_seconds",
		Help:    "Time to answer HTTP requests, by route pattern, method and status code.",
		Buckets: prometheus.DefBuckets,
	}, []string{"route", "method", "code"})
	if err := reg.Register(h); err != nil {
		var dup prometheus.AlreadyRegisteredError
		if errors.As(err, &dup) {
			if existing, ok := dup.ExistingCollector.(*prometheus.HistogramVec); ok {
				return existing
			}
		}
		// Serving matters more than metrics: carry on unregistered.
		log.Error("httpapi: registering request metrics", "err", err)
	}
	return h
}

// observe records one request. The route is the matched pattern, so label
// values stay few whatever paths clients send.
// openStreams registers the gauge of open event streams (SSE and
// WebSocket), which reads n.
func openStreams(reg *prometheus.Registry, log *slog.Logger, n *atomic.Int64) {
	g := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "waitroom_event_streams_open",
		Help: "Event streams (SSE and WebSocket) open now on this process.",
	}, func() float64 { return float64(n.Load()) })
	if err := reg.Register(g); err != nil {
		// A second handler on one registry: the first one's gauge stays.
		log.Warn("httpapi: registering the open streams gauge", "err", err)
	}
}

func (s *server) observe(w *responseWriter, r *http.Request, start time.Time) {
	route := r.Pattern
	if route == "" {
		route = "unmatched"
	}
	code := w.status
	if code == 0 {
		code = http.StatusOK // net/http's answer when a handler writes nothing
	}
	s.observer(obsKey{route, methodLabel(r.Method), code}).Observe(time.Since(start).Seconds())
}

// obsKey names one series of the duration histogram.
type obsKey struct {
	route, method string
	code          int
}

// observer returns the histogram series of k. Series are few (routes ×
// methods × codes) and fixed after the first requests, so they are kept in
// a map that is copied on the rare miss and read without a lock:
// WithLabelValues would hash the labels, and format the code, per request.
func (s *server) observer(k obsKey) prometheus.Observer {
	if m := s.observers.Load(); m != nil {
		if o, ok := (*m)[k]; ok {
			return o
		}
	}
	o := s.durations.WithLabelValues(k.route, k.method, strconv.Itoa(k.code))
	s.obsMu.Lock()
	defer s.obsMu.Unlock()
	old := s.observers.Load()
	m := make(map[obsKey]prometheus.Observer, 1+lenOf(old))
	if old != nil {
		maps.Copy(m, *old)
	}
	m[k] = o
	s.observers.Store(&m)
	return o
}

func lenOf(m *map[obsKey]prometheus.Observer) int {
	if m == nil {
		return 0
	}
	return len(*m)
}

// methodLabel bounds the method label: arbitrary method tokens from clients
// would otherwise each make a new series.
func methodLabel(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodConnect, http.MethodOptions, http.MethodTrace:
		return m
	}
	return "other"
}

// responseWriter records the status of an answer. It implements Unwrap so
// http.ResponseController reaches the real writer (flushing and deadlines
// for streams depend on it).
type responseWriter struct {
	http.ResponseWriter
	status      int
	wroteHeader bool
	// req is the request answered; stock is the 404 or 405 of the mux's
	// own handler, held back for the server to answer in JSON. The mux
	// calls its own handler only when no pattern matched, so r.Pattern is
	// then still empty.
	req   *http.Request
	stock int
}

// WriteHeader records the final status; informational 1xx answers may come
// before it and are not final.
func (w *responseWriter) WriteHeader(code int) {
	if !w.wroteHeader && w.req != nil && w.req.Pattern == "" &&
		(code == http.StatusNotFound || code == http.StatusMethodNotAllowed) {
		w.stock = code
		return
	}
	if !w.wroteHeader && (code >= 200 || code == http.StatusSwitchingProtocols) {
		w.status = code
		w.wroteHeader = true
	}
	w.ResponseWriter.WriteHeader(code)
}

// Write implies a 200 if no status was written.
func (w *responseWriter) Write(b []byte) (int, error) {
	if w.stock != 0 {
		return len(b), nil // the stock answer's text body
	}
	if !w.wroteHeader {
		w.status = http.StatusOK
		w.wroteHeader = true
	}
	return w.ResponseWriter.Write(b)
}

// Flush serves code that type-asserts http.Flusher rather than using
// http.ResponseController.
func (w *responseWriter) Flush() {
	if !w.wroteHeader {
		w.status = http.StatusOK
		w.wroteHeader = true
	}
	_ = http.NewResponseController(w.ResponseWriter).Flush()
}

// Unwrap returns the underlying ResponseWriter for http.ResponseController.
func (w *responseWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
