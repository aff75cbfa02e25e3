package runspec

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/servebench/servebench/engine"
	"github.com/servebench/servebench/perf"
	"github.com/servebench/servebench/vllm"
)

// Defaults for the engine flags when the user gives no model or GPU.
const (
	DefaultModel = "Qwen/Qwen2.5-7B-Instruct"
	DefaultGPU   = "H100"
)

// Engine is `vllm serve`'s flags for everything the engine and step
// models cover, shared by sim and serve. Zero numeric values mean "vLLM's
// default for this release and GPU" (see Resolve).
type Engine struct {
	Model                 string
	GPU                   string
	EngineVersion         string
	VLLMVersion           string
	MaxModelLen           int
	MaxNumSeqs            int
	MaxNumBatchedTokens   int
	BlockSize             int
	GPUMemoryUtilization  float64
	SwapSpace             float64
	EnableChunkedPrefill  bool
	EnablePrefixCaching   bool
	NoEnablePrefixCaching bool
	PreemptionMode        string
	SchedulerDelayFactor  float64
	TensorParallel        int
	PipelineParallel      int
	Link                  string
	Nodes                 int
	NodeLink              string
	Executor              string
	EnforceEager          bool
	// MaxSeqLenToCapture is --max-seq-len-to-capture (0: vLLM's 8192).
	MaxSeqLenToCapture int
	KVCacheDType       string
	// Quantization is --quantization: fp8 quantizes an unquantized
	// checkpoint as it loads; other methods must match the checkpoint's.
	Quantization       string
	LegacyRequeueOrder bool
	ExpertParallel     bool
	NumSchedulerSteps  int
	HostOverhead       bool
	// HostSpeed is --host-speed: the server CPU's speed relative to the
	// default host (vllm.Options.HostSpeed).
	HostSpeed              float64
	DisableAsyncOutputProc bool
	// DisableFrontendMultiprocessing is --disable-frontend-multiprocessing
	// (vllm.Options.DisableFrontendMultiprocessing).
	DisableFrontendMultiprocessing bool
	// FlashInferSampler is --flashinfer-sampler: V1's sampler runs
	// FlashInfer's top-k/top-p kernel (vllm.Options.FlashInferSampler).
	FlashInferSampler bool
	// DeepGEMM is --deep-gemm: auto, on or off (vllm.Options.DeepGEMM).
	DeepGEMM string
	// ColdStart is --cold-start: the server's Triton cache starts empty
	// (vllm.Options.ColdStart).
	ColdStart bool
	// MultiStepStreamOutputs is --multi-step-stream-outputs (V0 from
	// 0.6.2; the release's default when unset).
	MultiStepStreamOutputs bool
	// AsyncScheduling and NoAsyncScheduling are --async-scheduling and
	// --no-async-scheduling (V1, vLLM ≥ 0.10); neither keeps the
	// release's default.
	AsyncScheduling, NoAsyncScheduling bool
	// Calibration is --calibration: a file written by servebench calibrate.
	Calibration string
	// Offline is no flag: sim --throughput sets it, as vLLM's throughput
	// benchmark runs the LLM class without the OpenAI server
	// (vllm.Options.Offline).
	Offline bool
}

