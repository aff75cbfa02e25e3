package validate

import (
	"math"
	"testing"
)

func TestClassifyRegime(t *testing.T) {
	inf := math.Inf(1)
	tests := []struct {
		name string
		in   RegimeInput
		want Regime
		ok   bool
	}{
		{"throughput, one output token", RegimeInput{Benchmark: BenchmarkThroughput, InputLen: 2048, OutputLen: 1}, OfflinePrefill, true},
		{"throughput, 8 output tokens", RegimeInput{Benchmark: BenchmarkThroughput, InputLen: 128, OutputLen: 8}, OfflinePrefill, true},
		{"latency, long outputs", RegimeInput{Benchmark: BenchmarkLatency, InputLen: 32, OutputLen: 128}, OfflineDecode, true},
		{"throughput, 4x outputs", RegimeInput{Benchmark: BenchmarkThroughput, InputLen: 128, OutputLen: 512}, OfflineDecode, true},
		{"throughput, mixed", RegimeInput{Benchmark: BenchmarkThroughput, InputLen: 1024, OutputLen: 128}, OfflineMixed, true},
		{"serving, one prompt", RegimeInput{Benchmark: BenchmarkServing, NumPrompts: 1, RequestRate: inf}, ServingLow, true},
		{"serving, all at once", RegimeInput{Benchmark: BenchmarkServing, NumPrompts: 1000, RequestRate: inf}, ServingSaturated, true},
		{"serving, cap above the prompts", RegimeInput{Benchmark: BenchmarkServing, NumPrompts: 50, RequestRate: inf, MaxConcurrency: 50}, ServingSaturated, true},
		{"serving, cap 32", RegimeInput{Benchmark: BenchmarkServing, NumPrompts: 100, RequestRate: inf, MaxConcurrency: 32}, ServingSaturated, true},
		{"serving, cap 8", RegimeInput{Benchmark: BenchmarkServing, NumPrompts: 640, RequestRate: inf, MaxConcurrency: 8}, ServingLow, true},
		{"serving, kept up", RegimeInput{Benchmark: BenchmarkServing, NumPrompts: 1000, RequestRate: 4, DurationS: 252, MeanE2ELMs: 2000}, ServingLow, true},
		{"serving, fell behind", RegimeInput{Benchmark: BenchmarkServing, NumPrompts: 1000, RequestRate: 4, DurationS: 473.62, MeanE2ELMs: 121893}, ServingSaturated, true},
		{"serving, kept up with 145 in flight", RegimeInput{Benchmark: BenchmarkServing, NumPrompts: 200, RequestRate: 10, DurationS: 30.7, MeanE2ELMs: 14504}, ServingSaturated, true},
		{"serving, short run with long requests", RegimeInput{Benchmark: BenchmarkServing, NumPrompts: 50, RequestRate: 1, DurationS: 62, MeanE2ELMs: 12000}, ServingLow, true},
		{"serving, latency but no duration", RegimeInput{Benchmark: BenchmarkServing, NumPrompts: 300, RequestRate: 1, MeanE2ELMs: 8178}, ServingLow, true},
		{"serving, 184 in flight, no duration", RegimeInput{Benchmark: BenchmarkServing, NumPrompts: 750, RequestRate: 2.5, MeanE2ELMs: 73570}, ServingSaturated, true},
		{"serving, neither latency nor duration", RegimeInput{Benchmark: BenchmarkServing, NumPrompts: 100, RequestRate: 2}, "", false},
	}
	for _, tt := range tests {
		got, ok := ClassifyRegime(tt.in)
		if got != tt.want || ok != tt.ok {
			t.Errorf("%s: got %q %v, want %q %v", tt.name, got, ok, tt.want, tt.ok)
		}
	}
}

// TestRegimeInputFromMedians: a post that printed medians only still gives
// the rule a request latency.
func TestRegimeInputFromMedians(t *testing.T) {
	r := &Run{Benchmark: BenchmarkServing, Workload: Workload{NumPrompts: 1200, RequestRate: 4}}
	in := regimeInput(r, 224, 189, map[string]float64{"median_ttft_ms": 100, "median_tpot_ms": 10})
	if in.MeanE2ELMs != 100+188*10 || in.DurationS != 0 {
		t.Fatalf("%+v", in)
	}
	in = regimeInput(r, 224, 189, map[string]float64{"completed": 1000, "request_throughput": 4, "mean_e2el_ms": 900,
		"total_output_tokens": 150000, "median_e2el_ms": 5})
	if in.MeanE2ELMs != 900 || in.DurationS != 250 || in.OutputLen != 150 {
		t.Fatalf("%+v", in)
	}
}

func TestGPUClass(t *testing.T) {
	for name, want := range map[string]string{
		"H100": "H100", "H100-SXM": "H100", "H100-PCIe": "H100", "NVIDIA H100 80GB HBM3": "H100",
		"A100-80GB": "A100", "A100-40GB": "A100", "A10G": "A10/A10G", "A10": "A10/A10G", "NVIDIA A10G": "A10/A10G",
		"L40S": "L40S", "L40": "L40", "L4": "L4", "RTX-4090": "RTX-4090", "GeForce RTX 4090": "RTX-4090",
		"MI300X": "MI300X", "AMD Instinct MI300X": "MI300X", "H200": "H200", "": "?",
	} {
		if got := GPUClass(name); got != want {
			t.Errorf("GPUClass(%q) = %q, want %q", name, got, want)
		}
	}
}

func TestReleaseLine(t *testing.T) {
	for v, want := range map[string]string{"0.5.1": "0.5", "0.6.3.post1": "0.6", "0.7.0": "0.7-0.10", "0.10.1": "0.7-0.10",
		"0.11.0": "0.11+", "0.4.2": "0.4", "0.3.3": "unmodelled"} {
		if got := ReleaseLine(v); got != want {
			t.Errorf("ReleaseLine(%q) = %q, want %q", v, got, want)
		}
	}
}

// TestCorpusRegimesFollowTheRule holds every built-in run's declared regime
// to ClassifyRegime, so sim's own regime (which the rule gives) picks the
// right corpus cell.
func TestCorpusRegimesFollowTheRule(t *testing.T) {
	c, err := LoadBuiltin()
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, r := range c.Runs {
		p := &plan{}
		p.planWorkload(r)
		got, ok := ClassifyRegime(regimeInput(r, p.inputLen, p.outputLen, r.Published))
		if !ok {
			t.Errorf("%s: the rule cannot decide (no duration or request_throughput published)", r.FullID())
			continue
		}
		if string(got) != r.Regime {
			t.Errorf("%s: declared %s, the rule says %s", r.FullID(), r.Regime, got)
		}
		checked++
	}
	if checked == 0 {
		t.Fatal("no run checked")
	}
}
