package vllm

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/servebench/servebench/engine"
	"github.com/servebench/servebench/perf"
)

// Options are `vllm serve`'s engine flags as the user gave them. Zero
// values and nil pointers mean "the release's default".
type Options struct {
	// ModelID is the model as the user named it (a Hugging Face id, or a
	// path to its config.json or directory): the catalog may serve many
	// ids from one architecture, but the chat template vLLM 0.11.0 parses
	// on every chat request is the checkpoint's own (chatprep.go).
	ModelID                          string
	TensorParallel, PipelineParallel int
	Link                             perf.Link // zero: NVLink when the GPU has it, else PCIe
	MaxModelLen                      int
	MaxNumSeqs                       int
	MaxNumBatchedTokens              int
	BlockSize                        int
	GPUMemoryUtilization             float64
	SwapSpaceGiB                     *float64
	EnableChunkedPrefill             *bool
	EnablePrefixCaching              *bool
	PreemptionMode                   string
	SchedulerDelayFactor             float64
	EnforceEager                     bool
	MaxSeqLenToCapture               int // 0: vLLM's 8192
	KVCacheDType                     string
	// Quantization is --quantization as given: "gptq" or "awq" named
	// explicitly keeps a checkpoint vLLM would convert to Marlin on its
	// older kernel (kernelPolicy). The model passed to Resolve already
	// carries the method (perf.Model.WithQuantization).
	Quantization       string
	LegacyRequeueOrder *bool
	NumSchedulerSteps  int
	// DisableAsyncOutputProc is --disable-async-output-proc (0.6+ V0).
	DisableAsyncOutputProc bool
	// DisableFrontendMultiprocessing is
	// --disable-frontend-multiprocessing (V0 from 0.5.4): the OpenAI
	// server runs in the engine's process. V1 ignores it, as vLLM does.
	DisableFrontendMultiprocessing bool
	// MultiStepStreamOutputs is --multi-step-stream-outputs (V0 from
	// 0.6.2); nil keeps the release's default (on from 0.6.3).
	MultiStepStreamOutputs *bool
	// AsyncScheduling is --async-scheduling (true) or
	// --no-async-scheduling (false), V1 from 0.10.0; nil keeps the
	// release's default (on from 0.14.0 without pipeline parallelism).
	AsyncScheduling *bool
	ExpertParallel  bool
	// AllowLongMaxModelLen is VLLM_ALLOW_LONG_MAX_MODEL_LEN=1, read by
	// the caller.
	AllowLongMaxModelLen bool
	// Nodes spreads the ranks over machines, NodeLink connects them
	// (perf.Deployment.Placement); DistributedExecutorBackend is
	// --distributed-executor-backend ("": vLLM's default).
	Nodes                      int
	NodeLink                   perf.Link
	DistributedExecutorBackend string
	// NoHostOverhead times steps by the GPU alone (the roofline's own
	// fixed CPU cost included), as servebench did before host modelling.
	NoHostOverhead bool
	// NoKernelTables times the GPU by the roofline alone, as servebench
	// did before measured kernel tables (perf.Deployment.NoKernelTables).
	NoKernelTables bool
	// Offline runs the engine as vLLM's LLM class does (the throughput
	// and latency benchmarks): no OpenAI server, so no HTTP, SSE or
	// per-request API work (HostOverhead's API terms are dropped); the
	// engine and, on V1, the output processor run as in serving.
	Offline bool
	// HostSpeed is the server CPU's single-thread speed relative to the
	// default host machine (doc.go, "Host speed"): 2 halves every host
	// term. 0 means 1.
	HostSpeed float64
	// FlashInferSampler: V1's sampler runs FlashInfer's top-k/top-p
	// kernel (doc.go, "Memory profile"), so the profile run's sampler
	// peaks at flashInferSamplerPeak instead of the release's sort.
	FlashInferSampler bool
	// DeepGEMM is whether a block-wise FP8 checkpoint's linear layers run
	// DeepGEMM on Hopper ("on": VLLM_USE_DEEP_GEMM=1 with deep_gemm
	// installed) or vLLM's CUTLASS blockwise kernel ("off": the variable
	// at 0, or a pip install without deep_gemm); "" or "auto" is the
	// release's default (kernels.go, blockFP8CUTLASSBefore).
	DeepGEMM string
	// ColdStart: the server starts with an empty Triton cache and
	// compiles its fused-MoE kernel as steps first need each variant
	// (coldstart.go; Resolved.ColdStart).
	ColdStart bool
}

