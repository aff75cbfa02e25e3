package validate

import (
	"maps"
	"strings"
	"testing"
)

// TestPeakBound: a burst whose published mean TTFT beats what its GPUs
// could prefill at peak in arrival order is refused with the arithmetic;
// the same run on a faster GPU, with fewer prompts, a slower figure, or
// not sent all at once is not. A throughput beyond the GPUs' peak is
// refused whatever the arrivals.
func TestPeakBound(t *testing.T) {
	c, err := LoadBuiltin()
	if err != nil {
		t.Fatal(err)
	}
	const id = "gpustack-quantization-impact/a100-bf16"
	tests := []struct {
		name   string
		change func(r *Run)
		want   string // "" for no refusal
	}{
		// Qwen3-8B: 6.95e9 active linear parameters, 13.9 GFLOP a token;
		// (1000+1)/2 × 217 × 13.9e9 / 312e12 s = 4.84 s.
		{"as recorded", func(*Run) {},
			"mean TTFT 3413 ms, where 1000 prompts of 217 tokens sent at once and prefilled in arrival order need a mean of at least 4836 ms at the A100-80GB's peak (312 TFLOP/s × 1, 13.9 GFLOP a token)"},
		{"on an H100", func(r *Run) { r.GPU = "H100-SXM" }, ""},                                 // bound 1.53 s
		{"half the prompts", func(r *Run) { r.Workload.NumPrompts = 500 }, ""},                  // bound 2.42 s
		{"within the slack", func(r *Run) { r.Published["mean_ttft_ms"] = 3900 }, ""},           // 0.81 of 4.84 s
		{"just past the slack", func(r *Run) { r.Published["mean_ttft_ms"] = 3850 }, "3850 ms"}, // 0.796
		{"at a request rate", func(r *Run) { r.Workload.RequestRate = 4 }, ""},
		{"under a concurrency cap", func(r *Run) { r.Workload.MaxConcurrency = 64 }, ""},
		{"no TTFT published", func(r *Run) { delete(r.Published, "mean_ttft_ms") }, ""},
		{"a shared prefix is not counted", func(r *Run) { r.Workload.PrefixLen = 200 }, ""}, // 17 tokens computed
		// 10,338 tokens/s × 13.9 GFLOP is 144 TFLOP/s: 0.46 of the A100's
		// peak, 2.05 of the A10G's 70.
		{"its throughput on an A10G", func(r *Run) { r.GPU = "A10G" },
			"10338 tokens/s through the model (total_token_throughput), where the A10G's peak (70 TFLOP/s × 1, 13.9 GFLOP a token) allows at most 5039;"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			run := builtinRun(t, c, id)
			run.Published = maps.Clone(run.Published)
			tt.change(&run)
			got := planOf(t, c, &run).peakBound(&run)
			if tt.want == "" && got != "" || tt.want != "" && !strings.Contains(got, tt.want) {
				t.Errorf("peakBound = %q, want %q", got, tt.want)
			}
			if strings.Contains(got, "\n") {
				t.Error("reason spans lines")
			}
		})
	}
}

// TestBuiltinCorpusWithinPeak: the built-in corpus' only run whose figures
// its recorded setup cannot produce is the one its notes already doubt;
// a new entry beyond its GPUs' peak fails here rather than entering the
// error tables. The margin of every run's throughput and every burst's
// TTFT is logged.
func TestBuiltinCorpusWithinPeak(t *testing.T) {
	c, err := LoadBuiltin()
	if err != nil {
		t.Fatal(err)
	}
	var refused []string
	for _, r := range c.Runs {
		p, err := newPlan(r, c, Options{})
		if err != nil {
			continue // unsimulable for its own reason
		}
		if rate, ok := p.throughputBound(r); ok {
			t.Logf("%-62s published tokens/s / peak %6.3f", r.FullID(), rate.computed/rate.most)
		}
		if b, ok := p.burstTTFTBound(r); ok {
			t.Logf("%-62s published mean TTFT / peak bound %6.2f", r.FullID(), b.publishedMs/b.boundMs)
		}
		if reason := p.peakBound(r); reason != "" {
			refused = append(refused, r.FullID())
		}
	}
	want := []string{"gpustack-quantization-impact/a100-bf16"}
	if strings.Join(refused, " ") != strings.Join(want, " ") {
		t.Errorf("runs beyond their GPUs' peak: %q, want %q", refused, want)
	}
}
