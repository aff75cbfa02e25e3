package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/servebench/servebench/engine"
	"github.com/servebench/servebench/perf"
	"github.com/servebench/servebench/vllm"
	"github.com/spf13/pflag"
)

// Defaults for the engine flags when the user gives no model or GPU.
const (
	defaultEngineModel = "Qwen/Qwen2.5-7B-Instruct"
	defaultEngineGPU   = "H100"
)

// engineFlags are `vllm serve`'s flags for everything the engine and step
// models cover, shared by `serve` and `sim`. Zero numeric values mean
// "vLLM's default for this engine version and GPU" (see build).
type engineFlags struct {
	fs *pflag.FlagSet

	model                string
	gpu                  string
	engineVersion        string
	maxModelLen          int
	maxNumSeqs           int
	maxNumBatchedTokens  int
	blockSize            int
	gpuMemoryUtilization float64
	swapSpace            float64
	enableChunkedPrefill bool
	enablePrefixCaching  bool
	noPrefixCaching      bool
	preemptionMode       string
	schedulerDelayFactor float64
	tensorParallel       int
	pipelineParallel     int
	link                 string
	placement            nodeFlags
	enforceEager         bool
	kvCacheDType         string
	legacyRequeueOrder   bool
	expertParallel       bool
	vllmVersion          string
	numSchedulerSteps    int
	hostOverhead         bool
	hostSpeed            float64
	noAsyncOutputProc    bool

	// calibrationPath is --calibration; calibration is the file, loaded
	// by build (calibrate.go).
	calibrationPath string
	calibration     *perf.Calibration

	// resolved is build's full result: the release profile and memory
	// profile besides what build returns.
	resolved *vllm.Resolved
}

func (f *engineFlags) register(fs *pflag.FlagSet) {
	f.fs = fs
	fs.StringVar(&f.model, "model", defaultEngineModel, "model: a Hugging Face id found in the local HF cache (HF_HUB_CACHE, HF_HOME, ~/.cache/huggingface/hub; never downloaded), a catalog name ("+strings.Join(perf.Models(), ", ")+"), or the path to an HF config.json or its directory")
	fs.StringVar(&f.gpu, "gpu", defaultEngineGPU, "GPU: a catalog name ("+strings.Join(perf.GPUs(), ", ")+") or the path to a GPU YAML file")
	fs.StringVar(&f.engineVersion, "engine", string(engine.V1), "vLLM engine generation to model: v0 or v1; without --vllm-version, shorthand for 0.5.4 (v0) or 0.8.5 (v1)")
	fs.StringVar(&f.vllmVersion, "vllm-version", "", "vLLM release X.Y[.Z] to emulate: its defaults, flags, validation, scheduler switches and host overhead (lines "+vllm.KnownLines()+"; default: from --engine)")
	fs.IntVar(&f.numSchedulerSteps, "num-scheduler-steps", 0, "multi-step scheduling: schedule once per this many steps (V0, vLLM ≥ 0.5.5; default 1)")
	fs.BoolVar(&f.noAsyncOutputProc, "disable-async-output-proc", false, "V0, vLLM ≥ 0.6: process outputs on the engine's critical path instead of overlapping them with the next step")
	fs.BoolVar(&f.hostOverhead, "host-overhead", true, "model the release's CPU work (scheduling, output processing, API server) and how it overlaps the GPU; false times steps by the GPU roofline alone")
	fs.Float64Var(&f.hostSpeed, "host-speed", 1, "server CPU speed relative to the default host (the server CPUs behind the published A100/H100 runs): 2 halves every host-overhead term, 0.5 doubles it")
	fs.IntVar(&f.maxModelLen, "max-model-len", 0, "model context length (default: derived from the model config)")
	fs.IntVar(&f.maxNumSeqs, "max-num-seqs", 0, "maximum number of sequences per iteration (default: 256; v1 on GPUs with ≥70 GiB: 1024)")
	fs.IntVar(&f.maxNumBatchedTokens, "max-num-batched-tokens", 0, "maximum number of batched tokens per iteration (default: vLLM's for the engine version and GPU)")
	fs.IntVar(&f.blockSize, "block-size", 16, "token block size for contiguous chunks of tokens (v0: 8, 16, 32; v1 also 64, 128)")
	fs.Float64Var(&f.gpuMemoryUtilization, "gpu-memory-utilization", 0.9, "fraction of GPU memory used for the model executor, in (0, 1]")
	fs.Float64Var(&f.swapSpace, "swap-space", 4, "CPU swap space size (GiB) per GPU (v0)")
	fs.BoolVar(&f.enableChunkedPrefill, "enable-chunked-prefill", false, "chunk prefill requests by max_num_batched_tokens (v0 default: on only when max_model_len > 32768; v1: always on)")
	fs.BoolVar(&f.enablePrefixCaching, "enable-prefix-caching", false, "enable automatic prefix caching (default: on for v1, off for v0)")
	fs.BoolVar(&f.noPrefixCaching, "no-enable-prefix-caching", false, "disable automatic prefix caching")
	fs.StringVar(&f.preemptionMode, "preemption-mode", "", "preemption by recompute or swap (swap needs --engine v0; default: recompute for single-sequence requests)")
	fs.Float64Var(&f.schedulerDelayFactor, "scheduler-delay-factor", 0, "delay the next prompt by factor × the previous prompt latency (v0)")
	fs.IntVar(&f.tensorParallel, "tensor-parallel-size", 1, "number of tensor parallel GPUs (also -tp)")
	fs.IntVar(&f.pipelineParallel, "pipeline-parallel-size", 1, "number of pipeline parallel stages (also -pp)")
	fs.StringVar(&f.link, "link", "", "interconnect for tensor/pipeline parallel traffic (within a node when --nodes > 1): "+strings.Join(perf.Links(), ", ")+", optionally with :key=value overrides as --node-link (default: nvlink when the GPU has it, else pcie)")
	f.placement.register(fs)
	fs.BoolVar(&f.enforceEager, "enforce-eager", false, "always use eager-mode PyTorch (no CUDA graphs: slower steps, more KV memory)")
	fs.StringVar(&f.kvCacheDType, "kv-cache-dtype", "auto", "KV cache data type: auto, fp8, fp8_e4m3, fp8_e5m2")
	fs.BoolVar(&f.expertParallel, "enable-expert-parallel", false, "MoE models: place whole experts on the tensor-parallel GPUs (EP size = TP) instead of slicing each expert")
	fs.StringVar(&f.calibrationPath, "calibration", "", "calibration YAML written by servebench calibrate for this model and GPU: scales the step-time model to measured runs")
	fs.BoolVar(&f.legacyRequeueOrder, "legacy-requeue-order", false, "v0 chunked prefill: vLLM ≤0.5.4's running-queue order (new prefills first), before PR #7874 (default: on for 0.5.4 and 0.5.5, where PR #6867 introduced it)")
	// vLLM's -tp / -pp are two-letter single-dash flags pflag cannot
	// express; vllmArgs rewrites them to these hidden long forms.
	fs.IntVar(&f.tensorParallel, "tp", 1, "")
	fs.IntVar(&f.pipelineParallel, "pp", 1, "")
	_ = fs.MarkHidden("tp")
	_ = fs.MarkHidden("pp")
}

