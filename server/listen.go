package server

import (
	"errors"
	"fmt"
	"log"
	"log/slog"
	"net"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/waitroom/waitroom/internal/clientaddr"
	"github.com/waitroom/waitroom/internal/connguard"
	"github.com/waitroom/waitroom/internal/connlimit"
)

// guard wraps ln as serve does: the connection caps, global and per
// address (refusals counted in the metrics), then, outermost so that the
// server's ConnState sees the guarded connections, the check of every
// request head before net/http reads it.
func (s *Server) guard(ln net.Listener) (net.Listener, error) {
	n, per := s.cfg.MaxConnections, s.cfg.connectionsPerAddress()
	if n > 0 || per > 0 {
		proxies, _ := clientaddr.FromPrefixes(s.cfg.TrustedProxies) // checked by Config.Check
		capped := connlimit.Limit(ln, connlimit.Limits{Max: n, PerAddress: per, Exempt: proxies.Contains})
		ln = capped
		const name, help = "waitroom_connections_refused_total",
			"Connections answered and closed by reason: global (503, --max-connections were open) or per_address (429, the address held --max-connections-per-address)."
		for reason, count := range map[string]func() int64{"global": capped.Refused, "per_address": capped.RefusedPerAddress} {
			refused := prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help, ConstLabels: prometheus.Labels{"reason": reason}},
				func() float64 { return float64(count()) })
			if err := s.reg.Register(refused); err != nil && !errors.As(err, new(prometheus.AlreadyRegisteredError)) {
				return nil, fmt.Errorf("register connection metrics: %w", err)
			}
		}
		s.cfg.Logger.Info("connections capped", "max", n, "per_address", per)
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
