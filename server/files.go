package server

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"
)

// tokenFileName holds the generated admin token inside the data folder.
const tokenFileName = "admin-token"

// adminToken returns the admin token: cfg.AdminToken, else the one in
// <data>/admin-token, else a new random one written there. Its note says
// where the file is (never the token), for New to print once the server
// is built, so that an operator can find it.
func adminToken(cfg Config) (tok, note string, err error) {
	if cfg.AdminToken != "" {
		return cfg.AdminToken, "", nil // its length was checked by Config.Check
	}
	path := filepath.Join(cfg.DataDir, tokenFileName)
	if abs, err := filepath.Abs(path); err == nil {
		path = abs // the printed path must work from any directory
	}
	tok, err = readToken(path, cfg.Logger)
	switch {
	case err == nil:
		return tok, fmt.Sprintf("admin token read from %s\n", path), nil
	case !errors.Is(err, fs.ErrNotExist):
		return "", "", err
	}

	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return "", "", fmt.Errorf("create data folder: %w", err)
	}
	var raw [32]byte
	_, _ = rand.Read(raw[:]) // crypto/rand.Read never fails on supported platforms
	tok = base64.RawURLEncoding.EncodeToString(raw[:])
	// O_EXCL: never overwrite a token another process wrote meanwhile.
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return "", "", fmt.Errorf("create admin token file: %w", err)
	}
	_, err = f.WriteString(tok + "\n")
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
		return "", "", fmt.Errorf("write admin token file: %w", err)
	}
	return tok, fmt.Sprintf("admin token written to %s\n", path), nil
}

// readToken reads a token file; a missing file is an fs.ErrNotExist error.
func readToken(path string, logger *slog.Logger) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return "", err
		}
		return "", fmt.Errorf("read admin token: %w", err)
	}
	tok := strings.TrimSpace(string(b))
	if tok == "" {
		return "", fmt.Errorf("admin token file %s is empty; delete it to have a new token generated, or set --admin-token", path)
	}
	if n := utf8.RuneCountInString(tok); n < minAdminTokenLen {
		return "", fmt.Errorf("admin token file %s holds %d characters, want at least %d; delete it to have a new token generated", path, n, minAdminTokenLen)
	}
	if fi, err := os.Stat(path); err == nil && fi.Mode().Perm()&0o077 != 0 {
		logger.Warn("the admin token file can be read by other users; chmod 600 it", "path", path, "mode", fi.Mode().Perm().String())
	}
	return tok, nil
}

// doorSecretFile holds the secret that signs invites and challenges (the
// door), next to the pass keys: processes sharing a store share the folder.
const doorSecretFile = "door.key"

// loadDoorSecret reads the door's secret from dir, making one (32 random
// bytes, mode 0600) on first start.
func loadDoorSecret(dir string) ([]byte, error) {
	path := filepath.Join(dir, doorSecretFile)
	b, err := os.ReadFile(path)
	if err == nil {
		if len(b) < 32 {
			return nil, fmt.Errorf("door secret %s: %d bytes, want at least 32", path, len(b))
		}
		return b, nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("door secret: %w", err)
	}
	b = make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return nil, fmt.Errorf("door secret: %w", err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("door secret: %w", err)
	}
	// Written aside, then linked in: another process never reads half a
	// secret, and the first to link wins.
	tmp := fmt.Sprintf("%s.%d.tmp", path, os.Getpid())
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return nil, fmt.Errorf("door secret: %w", err)
	}
	defer os.Remove(tmp)
	if err := os.Link(tmp, path); errors.Is(err, os.ErrExist) {
		return loadDoorSecret(dir)
	} else if err != nil {
		return nil, fmt.Errorf("door secret: %w", err)
	}
	return b, nil
}
