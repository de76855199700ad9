//go:build !unix

package sqlitestore

import (
	"fmt"
	"os"
)

// lockFile opens path; on this platform there is no advisory lock, so two
// processes on one data folder are not prevented.
func lockFile(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open lock file: %w", err)
	}
	return f, nil
}
