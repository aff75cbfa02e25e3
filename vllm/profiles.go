package vllm

import (
	"time"

	"github.com/servebench/servebench/engine"
	"github.com/servebench/servebench/perf"
)

// The profile table: every rule that differs between vLLM releases, in one
// place. doc.go cites the source of each value; diff two entries to see
// what changed between releases.

const us = time.Microsecond

var (
	v0BlockSizes = []int{8, 16, 32}
	v1BlockSizes = []int{8, 16, 32, 64, 128}
	// --preemption-mode's argparse choices; V1 accepts the flag and falls
	// back to V0 (issue #18115), which engine.Config.Validate reports.
	v0Preemption = []string{"recompute", "swap"}
)

// v0Defaults: vLLM 0.5.4's EngineArgs/SchedulerConfig (reference A.3,
// A.6): 256 sequences, max(max_model_len, 2048) tokens or 512 with chunked
// prefill, chunked prefill on by itself above 32K context, no prefix
// caching, stats every 5 s, 16-token blocks, 1% watermark, 4 GiB swap.
var v0Defaults = Defaults{
	MaxNumSeqs: 256, MaxNumSeqsLargeGPU: 256,
	ChunkedBudget: 512, AutoChunkAbove: 32768,
	StatsInterval: 5 * time.Second, BlockSize: 16, Watermark: 0.01, SwapSpaceGiB: 4,
}

// v1Defaults: vLLM 0.8.5's EngineArgs (_set_default_args_v1) for the API
// server: 1024 sequences and 8192 tokens on GPUs with ≥ 70 GiB, else 256
// and 2048; for the LLM class (offline) the same sequences and 16384 or
// 8192 tokens; chunked prefill and prefix caching always on; stats every
// 10 s; no swap.
var v1Defaults = Defaults{
	MaxNumSeqs: 256, MaxNumSeqsLargeGPU: 1024,
	MaxNumBatchedTokens: 2048, MaxNumBatchedTokensLargeGPU: 8192,
	OfflineMaxNumBatchedTokens: 8192, OfflineMaxNumBatchedTokensLargeGPU: 16384,
	PrefixCaching: true, StatsInterval: 10 * time.Second, BlockSize: 16,
}

// clientCPUSlowdown converts clientcost_measured.go's timings, taken on
// an AMD EPYC Zen 5 VM, to the default host machine, which takes this
// many times as long. Measured, not estimated: vLLM's own scheduler and
// output path (tools/vllm-hosttime, 27 points over four releases and
// engines at 16, 64 and 256 sequences) ran 1.28× as long (median; 0.98-
// 1.53) on an H100 server's Xeon as on that VM, side by side on
// 2026-11-27 (doc.go, "Host speed"). hosttime_measured.go itself was
// measured on that Xeon and needs no conversion.
const clientCPUSlowdown = 1.28

// ingest and delivery: the OpenAI server's per-request latencies (doc.go,
// "Request latencies").
const (
	ingest   = 9300 * us
	delivery = 1850 * us
)

