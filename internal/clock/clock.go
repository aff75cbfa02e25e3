// Package clock sleeps until a deadline with sub-millisecond accuracy.
// Go's runtime timers wake an idle process through epoll_wait with a
// millisecond timeout, so they fire up to 1 ms late; that lateness would
// show directly as send lag in bench and as token lag in serve.
package clock

import (
	"context"
	"time"
)

// PreciseWindow is the last stretch before a deadline slept in nanosleep(2)
// rather than on a runtime timer.
const PreciseWindow = 2 * time.Millisecond

// Sleeper waits for deadlines: on a runtime timer (which a context can
// interrupt) until PreciseWindow before, then in nanosleep, which blocks the
// calling goroutine's thread for at most PreciseWindow.
type Sleeper struct {
	timer *time.Timer
	// coarse sleeps on runtime timers only: under testing/synctest the
	// clock is fake and a real system call cannot advance it.
	coarse bool
}

// NewSleeper returns a Sleeper; coarse disables the nanosleep stretch.
func NewSleeper(coarse bool) *Sleeper {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return &Sleeper{timer: t, coarse: coarse}
}

// Until sleeps until remaining() is no longer positive and reports whether
// ctx was still live. remaining is read again after every wake-up.
func (s *Sleeper) Until(ctx context.Context, remaining func() time.Duration) bool {
	for {
		delay := remaining()
		switch {
		case delay <= 0:
			return ctx.Err() == nil
		case delay <= PreciseWindow && !s.coarse:
			sleepPrecise(delay)
			continue
		case !s.coarse:
			delay -= PreciseWindow
		}
		s.timer.Reset(delay)
		select {
		case <-s.timer.C:
		case <-ctx.Done():
			s.timer.Stop()
			return false
		}
	}
}

// Stop releases the timer.
func (s *Sleeper) Stop() { s.timer.Stop() }