// Register adds the engine flags to fs.
func (e *Engine) Register(fs *pflag.FlagSet) {
	fs.StringVar(&e.Model, "model", DefaultModel, "model: a Hugging Face id found in the local HF cache (HF_HUB_CACHE, HF_HOME, ~/.cache/huggingface/hub; never downloaded), a catalog name ("+strings.Join(perf.Models(), ", ")+"), or the path to an HF config.json or its directory")
	fs.StringVar(&e.GPU, "gpu", DefaultGPU, "GPU: a catalog name ("+strings.Join(perf.GPUs(), ", ")+") or the path to a GPU YAML file")
	fs.StringVar(&e.EngineVersion, "engine", string(engine.V1), "vLLM engine generation to model: v0 or v1; without --vllm-version, shorthand for 0.5.4 (v0) or 0.8.5 (v1)")
	fs.StringVar(&e.VLLMVersion, "vllm-version", "", "vLLM release X.Y[.Z] to emulate: its defaults, flags, validation, scheduler switches and host overhead (lines "+vllm.KnownLines()+"; default: from --engine)")
	fs.IntVar(&e.NumSchedulerSteps, "num-scheduler-steps", 0, "multi-step scheduling: schedule once per this many steps (V0, vLLM ≥ 0.5.5; default 1)")
	fs.BoolVar(&e.DisableAsyncOutputProc, "disable-async-output-proc", false, "V0, vLLM ≥ 0.6: process outputs on the engine's critical path instead of overlapping them with the next step")
	fs.BoolVar(&e.DisableFrontendMultiprocessing, "disable-frontend-multiprocessing", false, "V0, vLLM ≥ 0.5.4: run the OpenAI server in the engine's process, its work between the engine's steps as in 0.5.0-0.5.3 (V1 ignores it with a warning, as vLLM does)")
	fs.BoolVar(&e.MultiStepStreamOutputs, "multi-step-stream-outputs", false, "V0, vLLM ≥ 0.6.2, with --num-scheduler-steps: hand every step's tokens to the client as it is processed (=false: each group's tokens together at its end) (default: on from 0.6.3)")
	fs.BoolVar(&e.AsyncScheduling, "async-scheduling", false, "V1, vLLM ≥ 0.10: schedule the next step while the GPU runs this one (default: on from 0.14 without pipeline parallelism)")
	fs.BoolVar(&e.NoAsyncScheduling, "no-async-scheduling", false, "V1, vLLM ≥ 0.10: schedule each step after the previous one ends (turns off 0.14's default)")
	fs.BoolVar(&e.HostOverhead, "host-overhead", true, "model the release's CPU work (scheduling, output processing, API server) and how it overlaps the GPU; false times steps by the GPU roofline alone")
	fs.BoolVar(&e.FlashInferSampler, "flashinfer-sampler", false, "V1 on NVIDIA GPUs: the server's sampler runs FlashInfer's top-k/top-p kernel (vLLM 0.7-0.11.0 with FlashInfer installed, as vLLM's and GPUStack's docker images have it; VLLM_USE_FLASHINFER_SAMPLER=1 later), so the profile run's sampler holds 14 bytes per logits cell instead of the sort's ~38 and the KV cache gets the difference (from vLLM 0.18.0 the native sampler sorts nothing and holds 14 too)")
	fs.StringVar(&e.DeepGEMM, "deep-gemm", "auto", "block-wise FP8 checkpoints (DeepSeek-V3/R1, Qwen3 -FP8) on Hopper: on runs their linear layers on DeepGEMM (VLLM_USE_DEEP_GEMM=1 with deep_gemm installed, as vLLM's docker images have it), off on vLLM's CUTLASS blockwise kernel, 1.56× the per-tensor FP8 time (pip installs without deep_gemm, or VLLM_USE_DEEP_GEMM=0); auto: off before vLLM 0.11.0, on from it")
	fs.BoolVar(&e.ColdStart, "cold-start", false, "MoE models on Triton's fused-MoE kernel: the server starts with an empty Triton cache (a fresh container without ~/.triton kept), so a step that first needs a kernel variant startup did not compile (its batch size's tuned tile, and whether M×top-k and the padded buffer are multiples of 16) waits about 1.8 s for it (two kernels at 0.88 s each, over --host-speed); default: a warm cache")
	fs.Float64Var(&e.HostSpeed, "host-speed", 1, "server CPU speed relative to the default host (the server CPUs behind the published A100/H100 runs): 2 halves every host-overhead term, 0.5 doubles it")
	fs.IntVar(&e.MaxModelLen, "max-model-len", 0, "model context length (default: derived from the model config)")
	fs.IntVar(&e.MaxNumSeqs, "max-num-seqs", 0, "maximum number of sequences per iteration (default: 256; v1 on GPUs with ≥70 GiB: 1024)")
	fs.IntVar(&e.MaxNumBatchedTokens, "max-num-batched-tokens", 0, "maximum number of batched tokens per iteration (default: vLLM's for the engine version and GPU)")
	fs.IntVar(&e.BlockSize, "block-size", 16, "token block size for contiguous chunks of tokens (v0: 8, 16, 32; v1 also 64, 128)")
	fs.Float64Var(&e.GPUMemoryUtilization, "gpu-memory-utilization", 0.9, "fraction of GPU memory used for the model executor, in (0, 1]")
	fs.Float64Var(&e.SwapSpace, "swap-space", 4, "CPU swap space size (GiB) per GPU (v0)")
	fs.BoolVar(&e.EnableChunkedPrefill, "enable-chunked-prefill", false, "chunk prefill requests by max_num_batched_tokens (v0 default: on only when max_model_len > 32768; v1: always on)")
	fs.BoolVar(&e.EnablePrefixCaching, "enable-prefix-caching", false, "enable automatic prefix caching (default: on for v1, off for v0)")
	fs.BoolVar(&e.NoEnablePrefixCaching, "no-enable-prefix-caching", false, "disable automatic prefix caching")
	fs.StringVar(&e.PreemptionMode, "preemption-mode", "", "preemption by recompute or swap (swap needs --engine v0; default: recompute for single-sequence requests)")
	fs.Float64Var(&e.SchedulerDelayFactor, "scheduler-delay-factor", 0, "delay the next prompt by factor × the previous prompt latency (v0)")
	fs.IntVar(&e.TensorParallel, "tensor-parallel-size", 1, "number of tensor parallel GPUs (also -tp)")
	fs.IntVar(&e.PipelineParallel, "pipeline-parallel-size", 1, "number of pipeline parallel stages (also -pp)")
	fs.StringVar(&e.Link, "link", "", "interconnect for tensor/pipeline parallel traffic (within a node when --nodes > 1): "+strings.Join(perf.Links(), ", ")+", optionally with :key=value overrides as --node-link (default: nvlink when the GPU has it, else pcie)")
	fs.IntVar(&e.Nodes, "nodes", 1, "machines the tensor×pipeline-parallel ranks run on, filled as vLLM/Ray do: TP ranks contiguous, so TP stays inside a node when it fits and PP stages go across nodes; only cross-node traffic pays --node-link")
	fs.StringVar(&e.NodeLink, "node-link", "", "network between nodes for NCCL: a preset ("+strings.Join(perf.Links(), ", ")+") optionally followed by :key=value overrides (bandwidth=200Gb/s, latency=40us, algo=auto|ring|tree, nics=N); default "+perf.DefaultNodeLink+" (NET/Socket) when --nodes > 1")
	fs.StringVar(&e.Executor, "distributed-executor-backend", "", "how vLLM drives its GPU workers: ray, mp or uni (default as vLLM: uni for one GPU, ray across nodes, else mp); Ray adds per-step host cost")
	fs.BoolVar(&e.EnforceEager, "enforce-eager", false, "always use eager-mode PyTorch (no CUDA graphs: slower steps, more KV memory)")
	fs.IntVar(&e.MaxSeqLenToCapture, "max-seq-len-to-capture", 0, "v0: decode steps with a longer sequence run without CUDA graphs (default 8192, capped at max_model_len)")
	fs.StringVar(&e.KVCacheDType, "kv-cache-dtype", "auto", "KV cache data type: auto, fp8, fp8_e4m3, fp8_e5m2")
	fs.StringVarP(&e.Quantization, "quantization", "q", "", "weight quantization: fp8 quantizes an unquantized checkpoint as it loads (W8A8 on GPUs with FP8 units, FP8 Marlin on the others); gptq, awq or fp8 must match a quantized checkpoint's own, and gptq or awq named explicitly runs the pre-Marlin kernel (ExLlamaV2, AutoAWQ GEMM) as vLLM does; gptq_marlin and awq_marlin name Marlin (default: the checkpoint's config.json, on Marlin)")
	fs.BoolVar(&e.ExpertParallel, "enable-expert-parallel", false, "MoE models: place whole experts on the tensor-parallel GPUs (EP size = TP) instead of slicing each expert")
	fs.StringVar(&e.Calibration, "calibration", "", "calibration YAML written by servebench calibrate for this model and GPU: scales the step-time model to measured runs")
	fs.BoolVar(&e.LegacyRequeueOrder, "legacy-requeue-order", false, "v0 chunked prefill: vLLM ≤0.5.4's running-queue order (new prefills first), before PR #7874 (default: on for 0.5.4 and 0.5.5, where PR #6867 introduced it)")
	// vLLM's -tp / -pp are two-letter single-dash flags pflag cannot
	// express; CLIArgs rewrites them to these hidden long forms.
	fs.IntVar(&e.TensorParallel, "tp", 1, "")
	fs.IntVar(&e.PipelineParallel, "pp", 1, "")
	_ = fs.MarkHidden("tp")
	_ = fs.MarkHidden("pp")
}