// Host overhead (doc.go, "Host overhead"): vLLM's own scheduler and output
// path as measured (hosttime_measured.go), plus what the measurement
// leaves out, on the default host machine.
var (
	// 0.4: the 0.5 line's one process and Python work without the light-
	// load step cost the 0.5 line's published runs show (doc.go).
	v04Host = HostOverhead{Overlap: OverlapNone, Measured: &measuredV0_054,
		SchedFixed: 1000 * us, SchedPerSeq: 58 * us,
		OutputPerToken: 2 * us, APIPerChunk: 45 * us, APIPerRequest: 400 * us,
		Ingest: ingest, Delivery: delivery}
	v05Host = HostOverhead{Overlap: OverlapNone, Measured: &measuredV0_054,
		SchedFixed: 2850 * us, SchedPerSeq: 58 * us,
		OutputPerToken: 2 * us, APIPerChunk: 45 * us, APIPerRequest: 400 * us, APIPerStep: 3300 * us,
		Ingest: ingest, Delivery: delivery}
	// 0.6 V0: the same Python work, arranged to overlap the GPU.
	v06Host = HostOverhead{Overlap: OverlapAsyncOutput, Measured: &measuredV0_061p2,
		SchedFixed: 1000 * us, SchedPerSeq: 58 * us,
		OutputPerToken: 2 * us, APIPerChunk: 45 * us, APIPerRequest: 400 * us,
		Ingest: ingest, Delivery: delivery}
	// 0.7–0.10 V0: 0.6's arrangement, the scheduler and output path of the
	// 0.8.5-era tree.
	v07V0Host = HostOverhead{Overlap: OverlapAsyncOutput, Measured: &measuredV0_98c89e16,
		SchedFixed: 1000 * us, SchedPerSeq: 58 * us,
		OutputPerToken: 2 * us, APIPerChunk: 45 * us, APIPerRequest: 400 * us,
		Ingest: ingest, Delivery: delivery}
	// V1: engine core (scheduler, update_from_output) and the API server's
	// OutputProcessor measured; APIPerChunk from PR #12287's A100 run.
	v1Host = HostOverhead{Overlap: OverlapEngineCore, Measured: &measuredV1_98c89e16,
		SchedFixed: 400 * us, SchedPerSeq: 1 * us,
		OutputPerToken: 1 * us, APIPerChunk: 70 * us, APIPerRequest: 400 * us,
		Ingest: ingest, Delivery: delivery}
)

// v04Defaults: 0.5.4's, less the long-context chunked prefill PR #6666
// switched on in July 2024.
var v04Defaults = func() Defaults {
	d := v0Defaults
	d.AutoChunkAbove = 0
	return d
}()

var (
	v04 = EngineProfile{Engine: engine.V0, Defaults: v04Defaults,
		Host: v04Host, BlockSizes: v0BlockSizes, PreemptionModes: v0Preemption, Metrics: engine.V0}
	v05 = EngineProfile{Engine: engine.V0, Defaults: v0Defaults,
		Host: v05Host, BlockSizes: v0BlockSizes, PreemptionModes: v0Preemption, Metrics: engine.V0}
	v06 = EngineProfile{Engine: engine.V0, Defaults: v0Defaults,
		Scheduler: Scheduler{AsyncOutputProc: true, MultiStep: true},
		Host:      v06Host, BlockSizes: v0BlockSizes, PreemptionModes: v0Preemption, Metrics: engine.V0}
	v07V0 = EngineProfile{Engine: engine.V0, Defaults: v0Defaults,
		Scheduler: Scheduler{AsyncOutputProc: true, MultiStep: true},
		Host:      v07V0Host, BlockSizes: v0BlockSizes, PreemptionModes: v0Preemption, Metrics: engine.V0}
	v1 = EngineProfile{Engine: engine.V1, Defaults: v1Defaults,
		Host: v1Host, BlockSizes: v1BlockSizes, PreemptionModes: v0Preemption, Metrics: engine.V1}
)

