// Package server assembles a whole waitroom server: the one place that
// builds the store, the push hub, the door, the gate, the API, the pages,
// the console, the webhook deliverer, the sweeper and the metrics, in
// dependency order, and owns every goroutine they start.
//
// `waitroom serve` turns its flags into a Config and calls New; so do the
// benchmarks and every test that needs a whole server, and so can a Go
// program that embeds waitroom:
//
//	cfg := server.Defaults()
//	cfg.DataDir = "/var/lib/waitroom"
//	srv, err := server.New(ctx, cfg)
//	if err != nil { … }
//	defer srv.Close()
//	ln, _ := net.Listen("tcp", ":8080")
//	go srv.Serve(ln)
//
// Handler is the whole HTTP surface without a listener, for an embedder
// with a server of its own; Serve adds what guards the listener
// (--max-connections, the request-head guard) and the timeouts.
package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/internal/gatekeeper"
	"github.com/waitroom/waitroom/internal/roomsfile"
)

// Server limits. There is no WriteTimeout: event streams stay open for as
// long as a session waits, and a server-wide write deadline would cut them.
const (
	readHeaderTimeout = 5 * time.Second
	idleTimeout       = 2 * time.Minute
	maxHeaderBytes    = 64 << 10
	// ShutdownTimeout is how long Shutdown lets requests in flight finish
	// when its context has no deadline of its own.
	ShutdownTimeout = 10 * time.Second
)

// Server is one assembled waitroom server. Its methods are safe for
// concurrent use.
type Server struct {
	cfg     Config
	store   waitroom.Store
	token   string
	handler http.Handler
	gate    *gatekeeper.Gate
	reg     *prometheus.Registry
	http    *http.Server
	// metricsLn and metricsHTTP serve Config.MetricsAddr; nil without it.
	metricsLn   net.Listener
	metricsHTTP *http.Server

	// closers run in Close, last added first: what was built last, on top
	// of the rest, stops first.
	closers []func() error
	// onShutdown runs when Shutdown starts (the hub ends every stream).
	onShutdown []func()
	// background is what outlives a request (sweeper, webhooks, outage
	// monitor); cancelled in Close, after the HTTP server drained.
	bgCtx      context.Context
	background context.CancelFunc
	running    sync.WaitGroup

	closeOnce sync.Once
	closeErr  error

	// roomsMu serializes the applications of the rooms file.
	roomsMu sync.Mutex
}