// ResolvedEngine is an engine spec resolved through the release's rules:
// the deployment, capacity, engine configuration and step model, and the
// calibration applied to them.
type ResolvedEngine struct {
	*vllm.Resolved
	Calibration *perf.Calibration
}

// check is the engine's part of the validator: the flags as command-line
// values (signs, typed zeros, argparse choices, the release), without
// reading the model, GPU or calibration files.
func (e *Engine) check(changed func(string) bool) (vllm.Profile, error) {
	var version engine.Version
	if changed("engine") || e.VLLMVersion == "" {
		version = engine.Version(strings.ToLower(e.EngineVersion))
		if version != engine.V0 && version != engine.V1 {
			return vllm.Profile{}, vllm.InvalidChoice("engine", "'"+e.EngineVersion+"'", []string{"'v0'", "'v1'"})
		}
	}
	profile, err := vllm.Lookup(e.VLLMVersion, version)
	if err != nil {
		return profile, fmt.Errorf("--vllm-version: %w", err)
	}
	if e.TensorParallel < 1 || e.PipelineParallel < 1 {
		return profile, fmt.Errorf("--tensor-parallel-size (%d) and --pipeline-parallel-size (%d) must be at least 1", e.TensorParallel, e.PipelineParallel)
	}
	// 0 is how these fields say "vLLM's default", so a 0 the user typed
	// would silently become the default; vLLM rejects it.
	for _, v := range []struct {
		name string
		n    int
	}{{"max-model-len", e.MaxModelLen}, {"max-num-seqs", e.MaxNumSeqs}, {"max-num-batched-tokens", e.MaxNumBatchedTokens}, {"num-scheduler-steps", e.NumSchedulerSteps}, {"max-seq-len-to-capture", e.MaxSeqLenToCapture}} {
		if v.n < 0 || (v.n == 0 && changed(v.name)) {
			return profile, fmt.Errorf("--%s %d: must be at least 1; leave it unset for vLLM's default", v.name, v.n)
		}
	}
	if u := e.GPUMemoryUtilization; !(u > 0 && u <= 1) {
		return profile, fmt.Errorf("--gpu-memory-utilization %g: %s; vLLM's default is 0.9", u, perf.GPUMemoryUtilizationRange)
	}
	if e.SwapSpace < 0 {
		return profile, fmt.Errorf("--swap-space (%g) must be 0 or more GiB; vLLM's default is 4", e.SwapSpace)
	}
	if e.AsyncScheduling && e.NoAsyncScheduling {
		return profile, fmt.Errorf("--async-scheduling and --no-async-scheduling: give one of them, or neither for the release's default")
	}
	if e.SchedulerDelayFactor < 0 {
		return profile, fmt.Errorf("--scheduler-delay-factor (%g) must not be negative", e.SchedulerDelayFactor)
	}
	if !(e.HostSpeed > 0 && e.HostSpeed <= 100) {
		return profile, fmt.Errorf("--host-speed %g: give a positive factor relative to the default host CPU (1; 2 is twice as fast), at most 100", e.HostSpeed)
	}
	if e.Nodes < 1 {
		return profile, fmt.Errorf("--nodes %d: give at least 1 machine", e.Nodes)
	}
	if e.NodeLink != "" && e.Nodes <= 1 && changed("node-link") {
		return profile, fmt.Errorf("--node-link %s needs --nodes 2 or more; within one node, --link sets the GPU interconnect", e.NodeLink)
	}
	return profile, nil
}