// Resolved is everything sim and serve need to run one vLLM release.
type Resolved struct {
	Profile    Profile
	Deployment perf.Deployment
	Capacity   perf.Capacity
	Engine     engine.Config
	// StepModel times steps: the GPU roofline plus the release's host
	// work (a *HostStepModel unless Options.NoHostOverhead).
	StepModel perf.StepModel
	// StatsInterval is the release's stats-line cadence.
	StatsInterval time.Duration
	// SchedulerSteps is --num-scheduler-steps (1 when unset): V0's
	// multi-step scheduling runs that many decode steps per schedule and
	// streams their tokens together (sim.Config.SchedulerSteps).
	SchedulerSteps int
	// Ingest and Delivery are the OpenAI server's per-request latencies
	// on this host (HostOverhead.Ingest, Delivery; zero offline or
	// without host overhead), for sim.Config.
	Ingest, Delivery time.Duration
	// IngestSpacing is the OpenAI server's event-loop work per completions
	// request (HostOverhead.APIPerRequest on this host; zero offline or
	// without host overhead): the loop handles requests in turn, so the
	// engine gets a burst's requests at least this far apart, in the
	// order sent, for sim.Config.IngestSpacing.
	IngestSpacing time.Duration
	// ChatPrepare is the OpenAI server's event-loop time per chat request
	// before the request is handed on (chatCosts, on this host; zero
	// offline or without host overhead), for sim.Config.ChatPrepare.
	ChatPrepare time.Duration
	// ChatIngest is the chat request's latency beyond Ingest that holds
	// no other request back (chatCosts, on this host; zero offline or
	// without host overhead), for sim.Config.ChatIngest.
	ChatIngest time.Duration
	// ChatTemplateParse is the part of ChatPrepare that vLLM 0.11.0 spends
	// parsing the chat template (zero on other releases), and ChatTemplate
	// the measured template it charges ("" where the model's was not
	// measured; chatprep.go), for ChatTemplateLines.
	ChatTemplateParse time.Duration
	ChatTemplate      string
	// AsyncOutputLag: V0's async output processing (0.6–0.10, unless
	// --disable-async-output-proc) hands a step's outputs to the client
	// one step late (sim.Config.AsyncOutputLag, serve.Config.AsyncOutputLag).
	AsyncOutputLag bool
	// MultiStepStream: with multi-step groups and async output
	// processing, every step's tokens go out when it is processed rather
	// than at the group's end (--multi-step-stream-outputs;
	// sim.Config.MultiStepStream).
	MultiStepStream bool
	// ColdStart is what the server compiles while it serves, with
	// Options.ColdStart (nil: nothing, or a warm cache); each simulated
	// server process takes its own NewCache.
	ColdStart *ColdStart
	// Executor is the distributed executor backend; ExecutorDefaulted
	// says vLLM chose it (DistributedLines).
	Executor          ExecutorBackend
	ExecutorDefaulted bool
	// FrontendFlagIgnored: --disable-frontend-multiprocessing on the V1
	// engine, which vLLM warns about and ignores (StartupLines).
	FrontendFlagIgnored bool
}

