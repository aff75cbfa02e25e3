package perf

import (
	"testing"
	"time"
)

// perChunkLoop works 1 ms on each sampled token's chunk; fixedStep has
// no API server of its own.
type perChunkLoop struct{ fixedStep }

type fixedStep struct{}

func (fixedStep) StepTime(StepShape) time.Duration { return 10 * time.Millisecond }

func (perChunkLoop) OutputLoopTime(s StepShape) (all, firstTokens time.Duration) {
	return time.Duration(s.Decodes+s.PrefillsDone) * time.Millisecond, time.Duration(s.PrefillsDone) * time.Millisecond
}

func TestOutputLoopThrough(t *testing.T) {
	ms := time.Millisecond
	us := time.Microsecond
	decodes := func(n int) StepShape { return StepShape{Decodes: n} }
	mixed := func(n, done int) StepShape { return StepShape{Decodes: n, Prefills: done, PrefillsDone: done} }
	type step struct {
		at                time.Duration
		shape             StepShape
		chunks, firstToks time.Duration
	}
	tests := []struct {
		name  string
		loop  OutputLoop
		steps []step
	}{{
		name: "no API server of its own",
		loop: NewOutputLoop(fixedStep{}),
		steps: []step{
			{10 * ms, mixed(8, 2), 10 * ms, 10 * ms},
			{11 * ms, decodes(10), 11 * ms, 11 * ms},
		},
	}, {
		// 10 ms steps: the loop's 6 ms on a step ends before the next.
		name: "keeps up",
		loop: NewOutputLoop(perChunkLoop{}),
		steps: []step{
			// 4 running chunks (4 ms) then 2 first tokens (2 ms): the
			// running ones out at 2 ms in, the first tokens at 5.
			{10 * ms, mixed(4, 2), 12 * ms, 15 * ms},
			{20 * ms, decodes(6), 23 * ms, 26 * ms},
		},
	}, {
		// The loop's 12 ms a step outlasts the 10 ms steps: each step's
		// chunks wait for the last step's.
		name: "falls behind",
		loop: NewOutputLoop(perChunkLoop{}),
		steps: []step{
			{10 * ms, decodes(12), 16 * ms, 22 * ms},
			{20 * ms, mixed(11, 1), 22*ms + 5500*us, 33*ms + 500*us},
			{30 * ms, decodes(12), 40 * ms, 46 * ms},
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := tt.loop
			for i, s := range tt.steps {
				chunks, first := l.Through(s.at, l.Work(s.shape))
				if chunks != s.chunks || first != s.firstToks {
					t.Errorf("step %d at %v: chunks out at %v, first tokens at %v; want %v and %v", i, s.at, chunks, first, s.chunks, s.firstToks)
				}
			}
		})
	}
}

func TestOutputWorkFinished(t *testing.T) {
	w := OutputWork{All: 12 * time.Millisecond, FirstTokens: 3 * time.Millisecond}
	for _, tc := range []struct {
		k, n int
		want OutputWork
	}{
		{3, 12, OutputWork{All: 3 * time.Millisecond}}, // the finished requests' share, none a first token
		{12, 12, w}, {20, 12, w}, // a group's end hands on every step's outputs
	} {
		if got := w.Finished(tc.k, tc.n); got != tc.want {
			t.Errorf("Finished(%d, %d) = %+v, want %+v", tc.k, tc.n, got, tc.want)
		}
	}
}

// A V0 P/D decode instance (RemoteKV) streams through its API server as
// the engine gives the outputs: a transferred request's first token is a
// new request's.
func TestRemoteKVForwardsOutputLoop(t *testing.T) {
	s := StepShape{Decodes: 4, Prefills: 2, PrefillsDone: 2, PrefillTokens: 300, KVTokens: 900}
	for _, tc := range []struct {
		inner       StepModel
		all, firsts time.Duration
	}{
		{perChunkLoop{}, 6 * time.Millisecond, 2 * time.Millisecond},
		{fixedStep{}, 0, 0},
	} {
		all, first := RemoteKV{Inner: tc.inner, Stages: 1}.OutputLoopTime(s)
		if all != tc.all || first != tc.firsts {
			t.Errorf("%T: loop work %v, first tokens' %v; want %v and %v", tc.inner, all, first, tc.all, tc.firsts)
		}
	}
}
