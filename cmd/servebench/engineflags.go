package main

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/servebench/servebench/engine"
	"github.com/servebench/servebench/perf"
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
	enforceEager         bool
	kvCacheDType         string
	legacyRequeueOrder   bool
	expertParallel       bool
}

func (f *engineFlags) register(fs *pflag.FlagSet) {
	f.fs = fs
	fs.StringVar(&f.model, "model", defaultEngineModel, "model: a Hugging Face id found in the local HF cache (HF_HUB_CACHE, HF_HOME, ~/.cache/huggingface/hub; never downloaded), a catalog name ("+strings.Join(perf.Models(), ", ")+"), or the path to an HF config.json or its directory")
	fs.StringVar(&f.gpu, "gpu", defaultEngineGPU, "GPU: a catalog name ("+strings.Join(perf.GPUs(), ", ")+") or the path to a GPU YAML file")
	fs.StringVar(&f.engineVersion, "engine", string(engine.V1), "vLLM engine generation to model: v0 (0.5/0.6 scheduler) or v1 (0.8+)")
	fs.IntVar(&f.maxModelLen, "max-model-len", 0, "model context length (default: derived from the model config)")
	fs.IntVar(&f.maxNumSeqs, "max-num-seqs", 0, "maximum number of sequences per iteration (default: 256; v1 on GPUs with ≥70 GiB: 1024)")
	fs.IntVar(&f.maxNumBatchedTokens, "max-num-batched-tokens", 0, "maximum number of batched tokens per iteration (default: vLLM's for the engine version and GPU)")
	fs.IntVar(&f.blockSize, "block-size", 16, "token block size for contiguous chunks of tokens (v0: 8, 16, 32; v1 also 64, 128)")
	fs.Float64Var(&f.gpuMemoryUtilization, "gpu-memory-utilization", 0.9, "fraction of GPU memory used for the model executor")
	fs.Float64Var(&f.swapSpace, "swap-space", 4, "CPU swap space size (GiB) per GPU (v0)")
	fs.BoolVar(&f.enableChunkedPrefill, "enable-chunked-prefill", false, "chunk prefill requests by max_num_batched_tokens (v0 default: on only when max_model_len > 32768; v1: always on)")
	fs.BoolVar(&f.enablePrefixCaching, "enable-prefix-caching", false, "enable automatic prefix caching (default: on for v1, off for v0)")
	fs.BoolVar(&f.noPrefixCaching, "no-enable-prefix-caching", false, "disable automatic prefix caching")
	fs.StringVar(&f.preemptionMode, "preemption-mode", "", "preemption by recompute or swap (swap needs --engine v0; default: recompute for single-sequence requests)")
	fs.Float64Var(&f.schedulerDelayFactor, "scheduler-delay-factor", 0, "delay the next prompt by factor × the previous prompt latency (v0)")
	fs.IntVar(&f.tensorParallel, "tensor-parallel-size", 1, "number of tensor parallel GPUs (also -tp)")
	fs.IntVar(&f.pipelineParallel, "pipeline-parallel-size", 1, "number of pipeline parallel stages (also -pp)")
	fs.StringVar(&f.link, "link", "", "interconnect for tensor/pipeline parallel traffic: "+strings.Join(perf.Links(), ", ")+" (default: nvlink when the GPU has it, else pcie)")
	fs.BoolVar(&f.enforceEager, "enforce-eager", false, "always use eager-mode PyTorch (no CUDA graphs: slower steps, more KV memory)")
	fs.StringVar(&f.kvCacheDType, "kv-cache-dtype", "auto", "KV cache data type: auto, fp8, fp8_e4m3, fp8_e5m2")
	fs.BoolVar(&f.expertParallel, "enable-expert-parallel", false, "MoE models: place whole experts on the tensor-parallel GPUs (EP size = TP) instead of slicing each expert")
	fs.BoolVar(&f.legacyRequeueOrder, "legacy-requeue-order", false, "v0 chunked prefill: vLLM ≤0.5.4's running-queue order (new prefills first), before PR #7874")
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

// argparse-style choice error, as `vllm serve` prints it.
func invalidChoice(flag, value string, choices []string) error {
	return fmt.Errorf("argument --%s: invalid choice: %s (choose from %s)", flag, value, strings.Join(choices, ", "))
}

// build resolves vLLM's defaults for the chosen engine version and GPU and
// checks the configuration in vLLM's order: argument choices, model and
// cache config (perf.Deployment.Resolve), the scheduler config
// (engine.Config.Validate), then the memory profile (perf.Deployment.Capacity).
// Errors carry vLLM's texts.
func (f *engineFlags) build() (perf.Deployment, perf.Capacity, engine.Config, perf.StepModel, error) {
	fail := func(err error) (perf.Deployment, perf.Capacity, engine.Config, perf.StepModel, error) {
		return perf.Deployment{}, perf.Capacity{}, engine.Config{}, nil, err
	}
	version := engine.Version(strings.ToLower(f.engineVersion))
	if version != engine.V0 && version != engine.V1 {
		return fail(invalidChoice("engine", "'"+f.engineVersion+"'", []string{"'v0'", "'v1'"}))
	}
	blockChoices := []int{8, 16, 32}
	if version == engine.V1 {
		blockChoices = append(blockChoices, 64, 128)
	}
	if !slices.Contains(blockChoices, f.blockSize) {
		names := make([]string, len(blockChoices))
		for i, c := range blockChoices {
			names[i] = strconv.Itoa(c)
		}
		return fail(invalidChoice("block-size", strconv.Itoa(f.blockSize), names))
	}
	kvChoices := []string{"auto", "fp8", "fp8_e4m3", "fp8_e5m2"}
	if !slices.Contains(kvChoices, f.kvCacheDType) {
		return fail(invalidChoice("kv-cache-dtype", "'"+f.kvCacheDType+"'", quoteAll(kvChoices)))
	}
	if f.tensorParallel < 1 || f.pipelineParallel < 1 {
		return fail(fmt.Errorf("--tensor-parallel-size (%d) and --pipeline-parallel-size (%d) must be at least 1", f.tensorParallel, f.pipelineParallel))
	}
	// 0 is how these fields say "vLLM's default", so a 0 the user typed
	// would silently become the default; vLLM rejects it.
	for _, v := range []struct {
		name string
		n    int
	}{{"max-model-len", f.maxModelLen}, {"max-num-seqs", f.maxNumSeqs}, {"max-num-batched-tokens", f.maxNumBatchedTokens}} {
		if v.n < 0 || (v.n == 0 && f.changed(v.name)) {
			return fail(fmt.Errorf("--%s %d: must be at least 1; leave it unset for vLLM's default", v.name, v.n))
		}
	}
	if u := f.gpuMemoryUtilization; !(u > 0 && u <= 1) {
		return fail(fmt.Errorf("--gpu-memory-utilization %g: %s; vLLM's default is 0.9", u, perf.GPUMemoryUtilizationRange))
	}
	preemptionChoices := []string{"recompute", "swap"}
	if f.preemptionMode != "" && !slices.Contains(preemptionChoices, f.preemptionMode) {
		return fail(invalidChoice("preemption-mode", "'"+f.preemptionMode+"'", quoteAll(preemptionChoices)))
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
	d := perf.Deployment{
		Model: model, GPU: gpu,
		TensorParallel: f.tensorParallel, PipelineParallel: f.pipelineParallel,
		KVCacheDType: f.kvCacheDType, EnforceEager: f.enforceEager,
		GPUMemoryUtilization: f.gpuMemoryUtilization, SwapSpaceGiB: f.swapSpace,
		BlockSize: f.blockSize, MaxNumBatchedTokens: f.maxNumBatchedTokens,
		MaxNumSeqs: f.maxNumSeqs, MaxModelLen: f.maxModelLen, EngineVersion: string(version),
		ExpertParallel: f.expertParallel, AllowLongMaxModelLen: allowLong,
	}
	if version == engine.V1 {
		d.SwapSpaceGiB = 0 // V1 has no swap space
	}
	if f.link != "" {
		if d.Link, err = perf.LookupLink(f.link); err != nil {
			return fail(err)
		}
	}
	resolved, err := d.Resolve()
	if err != nil {
		return fail(err)
	}

	chunked := true // V1 always chunks, whatever the flag says, as vLLM 0.8+
	if version == engine.V0 {
		chunked = resolved.MaxModelLen > 32768
		if f.changed("enable-chunked-prefill") {
			chunked = f.enableChunkedPrefill
		}
		if chunked && f.maxNumBatchedTokens == 0 {
			// vLLM 0.5.4's default budget once chunked prefill is on.
			d.MaxNumBatchedTokens = 512
		}
	}
	prefixCaching := version == engine.V1
	if f.changed("enable-prefix-caching") {
		prefixCaching = f.enablePrefixCaching
	}
	if f.changed("no-enable-prefix-caching") && f.noPrefixCaching {
		prefixCaching = false
	}
	var mode engine.PreemptionMode
	switch f.preemptionMode {
	case "swap":
		mode = engine.PreemptSwap
	case "recompute":
		mode = engine.PreemptRecompute
	}
	if resolved, err = d.Resolve(); err != nil {
		return fail(err)
	}
	ec := engine.Config{
		Version:              version,
		BlockSize:            resolved.BlockSize,
		NumGPUBlocks:         1, // placeholder until the memory profile below
		MaxNumSeqs:           resolved.MaxNumSeqs,
		MaxNumBatchedTokens:  resolved.MaxNumBatchedTokens,
		MaxModelLen:          resolved.MaxModelLen,
		EnableChunkedPrefill: chunked,
		EnablePrefixCaching:  prefixCaching,
		PreemptionMode:       mode,
		SchedulerDelayFactor: f.schedulerDelayFactor,
		LegacyRequeueOrder:   f.legacyRequeueOrder,
	}
	if version == engine.V0 {
		ec.Watermark = 0.01
	}
	if err := ec.Validate(); err != nil {
		return fail(err)
	}
	capacity, err := resolved.Capacity()
	if err != nil {
		return fail(withTensorParallelFlag(err, resolved.MaxModelLen))
	}
	ec.NumGPUBlocks, ec.NumCPUBlocks = capacity.GPUBlocks, capacity.CPUBlocks
	if err := ec.Validate(); err != nil {
		return fail(err)
	}
	stepModel, err := perf.NewRoofline(resolved)
	if err != nil {
		return fail(err)
	}
	return resolved, capacity, ec, stepModel, nil
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

func quoteAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = "'" + s + "'"
	}
	return out
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