// Resolve turns (release profile, model, GPU, user flags) into the engine
// configuration, KV capacity and step model, checking in vLLM's order:
// argument choices, model and cache config, scheduler config, then the
// memory profile. Errors carry vLLM's texts where vLLM has one. When the
// memory profile fails, the partly filled Resolved is returned with the
// error.
func Resolve(ctx context.Context, p Profile, model perf.Model, gpu perf.GPU, o Options) (*Resolved, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := checkChoices(p, o); err != nil {
		return nil, err
	}
	if err := checkFlashInferSampler(p, gpu, o); err != nil {
		return nil, err
	}
	if err := checkDeepGEMM(p, o); err != nil {
		return nil, err
	}
	executor, executorDefaulted, err := resolveExecutor(p, o.DistributedExecutorBackend,
		max(o.TensorParallel, 1)*max(o.PipelineParallel, 1), o.Nodes)
	if err != nil {
		return nil, err
	}
	d := deploymentFor(p, model, gpu, o)
	// Resolve once without a token budget to learn max_model_len, which the
	// V0 defaults depend on.
	probe, err := d.Resolve()
	if err != nil {
		return nil, err
	}
	chunked := budgetDefaults(&d, p, gpu, o, probe.MaxModelLen)
	resolved, err := d.Resolve()
	if err != nil {
		return nil, err
	}

	ec := engineConfig(p, o, resolved, chunked)
	// The scheduler config is checked before the memory profile, as vLLM
	// builds SchedulerConfig before it starts the workers.
	if err := ec.Validate(); err != nil {
		return nil, err
	}
	capacity, err := resolved.Capacity()
	if err != nil {
		// The resolved limits let the caller phrase advice (max_model_len).
		return &Resolved{Profile: p, Deployment: resolved, Capacity: capacity, Engine: ec}, err
	}
	ec.NumGPUBlocks, ec.NumCPUBlocks = capacity.GPUBlocks, capacity.CPUBlocks
	roof, err := perf.NewRoofline(resolved)
	if err != nil {
		return nil, err
	}
	step, server := hostStep(p, o, roof, executor)
	var cold *ColdStart
	if o.ColdStart {
		host := p.Host
		host.Speed = o.HostSpeed
		cold = coldStart(resolved, roof, host)
	}
	return &Resolved{ColdStart: cold, Profile: p, Deployment: resolved, Capacity: capacity, Engine: ec,
		StepModel: step, StatsInterval: p.Defaults.StatsInterval, SchedulerSteps: max(o.NumSchedulerSteps, 1),
		Ingest: server.ingest, Delivery: server.delivery, IngestSpacing: server.spacing,
		ChatPrepare: server.chat.prepare, ChatIngest: server.chat.ingest,
		ChatTemplateParse: server.chat.templateParse, ChatTemplate: server.chat.template,
		AsyncOutputLag:  p.Engine == engine.V0 && p.Scheduler.AsyncOutputProc && !o.DisableAsyncOutputProc,
		MultiStepStream: multiStepStream(p, o),
		Executor:        executor, ExecutorDefaulted: executorDefaulted,
		FrontendFlagIgnored: o.DisableFrontendMultiprocessing && p.Engine == engine.V1}, nil
}

// multiStepStream is whether multi-step groups stream every step: the
// flag where given, else the release's default.
func multiStepStream(p Profile, o Options) bool {
	if o.MultiStepStreamOutputs != nil {
		return *o.MultiStepStreamOutputs
	}
	return p.Scheduler.MultiStepStreamDefault
}