// vllmArgs rewrites vLLM's two-letter single-dash flags (-tp 2, -pp=2) into
// long flags pflag understands.
func vllmArgs(args []string) []string {
	out := make([]string, 0, len(args))
	for i, a := range args {
		if a == "--" {
			return append(out, args[i:]...)
		}
		for _, short := range []string{"-tp", "-pp"} {
			if a == short || strings.HasPrefix(a, short+"=") {
				a = "-" + a
				break
			}
		}
		out = append(out, a)
	}
	return out
}

func (f *engineFlags) changed(name string) bool { return f.fs != nil && f.fs.Changed(name) }

// build checks the flags as command-line values (signs, typed zeros,
// argparse choices), looks up the model and GPU, and hands everything else
// to vllm.Resolve: the release's defaults, validation texts, capacity and
// step model. The full result stays in f.resolved.
func (f *engineFlags) build() (perf.Deployment, perf.Capacity, engine.Config, perf.StepModel, error) {
	fail := func(err error) (perf.Deployment, perf.Capacity, engine.Config, perf.StepModel, error) {
		return perf.Deployment{}, perf.Capacity{}, engine.Config{}, nil, withFlagNames(err)
	}
	var version engine.Version
	if f.changed("engine") || f.vllmVersion == "" {
		version = engine.Version(strings.ToLower(f.engineVersion))
		if version != engine.V0 && version != engine.V1 {
			return fail(vllm.InvalidChoice("engine", "'"+f.engineVersion+"'", []string{"'v0'", "'v1'"}))
		}
	}
	profile, err := vllm.Lookup(f.vllmVersion, version)
	if err != nil {
		return fail(fmt.Errorf("--vllm-version: %w", err))
	}
	if f.tensorParallel < 1 || f.pipelineParallel < 1 {
		return fail(fmt.Errorf("--tensor-parallel-size (%d) and --pipeline-parallel-size (%d) must be at least 1", f.tensorParallel, f.pipelineParallel))
	}
	// 0 is how these fields say "vLLM's default", so a 0 the user typed
	// would silently become the default; vLLM rejects it.
	for _, v := range []struct {
		name string
		n    int
	}{{"max-model-len", f.maxModelLen}, {"max-num-seqs", f.maxNumSeqs}, {"max-num-batched-tokens", f.maxNumBatchedTokens}, {"num-scheduler-steps", f.numSchedulerSteps}} {
		if v.n < 0 || (v.n == 0 && f.changed(v.name)) {
			return fail(fmt.Errorf("--%s %d: must be at least 1; leave it unset for vLLM's default", v.name, v.n))
		}
	}
	if u := f.gpuMemoryUtilization; !(u > 0 && u <= 1) {
		return fail(fmt.Errorf("--gpu-memory-utilization %g: %s; vLLM's default is 0.9", u, perf.GPUMemoryUtilizationRange))
	}
	allowLong, err := allowLongMaxModelLen()
	if err != nil {
		return fail(err)
	}
	if f.swapSpace < 0 {
		return fail(fmt.Errorf("--swap-space (%g) must be 0 or more GiB; vLLM's default is 4", f.swapSpace))
	}
	if f.schedulerDelayFactor < 0 {
		return fail(fmt.Errorf("--scheduler-delay-factor (%g) must not be negative", f.schedulerDelayFactor))
	}

	model, err := perf.LookupModelInCache(f.model, hfEnv().CacheDirs())
	if err != nil {
		return fail(fmt.Errorf("--model: %w", err))
	}
	gpu, err := lookupGPU(f.gpu)
	if err != nil {
		return fail(err)
	}
	if gpu, err = f.applyCalibration(gpu); err != nil {
		return fail(err)
	}
	o := vllm.Options{
		TensorParallel: f.tensorParallel, PipelineParallel: f.pipelineParallel,
		MaxModelLen: f.maxModelLen, MaxNumSeqs: f.maxNumSeqs, MaxNumBatchedTokens: f.maxNumBatchedTokens,
		BlockSize: f.blockSize, GPUMemoryUtilization: f.gpuMemoryUtilization,
		PreemptionMode: f.preemptionMode, SchedulerDelayFactor: f.schedulerDelayFactor,
		EnforceEager: f.enforceEager, KVCacheDType: f.kvCacheDType,
		ExpertParallel: f.expertParallel, AllowLongMaxModelLen: allowLong,
		NumSchedulerSteps: f.numSchedulerSteps, NoHostOverhead: !f.hostOverhead,
		HostSpeed:              f.hostSpeed,
		DisableAsyncOutputProc: f.noAsyncOutputProc,
	}
	if f.changed("swap-space") {
		o.SwapSpaceGiB = &f.swapSpace
	}
	if f.changed("enable-chunked-prefill") {
		o.EnableChunkedPrefill = &f.enableChunkedPrefill
	}
	if f.changed("enable-prefix-caching") {
		o.EnablePrefixCaching = &f.enablePrefixCaching
	}
	if f.changed("no-enable-prefix-caching") && f.noPrefixCaching {
		off := false
		o.EnablePrefixCaching = &off
	}
	if f.changed("host-speed") && !(f.hostSpeed > 0) {
		return fail(fmt.Errorf("--host-speed %g: give a positive factor relative to the default host CPU (1; 2 is twice as fast)", f.hostSpeed))
	}
	if f.changed("legacy-requeue-order") {
		o.LegacyRequeueOrder = &f.legacyRequeueOrder
	}
	if f.link != "" {
		if o.Link, err = perf.ParseLink(f.link, "link"); err != nil {
			return fail(err)
		}
	}
	if err := f.placement.apply(f.fs, &o); err != nil {
		return fail(err)
	}
	r, err := vllm.Resolve(context.Background(), profile, model, gpu, o)
	var optErr *vllm.OptionError
	if errors.As(err, &optErr) {
		return fail(fmt.Errorf("--%s: %s", strings.ReplaceAll(optErr.Option, "_", "-"), optErr.Msg))
	}
	if err != nil {
		if r != nil {
			err = withTensorParallelFlag(err, r.Deployment.MaxModelLen)
		}
		return fail(err)
	}
	if f.calibration != nil {
		r.StepModel = f.calibration.Parameters.WrapStepModel(r.StepModel)
	}
	f.resolved = r
	return r.Deployment, r.Capacity, r.Engine, r.StepModel, nil
}

// lookupGPU accepts a catalog name or a path to a GPU YAML file.
func lookupGPU(nameOrPath string) (perf.GPU, error) {
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
func allowLongMaxModelLen() (bool, error) {
	const name = "VLLM_ALLOW_LONG_MAX_MODEL_LEN"
	v := strings.TrimSpace(os.Getenv(name))
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

// hfEnv is where the Hugging Face cache lives, from the environment.
func hfEnv() perf.HFEnv {
	home, _ := os.UserHomeDir()
	hub := os.Getenv("HF_HUB_CACHE")
	if hub == "" {
		hub = os.Getenv("HUGGINGFACE_HUB_CACHE")
	}
	return perf.HFEnv{HubCache: hub, Home: os.Getenv("HF_HOME"), XDGCacheHome: os.Getenv("XDG_CACHE_HOME"), UserHome: home}
}
