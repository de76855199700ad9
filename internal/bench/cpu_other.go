//go:build !unix

package bench

import "time"

// processCPU is not measured here: rows then give no per-CPU-second ratio.
func processCPU() time.Duration { return 0 }