// deploymentFor is the deployment the flags and the release's defaults
// give, before the token budget and sequence limit are settled.
func deploymentFor(p Profile, model perf.Model, gpu perf.GPU, o Options) perf.Deployment {
	if model.IsMLA() && expandsMLA(p.Release, p.Engine == engine.V1) {
		model.MLA.Expanded = true
	}
	d := perf.Deployment{
		Model: model, GPU: gpu, Link: o.Link, Nodes: o.Nodes, NodeLink: o.NodeLink,
		TensorParallel: max(o.TensorParallel, 1), PipelineParallel: max(o.PipelineParallel, 1),
		KVCacheDType: o.KVCacheDType, EnforceEager: o.EnforceEager, MaxSeqLenToCapture: o.MaxSeqLenToCapture,
		V0GraphsUpToMaxSeqs:  !p.Release.less(v0LargeGraphsSince),
		V1GraphsByMaxSeqs:    !p.Release.less(v1GraphsByMaxSeqsSince),
		V1FullDecodeGraphs:   !p.Release.less(v1FullDecodeGraphsSince),
		GPUMemoryUtilization: o.GPUMemoryUtilization, SwapSpaceGiB: p.Defaults.SwapSpaceGiB,
		BlockSize: o.BlockSize, MaxNumSeqs: o.MaxNumSeqs, MaxModelLen: o.MaxModelLen,
		EngineVersion:  string(p.Engine),
		ExpertParallel: o.ExpertParallel, AllowLongMaxModelLen: o.AllowLongMaxModelLen,
		Kernels: kernelPolicy(p.Release, p.Engine == engine.V1, o.Quantization, o.DeepGEMM), NoKernelTables: o.NoKernelTables,
	}
	if d.BlockSize == 0 {
		d.BlockSize = p.Defaults.BlockSize
	}
	d.NonTorchBytes = int64(p.Memory.NonTorchGiB * gibibyte)
	d.NonTorchMultiGPUBytes = int64(p.Memory.NonTorchMultiGPUGiB * gibibyte)
	d.NVLSCommunicators = p.Memory.NVLSCommunicators
	d.FusedMoESeparateCaches = p.Release.less(fusedMoESharedCacheSince)
	d.SamplerPeak = p.Memory.SamplerPeak
	if o.FlashInferSampler {
		d.SamplerPeak = flashInferSamplerPeak
	}
	d.SamplerKernels = p.SamplerKernels
	if p.Engine == engine.V0 {
		d.StepInputBroadcasts = v0StepInputTensors
	}
	if o.SwapSpaceGiB != nil && p.Engine == engine.V0 {
		d.SwapSpaceGiB = *o.SwapSpaceGiB
	}
	return d
}

// budgetDefaults settles chunked prefill and fills the token budget and
// sequence limit the flags left at vLLM's defaults, which depend on the
// engine, the GPU's memory and (V0) max_model_len.
func budgetDefaults(d *perf.Deployment, p Profile, gpu perf.GPU, o Options, maxModelLen int) (chunked bool) {
	large := p.Defaults.LargeGPU.large(gpu)
	chunked = true // V1 always chunks, whatever the flag says
	if p.Engine == engine.V0 {
		chunked = p.Defaults.AutoChunkAbove > 0 && maxModelLen > p.Defaults.AutoChunkAbove
		if o.EnableChunkedPrefill != nil {
			chunked = *o.EnableChunkedPrefill
		}
	}
	d.MaxNumBatchedTokens = o.MaxNumBatchedTokens
	if d.MaxNumBatchedTokens == 0 {
		switch {
		case p.Engine == engine.V1:
			d.MaxNumBatchedTokens = p.Defaults.v1TokenBudget(large, o.Offline)
		case chunked:
			d.MaxNumBatchedTokens = p.Defaults.ChunkedBudget
		default:
			d.MaxNumBatchedTokens = max(maxModelLen, 2048)
		}
	}
	if d.MaxNumSeqs == 0 {
		d.MaxNumSeqs = p.Defaults.MaxNumSeqs
		if large || p.Defaults.LargeSeqsOnEveryGPU {
			d.MaxNumSeqs = p.Defaults.MaxNumSeqsLargeGPU
		}
	}
	return chunked
}

