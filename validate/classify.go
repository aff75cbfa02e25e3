package validate

import (
	"math"
	"strings"

	"github.com/servebench/servebench/perf"
	"github.com/servebench/servebench/vllm"
)

// GPUClass is the family a GPU's errors are summarised under: memory size
// and form factor (SXM, PCIe, NVL) aside, and A10 with AWS's A10G.
func GPUClass(name string) string {
	s := strings.ToUpper(strings.TrimSpace(name))
	s = strings.TrimPrefix(s, "NVIDIA ")
	s = strings.TrimPrefix(s, "AMD ")
	s = strings.TrimPrefix(s, "INSTINCT ")
	s = strings.NewReplacer(" ", "-", "_", "-").Replace(s)
	if s == "" {
		return "?"
	}
	if s == "A10" || s == "A10G" || strings.HasPrefix(s, "A10-") || strings.HasPrefix(s, "A10G-") {
		return "A10/A10G"
	}
	if strings.Contains(s, "4090") {
		return "RTX-4090"
	}
	head, _, _ := strings.Cut(s, "-")
	return head
}

// matchesGPU says whether a --gpu filter names the run's GPU or its class.
func matchesGPU(filter, gpu, class string) bool {
	norm := func(s string) string {
		return strings.ToLower(strings.NewReplacer(" ", "-", "_", "-").Replace(strings.TrimSpace(s)))
	}
	f := norm(filter)
	if f == norm(gpu) || f == norm(class) {
		return true
	}
	for _, part := range strings.Split(class, "/") {
		if f == norm(part) {
			return true
		}
	}
	return GPUClass(filter) == class
}

// ReleaseLine is the release line a vLLM version belongs to ("0.5", "0.6",
// "0.7-0.10", "0.11+"), as the vllm package groups its rules; "unmodelled"
// for releases sim has no profile for.
func ReleaseLine(version string) string {
	p, err := vllm.Lookup(vllm.ReleaseOf(version), "")
	if err != nil {
		return "unmodelled"
	}
	return p.Line
}

// Thresholds of the regime rule (ClassifyRegime).
const (
	// prefillMaxOutput: an offline run of at most this many output tokens
	// per request measures prefill.
	prefillMaxOutput = 8
	// decodeOutputRatio: an offline run whose outputs are at least this
	// many times its prompts measures decode.
	decodeOutputRatio = 4
	// highConcurrency: at least this many requests in flight saturate the
	// server: a concurrency cap kept full, or a rate-paced run's mean
	// concurrency by Little's law (rate × mean request latency).
	highConcurrency = 32
	// fellBehindSlack: a rate-paced run whose duration exceeds the arrival
	// span by more than this share (plus one mean request) fell behind its
	// arrivals.
	fellBehindSlack = 0.10
)

// RegimeInput is what the regime rule reads: the setup and, for a serving
// run paced by a rate, the measured (or simulated) duration and mean
// end-to-end latency.
type RegimeInput struct {
	Benchmark      string
	NumPrompts     int
	RequestRate    float64
	MaxConcurrency int
	// InputLen and OutputLen are the mean tokens per request.
	InputLen, OutputLen float64
	// DurationS is the run's duration in seconds and MeanE2ELMs its mean
	// request latency in ms; 0 when not known.
	DurationS, MeanE2ELMs float64
}

