package sim

import (
	"testing"
	"time"

	"github.com/servebench/servebench/engine"
	"github.com/servebench/servebench/perf"
	"github.com/servebench/servebench/workload"
)

// hostBoundDecodes: steps with decodes in them are host-bound and take
// 30 ms, prefill-only steps are GPU-bound and take 10 ms.
type hostBoundDecodes struct{}

func (hostBoundDecodes) StepTime(s perf.StepShape) time.Duration {
	d, _ := hostBoundDecodes{}.StepTimeHost(s)
	return d
}

func (hostBoundDecodes) StepTimeHost(s perf.StepShape) (time.Duration, bool) {
	if s.Decodes > 0 {
		return 30 * time.Millisecond, true
	}
	return 10 * time.Millisecond, false
}

// TestHostBoundShares: the result and every stats sample count host-bound
// steps and their time against all steps.
func TestHostBoundShares(t *testing.T) {
	// One request: a prefill step, then 9 decode steps.
	reqs := []workload.Request{{Index: 0, PromptLen: 100, MaxTokens: 10}}
	var samples []StatsSample
	cfg := Config{Engine: engineConfig(engine.V1), Model: hostBoundDecodes{}, StatsInterval: 100 * time.Millisecond,
		OnStats: func(s StatsSample) { samples = append(samples, s) }}
	res, _ := collect(t, cfg, reqs)
	if res.Steps != 10 || res.HostBoundSteps != 9 {
		t.Fatalf("%d steps, %d host-bound; want 10 and 9", res.Steps, res.HostBoundSteps)
	}
	if res.StepTime != 280*time.Millisecond || res.HostBoundTime != 270*time.Millisecond {
		t.Errorf("step time %v, host-bound %v; want 280ms and 270ms", res.StepTime, res.HostBoundTime)
	}
	var steps, hostBound int64
	var stepTime, hostTime time.Duration
	for _, s := range samples {
		if s.HostBoundSteps > s.Steps || s.HostBoundTime > s.StepTime {
			t.Errorf("sample at %v: %d of %d steps, %v of %v host-bound", s.At, s.HostBoundSteps, s.Steps, s.HostBoundTime, s.StepTime)
		}
		steps, hostBound, stepTime, hostTime = steps+s.Steps, hostBound+s.HostBoundSteps, stepTime+s.StepTime, hostTime+s.HostBoundTime
	}
	// Samples stop at the last whole interval before the run ends: they
	// hold the prefill step and all but the tail's decodes.
	if len(samples) < 2 || steps != hostBound+1 || stepTime != hostTime+10*time.Millisecond || steps > res.Steps || stepTime > res.StepTime {
		t.Errorf("%d samples sum to %d steps (%d host-bound), %v (%v host-bound); want one GPU-bound 10ms step and at most the result's totals", len(samples), steps, hostBound, stepTime, hostTime)
	}
}