// engineConfig is the scheduler's configuration for the resolved
// deployment; NumGPUBlocks waits for the memory profile.
func engineConfig(p Profile, o Options, resolved perf.Deployment, chunked bool) engine.Config {
	prefixCaching := p.Defaults.PrefixCaching
	if o.EnablePrefixCaching != nil {
		prefixCaching = *o.EnablePrefixCaching
	}
	var mode engine.PreemptionMode
	switch o.PreemptionMode {
	case "":
	case "swap":
		mode = engine.PreemptSwap
	default:
		mode = engine.PreemptRecompute
	}
	legacy := p.Scheduler.LegacyRequeueOrder
	if o.LegacyRequeueOrder != nil {
		legacy = *o.LegacyRequeueOrder
	}
	return engine.Config{
		Version:              p.Engine,
		BlockSize:            resolved.BlockSize,
		NumGPUBlocks:         1, // placeholder until Resolve's memory profile
		MaxNumSeqs:           resolved.MaxNumSeqs,
		MaxNumBatchedTokens:  resolved.MaxNumBatchedTokens,
		MaxModelLen:          resolved.MaxModelLen,
		EnableChunkedPrefill: chunked,
		EnablePrefixCaching:  prefixCaching,
		PreemptionMode:       mode,
		SchedulerDelayFactor: o.SchedulerDelayFactor,
		LegacyRequeueOrder:   legacy,
		Watermark:            p.Defaults.Watermark,
		PipelineParallel:     resolved.PipelineParallel,
	}
}

// serverCosts are the OpenAI server's per-request latencies, the spacing
// its one event loop puts between the requests it hands on, and the chat
// path's costs, on this host (Resolved's fields of those names).
type serverCosts struct {
	ingest, delivery, spacing time.Duration
	chat                      chatCost
}

// hostStep wraps the roofline in the release's host work (none with
// Options.NoHostOverhead), and gives the OpenAI server's per-request costs
// on this host.
func hostStep(p Profile, o Options, roof *perf.Roofline, executor ExecutorBackend) (step perf.StepModel, server serverCosts) {
	step = roof
	if !o.NoHostOverhead {
		host := p.Host
		if o.DisableAsyncOutputProc {
			host.Overlap = OverlapSeparateAPI
		}
		if o.DisableFrontendMultiprocessing && p.Engine == engine.V0 {
			host.Overlap = host.Overlap.inEngineProcess()
		}
		if asyncScheduling(p, o) {
			host.Overlap = OverlapAsyncScheduling
		}
		host.SchedFixed += executorStepCost(p, executor, max(o.TensorParallel, 1))
		host.Speed = o.HostSpeed
		if o.Offline {
			host = host.offline()
		}
		step = NewHostStepModel(roof, host, o.NumSchedulerSteps)
		server.ingest, server.delivery = host.scaled(host.Ingest), host.scaled(host.Delivery)
		if !o.Offline {
			server.spacing = host.scaled(host.APIPerRequest)
			server.chat = chatCosts(p.Release, o.ModelID).onHost(host)
		}
	}
	return step, server
}

// asyncScheduling reports whether the engine core schedules one step
// ahead: --async-scheduling or --no-async-scheduling where given, else the
// release's default, which pipeline parallelism turns off.
func asyncScheduling(p Profile, o Options) bool {
	if o.AsyncScheduling != nil {
		return *o.AsyncScheduling && p.Scheduler.AsyncScheduling
	}
	return p.Scheduler.AsyncSchedulingDefault && max(o.PipelineParallel, 1) == 1
}