// options is what the flags say to vLLM's resolver, links parsed.
func (e *Engine) options(changed func(string) bool, allowLong bool) (vllm.Options, error) {
	o := vllm.Options{
		ModelID:        e.Model,
		TensorParallel: e.TensorParallel, PipelineParallel: e.PipelineParallel,
		MaxModelLen: e.MaxModelLen, MaxNumSeqs: e.MaxNumSeqs, MaxNumBatchedTokens: e.MaxNumBatchedTokens,
		BlockSize: e.BlockSize, GPUMemoryUtilization: e.GPUMemoryUtilization,
		PreemptionMode: e.PreemptionMode, SchedulerDelayFactor: e.SchedulerDelayFactor,
		EnforceEager: e.EnforceEager, MaxSeqLenToCapture: e.MaxSeqLenToCapture, KVCacheDType: e.KVCacheDType,
		Quantization:   e.Quantization,
		ExpertParallel: e.ExpertParallel, AllowLongMaxModelLen: allowLong,
		NumSchedulerSteps: e.NumSchedulerSteps, NoHostOverhead: !e.HostOverhead,
		HostSpeed:                      e.HostSpeed,
		DisableAsyncOutputProc:         e.DisableAsyncOutputProc,
		DisableFrontendMultiprocessing: e.DisableFrontendMultiprocessing,
		FlashInferSampler:              e.FlashInferSampler,
		DeepGEMM:                       e.DeepGEMM,
		ColdStart:                      e.ColdStart,
		Nodes:                          e.Nodes, DistributedExecutorBackend: e.Executor,
		Offline: e.Offline,
	}
	if changed("swap-space") {
		v := e.SwapSpace
		o.SwapSpaceGiB = &v
	}
	if changed("enable-chunked-prefill") {
		v := e.EnableChunkedPrefill
		o.EnableChunkedPrefill = &v
	}
	if changed("enable-prefix-caching") {
		v := e.EnablePrefixCaching
		o.EnablePrefixCaching = &v
	}
	if changed("no-enable-prefix-caching") && e.NoEnablePrefixCaching {
		off := false
		o.EnablePrefixCaching = &off
	}
	switch {
	case changed("no-async-scheduling") && e.NoAsyncScheduling:
		off := false
		o.AsyncScheduling = &off
	case changed("async-scheduling"):
		v := e.AsyncScheduling
		o.AsyncScheduling = &v
	}
	if changed("legacy-requeue-order") {
		v := e.LegacyRequeueOrder
		o.LegacyRequeueOrder = &v
	}
	if changed("multi-step-stream-outputs") {
		v := e.MultiStepStreamOutputs
		o.MultiStepStreamOutputs = &v
	}
	var err error
	if e.Link != "" {
		if o.Link, err = perf.ParseLink(e.Link, "link"); err != nil {
			return o, err
		}
	}
	if e.NodeLink != "" {
		if o.NodeLink, err = perf.ParseLink(e.NodeLink, "node_link"); err != nil {
			return o, err
		}
	}
	return o, nil
}

