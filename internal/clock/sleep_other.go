//go:build !linux

package clock

import "time"

// sleepPrecise falls back to the runtime's timers where nanosleep(2) is not
// available through package syscall.
func sleepPrecise(d time.Duration) { time.Sleep(d) }
