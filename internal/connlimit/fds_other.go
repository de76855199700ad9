//go:build !unix

package connlimit

// FileLimit is the process's limit on open files; 0 where it is not known.
func FileLimit() int { return 0 }