// Resolve checks the flags, looks up the model (the catalog, a config
// file, or the local Hugging Face cache), the GPU and the calibration,
// and hands everything else to vllm.Resolve: the release's defaults,
// validation texts, capacity and step model.
func (e *Engine) Resolve(ctx context.Context, changed func(string) bool, env Env) (*ResolvedEngine, error) {
	r, err := e.resolve(ctx, changed, env)
	return r, FlagNames(err)
}

func (e *Engine) resolve(ctx context.Context, changed func(string) bool, env Env) (*ResolvedEngine, error) {
	profile, err := e.check(changed)
	if err != nil {
		return nil, err
	}
	allowLong, err := env.allowLongMaxModelLen()
	if err != nil {
		return nil, err
	}
	model, err := perf.LookupModelInCache(e.Model, env.HF.CacheDirs())
	if err != nil {
		return nil, fmt.Errorf("--model: %w", err)
	}
	if model, err = model.WithQuantization(e.Quantization); err != nil {
		return nil, fmt.Errorf("--quantization: %w", err)
	}
	gpu, err := LookupGPU(e.GPU)
	if err != nil {
		return nil, err
	}
	cal, err := e.loadCalibration(gpu, model)
	if err != nil {
		return nil, err
	}
	if cal != nil {
		gpu = cal.Parameters.ApplyGPU(gpu)
	}
	o, err := e.options(changed, allowLong)
	if err != nil {
		return nil, err
	}
	r, err := vllm.Resolve(ctx, profile, model, gpu, o)
	var optErr *vllm.OptionError
	if errors.As(err, &optErr) {
		return nil, fmt.Errorf("--%s: %s", strings.ReplaceAll(optErr.Option, "_", "-"), optErr.Msg)
	}
	if err != nil {
		if r != nil {
			err = withTensorParallelFlag(err, r.Deployment.MaxModelLen)
		}
		return nil, err
	}
	if cal != nil {
		r.StepModel = cal.Parameters.WrapStepModel(r.StepModel)
	}
	return &ResolvedEngine{Resolved: r, Calibration: cal}, nil
}

