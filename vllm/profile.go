package vllm

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/servebench/servebench/engine"
	"github.com/servebench/servebench/perf"
)

// Release is a vLLM version X.Y.Z.
type Release struct{ Major, Minor, Patch int }

func (r Release) String() string { return fmt.Sprintf("%d.%d.%d", r.Major, r.Minor, r.Patch) }

func (r Release) less(o Release) bool {
	if r.Major != o.Major {
		return r.Major < o.Major
	}
	if r.Minor != o.Minor {
		return r.Minor < o.Minor
	}
	return r.Patch < o.Patch
}

// Overlap is how a release arranges host (CPU) work around the GPU step.
type Overlap string

const (
	// OverlapNone: one Python process schedules, runs the model, processes
	// outputs and serves HTTP between forward passes (0.4–0.5.3, and V0
	// from 0.5.4 with --disable-frontend-multiprocessing where outputs are
	// processed in line). A step lasts GPU + scheduling + output
	// processing + API-server work.
	OverlapNone Overlap = "serial"
	// OverlapAsyncOutput: output processing of step i runs while step i+1
	// is on the GPU (PR #7049), the OpenAI server is its own process
	// (PR #6883), and multi-step scheduling (PR #7000) schedules once per
	// num_scheduler_steps steps (0.6–0.10 V0). A step lasts
	// max(GPU + scheduling/num_scheduler_steps, output processing, API work).
	OverlapAsyncOutput Overlap = "async-output"
	// OverlapSeparateAPI: the OpenAI server in its own process (PR
	// #6883), output processing on the engine's critical path: 0.5.4 and
	// 0.5.5, and 0.6–0.10 V0 with --disable-async-output-proc. A step lasts
	// max(GPU + scheduling/num_scheduler_steps + output processing, API work).
	OverlapSeparateAPI Overlap = "separate-api"
	// OverlapAsyncOutputSharedAPI: 0.6–0.10 V0 with
	// --disable-frontend-multiprocessing: output processing still
	// overlaps the next step, but the OpenAI server runs in the engine's
	// process again, its work between steps as in 0.5.0–0.5.3. A step
	// lasts scheduling/num_scheduler_steps + max(GPU, output processing)
	// + API work.
	OverlapAsyncOutputSharedAPI Overlap = "async-output-shared-api"
	// OverlapEngineCore: the V1 engine core (scheduler + model runner) is
	// its own process; detokenization and HTTP run in the front-end
	// process. A step lasts max(GPU + scheduling, output processing + API
	// work).
	OverlapEngineCore Overlap = "engine-core"
	// OverlapAsyncScheduling: V1 with async scheduling (PR #19970): the
	// engine core schedules step i+1 and applies step i's outputs while
	// the GPU runs step i. A step lasts max(GPU, scheduling, output
	// processing + API work).
	OverlapAsyncScheduling Overlap = "async-scheduling"
)

// sharesEngineProcess reports whether the OpenAI server runs in the
// engine's process, so its work lengthens the engine's steps rather than
// running on a loop of its own.
func (o Overlap) sharesEngineProcess() bool {
	return o == OverlapNone || o == OverlapAsyncOutputSharedAPI
}

// inEngineProcess is o with the OpenAI server moved into the engine's
// process (--disable-frontend-multiprocessing, V0 from 0.5.4).
func (o Overlap) inEngineProcess() Overlap {
	switch o {
	case OverlapSeparateAPI:
		return OverlapNone
	case OverlapAsyncOutput:
		return OverlapAsyncOutputSharedAPI
	}
	return o
}

// HostOverhead is the CPU work per engine step, in the release's process
// layout (doc.go, "Host overhead", cites where each number comes from).
// Measured holds vLLM's own scheduler and output path timed on one CPU;
// the duration fields are what those timings leave out, on the default
// host machine.
type HostOverhead struct {
	Overlap Overlap
	// Measured: Scheduler.schedule(), the output path and (V1) the API
	// server's OutputProcessor, per step by running sequences; nil: none.
	Measured *MeasuredHost
	// SchedFixed and SchedPerSeq: engine work per step besides the
	// measured scheduler: model-input preparation, sampling metadata, the
	// GPU-to-CPU sync of sampled tokens, the executor's dispatch.
	SchedFixed, SchedPerSeq time.Duration
	// OutputPerToken: output work per token produced that the measurement
	// leaves out (the tokenizer's own conversions, the pythonization of
	// sampled tokens).
	OutputPerToken time.Duration
	// APIPerChunk: the OpenAI server's work per streamed chunk (one per
	// output token); APIPerRequest: per request (HTTP, parsing,
	// tokenizing, response set-up; a chat request's template is
	// chatPrepare's, before the engine), charged on the step that
	// finishes its prompt; APIPerStep: per engine step whatever it
	// streams (the server's event loop taking a step's outputs).
	APIPerChunk, APIPerRequest, APIPerStep time.Duration
	// Ingest and Delivery are the OpenAI server's latency per request
	// outside the engine's steps: from the request's arrival to its entry
	// into the engine's queue, and from a step's end to the client's
	// receipt of its chunk (sim.Config.Ingest, Delivery).
	Ingest, Delivery time.Duration
	// Speed is the host CPU's speed relative to the default host machine
	// (--host-speed; 0 means 1): every host term is divided by it.
	Speed float64
}

