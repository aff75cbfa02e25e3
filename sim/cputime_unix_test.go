//go:build unix

package sim

import (
	"syscall"
	"time"
)

// processCPUTime is user+system CPU time of the whole process, so benchmark
// figures stay meaningful on a machine shared with other work.
func processCPUTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