// loadCalibration reads --calibration and checks it was fitted for this
// model on this GPU: a calibration fitted elsewhere would scale the step
// model by another deployment's errors.
func (e *Engine) loadCalibration(gpu perf.GPU, model perf.Model) (*perf.Calibration, error) {
	if e.Calibration == "" {
		return nil, nil
	}
	data, err := os.ReadFile(e.Calibration)
	if err != nil {
		return nil, fmt.Errorf("--calibration: %w", err)
	}
	if isBenchmarkResult(data) {
		return nil, fmt.Errorf("--calibration %s is a benchmark result, not a calibration: fit one with servebench calibrate %s -o calibration.yaml and pass that", e.Calibration, e.Calibration)
	}
	c, err := perf.ParseCalibration(data, e.Calibration)
	if err != nil {
		return nil, fmt.Errorf("--calibration: %w", err)
	}
	if !c.MatchesGPU(gpu) {
		return nil, fmt.Errorf("--calibration %s was fitted on %s, not %s; calibrate runs from this GPU or pass --gpu %s", e.Calibration, c.GPU, gpu.Name, c.GPU)
	}
	if !sameModel(c.Model, model.Name) {
		return nil, fmt.Errorf("--calibration %s was fitted on model %s, not %s; calibrate runs of this model or pass --model %s", e.Calibration, c.Model, model.Name, c.Model)
	}
	return c, nil
}

// sameModel compares model names as the catalog and calibrate write
// them: a Hugging Face id's organisation and letter case do not matter.
func sameModel(a, b string) bool {
	base := func(s string) string {
		if i := strings.LastIndex(s, "/"); i >= 0 {
			s = s[i+1:]
		}
		return strings.ToLower(strings.TrimSpace(s))
	}
	return base(a) == base(b)
}

// isBenchmarkResult tells a saved result JSON (servebench's or vLLM's)
// from a calibration file.
func isBenchmarkResult(data []byte) bool {
	var m map[string]any
	if json.Unmarshal(data, &m) != nil {
		return false
	}
	for _, key := range []string{"completed", "request_throughput", "num_prompts", "duration"} {
		if _, ok := m[key]; ok {
			return true
		}
	}
	return false
}

// LookupGPU accepts a catalog name or a path to a GPU YAML file.
func LookupGPU(nameOrPath string) (perf.GPU, error) {
	if _, err := os.Stat(nameOrPath); err == nil {
		return perf.LoadGPUFile(nameOrPath)
	}
	lower := strings.ToLower(nameOrPath)
	if strings.HasSuffix(lower, ".yaml") || strings.HasSuffix(lower, ".yml") {
		return perf.GPU{}, fmt.Errorf("GPU file %s: no such file; pass a catalog GPU name (%s) or the path to an existing YAML file", nameOrPath, strings.Join(perf.GPUs(), ", "))
	}
	return perf.LookupGPU(nameOrPath)
}