// Switches that changed within a line, by patch release:
//   - multiStepSince: --num-scheduler-steps arrived with PR #7000 (merged
//     August 2024, released in 0.5.5).
//   - frontendProcessSince: PR #6883 ("[ Frontend ] Multiprocessing for
//     OpenAI Server with `zeromq`") moved the OpenAI server into a process
//     of its own, with --disable-frontend-multiprocessing to keep it in
//     the engine's: "We introduced `multiprocessing` into the frontend in
//     v0.5.4" (its author, vLLM issue #7653). 0.5.0–0.5.3 serve HTTP from
//     the engine's process.
//   - legacyRequeue: PR #6867 ("[core][scheduler] simplify and improve
//     scheduler", 0.5.4) re-queued new prefills ahead of running decodes
//     under chunked prefill (issue #7592 bisected the slowdown to it);
//     PR #7874 (0.6.0) sorted decodes first again.
//   - largeDefaultsByMemorySince: V1's large-GPU defaults went to GPUs
//     named H100 or H200 from PR #12369 ("[V1] Increase default batch
//     size for H100/H200", merged 2025-01-23, so from 0.7.0: the test is
//     `"h100" in device_name or "h200" in device_name`) until PR #17073
//     ("[Minor] Use larger batch sizes for A100/B100/B200/MI300x", merged
//     2025-04-23, after 0.8.4 of 2025-04-14, so from 0.8.5) made it
//     `get_device_total_memory() >= 70 GiB`.
//   - seqsByGPUSince: V1 took 1024 sequences on every GPU until PR #16158
//     ("[V1] Revert the default `max_num_seqs` to V0 values for most
//     hardware", merged 2025-04-07, after 0.8.3 of 2025-04-06, so from
//     0.8.4) kept 1024 for the large GPUs only.
//   - largeDefaultsSkipA100Since: PR #17885 ("[Perf] Use small
//     max_num_batched_tokens for A100", merged 2025-05-09, after
//     0.8.5.post1, so from 0.9.0) keeps A100s at the small V1 defaults
//     (256 sequences, 2048 tokens): "a100" not in the device name is part
//     of the large-GPU test in EngineArgs.
//   - asyncSchedulingSince: PR #19970 ("Implement Async Scheduling",
//     opened 2025-06-23, merged 2025-07-14 as commit d4d3094, after
//     0.9.2 of 2025-07-08, so from 0.10.0) added --async-scheduling to V1
//     as an experimental flag;
//     asyncSchedulingDefaultSince: PR #27614 turned it on by default, in
//     0.14.0 ("Async scheduling is now enabled by default", its release
//     notes, which name --no-async-scheduling and pipeline parallelism
//     among the configurations it excludes).
//   - multiStepStreamSince: PR #8335 ("Add output streaming support to
//     multi-step + async", opened 2024-09-10, built on the MQLLMEngine of
//     0.6.2, merged 2024-09-23 as commit 1a2aef3, days before 0.6.2)
//     added --multi-step-stream-outputs, off; multiStepStreamDefaultSince: PR #9047 ("Enable
//     multi-step output streaming by default", merged 2024-10-03, so from
//     0.6.3) turned it on.
//   - chunkedBudget2048Since: PR #10544 ("Update default
//     max_num_batch_tokens for chunked prefill to 2048", opened
//     2024-11-21, after 0.6.4.post1, so from 0.6.5; issue #11319 notes
//     that 0.6.5's docs still said 512) raised V0's chunked-prefill budget
//     from 512 to 2048.
var (
	multiStepSince              = Release{0, 5, 5}
	frontendProcessSince        = Release{0, 5, 4}
	legacyRequeueSince          = Release{0, 5, 4}
	legacyRequeueBefore         = Release{0, 6, 0}
	largeDefaultsSkipA100Since  = Release{0, 9, 0}
	largeDefaultsByMemorySince  = Release{0, 8, 5}
	seqsByGPUSince              = Release{0, 8, 4}
	chunkedBudget2048Since      = Release{0, 6, 5}
	multiStepStreamSince        = Release{0, 6, 2}
	multiStepStreamDefaultSince = Release{0, 6, 3}
	asyncSchedulingSince        = Release{0, 10, 0}
	asyncSchedulingDefaultSince = Release{0, 14, 0}
)

// patchSwitches applies the within-line switches to a profile.
func patchSwitches(rel Release, ep *EngineProfile) {
	if ep.Engine == engine.V1 {
		switch {
		case rel.less(largeDefaultsByMemorySince):
			ep.Defaults.LargeGPU = LargeGPUByName
		case !rel.less(largeDefaultsSkipA100Since):
			ep.Defaults.LargeGPU = LargeGPUByMemoryNotA100
		}
		ep.Defaults.LargeSeqsOnEveryGPU = rel.less(seqsByGPUSince)
		ep.Scheduler.AsyncScheduling = !rel.less(asyncSchedulingSince)
		ep.Scheduler.AsyncSchedulingDefault = !rel.less(asyncSchedulingDefaultSince)
		return
	}
	if ep.Engine != engine.V0 {
		return
	}
	if !rel.less(multiStepSince) {
		ep.Scheduler.MultiStep = true
	}
	if ep.Host.Overlap == OverlapNone && !rel.less(frontendProcessSince) {
		ep.Host.Overlap = OverlapSeparateAPI
	}
	ep.Scheduler.MultiStepStream = !rel.less(multiStepStreamSince)
	ep.Scheduler.MultiStepStreamDefault = !rel.less(multiStepStreamDefaultSince)
	ep.Scheduler.LegacyRequeueOrder = !rel.less(legacyRequeueSince) && rel.less(legacyRequeueBefore)
	if !rel.less(chunkedBudget2048Since) {
		ep.Defaults.ChunkedBudget = 2048
	}
}