// checkChoices applies argparse's choices and the checks vLLM makes on
// single flags before it builds any config.
func checkChoices(p Profile, o Options) error {
	if o.BlockSize != 0 && !slices.Contains(p.BlockSizes, o.BlockSize) {
		names := make([]string, len(p.BlockSizes))
		for i, c := range p.BlockSizes {
			names[i] = strconv.Itoa(c)
		}
		return InvalidChoice("block-size", strconv.Itoa(o.BlockSize), names)
	}
	kvChoices := []string{"auto", "fp8", "fp8_e4m3", "fp8_e5m2"}
	if o.KVCacheDType != "" && !slices.Contains(kvChoices, o.KVCacheDType) {
		return InvalidChoice("kv-cache-dtype", "'"+o.KVCacheDType+"'", quoteAll(kvChoices))
	}
	if o.PreemptionMode != "" && !slices.Contains(p.PreemptionModes, o.PreemptionMode) {
		return InvalidChoice("preemption-mode", "'"+o.PreemptionMode+"'", quoteAll(p.PreemptionModes))
	}
	if o.TensorParallel < 0 || o.PipelineParallel < 0 {
		return optionError("tensor_parallel_size", "tensor_parallel_size (%d) and pipeline_parallel_size (%d) must be at least 1", o.TensorParallel, o.PipelineParallel)
	}
	for _, v := range []struct {
		name string
		n    int
	}{{"max_model_len", o.MaxModelLen}, {"max_num_seqs", o.MaxNumSeqs}, {"max_num_batched_tokens", o.MaxNumBatchedTokens}} {
		if v.n < 0 {
			return optionError(v.name, "%s (%d) must be positive, or left unset for vLLM's default", v.name, v.n)
		}
	}
	if o.GPUMemoryUtilization < 0 {
		return optionError("gpu_memory_utilization", "gpu_memory_utilization (%g) must be a fraction in (0, 1]; vLLM's default is 0.9", o.GPUMemoryUtilization)
	}
	if o.SwapSpaceGiB != nil && *o.SwapSpaceGiB < 0 {
		return optionError("swap_space", "swap_space (%g) must be 0 or more GiB; vLLM's default is 4", *o.SwapSpaceGiB)
	}
	if o.SchedulerDelayFactor < 0 {
		return optionError("scheduler_delay_factor", "scheduler_delay_factor (%g) must not be negative", o.SchedulerDelayFactor)
	}
	if o.HostSpeed < 0 || o.HostSpeed > 100 || math.IsNaN(o.HostSpeed) {
		return optionError("host_speed", "host_speed (%g) must be a positive factor relative to the default host CPU (1; 2 is twice as fast), at most 100", o.HostSpeed)
	}
	if o.NumSchedulerSteps < 0 {
		return optionError("num_scheduler_steps", "num_scheduler_steps (%d) must be at least 1", o.NumSchedulerSteps)
	}
	if o.MaxSeqLenToCapture < 0 {
		return optionError("max_seq_len_to_capture", "max_seq_len_to_capture (%d) must be at least 1; vLLM's default is 8192", o.MaxSeqLenToCapture)
	}
	if o.NumSchedulerSteps > 1 && !p.Scheduler.MultiStep {
		if p.Engine == engine.V1 {
			return optionError("num_scheduler_steps", "num_scheduler_steps (%d) needs the V0 engine: V1 has no multi-step scheduling", o.NumSchedulerSteps)
		}
		return optionError("num_scheduler_steps", "num_scheduler_steps (%d): vLLM %s has no multi-step scheduling; it arrived in %s (PR #7000)", o.NumSchedulerSteps, p.Release, multiStepSince)
	}
	if o.MultiStepStreamOutputs != nil && !p.Scheduler.MultiStepStream {
		if p.Engine == engine.V1 {
			return optionError("multi_step_stream_outputs", "multi_step_stream_outputs needs the V0 engine: V1 has no multi-step scheduling")
		}
		return optionError("multi_step_stream_outputs", "vLLM %s has no multi-step output streaming; it arrived in %s (PR #8335)", p.Release, multiStepStreamSince)
	}
	if o.AsyncScheduling != nil && !p.Scheduler.AsyncScheduling {
		if p.Engine != engine.V1 {
			return optionError("async_scheduling", "async scheduling needs the V1 engine: V0 has no async scheduler")
		}
		return optionError("async_scheduling", "vLLM %s has no async scheduling; it arrived in %s (PR #19970)", p.Release, asyncSchedulingSince)
	}
	if o.AsyncScheduling != nil && *o.AsyncScheduling && max(o.PipelineParallel, 1) > 1 {
		return optionError("async_scheduling", "async scheduling does not support pipeline parallelism (pipeline_parallel_size %d); drop it or run one stage", o.PipelineParallel)
	}
	if o.DisableFrontendMultiprocessing && p.Engine == engine.V0 && p.Release.less(frontendProcessSince) {
		return optionError("disable_frontend_multiprocessing", "disable_frontend_multiprocessing: vLLM %s has no such flag, its OpenAI server always runs in the engine's process; the flag arrived in %s (PR #6883)", p.Release, frontendProcessSince)
	}
	if o.DisableAsyncOutputProc && !p.Scheduler.AsyncOutputProc {
		if p.Engine == engine.V1 {
			return optionError("disable_async_output_proc", "disable_async_output_proc: the V1 engine has no async output processor to disable")
		}
		return optionError("disable_async_output_proc", "disable_async_output_proc: vLLM %s has no async output processing; it arrived in 0.6.0 (PR #7049)", p.Release)
	}
	return nil
}

