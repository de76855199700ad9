package server

import (
	"errors"
	"fmt"
	"log"
	"log/slog"
	"net"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/waitroom/waitroom/internal/connguard"
	"github.com/waitroom/waitroom/internal/connlimit"
)

// guard wraps ln as serve does: the connection cap (refusals counted in
// the metrics), then, outermost so that the server's ConnState sees the
// guarded connections, the check of every request head before net/http
// reads it.
func (s *Server) guard(ln net.Listener) (net.Listener, error) {
	if n := s.cfg.MaxConnections; n > 0 {
		capped := connlimit.New(ln, n)
		ln = capped
		refused := prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "waitroom_connections_refused_total",
			Help: "Connections answered 503 and closed because --max-connections were open.",
		}, func() float64 { return float64(capped.Refused()) })
		if err := s.reg.Register(refused); err != nil && !errors.As(err, new(prometheus.AlreadyRegisteredError)) {
			return nil, fmt.Errorf("register connection metrics: %w", err)
		}
		s.cfg.Logger.Info("connections capped", "max", n)
	}
	return connguard.Guard(s.http, ln), nil
}

// registerRuntimeMetrics adds the Go runtime's and the process's metrics
// next to waitroom's own, tolerating duplicates in case a package
// registered them too.
func registerRuntimeMetrics(reg *prometheus.Registry) error {
	for _, c := range []prometheus.Collector{
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	} {
		if err := reg.Register(c); err != nil && !errors.As(err, new(prometheus.AlreadyRegisteredError)) {
			return fmt.Errorf("register runtime metrics: %w", err)
		}
	}
	return nil
}

// errorLog is net/http's error log, into logger at warning level.
func errorLog(logger *slog.Logger) *log.Logger {
	return slog.NewLogLogger(logger.Handler(), slog.LevelWarn)
}
