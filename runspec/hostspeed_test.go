package runspec

import (
	"strings"
	"testing"

	"github.com/servebench/servebench/perf"
	"github.com/servebench/servebench/vllm"
)

// TestHostSpeedFlag: --host-speed reaches the step model's host terms (a
// faster CPU shortens a host-bound step) and a bad factor fails with one
// line naming the flag.
func TestHostSpeedFlag(t *testing.T) {
	// 512 decodes of a small model: every V1 step is host-bound.
	shape := perf.StepShape{Decodes: 512, AttnPairs: 512 * 600, KVTokens: 512 * 601}
	step := func(args ...string) float64 {
		t.Helper()
		_, r, err := resolveArgs(t, append([]string{"--model", "Qwen2-0.5B"}, args...)...)
		if err != nil {
			t.Fatal(err)
		}
		m, ok := r.StepModel.(*vllm.HostStepModel)
		if !ok {
			t.Fatalf("step model %T, want the host model", r.StepModel)
		}
		d, hostBound := m.StepTimeHost(shape)
		if !hostBound {
			t.Fatalf("%v: step not host-bound", args)
		}
		return float64(d)
	}
	base, fast := step(), step("--host-speed", "2")
	if !(fast < 0.6*base) {
		t.Errorf("--host-speed 2: host-bound step %v, want about half of %v", fast, base)
	}
	for _, bad := range []string{"0", "-1", "1000"} {
		_, _, err := resolveArgs(t, "--model", "Qwen2-0.5B", "--host-speed", bad)
		if err == nil || !strings.Contains(err.Error(), "--host-speed") || strings.Contains(err.Error(), "\n") {
			t.Errorf("--host-speed %s: error %v, want one line naming --host-speed", bad, err)
		}
	}
}