// checkFlashInferSampler refuses FlashInfer's sampler where vLLM never
// runs it: V0 engines sim models (their profile samples without it) and
// AMD GPUs (FlashInfer is CUDA-only).
func checkFlashInferSampler(p Profile, gpu perf.GPU, o Options) error {
	switch {
	case !o.FlashInferSampler:
		return nil
	case p.Engine != engine.V1:
		return optionError("flashinfer_sampler", "V1's sampler only (vLLM 0.7 and later): the V0 engine's profile run sorts with PyTorch; drop the flag or use --engine v1")
	case perf.IsROCm(gpu):
		return optionError("flashinfer_sampler", "FlashInfer runs on NVIDIA GPUs only, not on the %s (ROCm); drop the flag", gpu.Name)
	}
	return nil
}

// deepGEMMChoices are --deep-gemm's values.
var deepGEMMChoices = []string{"auto", "on", "off"}

// deepGEMMSetting is a --deep-gemm value as kernelPolicy and
// checkDeepGEMM read it.
func deepGEMMSetting(v string) string { return strings.ToLower(strings.TrimSpace(v)) }

// checkDeepGEMM refuses a --deep-gemm value vLLM has no counterpart for:
// an unknown one, or DeepGEMM for linear layers before the release that
// added it (deepGEMMLinearSince).
func checkDeepGEMM(p Profile, o Options) error {
	switch deepGEMMSetting(o.DeepGEMM) {
	case "", "auto", "off":
		return nil
	case "on":
		if p.Release.less(deepGEMMLinearSince) {
			return optionError("deep_gemm", "vLLM %s runs block-FP8 linear layers without DeepGEMM (VLLM_USE_DEEP_GEMM covers them from %s); drop --deep-gemm on or pick a later --vllm-version", p.Release, deepGEMMLinearSince)
		}
		return nil
	}
	return InvalidChoice("deep-gemm", "'"+o.DeepGEMM+"'", quoteAll(deepGEMMChoices))
}

// OptionError is a single option's value that Resolve refuses; Option is
// vLLM's name for it (engine-arg spelling, such as num_scheduler_steps),
// so a CLI can name its own flag.
type OptionError struct {
	Option string
	Msg    string
}

func (e *OptionError) Error() string { return e.Msg }

func optionError(option, format string, args ...any) error {
	return &OptionError{Option: option, Msg: fmt.Sprintf(format, args...)}
}

// InvalidChoice is argparse's choice error, as `vllm serve` prints it.
func InvalidChoice(flag, value string, choices []string) error {
	return fmt.Errorf("argument --%s: invalid choice: %s (choose from %s)", flag, value, strings.Join(choices, ", "))
}

func quoteAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = "'" + s + "'"
	}
	return out
}
