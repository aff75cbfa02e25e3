package validate

import (
	"fmt"
	"math"

	"github.com/servebench/servebench/perf"
)

// burstTTFTSlack is how far under the arrival-order prefill bound a
// published mean TTFT may fall before the run's setup is called wrong.
// The bound is an expectation over the client's arrival order (vLLM's
// client sends the dataset's prompts in its sampled order, unrelated to
// their lengths); over hundreds of prompts that order moves the mean by a
// few percent, and the bound also leaves out attention, the lm_head and
// every decode step the engine runs in between, so 20% under it is not
// order or rounding but a different setup.
const burstTTFTSlack = 0.8

// peakBound says why a run's published figures cannot come from its
// recorded setup ("" when they can): its throughput, or a burst's mean
// TTFT, would need its GPUs to compute faster than their peak. Only what
// the setup fixes counts: the tokens that must be computed (a shared
// prefix may hit the prefix cache, so it is left out), 2 FLOPs per active
// linear parameter per token, and the GPUs' dense peak at the run's
// compute precision. A run it refuses
// is kept out of the error tables with the reason, as one sim cannot run
// is: its error would measure the corpus entry, not sim.
func (p *plan) peakBound(r *Run) string {
	if t, ok := p.throughputBound(r); ok && t.computed > t.most {
		return fmt.Sprintf("published figures beyond the recorded setup: %.0f tokens/s through the model (%s), where the %s's peak allows at most %.0f (%.0f TFLOP/s × %d, %.1f GFLOP a token); the run's GPU, model or lengths are not what its setup says",
			t.computed, t.from, p.gpu.Name, t.most, t.peak/1e12, t.gpus, t.flopsPerToken/1e9)
	}
	b, ok := p.burstTTFTBound(r)
	if !ok || b.publishedMs >= burstTTFTSlack*b.boundMs {
		return ""
	}
	return fmt.Sprintf("published figures beyond the recorded setup: mean TTFT %.0f ms, where %d prompts of %.0f tokens sent at once and prefilled in arrival order need a mean of at least %.0f ms at the %s's peak (%.0f TFLOP/s × %d, %.1f GFLOP a token); the run's prompts, GPU or flags are not what its setup says",
		b.publishedMs, r.Workload.NumPrompts, b.promptTokens, b.boundMs, p.gpu.Name, b.peak/1e12, b.gpus, b.flopsPerToken/1e9)
}

// ttftBound is a burst's published mean TTFT beside the least its setup
// allows.
type ttftBound struct {
	publishedMs, boundMs float64
	promptTokens         float64 // computed per prompt (the shared prefix left out)
	flopsPerToken, peak  float64
	gpus                 int
}

// burstTTFTBound is the bound for a serving run that sent every prompt at
// once and published a mean TTFT (ok false for any other run). Request
// i's first token waits for the prompts of requests 1..i (vLLM schedules
// waiting requests first come, first served), so over a random arrival
// order the mean waits for (N+1)/2 prompts' compute at the GPUs' peak.
func (p *plan) burstTTFTBound(r *Run) (ttftBound, bool) {
	w := r.Workload
	b := ttftBound{publishedMs: r.Published["mean_ttft_ms"], promptTokens: float64(p.inputLen),
		flopsPerToken: 2 * float64(p.model.ActiveLinearParams()), peak: computePeak(p.gpu, p.model.Quantization.Method),
		gpus: max(r.GPUCount, 1)}
	if n := len(r.lengths); n > 0 {
		var sum float64
		for _, l := range r.lengths {
			sum += float64(l.Input)
		}
		b.promptTokens = sum/float64(n) - float64(w.PrefixLen)
	}
	allAtOnce := math.IsInf(float64(w.RequestRate), 1) && w.MaxConcurrency == 0
	if p.batchLatency || r.Benchmark != BenchmarkServing || !allAtOnce || w.NumPrompts < 2 ||
		b.publishedMs <= 0 || b.promptTokens <= 0 || b.flopsPerToken <= 0 || b.peak <= 0 {
		return ttftBound{}, false
	}
	n := float64(w.NumPrompts)
	b.boundMs = (n + 1) / 2 * b.promptTokens * b.flopsPerToken / (b.peak * float64(b.gpus)) * 1e3
	return b, true
}

// computePeak is the dense peak a linear layer of the given quantization
// method can reach on g: 16-bit for unquantized and weight-only
// checkpoints (their GEMMs run in 16-bit), the GPU's 8-bit peak for fp8.
// Unknown methods take the highest peak the GPU has, so the bound stays a
// bound.
func computePeak(g perf.GPU, method string) float64 {
	switch perf.QuantizationMethod(method) {
	case "", "gptq", "awq":
		return g.BF16FLOPS
	case "fp8":
		return max(g.BF16FLOPS, g.FP8FLOPS)
	default:
		return max(g.BF16FLOPS, g.FP8FLOPS, g.INT8FLOPS)
	}
}

// rateBound is the token rate a run's published throughput puts through
// the model's linear layers beside the most its GPUs' peak allows.
type rateBound struct {
	computed, most      float64 // tokens a second
	from                string  // the published figure it comes from
	flopsPerToken, peak float64
	gpus                int
}

// throughputBound holds any run's published throughput to its GPUs'
// peak: every prompt token outside the shared prefix and every generated
// token passes once through every active linear parameter (ok false
// when the run publishes no throughput).
func (p *plan) throughputBound(r *Run) (rateBound, bool) {
	w := r.Workload
	in, out := float64(w.InputLen), float64(p.outputLen)
	if n := len(r.lengths); n > 0 {
		in, out = 0, 0
		for _, l := range r.lengths {
			in += float64(l.Input)
			out += float64(l.Output)
		}
		in, out = in/float64(n), out/float64(n)
	}
	b := rateBound{flopsPerToken: 2 * float64(p.model.ActiveLinearParams()),
		peak: computePeak(p.gpu, p.model.Quantization.Method), gpus: max(r.GPUCount, 1)}
	total := in + out
	switch {
	case r.Published["total_token_throughput"] > 0:
		b.computed, b.from = r.Published["total_token_throughput"], "total_token_throughput"
	case r.Published["request_throughput"] > 0:
		b.computed, b.from = r.Published["request_throughput"]*total, "request_throughput × tokens a request"
	default:
		return rateBound{}, false
	}
	if total <= 0 || b.flopsPerToken <= 0 || b.peak <= 0 {
		return rateBound{}, false
	}
	b.computed *= max(total-float64(w.PrefixLen), 0) / total
	b.most = b.peak * float64(b.gpus) / b.flopsPerToken
	return b, true
}
