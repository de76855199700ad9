package server

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/internal/apierror"
)

// listenMetrics binds Config.MetricsAddr, when set, before anything is
// written to the data folder: a start that cannot listen there leaves
// nothing behind. serveMetrics serves it once the server is assembled.
func (s *Server) listenMetrics(ctx context.Context) error {
	if s.cfg.MetricsAddr == "" {
		return nil
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", s.cfg.MetricsAddr)
	if oe := (*net.OpError)(nil); errors.As(err, &oe) {
		err = oe.Err // the address once, in the message below
	}
	if err != nil {
		return fmt.Errorf("--metrics-addr: listen on %s: %w", s.cfg.MetricsAddr, err)
	}
	s.metricsLn = ln
	// Closed by Close when New fails before serveMetrics; after, the
	// metrics server closes it and this second close is a no-op error.
	s.onCloseFunc(func() { ln.Close() })
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(s.reg, promhttp.HandlerOpts{
		// One failing collector must not hide every other metric.
		ErrorHandling: promhttp.ContinueOnError,
		ErrorLog:      errorLog(s.cfg.Logger),
	}))
	// Anything else gets the API's JSON errors, as on the main listener.
	mux.HandleFunc("/metrics", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Allow", "GET, HEAD")
		apierror.WriteMessage(w, http.StatusMethodNotAllowed, waitroom.CodeMethodNotAllowed, "This listener serves GET /metrics alone.")
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		apierror.WriteMessage(w, http.StatusNotFound, waitroom.CodeNotFound, "This listener serves GET /metrics alone.")
	})
	s.metricsHTTP = &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: readHeaderTimeout,
		IdleTimeout:       idleTimeout,
		MaxHeaderBytes:    maxHeaderBytes,
		ErrorLog:          errorLog(s.cfg.Logger),
	}
	attrs := []any{"addr", ln.Addr().String()}
	if a, ok := ln.Addr().(*net.TCPAddr); ok && a.IP.IsUnspecified() {
		s.cfg.Logger.Warn("--metrics-addr listens on every interface, and /metrics there needs no token: it names every room; bind it to loopback or a private network", attrs...)
	} else {
		s.cfg.Logger.Info("serving /metrics without the token", attrs...)
	}
	return nil
}

// serveMetrics serves the metrics listener until Shutdown or Close.
func (s *Server) serveMetrics() {
	if s.metricsHTTP == nil {
		return
	}
	s.running.Go(func() {
		if err := s.metricsHTTP.Serve(s.metricsLn); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.cfg.Logger.Error("metrics listener stopped", "addr", s.metricsLn.Addr().String(), "err", err)
		}
	})
}

// MetricsAddr returns the address of the token-free metrics listener
// (Config.MetricsAddr), or nil when there is none.
func (s *Server) MetricsAddr() net.Addr {
	if s.metricsLn == nil {
		return nil
	}
	return s.metricsLn.Addr()
}
