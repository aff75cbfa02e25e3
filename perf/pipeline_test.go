package perf

import (
	"fmt"
	"testing"
	"time"
)

// TestStageSplitAddsUp checks that a step's stages, sends and host work add
// up to its StepTime, so a lone batch on a pipeline takes as long as
// before; and that with PP=2 the busiest stage holds about half the GPU
// work (a bit more: the last stage adds the lm_head).
func TestStageSplitAddsUp(t *testing.T) {
	shapes := map[string]StepShape{
		"decode 1":      decodeStep(1, 512),
		"decode 64":     decodeStep(64, 1500),
		"decode 400":    decodeStep(400, 300), // over V1's CUDA-graph sizes
		"prefill 2048":  prefillStep(2048),
		"partial chunk": {PrefillTokens: 512, Prefills: 1, AttnPairs: 512 * 513 / 2, KVTokens: 512},
	}
	for _, pp := range []int{1, 2, 4} {
		for _, eager := range []bool{false, true} {
			r := roofline(t, "Llama-3.1-70B", "H100", func(d *Deployment) {
				d.TensorParallel, d.PipelineParallel, d.EnforceEager = 8/pp, pp, eager
				d.Link = links[2] // infiniband
			})
			for name, s := range shapes {
				t.Run(fmt.Sprintf("pp=%d/eager=%t/%s", pp, eager, name), func(t *testing.T) {
					sp := r.StageSplit(s)
					total := r.StepTime(s)
					// Every stage but the last is at most the busiest one.
					sum := time.Duration(pp)*sp.Stage + time.Duration(pp-1)*sp.Send + sp.Host
					if sum < total-time.Microsecond {
						t.Errorf("stages %v×%d + sends %v + host %v = %v < step time %v", sp.Stage, pp, sp.Send, sp.Host, sum, total)
					}
					gpu := total - sp.Host - time.Duration(pp-1)*sp.Send
					if pp == 1 && (sp.Send != 0 || absDuration(sp.Stage-gpu) > time.Microsecond) {
						t.Errorf("one stage: split %+v, want the whole GPU time %v and no send", sp, gpu)
					}
					if share := float64(sp.Stage) / float64(gpu); pp > 1 && (share < 0.99/float64(pp) || share > 1.35/float64(pp)) {
						t.Errorf("busiest stage %v is %.2f of the GPU time %v, want about 1/%d", sp.Stage, share, gpu, pp)
					}
					if pp > 1 && sp.Send <= 0 {
						t.Error("no activation send between stages")
					}
				})
			}
		}
	}
}

func absDuration(d time.Duration) time.Duration {
	if d < 0 {
		return -d
	}
	return d
}

// TestPipelineEnter works the pipeline timing by hand.
func TestPipelineEnter(t *testing.T) {
	type batch struct{ ready, latency, stage, want time.Duration }
	ms := time.Millisecond
	for _, c := range []struct {
		name    string
		batches []batch
	}{
		{"one batch is its latency", []batch{{0, 20 * ms, 10 * ms, 20 * ms}}},
		{"the second enters when the first frees the stage", []batch{{0, 20 * ms, 10 * ms, 20 * ms}, {0, 20 * ms, 10 * ms, 30 * ms}}},
		{"a third waits for the second", []batch{{0, 20 * ms, 10 * ms, 20 * ms}, {0, 20 * ms, 10 * ms, 30 * ms}, {0, 20 * ms, 10 * ms, 40 * ms}}},
		{"a late batch starts when ready", []batch{{0, 20 * ms, 10 * ms, 20 * ms}, {50 * ms, 20 * ms, 10 * ms, 70 * ms}}},
		{"a small batch does not overtake", []batch{{0, 40 * ms, 20 * ms, 40 * ms}, {0, 4 * ms, 2 * ms, 42 * ms}}},
		{"a host-bound stage spaces batches", []batch{{0, 20 * ms, 15 * ms, 20 * ms}, {0, 20 * ms, 15 * ms, 35 * ms}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var p Pipeline
			for i, b := range c.batches {
				if got := p.Enter(b.ready, b.latency, b.stage); got != b.want {
					t.Fatalf("batch %d comes out at %v, want %v", i, got, b.want)
				}
			}
		})
	}
}

// TestStageTimeFallback checks that a model that cannot split a step
// shares it evenly among the stages.
func TestStageTimeFallback(t *testing.T) {
	m := Calibrated{Base: 0.01, Decode: 0.001}
	s := decodeStep(8, 100)
	if got, want := StageTime(m, s, 4), m.StepTime(s)/4; got != want {
		t.Fatalf("StageTime %v, want %v", got, want)
	}
	r := roofline(t, "Qwen2-7B", "L4", func(d *Deployment) { d.PipelineParallel = 2 })
	if got, want := StageTime(r, s, 2), r.StageTime(s); got != want {
		t.Fatalf("roofline StageTime %v, want its own %v", got, want)
	}
}
