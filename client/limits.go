package client

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"
)

// Which limit a TimeoutError reports. Each is its own failure reason, so a
// run's error counts tell a server that never answers from one that stalls
// mid-stream.
const (
	LimitFirstByte = "first-byte"
	LimitChunk     = "chunk"
	LimitRequest   = "request"
)

// TimeoutError is a request cut off by one of Config's time limits. Its
// text carries no per-request detail so that equal causes count together.
type TimeoutError struct {
	Limit string // LimitFirstByte, LimitChunk or LimitRequest
	After time.Duration
}

func (e *TimeoutError) Error() string {
	switch e.Limit {
	case LimitFirstByte:
		return fmt.Sprintf("first-byte timeout: no response byte within %v", e.After)
	case LimitChunk:
		return fmt.Sprintf("chunk timeout: no data for %v while streaming", e.After)
	}
	return fmt.Sprintf("request timeout: not finished within %v", e.After)
}

// Timeout reports true, as net.Error timeouts do.
func (e *TimeoutError) Timeout() bool { return true }

// stallWatch enforces the first-byte and between-chunk limits with one
// timer per request that re-arms itself from the last read's timestamp,
// instead of resetting a timer on every chunk: the hot path pays one
// atomic store per read.
type stallWatch struct {
	base      time.Time
	sentAt    time.Duration // offset from base when the request was sent
	firstByte time.Duration // 0: no limit
	idle      time.Duration // 0: no limit
	// lastRead is the offset from base of the latest body read that returned
	// bytes; 0 until the first one.
	lastRead atomic.Int64
	stopped  atomic.Bool
	cancel   context.CancelCauseFunc
	timer    atomic.Pointer[time.Timer] // set once by start, read by check
}

// newStallWatch arms a watch for one request (never reused: a late timer
// callback must not reach the next request); cancel is called with a
// *TimeoutError when a limit passes. It returns nil when no limit is set.
func newStallWatch(base time.Time, sentAt, firstByte, idle time.Duration, cancel context.CancelCauseFunc) *stallWatch {
	if firstByte <= 0 && idle <= 0 {
		return nil
	}
	w := &stallWatch{base: base, sentAt: sentAt, firstByte: firstByte, idle: idle, cancel: cancel}
	t := time.AfterFunc(time.Duration(1<<62), w.check)
	w.timer.Store(t)
	t.Reset(w.nextCheck(sentAt))
	return w
}

// markRead records a read that returned bytes at offset at from base.
func (w *stallWatch) markRead(at time.Duration) {
	if w == nil {
		return
	}
	if w.lastRead.Swap(int64(max(at, 1))) == 0 {
		// Once per request: the first-byte wait is over, the idle clock starts.
		if w.idle > 0 {
			w.timer.Load().Reset(w.idle)
		} else {
			w.timer.Load().Stop()
		}
	}
}

// nextCheck is how long from now the next limit can pass; 0 means never.
func (w *stallWatch) nextCheck(now time.Duration) time.Duration {
	last := time.Duration(w.lastRead.Load())
	switch {
	case last == 0 && w.firstByte > 0:
		return max(w.sentAt+w.firstByte-now, 1)
	case last == 0 && w.idle > 0:
		return w.idle // poll until the first byte starts the idle clock
	case last > 0 && w.idle > 0:
		return max(last+w.idle-now, 1)
	}
	return 0
}

func (w *stallWatch) check() {
	if w.stopped.Load() {
		return
	}
	now := time.Since(w.base)
	last := time.Duration(w.lastRead.Load())
	switch {
	case last == 0 && w.firstByte > 0 && now-w.sentAt >= w.firstByte:
		w.cancel(&TimeoutError{Limit: LimitFirstByte, After: w.firstByte})
		return
	case last > 0 && w.idle > 0 && now-last >= w.idle:
		w.cancel(&TimeoutError{Limit: LimitChunk, After: w.idle})
		return
	}
	if next := w.nextCheck(now); next > 0 {
		w.timer.Load().Reset(next)
	}
}

func (w *stallWatch) stop() {
	if w == nil {
		return
	}
	w.stopped.Store(true)
	w.timer.Load().Stop()
}

// timeoutCause is the *TimeoutError that ended reqCtx, if one did.
func timeoutCause(reqCtx context.Context) (*TimeoutError, bool) {
	var te *TimeoutError
	if errors.As(context.Cause(reqCtx), &te) {
		return te, true
	}
	return nil, false
}
