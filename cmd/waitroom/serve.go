package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"runtime/pprof"

	"github.com/waitroom/waitroom/server"
)

// serve runs the HTTP server until ctx ends, then shuts down cleanly. The
// server itself is package server's: serve only turns the command line
// into its Config and drives its life.
func serve(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) (err error) {
	o, err := parseServe(args, getenv, stderr)
	if err != nil {
		return err
	}
	logger := newLogger(o.logFormat, stderr)
	o.cfg.Logger, o.cfg.Stdout = logger, stdout
	stopProfile, err := cpuProfile(getenv("WAITROOM_CPUPROFILE"))
	if err != nil {
		return err
	}
	defer stopProfile()

	// Bound first: a start that cannot listen writes nothing to the data
	// folder (New makes the token, the keys and the database).
	ln, err := listen(ctx, o.addr)
	if err != nil {
		return err
	}
	srv, err := server.New(ctx, o.cfg)
	if err != nil {
		ln.Close()
		return err
	}
	defer func() { err = errors.Join(err, srv.Close()) }()
	defer applyRoomsOnHangup(ctx, srv, logger, o.cfg.RoomsFile)()
	fmt.Fprintf(stdout, "waitroom listening on %s\n", ln.Addr())
	srv.Announce(ctx, ln.Addr())
	logger.Info("serving", "addr", ln.Addr().String(), "store", o.cfg.StoreKind(), "data", o.cfg.DataDir)

	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err := <-served:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	logger.Info("shutting down", "timeout", server.ShutdownTimeout.String())
	_ = srv.Shutdown(context.Background()) // a deadline it hit is logged
	if err := <-served; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve: %w", err)
	}
	logger.Info("stopped")
	return nil
}

// listen binds addr; its error names the address once and the cause.
func listen(ctx context.Context, addr string) (net.Listener, error) {
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", addr)
	if oe := (*net.OpError)(nil); errors.As(err, &oe) {
		err = oe.Err // "bind: address already in use", without the address again
	}
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", addr, err)
	}
	return ln, nil
}

func newLogger(format string, w io.Writer) *slog.Logger {
	if format == "json" {
		return slog.New(slog.NewJSONHandler(w, nil))
	}
	return slog.New(slog.NewTextHandler(w, nil))
}

// cpuProfile is a development aid, not a flag: WAITROOM_CPUPROFILE=file
// profiles the whole run, written when stop is called (for go tool pprof).
func cpuProfile(path string) (stop func(), err error) {
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("cpu profile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("cpu profile: %w", err)
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}
