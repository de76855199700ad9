//go:build unix

package connlimit

import "syscall"

// FileLimit is the process's limit on open files (the soft RLIMIT_NOFILE),
// or 0 when it cannot be read or is unlimited.
func FileLimit() int {
	var r syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &r); err != nil || r.Cur > 1<<31 {
		return 0
	}
	return int(r.Cur)
}
