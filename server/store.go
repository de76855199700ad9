package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/memstore"
	"github.com/waitroom/waitroom/redisstore"
	"github.com/waitroom/waitroom/sqlitestore"
)

// DatabaseFile is the SQLite database's name inside the data folder (with
// its -wal and -shm files beside it): what a backup copies.
const DatabaseFile = "waitroom.db"

// openStore uses cfg.Store, or opens the backend cfg.StoreURL names (and
// closes it in Close).
func (s *Server) openStore(ctx context.Context) error {
	cfg := s.cfg
	if cfg.Store != nil {
		s.store = cfg.Store
		return nil
	}
	switch {
	case cfg.StoreURL == "memory":
		cfg.Logger.Warn("using the in-memory store: every room and session is lost when the process stops; use it for demos only")
		s.store = memstore.New()
	case IsRedisURL(cfg.StoreURL):
		// go-redis prints its own lines (each failed dial) raw to stderr;
		// the store's errors say the same, once, so they go to debug.
		redisstore.SetClientLogger(cfg.Logger)
		// The store logs rooms it finds rewound after a failover.
		st, err := redisstore.Open(ctx, cfg.StoreURL, redisstore.WithLogger(cfg.Logger),
			redisstore.WithAckReplicas(cfg.RedisAckReplicas), redisstore.WithAckTimeout(cfg.RedisAckTimeout))
		if err != nil {
			return fmt.Errorf("open Redis store %s: %w", RedactURL(cfg.StoreURL), operatorCause(err))
		}
		s.store = st
	default:
		if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
			return fmt.Errorf("create data folder: %w", err)
		}
		warnOpenDataDir(cfg.Logger, cfg.DataDir)
		path := filepath.Join(cfg.DataDir, DatabaseFile)
		st, err := sqlitestore.Open(ctx, path)
		if err != nil {
			return fmt.Errorf("open SQLite store %s: %w", path, err)
		}
		s.store = st
	}
	s.onClose(func() error {
		if err := s.store.Close(); err != nil {
			return fmt.Errorf("close store: %w", err)
		}
		return nil
	})
	return nil
}

// warnOpenDataDir warns when other users may read or write the data
// folder (systemd's StateDirectory= makes it 0755): the database files are
// 0600, but a reader of the folder sees what is in it, and a writer can
// replace any of its files.
func warnOpenDataDir(logger *slog.Logger, dir string) {
	fi, err := os.Stat(dir)
	if err != nil || runtime.GOOS == "windows" { // no Unix modes there
		return
	}
	if perm := fi.Mode().Perm(); perm&0o066 != 0 {
		logger.Warn("the data folder is readable or writable by other users; its files are 0600, but restrict the folder too: chmod 700 it (under systemd, StateDirectoryMode=0700)",
			"dir", dir, "mode", fmt.Sprintf("%04o", perm))
	}
}

// operatorCause is err as an operator wants it: for a store that could
// not be reached, the cause, without the message written for the people
// in line ("The waiting room's storage is unavailable; try again
// shortly.").
func operatorCause(err error) error {
	var we *waitroom.Error
	if !errors.As(err, &we) || we.Code != waitroom.CodeUnavailable || we.Err == nil {
		return err
	}
	if cause := errors.Unwrap(we.Err); cause != nil {
		return fmt.Errorf("cannot reach it: %w", cause)
	}
	return we.Err
}

// StoreKind names the backend a configuration serves, for logs: memory,
// redis or sqlite ("embedded" when an open store was given).
func (c Config) StoreKind() string {
	switch {
	case c.Store != nil:
		return "embedded"
	case c.StoreURL == "memory":
		return "memory"
	case IsRedisURL(c.StoreURL):
		return "redis"
	}
	return "sqlite"
}