var lines = []Line{
	{Name: "0.4", First: Release{0, 4, 0}, Through: 4, DefaultEngine: engine.V0,
		Representative: Release{0, 4, 3}, Engines: map[engine.Version]EngineProfile{engine.V0: v04}},
	{Name: "0.5", First: Release{0, 5, 0}, Through: 5, DefaultEngine: engine.V0,
		Representative: Release{0, 5, 4}, Engines: map[engine.Version]EngineProfile{engine.V0: v05}},
	{Name: "0.6", First: Release{0, 6, 0}, Through: 6, DefaultEngine: engine.V0,
		Representative: Release{0, 6, 6}, Engines: map[engine.Version]EngineProfile{engine.V0: v06}},
	{Name: "0.7-0.10", First: Release{0, 7, 0}, Through: 10, DefaultEngine: engine.V1,
		Representative: Release{0, 8, 5}, Engines: map[engine.Version]EngineProfile{engine.V0: v07V0, engine.V1: v1}},
	{Name: "0.11+", First: Release{0, 11, 0}, DefaultEngine: engine.V1,
		Representative: Release{0, 11, 0}, Engines: map[engine.Version]EngineProfile{engine.V1: v1}},
}

// memoryRules: how each release counted non-torch memory (doc.go, "Memory
// profile"), by the first release that counted it that way. Multi-GPU
// values without a published log keep perf's 3.0 GiB; 0.7+'s 0.60 GiB is
// what inference-sim's 0.15.1 KV cache sizes at TP 2 and 4 leave. V0
// releases from 0.6.4 (PyTorch 2.5.1, NCCL 2.21.5) through 0.6.6 also
// count NVLink SHARP buffers on two communicators over the TP group,
// PyNccl's and the torch group that broadcasts each step's inputs (doc.go,
// "NVLink SHARP buffers"); other releases count none.
var memoryRules = []MemoryAccounting{
	{Since: Release{0, 4, 0}, Method: "peak = total − free after the profile run (CUDA context and allocator slack included)",
		NonTorchGiB: 1.25, NonTorchMultiGPUGiB: 3.0},
	{Since: Release{0, 6, 4}, Method: "torch.cuda.memory_stats peak plus the non-torch increase (PR #9352)",
		NonTorchGiB: 0.35, NonTorchMultiGPUGiB: 3.0, NVLSCommunicators: 2},
	{Since: Release{0, 6, 5}, Method: "memory profiling overhaul (PR #10511)",
		NonTorchGiB: 1.79, NonTorchMultiGPUGiB: 3.58, NVLSCommunicators: 2},
	{Since: Release{0, 7, 0}, Method: "non-torch increase over the post-initialisation baseline (PR #12126)",
		NonTorchGiB: 0.16, NonTorchMultiGPUGiB: 0.60},
}

// fusedMoESharedCacheSince: PR #13625 ("[Kernel] Optimize moe
// intermediate_cache usage", merged 2025-03-03 as commit 19d98e0, so first
// in 0.8.0 of 2025-03-18) lets the fused MoE's first and last intermediate
// caches share one buffer; earlier releases hold both through the profile
// run's MoE layers (perf.Deployment.FusedMoESeparateCaches).
var fusedMoESharedCacheSince = Release{0, 8, 0}