// withTensorParallelFlag restates perf's tensor_parallel_size advice as
// the flag to type.
func withTensorParallelFlag(err error, maxModelLen int) error {
	var se *perf.StartupError
	if !errors.As(err, &se) || se.Reason != perf.ReasonWeightsExceedGPU {
		return err
	}
	base := strings.TrimSuffix(se.Message, se.Advice)
	if se.SuggestedTensorParallel == 0 {
		return fmt.Errorf("%s No -tp up to 64 fits at --max-model-len %d: add -pp, lower --max-model-len, or use a quantized checkpoint", base, maxModelLen)
	}
	return fmt.Errorf("%s Use -tp %d, the smallest tensor parallel size that fits at --max-model-len %d, or a quantized checkpoint", base, se.SuggestedTensorParallel, maxModelLen)
}

// allowLongMaxModelLen reads VLLM_ALLOW_LONG_MAX_MODEL_LEN as vLLM does
// (an integer, non-zero means allowed); "true"/"false" are accepted too.
func (env Env) allowLongMaxModelLen() (bool, error) {
	const name = "VLLM_ALLOW_LONG_MAX_MODEL_LEN"
	v := strings.TrimSpace(env.AllowLongMaxModelLen)
	if v == "" {
		return false, nil
	}
	if n, err := strconv.Atoi(v); err == nil {
		return n != 0, nil
	}
	if b, err := strconv.ParseBool(v); err == nil {
		return b, nil
	}
	return false, fmt.Errorf("%s=%q: set it to 1 to allow a --max-model-len above the model's, or 0", name, v)
}

// ResolveTokenizer turns a --tokenizer given as a Hugging Face id
// ("Qwen/Qwen2.5-7B-Instruct") into the tokenizer.json of its snapshot in
// the local hub cache, as vLLM would find it offline. Paths that exist,
// URLs, "server" and built-in names pass through unchanged; nothing is
// downloaded.
func (env Env) ResolveTokenizer(spec string) (string, error) {
	if spec == "" || strings.Contains(spec, "://") || strings.Count(spec, "/") != 1 {
		return spec, nil
	}
	if _, err := os.Stat(spec); err == nil {
		return spec, nil
	}
	path, err := perf.FindHFFile(spec, env.HF.CacheDirs(), "tokenizer.json")
	if err != nil {
		return "", fmt.Errorf("--tokenizer %q is neither a file nor a model in the local Hugging Face cache (pass a tokenizer.json path): %w", spec, err)
	}
	return path, nil
}

// IsEngineFlag reports whether --name is one of the engine flags (what
// sim and serve model of `vllm serve`).
func IsEngineFlag(name string) bool {
	fs := newFlagSet("engine")
	new(Engine).Register(fs)
	return fs.Lookup(name) != nil
}

// engineFlagTakesValue reports whether the engine flag --name takes a
// value (not a boolean).
func engineFlagTakesValue(name string) bool {
	fs := newFlagSet("engine")
	new(Engine).Register(fs)
	f := fs.Lookup(name)
	return f != nil && f.Value.Type() != "bool"
}

// SplitEngineArgs separates `vllm serve`'s engine flags (for sim and the
// emulated server) from the rest (the workload, for sim and bench) in a
// command line. --model goes to both: bench names the served model with
// it.
func SplitEngineArgs(args []string) (engineArgs, rest []string) {
	args = CLIArgs(args)
	for i := 0; i < len(args); i++ {
		a := args[i]
		name, _, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !strings.HasPrefix(a, "--") || !IsEngineFlag(name) {
			rest = append(rest, a)
			continue
		}
		group := []string{a}
		if !hasValue && engineFlagTakesValue(name) && i+1 < len(args) {
			group = append(group, args[i+1])
			i++
		}
		engineArgs = append(engineArgs, group...)
		if name == "model" {
			rest = append(rest, group...)
		}
	}
	return engineArgs, rest
}

// CopyWorkload gives s from's workload section, flags given included.
func (s *Spec) CopyWorkload(from *Spec) {
	w := from.Clone().Workload
	s.Workload = w
	fs := newFlagSet("workload")
	new(Workload).Register(fs)
	fs.VisitAll(func(f *pflag.Flag) {
		if from.set[f.Name] {
			s.markSet(f.Name)
		}
	})
}
