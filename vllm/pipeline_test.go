package vllm

import (
	"testing"
	"time"

	"github.com/servebench/servebench/perf"
)

// TestHostStepModelStageTime checks that with PP the next batch waits for
// the busiest stage or for the host process that is busiest with this
// batch, whichever is longer, by overlap arrangement.
func TestHostStepModelStageTime(t *testing.T) {
	m, err := perf.LookupModel("Qwen2-7B")
	if err != nil {
		t.Fatal(err)
	}
	g, err := perf.LookupGPU("L4")
	if err != nil {
		t.Fatal(err)
	}
	d := perf.DefaultDeployment(m, g)
	d.PipelineParallel = 2
	roof, err := perf.NewRoofline(d)
	if err != nil {
		t.Fatal(err)
	}
	s := perf.StepShape{Decodes: 32, AttnPairs: 32 * 1000, KVTokens: 32 * 1001}
	sp := roof.StageSplit(s)
	gpuStage := sp.Stage + sp.Send
	slow := 500 * time.Millisecond // host work far longer than any stage
	for _, c := range []struct {
		name string
		host HostOverhead
		want time.Duration
	}{
		{"gpu-bound", HostOverhead{Overlap: OverlapEngineCore, SchedFixed: time.Millisecond}, gpuStage},
		{"serial host", HostOverhead{Overlap: OverlapNone, SchedFixed: slow, OutputPerToken: time.Millisecond, APIPerChunk: time.Millisecond}, slow + 64*time.Millisecond},
		{"async output: scheduling and output share a process", HostOverhead{Overlap: OverlapAsyncOutput, SchedFixed: slow, OutputPerToken: time.Millisecond}, slow + 32*time.Millisecond},
		{"engine core: output and API in the front end", HostOverhead{Overlap: OverlapEngineCore, OutputPerToken: 10 * time.Millisecond, APIPerChunk: 10 * time.Millisecond}, 640 * time.Millisecond},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := NewHostStepModel(roof, c.host, 1)
			if got := h.StageTime(s); got != c.want {
				t.Fatalf("StageTime %v, want %v", got, c.want)
			}
			if h.StageTime(s) > h.StepTime(s) {
				t.Fatalf("stage %v longer than the step %v", h.StageTime(s), h.StepTime(s))
			}
		})
	}
}
