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
// compute precision (perf.GEMMPeak). A run it refuses is kept out of the error tables
// with the reason, as one sim cannot run is: its error would measure the
// corpus entry, not sim.
func (p *plan) peakBound(r *Run) string {
	if t, ok := p.throughputBound(r); ok && t.computed > t.most {
		return fmt.Sprintf("published figures beyond the recorded setup: %.0f tokens/s through the model (%s), where %s allows at most %.0f; the run's GPU, model or lengths are not what its setup says",
			t.computed, t.from, t.peakCompute, t.most)
	}
	b, ok := p.burstTTFTBound(r)
	if !ok || b.publishedMs >= burstTTFTSlack*b.boundMs {
		return ""
	}
	return fmt.Sprintf("published figures beyond the recorded setup: mean TTFT %.0f ms, where %d prompts of %.0f tokens sent at once and prefilled in arrival order need a mean of at least %.0f ms at %s; the run's prompts, GPU or flags are not what its setup says",
		b.publishedMs, r.Workload.NumPrompts, b.promptTokens, b.boundMs, b.peakCompute)
}

// peakCompute is what the bounds hold a run to: its GPUs' dense peak at
// its compute precision, and the FLOPs a token takes through the model.
type peakCompute struct {
	gpu           string
	peak          float64 // FLOP/s, one GPU
	gpus          int
	flopsPerToken float64
}

func (p *plan) peakCompute(r *Run) (peakCompute, bool) {
	c := peakCompute{gpu: p.gpu.Name, peak: perf.GEMMPeak(p.model, p.gpu), gpus: max(r.GPUCount, 1),
		flopsPerToken: 2 * float64(p.model.ActiveLinearParams())}
	return c, c.peak > 0 && c.flopsPerToken > 0
}

// tokensPerSecond is the most tokens a second the GPUs put through the
// model's linear layers.
func (c peakCompute) tokensPerSecond() float64 { return c.peak * float64(c.gpus) / c.flopsPerToken }

func (c peakCompute) String() string {
	return fmt.Sprintf("the %s's peak (%.0f TFLOP/s × %d, %.1f GFLOP a token)", c.gpu, c.peak/1e12, c.gpus, c.flopsPerToken/1e9)
}

// meanLengths is a request's mean prompt (the shared prefix included)
// and output: the run's own per-request lengths where it has them, else
// the plan's.
func (p *plan) meanLengths(r *Run) (in, out float64) {
	n := len(r.lengths)
	if n == 0 {
		return float64(r.Workload.InputLen), float64(p.outputLen)
	}
	for _, l := range r.lengths {
		in += float64(l.Input)
		out += float64(l.Output)
	}
	return in / float64(n), out / float64(n)
}

// ttftBound is a burst's published mean TTFT beside the least its setup
// allows.
type ttftBound struct {
	peakCompute
	publishedMs, boundMs float64
	promptTokens         float64 // computed per prompt (the shared prefix left out)
}

// burstTTFTBound is the bound for a serving run that sent every prompt at
// once and published a mean TTFT (ok false for any other run). Request
// i's first token waits for the prompts of requests 1..i (vLLM schedules
// waiting requests first come, first served), so over a random arrival
// order the mean waits for (N+1)/2 prompts' compute at the GPUs' peak.
func (p *plan) burstTTFTBound(r *Run) (ttftBound, bool) {
	w := r.Workload
	c, ok := p.peakCompute(r)
	in, _ := p.meanLengths(r)
	b := ttftBound{peakCompute: c, publishedMs: r.Published["mean_ttft_ms"], promptTokens: in - float64(w.PrefixLen)}
	allAtOnce := math.IsInf(float64(w.RequestRate), 1) && w.MaxConcurrency == 0
	if !ok || p.batchLatency || r.Benchmark != BenchmarkServing || !allAtOnce || w.NumPrompts < 2 ||
		b.publishedMs <= 0 || b.promptTokens <= 0 {
		return ttftBound{}, false
	}
	b.boundMs = (float64(w.NumPrompts) + 1) / 2 * b.promptTokens / c.tokensPerSecond() * 1e3
	return b, true
}

// rateBound is the token rate a run's published throughput puts through
// the model's linear layers beside the most its GPUs' peak allows.
type rateBound struct {
	peakCompute
	computed, most float64 // tokens a second
	from           string  // the published figure it comes from
}

// throughputBound holds any run's published throughput to its GPUs'
// peak: every prompt token outside the shared prefix and every generated
// token passes once through every active linear parameter (ok false
// when the run publishes no throughput).
func (p *plan) throughputBound(r *Run) (rateBound, bool) {
	c, ok := p.peakCompute(r)
	in, out := p.meanLengths(r)
	total := in + out
	if !ok || total <= 0 {
		return rateBound{}, false
	}
	b := rateBound{peakCompute: c, most: c.tokensPerSecond()}
	switch {
	case r.Published["total_token_throughput"] > 0:
		b.computed, b.from = r.Published["total_token_throughput"], "total_token_throughput"
	case r.Published["request_throughput"] > 0:
		b.computed, b.from = r.Published["request_throughput"]*total, "request_throughput × tokens a request"
	default:
		return rateBound{}, false
	}
	b.computed *= max(total-float64(r.Workload.PrefixLen), 0) / total
	return b, true
}