// ClassifyRegime is the rule that puts a run in its regime, the same for a
// published run (from its published figures) and a sim run (from its own):
//
//   - offline (the throughput and latency benchmarks, or sim --throughput):
//     offline-prefill when requests produce at most 8 tokens;
//     offline-decode when outputs are at least 4× the prompts; otherwise
//     offline-mixed.
//   - serving: serving-saturated when every request is sent at once (rate
//     inf with no concurrency cap below the prompt count, more than one
//     prompt), when a concurrency cap of 32 or more is kept full (rate
//     inf), or, for a rate-paced run, when it held 32 or more requests in
//     flight on average (rate × mean request latency, Little's law) or fell
//     behind its arrivals (its duration exceeds 1.1 × num_prompts / rate
//     plus one mean request latency). Otherwise serving-low.
//
// The mean request latency is mean_e2el_ms, else mean TTFT plus (output
// tokens − 1) × mean TPOT, else the same from the medians when a run
// printed only those. ok is false when the rule cannot decide: a
// rate-paced run with neither a latency nor a duration.
func ClassifyRegime(in RegimeInput) (Regime, bool) {
	if in.Benchmark == BenchmarkThroughput || in.Benchmark == BenchmarkLatency {
		switch {
		case in.OutputLen <= prefillMaxOutput:
			return OfflinePrefill, true
		case in.OutputLen >= decodeOutputRatio*in.InputLen:
			return OfflineDecode, true
		}
		return OfflineMixed, true
	}
	if in.NumPrompts <= 1 {
		return ServingLow, true
	}
	if math.IsInf(in.RequestRate, 1) || in.RequestRate <= 0 {
		if in.MaxConcurrency == 0 || in.MaxConcurrency >= in.NumPrompts || in.MaxConcurrency >= highConcurrency {
			return ServingSaturated, true
		}
		return ServingLow, true
	}
	if in.MeanE2ELMs > 0 && in.RequestRate*in.MeanE2ELMs/1e3 >= highConcurrency {
		return ServingSaturated, true
	}
	if in.DurationS <= 0 {
		if in.MeanE2ELMs > 0 {
			return ServingLow, true
		}
		return "", false
	}
	span := float64(in.NumPrompts) / in.RequestRate
	if in.DurationS > (1+fellBehindSlack)*span+in.MeanE2ELMs/1e3 {
		return ServingSaturated, true
	}
	return ServingLow, true
}

// regimeInput reads the rule's input from a run's setup and figures
// (published or simulated, under vLLM's keys).
func regimeInput(r *Run, inputLen, outputLen int, figs map[string]float64) RegimeInput {
	in := RegimeInput{
		Benchmark: r.Benchmark, NumPrompts: r.Workload.NumPrompts, RequestRate: float64(r.Workload.RequestRate),
		MaxConcurrency: r.Workload.MaxConcurrency, InputLen: float64(inputLen), OutputLen: float64(outputLen),
	}
	if completed, ok := figs["completed"]; ok && completed > 0 {
		if out, ok := figs["total_output_tokens"]; ok && out > 0 {
			in.OutputLen = out / completed
		}
		if inTok, ok := figs["total_input_tokens"]; ok && inTok > 0 {
			in.InputLen = inTok / completed
		}
	}
	in.DurationS = figs["duration"]
	if in.DurationS <= 0 {
		if rps := figs["request_throughput"]; rps > 0 {
			n := figs["completed"]
			if n <= 0 {
				n = float64(r.Workload.NumPrompts)
			}
			in.DurationS = n / rps
		}
	}
	in.MeanE2ELMs = requestLatency(figs, "mean", in.OutputLen)
	if in.MeanE2ELMs <= 0 {
		// Some posts print medians only: the typical request instead.
		in.MeanE2ELMs = requestLatency(figs, "median", in.OutputLen)
	}
	return in
}

// requestLatency is a run's request latency by one statistic (mean or
// median): its E2E figure, else TTFT plus the remaining tokens at TPOT.
func requestLatency(figs map[string]float64, stat string, outputLen float64) float64 {
	if v := figs[stat+"_e2el_ms"]; v > 0 {
		return v
	}
	ttft, okT := figs[stat+"_ttft_ms"]
	tpot, okP := figs[stat+"_tpot_ms"]
	if okT && okP {
		return ttft + max(outputLen-1, 0)*tpot
	}
	return 0
}

// lookupGPU is perf's name for a catalog GPU.
func lookupGPU(name string) (string, error) {
	g, err := perf.LookupGPU(name)
	return g.Name, err
}

// simRelease is the release sim simulates the run as: sim_vllm_version,
// else vllm_version, a post, dev or local build as the release it carries
// the number of.
func (r *Run) simRelease() string {
	if r.SimVLLMVersion != "" {
		return r.SimVLLMVersion
	}
	return vllm.ReleaseOf(r.VLLMVersion)
}
