package vllm

import (
	"testing"
	"time"
)

// TestShmReaderWait: from 0.5.1 to 0.6.3 a step waits for the slowest of
// its TP group's sleeping queue readers, shmReaderPoll·(tp−1)/tp on
// average; before the shared-memory queue, after PR #9994's
// sched_yield, and on one GPU, not at all.
func TestShmReaderWait(t *testing.T) {
	for _, c := range []struct {
		rel  Release
		tp   int
		want time.Duration
	}{
		{Release{0, 5, 0}, 2, 0},
		{Release{0, 5, 1}, 2, shmReaderPoll / 2},
		{Release{0, 6, 0}, 4, shmReaderPoll * 3 / 4},
		{Release{0, 6, 3}, 8, shmReaderPoll * 7 / 8},
		{Release{0, 6, 4}, 8, 0},
		{Release{0, 8, 5}, 8, 0},
		{Release{0, 6, 0}, 1, 0},
	} {
		if got := shmReaderWait(c.rel, c.tp); got != c.want {
			t.Errorf("%v at TP %d: %v, want %v", c.rel, c.tp, got, c.want)
		}
	}
	// A step of a TP 8 group in those releases pays it on its schedule,
	// whatever the executor.
	for _, b := range []ExecutorBackend{ExecutorMP, ExecutorRay} {
		p := Profile{Release: Release{0, 6, 0}}
		if got := executorStepCost(p, b, 8) - executorStepCost(Profile{Release: Release{0, 6, 4}}, b, 8); got != shmReaderPoll*7/8 {
			t.Errorf("%s: the readers' wait adds %v, want %v", b, got, shmReaderPoll*7/8)
		}
	}
}
