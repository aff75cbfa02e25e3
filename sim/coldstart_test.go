package sim

import (
	"context"
	"testing"
	"time"

	"github.com/servebench/servebench/engine"
	"github.com/servebench/servebench/perf"
	"github.com/servebench/servebench/vllm"
	"github.com/servebench/servebench/workload"
)

// resolveMixtral is Mixtral-8x7B on H100s under vLLM 0.6.0 (V0).
func resolveMixtral(t *testing.T, o vllm.Options) *vllm.Resolved {
	t.Helper()
	p, err := vllm.Lookup("0.6.0", engine.V0)
	if err != nil {
		t.Fatal(err)
	}
	m, err := perf.LookupModel("Mixtral-8x7B")
	if err != nil {
		t.Fatal(err)
	}
	g, err := perf.LookupGPU("H100-SXM")
	if err != nil {
		t.Fatal(err)
	}
	res, err := vllm.Resolve(context.Background(), p, m, g, o)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// TestColdStartRun: on a cold Triton cache, Lambda's ten-prompt burst on
// Mixtral waits for one fused-MoE compile, every request alike (the first
// prompt's own prefill was the client's test prompt); the same burst later
// compiles nothing, and the compile is counted as host-bound.
func TestColdStartRun(t *testing.T) {
	run := func(cold bool) (*Result, map[int]time.Duration) {
		res := resolveMixtral(t, vllm.Options{TensorParallel: 2, MaxModelLen: 2048,
			MaxNumSeqs: 1024, NumSchedulerSteps: 10, GPUMemoryUtilization: 0.95, ColdStart: cold})
		prompts := []int{14, 30, 28, 12, 375, 29, 487, 369, 5, 236}
		var reqs []workload.Request
		for burst, at := range []time.Duration{0, 30 * time.Second} {
			for i, n := range prompts {
				reqs = append(reqs, workload.Request{Index: burst*len(prompts) + i, PromptLen: n, MaxTokens: 20, Arrival: at})
			}
		}
		out, recs := collect(t, ConfigFor(res), reqs)
		ttft := map[int]time.Duration{}
		for _, r := range recs {
			ttft[r.Index] = r.TTFT
		}
		return out, ttft
	}
	warm, warmTTFT := run(false)
	cold, coldTTFT := run(true)
	extra := coldTTFT[0] - warmTTFT[0]
	if extra < time.Second || extra > 3*time.Second {
		t.Fatalf("first request's TTFT %v cold, %v warm: want one variant's compile (two kernels, ~1.8 s) between them", coldTTFT[0], warmTTFT[0])
	}
	for i := range 20 {
		want := warmTTFT[i]
		if i < 10 {
			want += extra
		}
		if coldTTFT[i] != want {
			t.Errorf("request %d: TTFT %v cold, %v warm; want %v", i, coldTTFT[i], warmTTFT[i], want)
		}
	}
	if cold.HostBoundSteps != warm.HostBoundSteps+1 || cold.HostBoundTime-warm.HostBoundTime < extra {
		t.Errorf("host-bound: %d steps (%v) cold, %d (%v) warm; want the compiling step added", cold.HostBoundSteps, cold.HostBoundTime, warm.HostBoundSteps, warm.HostBoundTime)
	}
}

// TestColdStartFleet: each replica of a fleet is its own server process
// with its own Triton cache, so each compiles the variant once.
func TestColdStartFleet(t *testing.T) {
	res := resolveMixtral(t, vllm.Options{TensorParallel: 2, MaxModelLen: 2048, ColdStart: true})
	// Round robin: replica 0 takes requests 0 and 2, replica 1 takes 1 and 3.
	var reqs []workload.Request
	for i, at := range []time.Duration{0, time.Millisecond, 20 * time.Second, 20*time.Second + time.Millisecond} {
		reqs = append(reqs, workload.Request{Index: i, PromptLen: 1585, MaxTokens: 8, Arrival: at})
	}
	ttfts := func(cold *vllm.ColdStart) []time.Duration {
		cfg := TopologyConfig{Kind: Colocated, Router: RouteRoundRobin,
			Replicas: Pool{Instances: 2, Engine: res.Engine, Model: res.StepModel, GPUs: 2, ColdStart: cold}}
		_, recs := runTopology(t, cfg, reqs)
		out := make([]time.Duration, len(reqs))
		for _, r := range recs {
			out[r.Index] = r.TTFT
		}
		return out
	}
	warm, cold := ttfts(nil), ttfts(res.ColdStart)
	for i := range reqs {
		extra := cold[i] - warm[i]
		switch {
		case i < 2 && (extra < time.Second || extra > 3*time.Second):
			t.Errorf("request %d, its replica's first: TTFT %v cold, %v warm; want one compile between them", i, cold[i], warm[i])
		case i >= 2 && extra != 0:
			t.Errorf("request %d, its replica's second: TTFT %v cold, %v warm; want the same", i, cold[i], warm[i])
		}
	}
}