// offline is h without the OpenAI server's work, for the LLM class.
func (h HostOverhead) offline() HostOverhead {
	h.APIPerChunk, h.APIPerRequest, h.APIPerStep = 0, 0, 0
	h.Ingest, h.Delivery = 0, 0
	return h
}

// scaled is d on this host (Speed applied).
func (h HostOverhead) scaled(d time.Duration) time.Duration {
	return time.Duration(float64(d) / h.speed())
}

func (h HostOverhead) speed() float64 {
	if h.Speed > 0 {
		return h.Speed
	}
	return 1
}

// Scheduler holds the release's scheduler switches, each tied to the
// change that introduced it.
type Scheduler struct {
	// LegacyRequeueOrder: V0 chunked prefill re-queues new prefills ahead
	// of running decodes (0.5.4–0.5.5: PR #6867 until PR #7874).
	LegacyRequeueOrder bool
	// AsyncOutputProc: output processing overlaps the next step (PR #7049,
	// on by default from 0.6.0).
	AsyncOutputProc bool
	// MultiStep: --num-scheduler-steps exists (PR #7000, 0.5.5; V0 only).
	MultiStep bool
	// MultiStepStream: --multi-step-stream-outputs exists (PR #8335,
	// 0.6.2); MultiStepStreamDefault: it is on unless set to False (PR
	// #9047, 0.6.3).
	MultiStepStream, MultiStepStreamDefault bool
	// AsyncScheduling: --async-scheduling exists (PR #19970, V1 from
	// 0.10.0); AsyncSchedulingDefault: it is on unless
	// --no-async-scheduling (PR #27614, 0.14.0; not with pipeline
	// parallelism).
	AsyncScheduling, AsyncSchedulingDefault bool
}

// Defaults are the values a release picks for flags the user left unset.
type Defaults struct {
	MaxNumSeqs, MaxNumSeqsLargeGPU int
	// MaxNumBatchedTokens: V1's budget on GPUs below / at or above 70 GiB
	// (the API server's values); V0 takes max(max_model_len, 2048), or
	// ChunkedBudget once chunked prefill is on.
	MaxNumBatchedTokens, MaxNumBatchedTokensLargeGPU int
	// OfflineMaxNumBatchedTokens(LargeGPU): V1's budget for the LLM class
	// (UsageContext.LLM_CLASS: the throughput and latency benchmarks),
	// which vLLM sets apart from the API server's; 0 takes the server's.
	OfflineMaxNumBatchedTokens, OfflineMaxNumBatchedTokensLargeGPU int
	// LargeGPU is the release's test for the large-GPU values.
	LargeGPU LargeGPURule
	// LargeSeqsOnEveryGPU: the sequence limit is MaxNumSeqsLargeGPU on every
	// GPU, large or not (V1 before PR #16158 in 0.8.4).
	LargeSeqsOnEveryGPU bool
	ChunkedBudget       int
	// AutoChunkAbove: V0 turns chunked prefill on by itself when
	// max_model_len exceeds this (0: never); V1 always chunks.
	AutoChunkAbove int
	PrefixCaching  bool
	// StatsInterval is the cadence of the "Avg prompt throughput" line.
	StatsInterval time.Duration
	BlockSize     int
	Watermark     float64
	SwapSpaceGiB  float64
}

// LargeGPURule is how a release decides that a GPU takes the large-GPU
// defaults.
type LargeGPURule int

const (
	// LargeGPUByMemory: 70 GiB or more (vLLM 0.8.5, PR #17073).
	LargeGPUByMemory LargeGPURule = iota
	// LargeGPUByName: a name with "h100" or "h200", whatever the memory
	// (V1 from 0.7.0, PR #12369, until PR #17073).
	LargeGPUByName
	// LargeGPUByMemoryNotA100: 70 GiB or more, A100s excepted (vLLM 0.9.0+,
	// PR #17885).
	LargeGPUByMemoryNotA100
)

