package sim

import (
	"context"
	"math/rand/v2"
	"runtime"
	"testing"
	"time"

	"github.com/servebench/servebench/engine"
	"github.com/servebench/servebench/metrics"
	"github.com/servebench/servebench/workload"
)

// llama8BH100 stands in for perf's roofline of Llama-3.1-8B (bf16) on one
// H100 until the lead re-measures with it: ~6 ms fixed cost, ~30 µs of
// GEMM per token (16 GFLOP at ~45% of 989 TFLOP/s) and ~40 ns per KV entry
// read (128 KiB at 3.35 TB/s); a 256-sequence decode step at 300 tokens of
// context takes ~17 ms, a 2048-token prefill step ~70 ms.
var llama8BH100 = linearModel{fixed: 6 * time.Millisecond, perToken: 30 * time.Microsecond, perKV: 40 * time.Nanosecond}

// benchEngine is BLIS's comparison setup: max-num-seqs 256,
// max-num-batched-tokens 2048, ~24k KV blocks of 16 tokens (≈50 GB of
// KV at 2 MiB per block on an 80 GB H100 at 0.9 utilization).
func benchEngine(v engine.Version, caching bool) engine.Config {
	c := engine.Config{Version: v, BlockSize: 16, NumGPUBlocks: 24000, NumCPUBlocks: 2048, MaxNumSeqs: 256,
		MaxNumBatchedTokens: 2048, MaxModelLen: 8192, EnablePrefixCaching: caching, EnableChunkedPrefill: v == engine.V1}
	if v == engine.V0 {
		c.Watermark = 0.01
		c.MaxModelLen = 2048 // V0 without chunking needs max_num_batched_tokens ≥ max_model_len
	}
	return c
}

// benchWorkload is 100,000 requests of 200 input and 200 output tokens.
// Prompts are windows into one shared random token array, so prefix caching
// has real IDs to hash without 160 MB of per-request prompts; windows that
// start at the same offset share prefixes, as repeated prompts would.
func benchWorkload(rate float64) []workload.Request {
	const n, in, out = 100000, 200, 200
	rng := rand.New(rand.NewPCG(42, 0))
	pool := make([]int32, 1<<20)
	for i := range pool {
		pool[i] = rng.Int32N(128000)
	}
	reqs := make([]workload.Request, n)
	var at time.Duration
	for i := range reqs {
		if rate > 0 {
			at += time.Duration(rng.ExpFloat64() / rate * float64(time.Second))
		}
		off := rng.IntN(len(pool) - in)
		reqs[i] = workload.Request{Index: i, PromptIDs: pool[off : off+in : off+in], PromptLen: in, MaxTokens: out, Arrival: at}
	}
	return reqs
}

func benchmarkSim(b *testing.B, rate float64) {
	reqs := benchWorkload(rate)
	cases := []struct {
		name string
		cfg  engine.Config
		// capped runs under --max-concurrency 256; client adds vLLM's
		// benchmark client's thread, which times the slots (Config.Client)
		// and counts every token's chunk.
		capped, client bool
	}{
		{name: "v1", cfg: benchEngine(engine.V1, false)},
		{name: "v1-prefix-caching", cfg: benchEngine(engine.V1, true)},
		{name: "v0", cfg: benchEngine(engine.V0, false)},
		{name: "v1-capped", cfg: benchEngine(engine.V1, false), capped: true},
		{name: "v1-capped-vllm-client", cfg: benchEngine(engine.V1, false), capped: true, client: true},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			cfg := Config{Engine: c.cfg, Model: llama8BH100, StatsInterval: 5 * time.Second}
			if c.capped {
				cfg.MaxConcurrency = 256
			}
			if c.client {
				cfg.Client = VLLMBenchClient(1)
			}
			var peakHeap uint64
			var simulated time.Duration
			var tokens int64
			var before runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			cpuBefore := processCPUTime()
			b.ResetTimer()
			for range b.N {
				emitted := 0
				var ms runtime.MemStats
				res, err := Run(context.Background(), cfg, reqs, func(r *metrics.Record) error {
					emitted++
					tokens += int64(r.PromptLen + r.OutputLen)
					if emitted%5000 == 0 {
						runtime.ReadMemStats(&ms)
						peakHeap = max(peakHeap, ms.HeapInuse)
					}
					return nil
				})
				if err != nil {
					b.Fatal(err)
				}
				if emitted != len(reqs) {
					b.Fatalf("%d records for %d requests", emitted, len(reqs))
				}
				simulated += res.Duration
			}
			b.StopTimer()
			cpu := processCPUTime() - cpuBefore
			var after runtime.MemStats
			runtime.ReadMemStats(&after)
			elapsed := b.Elapsed().Seconds()
			b.ReportMetric(float64(tokens)/elapsed, "simtokens/s")
			b.ReportMetric(float64(peakHeap)/(1<<20), "peak-heap-MB")
			b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/float64(b.N)/(1<<20), "alloc-MB/op")
			b.ReportMetric(simulated.Seconds()/float64(b.N), "virtual-s/op")
			// CPU seconds of the process (the simulation plus a concurrent
			// GC): on a loaded machine this, not ns/op, is the cost.
			b.ReportMetric(cpu.Seconds()/float64(b.N), "cpu-s/op")
			if cpu > 0 {
				b.ReportMetric(float64(tokens)/cpu.Seconds(), "simtokens/cpu-s")
			}
		})
	}
}

// BenchmarkSim100kBurst: 100,000 requests of 200/200 tokens all at t=0
// (BLIS: 10.9 s and 2.1 GB; target ≤ 2 s, ≤ 300 MB).
func BenchmarkSim100kBurst(b *testing.B) { benchmarkSim(b, 0) }

// BenchmarkSim100kPoisson50: the same requests at 50 req/s Poisson (BLIS:
// 66–75 s; target ≤ 5 s).
func BenchmarkSim100kPoisson50(b *testing.B) { benchmarkSim(b, 50) }
