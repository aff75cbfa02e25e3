//go:build unix

package client

import (
	"syscall"
	"time"
)

// processCPU is the CPU time this process has used. Benchmarks report it
// per chunk next to wall time because the machine is shared: wall time
// includes time spent descheduled, CPU time does not.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