// flashInferSamplerPeak: V1's sampler on FlashInfer's top-k/top-p kernel
// (Options.FlashInferSampler) at the profile run's peak, 14 bytes a logits
// cell at any number of rows [inferred from the code, not measured: no
// FlashInfer runs here]: the model-dtype logits the runner holds (2), the
// fp32 copy Sampler.forward samples from (4), and inside FlashInfer's
// top_k_top_p_sampling_from_logits (flashinfer/sampling.py, top_k_first)
// the top-k masked logits (4) and their softmax (4), which
// top_p_sampling_from_probs samples without sorting; the native path's
// sort values and int64 indices never exist.
var flashInferSamplerPeak = perf.SamplerPeak{Rows: []int{1}, BytesPerCell: []float64{14}}

// tritonSamplerPeak: V1's native sampler once top-k/top-p became PR
// #33538's Triton kernel (vLLM 0.18.0; samplerRules), at the profile run's
// peak, 14 bytes a logits cell at any number of rows [inferred from the
// code, checked against published startup lines (TestPublishedBlockCounts:
// 14.2 bytes a cell between 512 and 1,024 sequences of a 151,936-token
// vocabulary)]: the model-dtype logits the runner holds (2), the fp32 copy
// Sampler.forward samples from (4), which apply_top_k_top_p_triton masks
// in place, its softmax (4) and random_sample's exponential noise (4). The
// kernel's own buffers, about 80 MiB whatever the rows (the PR's figure),
// are left out [approximation: 0.5 bytes a cell at 1,024 rows of that
// vocabulary]; the sort and its workspace never exist.
var tritonSamplerPeak = perf.SamplerPeak{Rows: []int{1}, BytesPerCell: []float64{14}}

// samplerRules: which measured vLLM tree's sampler each release runs at
// the profile run's peak (doc.go, "Memory profile"), by the first release
// whose sampler allocates that way.
//   - 0.4.0: top-k/top-p on the model-dtype logits (sort values and int64
//     indices, softmax and cumsum of the sorted rows, int64 inverse
//     permutation); measured at v0.5.4.
//   - 0.5.5: PR #2937 ("Fix empty output when temp is too low", merged
//     2024-08-13) turns the logits to fp32 first, doubling every copy
//     that follows; measured at v0.6.1.post2.
//   - 0.6.2: PR #8619 ("simplify logits resort in _apply_top_k_top_p",
//     merged 2024-09-20) drops the int64 inverse permutation; measured on
//     V0 at the 0.8.5-era tree.
//   - V1 (0.7+): V1's sampler (fp32 logits, PyTorch top-k/top-p without
//     FlashInfer, which vLLM's wheels do not ship); measured at the
//     0.8.5-era tree.
//   - V1 0.18.0: PR #33538 ("Triton-based Top-k and Top-p sampler
//     kernels", opened 2026-02-02) masks top-k/top-p without a sort, so
//     the profile run's sampler peaks at tritonSamplerPeak; its time at
//     temperature 0 (argmax, no top-k/top-p) stays the measured tree's
//     [approximate release: the PR's release between 0.16.0 and 0.18.0 is
//     not established; 0.18.0's published startup lines show it].
var samplerRules = []struct {
	since      Release
	engine     engine.Version
	measuredAt string
	// peak, when set, replaces the measured tree's memory peak (a sampler
	// whose allocations are read from the code, not measured).
	peak perf.SamplerPeak
}{
	{Release{0, 4, 0}, engine.V0, "v0.5.4", perf.SamplerPeak{}},
	{Release{0, 5, 5}, engine.V0, "v0.6.1.post2", perf.SamplerPeak{}},
	{Release{0, 6, 2}, engine.V0, "main-98c89e16", perf.SamplerPeak{}},
	{Release{0, 7, 0}, engine.V1, "main-98c89e16", perf.SamplerPeak{}},
	{tritonSamplerSince, engine.V1, "main-98c89e16", tritonSamplerPeak},
}

// tritonSamplerSince is the first release modelled with PR #33538's
// sort-free top-k/top-p (samplerRules).
var tritonSamplerSince = Release{0, 18, 0}