// New builds a server from cfg. Nothing listens until Serve, except the
// token-free metrics listener of cfg.MetricsAddr when set. On error,
// whatever New had started is stopped again and what it wrote to the data
// folder is removed: a start that fails leaves nothing behind. The store
// is opened before anything else is written there (the SQLite store is
// the database file in it), so a store that cannot be reached writes
// nothing at all.
func New(ctx context.Context, cfg Config) (_ *Server, err error) {
	if err := cfg.Check(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	// The rooms file is checked before anything is opened or written: a
	// bad file refuses the start and leaves nothing behind.
	var rooms *roomsfile.File
	if cfg.RoomsFile != "" {
		if rooms, err = readRoomsFile(cfg.RoomsFile); err != nil {
			return nil, err
		}
	}
	s := &Server{cfg: cfg, reg: prometheus.NewRegistry()}
	undo := undoWrites(cfg.DataDir, cfg.PassKeysDir)
	defer func() {
		if err != nil {
			s.Close()
			undo()
		}
	}()
	if err := s.listenMetrics(ctx); err != nil {
		return nil, err
	}
	if err := s.openStore(ctx); err != nil {
		return nil, err
	}
	var tokenNote string
	if s.token, tokenNote, err = adminToken(cfg); err != nil {
		return nil, err
	}
	// The file first: a room it declares is its own, and the default and
	// demo rooms are created only when it does not declare them.
	if rooms != nil {
		if _, err := s.applyRooms(ctx, rooms); err != nil {
			return nil, fmt.Errorf("--rooms: %w", err)
		}
	}
	if err := s.setUpRooms(ctx); err != nil {
		return nil, err
	}
	if s.handler, err = s.assemble(ctx); err != nil {
		return nil, err
	}
	s.http = &http.Server{
		Handler:           s.handler,
		ReadHeaderTimeout: readHeaderTimeout,
		IdleTimeout:       idleTimeout,
		MaxHeaderBytes:    maxHeaderBytes,
		ErrorLog:          errorLog(cfg.Logger),
		// Requests carry ctx's values but are not cancelled with it: on
		// shutdown, requests in flight finish rather than fail.
		BaseContext: func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
	}
	for _, f := range s.onShutdown {
		s.http.RegisterOnShutdown(f)
	}
	s.serveMetrics()
	// Only now: a start that fails removes a token file it wrote.
	io.WriteString(cfg.Stdout, tokenNote)
	return s, nil
}

// undoWrites notes what is in the data folder before New writes to it, and
// returns what removes New's writes again when it fails: a data folder (or
// keys folder) that did not exist, or the entries of the data folder that
// were not there. A start that fails leaves nothing behind, whatever the
// step that failed.
func undoWrites(dataDir, keysDir string) func() {
	var fresh []string
	for _, dir := range []string{dataDir, keysDir} {
		if _, err := os.Stat(dir); dir != "" && errors.Is(err, fs.ErrNotExist) {
			fresh = append(fresh, dir)
		}
	}
	before := map[string]bool{}
	entries, err := os.ReadDir(dataDir)
	for _, e := range entries {
		before[e.Name()] = true
	}
	return func() {
		for _, dir := range fresh {
			os.RemoveAll(dir) // everything in it is this start's own
		}
		if err != nil {
			return // not listed: leave it as it is
		}
		after, _ := os.ReadDir(dataDir)
		for _, e := range after {
			if !before[e.Name()] {
				os.RemoveAll(filepath.Join(dataDir, e.Name()))
			}
		}
	}
}

// Handler returns the whole HTTP surface: the API, the pages, the gate,
// the console and the operations endpoints.
func (s *Server) Handler() http.Handler { return s.handler }

// Middleware returns net/http middleware for an app in the same process:
// requests with a valid pass for room (or a path in bypass) go through,
// with the pass's gate.Claims in their context (gate.ClaimsFrom); others
// join the room and are sent to its waiting page. Activity through it
// counts as presence, and ended sessions are refused within a second.
func (s *Server) Middleware(room string, bypass ...string) func(http.Handler) http.Handler {
	return s.gate.Middleware(room, bypass...)
}

// Store returns the store the server serves.
func (s *Server) Store() waitroom.Store { return s.store }

// AdminToken returns the bearer token of the admin API.
func (s *Server) AdminToken() string { return s.token }

// Serve accepts connections on ln until Shutdown or Close, each checked by
// the connection cap and the request-head guard first. It returns
// http.ErrServerClosed after Shutdown or Close.
func (s *Server) Serve(ln net.Listener) error {
	ln, err := s.guard(ln)
	if err != nil {
		return err
	}
	return s.http.Serve(ln)
}

// Shutdown stops accepting connections, ends every event stream and waits
// for the requests in flight (until ctx ends, or ShutdownTimeout when ctx
// has no deadline), then closes the connections still open. It does not
// stop the background work or the store: Close does.
func (s *Server) Shutdown(ctx context.Context) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, ShutdownTimeout)
		defer cancel()
	}
	err := s.http.Shutdown(ctx)
	if err != nil {
		s.cfg.Logger.Warn("requests still running at the shutdown deadline; closing their connections", "err", err)
		s.http.Close()
	}
	if s.metricsHTTP != nil && s.metricsHTTP.Shutdown(ctx) != nil {
		s.metricsHTTP.Close() // scrapes are short: nothing to wait for
	}
	return err
}

// Close stops everything New started, in reverse order, and closes the
// store when New opened it. Call it after Shutdown for a graceful stop;
// alone, it closes connections at once. It is safe to call more than once.
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		var errs []error
		if s.http != nil {
			errs = append(errs, ignoreClosed(s.http.Close()))
		}
		if s.metricsHTTP != nil {
			errs = append(errs, ignoreClosed(s.metricsHTTP.Close()))
		}
		if s.background != nil {
			s.background()
		}
		s.running.Wait()
		for i := len(s.closers) - 1; i >= 0; i-- {
			errs = append(errs, s.closers[i]())
		}
		s.closeErr = errors.Join(errs...)
	})
	return s.closeErr
}

// onClose adds f to what Close runs.
func (s *Server) onClose(f func() error) { s.closers = append(s.closers, f) }

// onCloseFunc adds f, which cannot fail, to what Close runs.
func (s *Server) onCloseFunc(f func()) { s.onClose(func() error { f(); return nil }) }

// goBackground runs f until Close, on a context that outlives the request
// context: the sweeper, the deliverer and the outage monitor keep working
// while Shutdown drains requests.
func (s *Server) goBackground(f func(ctx context.Context)) {
	if s.background == nil {
		panic("server: background work started before its context")
	}
	s.running.Go(func() { f(s.bgCtx) })
}

func ignoreClosed(err error) error {
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("close HTTP server: %w", err)
	}
	return nil
}