// large reports whether gpu takes the large-GPU defaults under the rule.
func (r LargeGPURule) large(gpu perf.GPU) bool {
	name := strings.ToLower(gpu.Name)
	switch r {
	case LargeGPUByName:
		return strings.Contains(name, "h100") || strings.Contains(name, "h200")
	case LargeGPUByMemoryNotA100:
		return gpu.MemoryBytes >= 70<<30 && !strings.Contains(name, "a100")
	}
	return gpu.MemoryBytes >= 70<<30
}

// v1TokenBudget is V1's default max_num_batched_tokens on a large (≥ 70
// GiB) or smaller GPU, for the LLM class (offline) or the API server.
func (d Defaults) v1TokenBudget(large, offline bool) int {
	server, llm := d.MaxNumBatchedTokens, d.OfflineMaxNumBatchedTokens
	if large {
		server, llm = d.MaxNumBatchedTokensLargeGPU, d.OfflineMaxNumBatchedTokensLargeGPU
	}
	if offline && llm > 0 {
		return llm
	}
	return server
}

// EngineProfile is what one release does with one engine generation.
type EngineProfile struct {
	Engine    engine.Version
	Defaults  Defaults
	Scheduler Scheduler
	Host      HostOverhead
	// BlockSizes are --block-size's accepted values; PreemptionModes
	// --preemption-mode's.
	BlockSizes      []int
	PreemptionModes []string
	// Metrics names the Prometheus family set (serve defines the names
	// per engine generation: V0's vllm:num_requests_swapped and
	// cpu_cache_usage_perc, V1's engine label and prefix-cache counters).
	Metrics engine.Version
}

// Line is a release line: the releases that share one set of rules.
type Line struct {
	Name string // "0.5", "0.6", "0.7-0.10", "0.11+"
	// First is the line's first release; Through its last minor version
	// (every patch release of it belongs to the line), 0 for open-ended.
	First         Release
	Through       int
	DefaultEngine engine.Version
	// Representative is the release --engine alone (or "X.Y") selects.
	Representative Release
	Engines        map[engine.Version]EngineProfile
}

// Profile is one release with one engine generation: everything the
// resolver, sim and serve need to behave as that vLLM does.
type Profile struct {
	Release Release
	Line    string
	EngineProfile
	Memory MemoryAccounting
	// SamplerKernels is the GPU time of the release's sampler per step at
	// the benchmarks' sampling parameters, measured on a GPU from the
	// tree samplerRules names for it (doc.go, "Sampler time").
	SamplerKernels perf.SamplerKernels
}

// MemoryAccounting is how a release's profile run counts memory outside
// PyTorch's allocator (CUDA context, cuBLAS workspaces, NCCL buffers),
// which vLLM subtracts before sizing the KV cache.
type MemoryAccounting struct {
	Since  Release
	Method string
	// NonTorchGiB is the non-torch memory on one GPU; NonTorchMultiGPUGiB
	// with tensor or pipeline parallelism.
	NonTorchGiB, NonTorchMultiGPUGiB float64
	// NVLSCommunicators is how many NCCL communicators over the TP group
	// hold NVLink SHARP buffers the profile counts (V0 only; doc.go,
	// "NVLink SHARP buffers").
	NVLSCommunicators int
	// SamplerPeak is the profile run's sampler peak in bytes per logits
	// cell (max_num_seqs × vocab) by rows, as vLLM's own sampler of the
	// release measured on a GPU (SamplerMeasuredAt names the tree), or,
	// where samplerRules says so, as read from the release's code.
	SamplerPeak       perf.SamplerPeak
	SamplerMeasuredAt string
}

// Name is how the profile reports itself: "0.6.3 (V0)".
func (p Profile) Name() string {
	return fmt.Sprintf("%s (%s)", p.Release, strings.ToUpper(string(p.Engine)))
}

// LineNames are the release lines' names, oldest first.
func LineNames() []string {
	names := make([]string, len(lines))
	for i, l := range lines {
		names[i] = l.Name
	}
	return names
}

// KnownLines lists the release lines for error messages.
func KnownLines() string {
	return strings.Join(LineNames(), ", ")
}

// publishedVersion splits a published version (0.6.3.post1, v0.7.0,
// 0.6.4.dev308+gb489fc3c) into its release, X.Y or X.Y.Z, and the suffix.
var publishedVersion = regexp.MustCompile(`^v?(\d+\.\d+(?:\.\d+)?)(.*)$`)

// ReleaseOf is the release a published version carries the number of:
// post, dev and local builds as that release; anything else (a branch
// name) as it is.
func ReleaseOf(version string) string {
	m := publishedVersion.FindStringSubmatch(strings.TrimSpace(version))
	if m == nil {
		return version
	}
	return m[1]
}

