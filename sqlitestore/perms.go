package sqlitestore

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// fileMode is the mode of the database and every file beside it: they
// hold webhook secrets, session ids and a draw's seed before the draw, so
// only the server's own user may read them.
const fileMode fs.FileMode = 0o600

// sidecars are the files SQLite keeps beside the database (WAL mode's log
// and shared-memory index, the rollback journal while switching modes).
var sidecars = []string{"-wal", "-shm", "-journal"}

// createPrivate creates the database file at path, if missing, with
// fileMode before SQLite opens it, and restricts an existing one (made by
// an older version, 0644 under the usual umask) to fileMode. SQLite itself
// would create the file 0644 (SQLITE_DEFAULT_FILE_PERMISSIONS, less the
// umask), and it creates -wal and -shm with the database's own mode, so a
// private database makes private sidecars. The chmod holds whatever the
// umask.
func createPrivate(path string) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, fileMode)
	if err != nil {
		return fmt.Errorf("create database file: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("create database file: %w", err)
	}
	if err := os.Chmod(path, fileMode); err != nil {
		return fmt.Errorf("restrict database file to mode %04o: %w", fileMode, err)
	}
	return nil
}

// restrictSidecars sets fileMode on the sidecars that exist: ones left by
// an older version keep the mode they were made with, since SQLite only
// sets the mode of files it creates.
func restrictSidecars(path string) error {
	for _, suffix := range sidecars {
		if err := os.Chmod(path+suffix, fileMode); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("restrict %s%s to mode %04o: %w", path, suffix, fileMode, err)
		}
	}
	return nil
}
