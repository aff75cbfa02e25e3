package vllm

import (
	"time"

	"github.com/servebench/servebench/engine"
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

// v1Defaults: vLLM 0.8.5's EngineArgs for the API server: 1024 sequences
// and 8192 tokens on GPUs with ≥ 70 GiB, else 256 and 2048; chunked
// prefill and prefix caching always on; stats every 10 s; no swap.
var v1Defaults = Defaults{
	MaxNumSeqs: 256, MaxNumSeqsLargeGPU: 1024,
	MaxNumBatchedTokens: 2048, MaxNumBatchedTokensLargeGPU: 8192,
	PrefixCaching: true, StatsInterval: 10 * time.Second, BlockSize: 16,
}

// Host overhead (doc.go, "Host overhead"): fitted so that Llama-3-8B on one
// H100 under 0.5.3 at the blog's ShareGPT load splits into API server 33%,
// scheduling 29%, GPU 38%.
var (
	v05Host = HostOverhead{Overlap: OverlapNone,
		SchedFixed: 1000 * us, SchedPerSeq: 70 * us,
		OutputPerToken: 15 * us, APIPerChunk: 45 * us, APIPerRequest: 400 * us}
	// 0.6–0.10 V0: the same Python work, arranged to overlap the GPU.
	v06Host = HostOverhead{Overlap: OverlapAsyncOutput,
		SchedFixed: 1000 * us, SchedPerSeq: 70 * us,
		OutputPerToken: 15 * us, APIPerChunk: 45 * us, APIPerRequest: 400 * us}
	// V1: a leaner scheduler (perf's former fixed V1 overhead: 0.4 ms + 2
	// µs per sequence) and msgspec/ZMQ output handling in the front end.
	v1Host = HostOverhead{Overlap: OverlapEngineCore,
		SchedFixed: 400 * us, SchedPerSeq: 2 * us,
		OutputPerToken: 8 * us, APIPerChunk: 20 * us, APIPerRequest: 400 * us}
)

var (
	v05 = EngineProfile{Engine: engine.V0, Defaults: v0Defaults,
		Host: v05Host, BlockSizes: v0BlockSizes, PreemptionModes: v0Preemption, Metrics: engine.V0}
	v06 = EngineProfile{Engine: engine.V0, Defaults: v0Defaults,
		Scheduler: Scheduler{AsyncOutputProc: true, MultiStep: true},
		Host:      v06Host, BlockSizes: v0BlockSizes, PreemptionModes: v0Preemption, Metrics: engine.V0}
	v1 = EngineProfile{Engine: engine.V1, Defaults: v1Defaults,
		Host: v1Host, BlockSizes: v1BlockSizes, PreemptionModes: v0Preemption, Metrics: engine.V1}
)

// Switches that changed within a line, by patch release:
//   - multiStepSince: --num-scheduler-steps arrived with PR #7000 (merged
//     August 2024, released in 0.5.5).
//   - legacyRequeue: PR #6867 ("[core][scheduler] simplify and improve
//     scheduler", 0.5.4) re-queued new prefills ahead of running decodes
//     under chunked prefill (issue #7592 bisected the slowdown to it);
//     PR #7874 (0.6.0) sorted decodes first again.
var (
	multiStepSince      = Release{0, 5, 5}
	legacyRequeueSince  = Release{0, 5, 4}
	legacyRequeueBefore = Release{0, 6, 0}
)

// patchSwitches applies the within-line switches to a V0 profile.
func patchSwitches(rel Release, ep *EngineProfile) {
	if ep.Engine != engine.V0 {
		return
	}
	if !rel.less(multiStepSince) {
		ep.Scheduler.MultiStep = true
	}
	ep.Scheduler.LegacyRequeueOrder = !rel.less(legacyRequeueSince) && rel.less(legacyRequeueBefore)
}

var lines = []Line{
	{Name: "0.5", First: Release{0, 5, 0}, Through: 5, DefaultEngine: engine.V0,
		Representative: Release{0, 5, 4}, Engines: map[engine.Version]EngineProfile{engine.V0: v05}},
	{Name: "0.6", First: Release{0, 6, 0}, Through: 6, DefaultEngine: engine.V0,
		Representative: Release{0, 6, 6}, Engines: map[engine.Version]EngineProfile{engine.V0: v06}},
	{Name: "0.7-0.10", First: Release{0, 7, 0}, Through: 10, DefaultEngine: engine.V1,
		Representative: Release{0, 8, 5}, Engines: map[engine.Version]EngineProfile{engine.V0: v06, engine.V1: v1}},
	{Name: "0.11+", First: Release{0, 11, 0}, DefaultEngine: engine.V1,
		Representative: Release{0, 11, 0}, Engines: map[engine.Version]EngineProfile{engine.V1: v1}},
}

// memoryRules: how each release counted non-torch memory (doc.go, "Memory
// profile"), by the first release that counted it that way. Multi-GPU
// values without a published log keep perf's 3.0 GiB.
var memoryRules = []MemoryAccounting{
	{Since: Release{0, 5, 0}, Method: "peak = total − free after the profile run (CUDA context and allocator slack included)",
		NonTorchGiB: 1.25, NonTorchMultiGPUGiB: 3.0},
	{Since: Release{0, 6, 4}, Method: "torch.cuda.memory_stats peak plus the non-torch increase (PR #9352)",
		NonTorchGiB: 0.35, NonTorchMultiGPUGiB: 3.0},
	{Since: Release{0, 6, 5}, Method: "memory profiling overhaul (PR #10511)",
		NonTorchGiB: 1.79, NonTorchMultiGPUGiB: 3.58},
	{Since: Release{0, 7, 0}, Method: "non-torch increase over the post-initialisation baseline (PR #12126)",
		NonTorchGiB: 0.16, NonTorchMultiGPUGiB: 3.0},
}
