package clock

import (
	"context"
	"testing"
	"testing/synctest"
	"time"
)

// Until must never return before the deadline, in either mode.
func TestUntilNeverWakesEarly(t *testing.T) {
	for _, coarse := range []bool{false, true} {
		s := NewSleeper(coarse)
		for _, d := range []time.Duration{0, 100 * time.Microsecond, time.Millisecond, 3 * time.Millisecond} {
			due := time.Now().Add(d)
			if !s.Until(context.Background(), func() time.Duration { return time.Until(due) }) {
				t.Fatalf("coarse=%v: Until(%v) reported a dead context", coarse, d)
			}
			if early := time.Until(due); early > 0 {
				t.Fatalf("coarse=%v: Until(%v) returned %v early", coarse, d, early)
			}
		}
		s.Stop()
	}
}

func TestUntilStopsOnCancel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := NewSleeper(true)
		defer s.Stop()
		ctx, cancel := context.WithCancel(t.Context())
		go func() { time.Sleep(time.Second); cancel() }()
		start := time.Now()
		due := start.Add(time.Hour)
		if s.Until(ctx, func() time.Duration { return time.Until(due) }) {
			t.Fatal("Until reported success after cancel")
		}
		if took := time.Since(start); took != time.Second {
			t.Fatalf("Until returned after %v, want 1s (the cancel)", took)
		}
	})
}

func TestUntilReadsRemainingAgain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := NewSleeper(true)
		defer s.Stop()
		start := time.Now()
		due := start.Add(time.Second)
		// The deadline moves out once while waiting, as the serve loop's
		// clock does; Until must follow it rather than return at the first.
		remaining := func() time.Duration {
			left := time.Until(due)
			if left <= 0 && due.Equal(start.Add(time.Second)) {
				due = due.Add(time.Second)
				left = time.Until(due)
			}
			return left
		}
		if !s.Until(t.Context(), remaining) {
			t.Fatal("Until reported a dead context")
		}
		if took := time.Since(start); took != 2*time.Second {
			t.Fatalf("Until returned after %v, want 2s (the moved deadline)", took)
		}
	})
}
