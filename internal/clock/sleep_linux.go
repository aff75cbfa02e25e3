//go:build linux

package clock

import (
	"errors"
	"syscall"
	"time"
)

// sleepPrecise blocks the calling goroutine's thread in nanosleep(2), which
// Linux times with high-resolution timers (~50 µs slack). Go's own timers
// wake an idle process through epoll_wait with a millisecond timeout, up to
// 1 ms late, which would show directly as token lag.
func sleepPrecise(d time.Duration) {
	ts := syscall.NsecToTimespec(int64(d))
	for ts.Sec > 0 || ts.Nsec > 0 {
		var left syscall.Timespec
		err := syscall.Nanosleep(&ts, &left)
		if !errors.Is(err, syscall.EINTR) {
			return
		}
		ts = left
	}
}