// ParseRelease reads "X.Y" or "X.Y.Z" (a leading "v" is accepted).
func ParseRelease(s string) (Release, bool, error) {
	parts := strings.Split(strings.TrimPrefix(strings.TrimSpace(s), "v"), ".")
	if len(parts) < 2 || len(parts) > 3 {
		return Release{}, false, fmt.Errorf("vLLM version %q: give X.Y or X.Y.Z, one of the lines %s", s, KnownLines())
	}
	var n [3]int
	for i, p := range parts {
		v, err := strconv.Atoi(p)
		if err != nil || v < 0 {
			return Release{}, false, fmt.Errorf("vLLM version %q: give X.Y or X.Y.Z, one of the lines %s", s, KnownLines())
		}
		n[i] = v
	}
	return Release{n[0], n[1], n[2]}, len(parts) == 3, nil
}

// Lookup selects a profile. version "" means the representative release
// of eng's default line (V0: 0.5.4, V1: 0.8.5); eng "" means the
// release's default engine. "X.Y" picks the line's representative patch
// release when X.Y is that line's, else X.Y.0.
func Lookup(version string, eng engine.Version) (Profile, error) {
	if version == "" {
		switch eng {
		case "", engine.V1:
			version = "0.8.5"
		case engine.V0:
			version = "0.5.4"
		default:
			return Profile{}, fmt.Errorf("engine %q is unknown; use v0 or v1", eng)
		}
	}
	rel, full, err := ParseRelease(version)
	if err != nil {
		return Profile{}, err
	}
	for _, l := range lines {
		// The open-ended line holds the releases after it of the same
		// major version: a 1.0 or a 9.9 is no release anyone profiled.
		if rel.less(l.First) || rel.Major > l.First.Major || l.Through > 0 && rel.Minor > l.Through {
			continue
		}
		if !full && l.Representative.Major == rel.Major && l.Representative.Minor == rel.Minor {
			rel = l.Representative
		}
		if eng == "" {
			eng = l.DefaultEngine
			if l.Name == "0.7-0.10" && rel.Minor < 8 && rel.Major == 0 {
				eng = engine.V0 // V1 became the default in 0.8.0
			}
		}
		ep, ok := l.Engines[eng]
		patchSwitches(rel, &ep)
		if !ok {
			return Profile{}, fmt.Errorf("vLLM %s has no %s engine (line %s supports %s)", rel, strings.ToUpper(string(eng)), l.Name, engineList(l))
		}
		mem := memoryAccountingOf(rel, ep.Engine)
		return Profile{Release: rel, Line: l.Name, EngineProfile: ep, Memory: mem,
			SamplerKernels: samplerKernelsOf(mem.SamplerMeasuredAt, ep.Engine)}, nil
	}
	return Profile{}, fmt.Errorf("vLLM version %s is not modelled; known release lines: %s", rel, KnownLines())
}

func engineList(l Line) string {
	var out []string
	for _, v := range []engine.Version{engine.V0, engine.V1} {
		if _, ok := l.Engines[v]; ok {
			out = append(out, strings.ToUpper(string(v)))
		}
	}
	return strings.Join(out, " and ")
}

func memoryAccountingOf(rel Release, e engine.Version) MemoryAccounting {
	m := memoryRules[0]
	for _, r := range memoryRules {
		if !rel.less(r.Since) {
			m = r
		}
	}
	if e != engine.V0 {
		m.NVLSCommunicators = 0
	}
	for _, r := range samplerRules {
		if r.engine == e && !rel.less(r.since) {
			m.SamplerPeak, m.SamplerMeasuredAt = samplerPeakOf(r.measuredAt, e), r.measuredAt
			if len(r.peak.Rows) > 0 {
				m.SamplerPeak = r.peak
			}
		}
	}
	return m
}

// samplerKernelsOf is the measured sampler time of a vLLM tree
// (hosttime_measured.go); the table holds every tree samplerRules names
// (TestSamplerRules).
func samplerKernelsOf(tree string, e engine.Version) perf.SamplerKernels {
	for _, k := range samplerKernels {
		if k.Release == tree && k.Engine == string(e) {
			return k.Kernels
		}
	}
	return perf.SamplerKernels{}
}

// samplerPeakOf is the measured sampler peak of a vLLM tree
// (hosttime_measured.go); the table holds every tree samplerRules names
// (TestSamplerRules).
func samplerPeakOf(tree string, e engine.Version) perf.SamplerPeak {
	for _, p := range samplerPeaks {
		if p.Release == tree && p.Engine == string(e) {
			return p.Peak
		}
	}
	return perf.SamplerPeak{}
}
