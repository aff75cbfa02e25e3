package perf

import (
	"errors"
	"fmt"
	"math"
	"strings"
)

// Deployment is one vLLM server: a model on tensor- × pipeline-parallel
// GPUs with vLLM's engine flags. Zero values mean vLLM's default
// (TP/PP 1, KVCacheDType "auto", GPUMemoryUtilization 0.9, BlockSize 16,
// MaxModelLen from the model, MaxNumBatchedTokens and MaxNumSeqs as in
// Resolve, EngineVersion "v1"), except SwapSpaceGiB, where 0 means no swap
// space: start from DefaultDeployment for vLLM's 4 GiB.
type Deployment struct {
	Model                            Model
	GPU                              GPU
	TensorParallel, PipelineParallel int
	// Link carries TP all-reduces and PP sends; the zero Link means NVLink
	// when the GPU has it, PCIe otherwise.
	Link Link
	// Nodes spreads the TP·PP ranks over this many machines (0 or 1: one
	// node); NodeLink carries the traffic between them (zero: the
	// DefaultNodeLink preset). See Placement.
	Nodes        int
	NodeLink     Link
	KVCacheDType string // "auto" | "fp8" (also fp8_e4m3, fp8_e5m2)
	EnforceEager bool
	// MaxSeqLenToCapture is V0's --max-seq-len-to-capture: longer
	// sequences decode without CUDA graphs (0: vLLM's 8192).
	MaxSeqLenToCapture int
	// V0GraphsUpToMaxSeqs: V0 replays decode batches of up to
	// max_num_seqs (padded to a captured size, at most 8192) from CUDA
	// graphs, as vLLM does from 0.6.0; before, only up to 256.
	V0GraphsUpToMaxSeqs bool
	// V1GraphsByMaxSeqs: V1 captures CUDA graphs up to
	// min(2 × max_num_seqs, 512) tokens, as vLLM does from 0.10.0;
	// before, up to 512 whatever max_num_seqs.
	V1GraphsByMaxSeqs bool
	// V1FullDecodeGraphs: V1 replays a step of decodes alone from one CUDA
	// graph of the whole forward pass (cudagraph_mode FULL_AND_PIECEWISE,
	// vLLM's default from 0.11.0); a step with prompt tokens, and every
	// step before, replays piecewise graphs with attention run eagerly
	// between them (piecewiseGapPerLayer).
	V1FullDecodeGraphs   bool
	GPUMemoryUtilization float64
	SwapSpaceGiB         float64
	BlockSize            int
	MaxNumBatchedTokens  int
	MaxNumSeqs           int
	MaxModelLen          int
	EngineVersion        string // "v0" | "v1"
	// ExpertParallel (vLLM's --enable-expert-parallel) places whole routed
	// experts on the TP ranks (EP size = TP) instead of slicing every
	// expert across them; only MoE models accept it.
	ExpertParallel bool
	// AllowLongMaxModelLen is VLLM_ALLOW_LONG_MAX_MODEL_LEN=1: a
	// MaxModelLen above the model's derived length is accepted (vLLM then
	// only warns). The caller reads the environment, not this package.
	AllowLongMaxModelLen bool
	// NonTorchBytes and NonTorchMultiGPUBytes, when positive, replace
	// perf's estimate of the non-torch memory the profile run sees on one
	// GPU and with TP·PP > 1; how vLLM counts it changed between releases
	// (package vllm sets them per release).
	NonTorchBytes, NonTorchMultiGPUBytes int64
	// FusedMoESeparateCaches: vLLM's fused MoE holds its first and last
	// intermediate caches apart (before PR #13625, vLLM 0.8.0) instead of
	// in one buffer (package vllm sets it per release); see
	// activationPeakBytes.
	FusedMoESeparateCaches bool
	// NVLSCommunicators is how many NCCL communicators span the tensor-
	// parallel group whose NVLink SHARP buffers the profile run counts as
	// non-torch memory, on GPUs with NVLinkSHARP (package vllm sets it per
	// release; 0 counts none). See NVLSBytes.
	NVLSCommunicators int
	// NoKernelTables times steps by the roofline alone, as servebench did
	// before measured kernel tables (and as GPUs without a table are).
	NoKernelTables bool
	// Kernels is the release's choice of quantized-GEMM kernels (package
	// vllm sets it); the zero value is today's vLLM.
	Kernels KernelPolicy
	// SamplerPeak is the memory the profile run's sampler peaks at, in
	// bytes per logits cell (max_num_seqs × vocab) by rows, the
	// model-dtype logits included; it differs by release (package vllm
	// sets it from vLLM's own sampler, measured on a GPU). The zero value
	// keeps perf's estimate: one fp32 copy of the logits.
	SamplerPeak SamplerPeak
	// SamplerKernels is the GPU time of the release's sampler per step,
	// by sampled rows and vocabulary (package vllm sets it from vLLM's own
	// sampler, timed on a GPU). The zero value counts no sampler time.
	SamplerKernels SamplerKernels
	// StepInputBroadcasts is how many GPU tensors the engine's driver
	// broadcasts to the rest of its TP group before every step, one NCCL
	// broadcast each (vLLM V0's broadcast_tensor_dict of the model input;
	// package vllm sets it). 0 counts none, as in V1, whose workers build
	// their own inputs from the scheduler output.
	StepInputBroadcasts int
}

// SamplerPeak is a sampler's memory peak in bytes per logits cell by the
// number of rows (sequences) it samples: linear between measured rows,
// held beyond the first and last.
type SamplerPeak struct {
	Rows         []int
	BytesPerCell []float64
}

// At is the peak in bytes per cell for rows rows; the zero SamplerPeak
// gives perf's estimate, one fp32 copy (4 bytes).
func (p SamplerPeak) At(rows int) float64 {
	n := min(len(p.Rows), len(p.BytesPerCell))
	if n == 0 {
		return defaultSamplerBytesPerCell
	}
	return linearAt(p.Rows[:n], p.BytesPerCell[:n], float64(rows))
}

// DefaultDeployment is m on one g with vLLM's defaults, including the
// 4 GiB swap space.
func DefaultDeployment(m Model, g GPU) Deployment {
	return Deployment{
		Model: m, GPU: g, TensorParallel: 1, PipelineParallel: 1,
		KVCacheDType: "auto", GPUMemoryUtilization: 0.9, SwapSpaceGiB: 4,
		BlockSize: 16, EngineVersion: "v1",
	}
}

// GPUMemoryUtilizationRange states the valid gpu_memory_utilization
// values; callers that check the flag themselves use the same words.
const GPUMemoryUtilizationRange = "GPU memory utilization must be greater than 0 and at most 1.0"

// StartupReason classifies a StartupError so that tuners can learn which
// constraint a configuration broke.
type StartupReason string

const (
	ReasonNoCacheMemory           StartupReason = "no_cache_memory"
	ReasonMaxModelLenExceedsCache StartupReason = "max_model_len_exceeds_kv_cache"
	ReasonMaxModelLenExceedsModel StartupReason = "max_model_len_exceeds_model"
	ReasonGPUMemoryUtilization    StartupReason = "gpu_memory_utilization"
	ReasonTensorParallel          StartupReason = "tensor_parallel"
	ReasonPipelineParallel        StartupReason = "pipeline_parallel"
	ReasonKVCacheDType            StartupReason = "kv_cache_dtype"
	ReasonExpertParallel          StartupReason = "expert_parallel"
	// ReasonWeightsExceedGPU: the weights alone do not fit on each GPU,
	// so only more GPUs (or a smaller checkpoint) help.
	ReasonWeightsExceedGPU StartupReason = "weights_exceed_gpu"
)

// StartupError is a configuration vLLM refuses at startup. Error() is
// vLLM's own text, so that emulated logs and HTTP errors read like vLLM's.
type StartupError struct {
	Reason  StartupReason
	Message string
	// SuggestedTensorParallel is, for ReasonWeightsExceedGPU, the smallest
	// tensor_parallel_size at which the deployment starts (0: none up to
	// 64), and Advice the sentence ending Message that says so; a CLI can
	// replace it with its own flag names.
	SuggestedTensorParallel int
	Advice                  string
}

func (e *StartupError) Error() string { return e.Message }

func startupError(r StartupReason, format string, args ...any) error {
	return &StartupError{Reason: r, Message: fmt.Sprintf(format, args...)}
}

const (
	// vLLM 0.8.5's EngineArgs pick larger batches on GPUs with ≥ 70 GiB.
	largeGPUBytes = 70 * gib
	// V0 enables chunked prefill by itself above this max_model_len.
	autoChunkedPrefillLen = 32768
)

// Resolve fills vLLM's defaults and checks what vLLM checks before it
// profiles memory: parallel sizes against the model, kv-cache dtype,
// gpu_memory_utilization and max_model_len. It does not apply V0's
// scheduler checks (max_num_batched_tokens vs max_model_len and
// max_num_seqs) because those depend on chunked prefill, an engine flag.
//
// Defaults when zero: MaxModelLen = the model's derived length;
// MaxNumBatchedTokens: V1 8192 on GPUs with ≥ 70 GiB else 2048 (0.8.5's
// API-server values), V0 512 when MaxModelLen > 32768 (chunked prefill
// turns on) else max(MaxModelLen, 2048); MaxNumSeqs: V1 1024 on ≥ 70 GiB
// else 256, V0 256. A caller that enables V0 chunked prefill below 32K
// must set MaxNumBatchedTokens itself (vLLM 0.5.4's default there is 512).
func (d Deployment) Resolve() (Deployment, error) {
	steps := []func() error{
		d.checkModelAndGPU,
		d.resolveEngineVersion,
		d.resolveParallelism,
		d.resolveCacheSettings,
		d.resolveMaxModelLen,
		d.resolveBatchLimits,
		d.resolveLinks,
	}
	for _, step := range steps {
		if err := step(); err != nil {
			return d, err
		}
	}
	return d, nil
}

// checkModelAndGPU refuses a deployment whose model or GPU was never set
// (or is malformed) before anything is derived from them.
func (d *Deployment) checkModelAndGPU() error {
	m := d.Model
	if m.Layers == 0 {
		return fmt.Errorf("perf: deployment has no model; set Deployment.Model (from LookupModel)")
	}
	if err := m.validate(); err != nil {
		return fmt.Errorf("perf: model %s: %w", m.Name, err)
	}
	if d.GPU.MemoryBytes <= 0 || d.GPU.MemoryBandwidth <= 0 || d.GPU.BF16FLOPS <= 0 {
		return fmt.Errorf("perf: deployment has no GPU (or one with zero memory, bandwidth or FLOP/s); set Deployment.GPU (from LookupGPU or LoadGPUFile)")
	}
	return nil
}

// resolveEngineVersion defaults the engine to V1 and normalises its case,
// since later defaults and checks branch on it.
func (d *Deployment) resolveEngineVersion() error {
	switch v := strings.ToLower(d.EngineVersion); v {
	case "":
		d.EngineVersion = "v1"
	case "v0", "v1":
		d.EngineVersion = v
	default:
		return fmt.Errorf("perf: engine version %q is unknown; use v0 or v1", d.EngineVersion)
	}
	return nil
}

// resolveParallelism defaults TP and PP to 1 and checks them (and expert
// parallelism) against the model's heads, KV heads, layers and experts.
func (d *Deployment) resolveParallelism() error {
	m := d.Model
	if d.TensorParallel == 0 {
		d.TensorParallel = 1
	}
	if d.PipelineParallel == 0 {
		d.PipelineParallel = 1
	}
	t, p := d.TensorParallel, d.PipelineParallel
	if t < 0 || t > 1024 || p < 0 || p > 1024 {
		return fmt.Errorf("perf: tensor parallel size %d and pipeline parallel size %d must be between 1 and 1024", t, p)
	}
	if m.Heads%t != 0 {
		return startupError(ReasonTensorParallel,
			"Total number of attention heads (%d) must be divisible by tensor parallel size (%d).", m.Heads, t)
	}
	if d.ExpertParallel && !m.IsMoE() {
		return startupError(ReasonExpertParallel,
			"Expert parallelism needs a mixture-of-experts model; %s is dense. Turn enable_expert_parallel off.", m.Name)
	}
	// vLLM's QKVParallelLinear splits KV heads across ranks, or replicates
	// them when there are fewer heads than ranks; either way each rank must
	// hold whole heads.
	if !m.IsMLA() && ((m.KVHeads >= t && m.KVHeads%t != 0) || (m.KVHeads < t && t%m.KVHeads != 0)) {
		return startupError(ReasonTensorParallel,
			"Total number of KV heads (%d) and tensor parallel size (%d) must divide one another so each rank holds whole KV heads.", m.KVHeads, t)
	}
	if d.EngineVersion == "v0" && m.Layers%p != 0 {
		return startupError(ReasonPipelineParallel,
			"Total number of hidden layers (%d) must be divisible by pipeline parallel size (%d).", m.Layers, p)
	}
	if p > m.Layers {
		return startupError(ReasonPipelineParallel,
			"Pipeline parallel size (%d) is larger than the number of hidden layers (%d).", p, m.Layers)
	}
	return nil
}

// resolveCacheSettings defaults and checks what sizes the KV cache: its
// dtype, gpu_memory_utilization, swap space and block size.
func (d *Deployment) resolveCacheSettings() error {
	switch kv := strings.ToLower(d.KVCacheDType); kv {
	case "", "auto":
		d.KVCacheDType = "auto"
	case "fp8", "fp8_e4m3", "fp8_e5m2":
		d.KVCacheDType = kv
	default:
		return startupError(ReasonKVCacheDType, "Unknown kv cache dtype: %s", d.KVCacheDType)
	}

	// One rule and one text for every out-of-range value: vLLM 0.8's own
	// ("must be less than 1.0", while it accepts 1.0, and nothing for
	// negatives) contradicted itself.
	switch u := d.GPUMemoryUtilization; {
	case u == 0:
		d.GPUMemoryUtilization = 0.9
	case !(u > 0 && u <= 1):
		return startupError(ReasonGPUMemoryUtilization, "%s. Got %s.", GPUMemoryUtilizationRange, pyFloat(u))
	}
	if s := d.SwapSpaceGiB; s < 0 || s > 1<<20 || math.IsNaN(s) {
		return fmt.Errorf("perf: swap space is %v GiB; give 0 or more (vLLM's default is 4)", s)
	}
	if d.BlockSize == 0 {
		d.BlockSize = 16
	}
	if d.BlockSize < 0 || d.BlockSize > 1<<16 {
		return fmt.Errorf("perf: block size %d is out of range; vLLM uses 8, 16 or 32 (16 by default)", d.BlockSize)
	}
	return nil
}

// resolveMaxModelLen defaults max_model_len to the model's derived length
// and refuses a longer one unless the model's own maximum or
// AllowLongMaxModelLen permits it, with vLLM's text.
func (d *Deployment) resolveMaxModelLen() error {
	m := d.Model
	derived := m.DerivedMaxModelLen()
	switch {
	case d.MaxModelLen < 0:
		return fmt.Errorf("perf: max_model_len is %d; give a positive length or 0 for the model's own", d.MaxModelLen)
	case d.MaxModelLen == 0:
		d.MaxModelLen = derived
	case d.MaxModelLen > derived && (m.modelMaxLength == 0 || d.MaxModelLen > m.modelMaxLength) && !d.AllowLongMaxModelLen:
		mml := "None"
		if m.modelMaxLength > 0 {
			mml = fmt.Sprint(m.modelMaxLength)
		}
		key := m.maxLenKey
		if key == "" {
			key = "max_position_embeddings"
		}
		return startupError(ReasonMaxModelLenExceedsModel,
			"User-specified max_model_len (%d) is greater than the derived max_model_len (%s=%s or model_max_length=%s in model's config.json). This may lead to incorrect model outputs or CUDA errors. To allow overriding this maximum, set the env var VLLM_ALLOW_LONG_MAX_MODEL_LEN=1",
			d.MaxModelLen, key, m.derivedMaxLenText(), mml)
	}
	return nil
}

// resolveBatchLimits defaults max_num_batched_tokens and max_num_seqs as
// the engine version picks them (Resolve's comment lists the values); it
// needs MaxModelLen resolved first.
func (d *Deployment) resolveBatchLimits() error {
	large := d.GPU.MemoryBytes >= largeGPUBytes
	if d.MaxNumBatchedTokens < 0 || d.MaxNumSeqs < 0 {
		return fmt.Errorf("perf: max_num_batched_tokens (%d) and max_num_seqs (%d) must not be negative", d.MaxNumBatchedTokens, d.MaxNumSeqs)
	}
	if d.MaxNumBatchedTokens == 0 {
		switch {
		case d.EngineVersion == "v1" && large:
			d.MaxNumBatchedTokens = 8192
		case d.EngineVersion == "v1":
			d.MaxNumBatchedTokens = 2048
		case d.MaxModelLen > autoChunkedPrefillLen:
			d.MaxNumBatchedTokens = 512
		default:
			d.MaxNumBatchedTokens = max(d.MaxModelLen, 2048)
		}
	}
	if d.MaxNumSeqs == 0 {
		d.MaxNumSeqs = 256
		if d.EngineVersion == "v1" && large {
			d.MaxNumSeqs = 1024
		}
	}
	return nil
}

// resolveLinks picks and checks the GPU link of a multi-GPU deployment and
// the node link of a multi-node one.
func (d *Deployment) resolveLinks() error {
	if d.TensorParallel*d.PipelineParallel > 1 {
		if err := d.resolveGPULink(); err != nil {
			return err
		}
	}
	if d.Nodes > 1 {
		if err := d.checkPlacement(); err != nil {
			return err
		}
		if d.NodeLink.Name == "" {
			d.NodeLink, _ = LookupLink(DefaultNodeLink)
		}
		if !(d.NodeLink.Bandwidth > 0) || d.NodeLink.Latency < 0 {
			return fmt.Errorf("perf: node link %q needs a positive bandwidth and a non-negative latency", d.NodeLink.Name)
		}
	}
	return nil
}

// resolveGPULink defaults the link between a node's GPUs to NVLink where
// the GPU has it and to PCIe through host memory otherwise, and caps its
// bandwidth at what the GPU's own ports carry.
func (d *Deployment) resolveGPULink() error {
	if d.Link.Name == "" {
		// Without NVLink, NCCL goes through host memory: cloud PCIe
		// instances expose no GPU peer-to-peer (doc.go, "Links").
		d.Link = links[4] // pcie-host
		if d.GPU.NVLinkBandwidth > 0 {
			d.Link = links[0]
		}
	}
	if d.Link.Name == "pcie" && d.GPU.PCIeBandwidth > 0 {
		// P2P over PCIe runs at the GPU's PCIe generation: 4.0 x16
		// parts 25 GB/s, 5.0 parts (H100, H200, B200) 50 (doc.go).
		d.Link.Bandwidth = d.GPU.PCIeBandwidth
	}
	if d.Link.Name == "nvlink" {
		if d.GPU.NVLinkBandwidth <= 0 {
			return fmt.Errorf("perf: GPU %s has no NVLink; use link pcie within a node, or infiniband or ethernet across nodes", d.GPU.Name)
		}
		d.Link.Bandwidth = math.Min(d.Link.Bandwidth, d.GPU.NVLinkBandwidth)
	}
	if !(d.Link.Bandwidth > 0) || d.Link.Latency < 0 {
		return fmt.Errorf("perf: link %q needs a positive bandwidth and a non-negative latency", d.Link.Name)
	}
	return nil
}

// Capacity is the KV cache vLLM allocates for a deployment, per GPU, and
// the memory accounting behind it.
type Capacity struct {
	EngineVersion string
	// GPUBlocks and CPUBlocks are vLLM's "# GPU blocks" and "# CPU blocks";
	// CPUBlocks is 0 on V1, which has no swap space.
	GPUBlocks, CPUBlocks int
	BlockSize            int
	// BlockBytes is one block on one GPU: its share of KV heads over its
	// pipeline stage's layers.
	BlockBytes int64
	// WeightBytes, ActivationBytes and NonTorchBytes are the profile-run
	// peak vLLM subtracts on the busiest GPU; KVCacheBytes what is left for
	// the cache (before rounding down to whole blocks).
	WeightBytes, ActivationBytes, NonTorchBytes, KVCacheBytes int64
	// NVLSBytes is the part of NonTorchBytes NCCL's NVLink SHARP buffers
	// take (Deployment.NVLSBytes).
	NVLSBytes int64
	// The resolved engine limits the capacity was computed for.
	MaxModelLen, MaxNumBatchedTokens, MaxNumSeqs int
}

// Tokens is the number of tokens the GPU KV cache holds:
// GPUBlocks·BlockSize, V1's "GPU KV cache size".
func (c Capacity) Tokens() int { return c.GPUBlocks * c.BlockSize }

// MaxConcurrency is how many requests of tokensPerRequest tokens fit in the
// cache at once, as vLLM logs it ("Maximum concurrency for X tokens per
// request: Y.YYx"): Tokens()/tokensPerRequest.
func (c Capacity) MaxConcurrency(tokensPerRequest int) float64 {
	if tokensPerRequest <= 0 {
		return 0
	}
	return float64(c.Tokens()) / float64(tokensPerRequest)
}

// LogLines are the startup lines vLLM prints about the cache it allocated:
// V0 "# GPU blocks: N, # CPU blocks: M" and the concurrency line; V1
// "GPU KV cache size: N tokens" and the concurrency line, numbers with
// thousands separators as V1 prints them.
func (c Capacity) LogLines() []string {
	conc := c.MaxConcurrency(c.MaxModelLen)
	if c.EngineVersion == "v0" {
		return []string{
			fmt.Sprintf("# GPU blocks: %d, # CPU blocks: %d", c.GPUBlocks, c.CPUBlocks),
			fmt.Sprintf("Maximum concurrency for %d tokens per request: %.2fx", c.MaxModelLen, conc),
		}
	}
	return []string{
		fmt.Sprintf("GPU KV cache size: %s tokens", thousands(int64(c.Tokens()))),
		fmt.Sprintf("Maximum concurrency for %s tokens per request: %.2fx", thousands(int64(c.MaxModelLen)), conc),
	}
}

// thousands formats n as Python's f"{n:,}".
func thousands(n int64) string {
	s := fmt.Sprint(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// Memory the profile run sees besides weights and activations (doc.go):
// CUDA context, cuBLAS and attention workspaces; NCCL and custom
// all-reduce buffers once there is more than one GPU.
const (
	nonTorchBytesSingleGPU = 1.25 * gib
	nonTorchBytesMultiGPU  = 3.0 * gib
)

// stageLayers is the layer count of the busiest pipeline stage.
func (d Deployment) stageLayers() int {
	return (d.Model.Layers + d.PipelineParallel - 1) / d.PipelineParallel
}

func isFP8KVCache(dtype string) bool { return strings.HasPrefix(strings.ToLower(dtype), "fp8") }

// kvBytesPerTokenPerGPU is one token's K and V (or MLA latent) on one GPU
// of the busiest stage.
func (d Deployment) kvBytesPerTokenPerGPU() int64 {
	b := int64(activationBytes)
	if isFP8KVCache(d.KVCacheDType) {
		b = 1
	}
	return int64(d.stageLayers()) * d.Model.kvElementsPerTokenLayer(d.TensorParallel) * b
}

// stageFraction is the busiest stage's share of the layers.
func (d Deployment) stageFraction() float64 {
	return float64(d.stageLayers()) / float64(d.Model.Layers)
}

// expertsPerRank is how many routed experts' worth of weights one GPU
// holds: E/t slices without expert parallelism, ceil(E/t) whole experts
// with it (the busiest rank decides).
func (d Deployment) expertsPerRank() float64 {
	e, t := d.Model.MoE.Experts, d.TensorParallel
	if d.ExpertParallel {
		return float64((e + t - 1) / t)
	}
	return float64(e) / float64(t)
}

// weightBytesPerGPU is the weights on one GPU of the busiest stage: its
// layers' linear weights split over TP ranks (routed experts as
// expertsPerRank), plus the vocab-parallel embedding and lm_head shards.
// With PP the first stage holds the embedding and the last the lm_head (a
// separate copy even when tied).
func (d Deployment) weightBytesPerGPU() int64 {
	m := d.Model
	t := float64(d.TensorParallel)
	bpp := m.linearBytesPerParam()
	stage := d.stageFraction()
	shared := m.sharedLinearBytes(stage, t)
	experts := float64(m.moeLayers()) * stage * d.expertsPerRank() * float64(m.routedExpertParams()) * bpp
	vocab := float64(m.embeddingAndHeadBytes())
	if d.PipelineParallel > 1 {
		vocab = float64(m.EmbeddingParams() * activationBytes)
	}
	return int64(math.Round(shared + experts + vocab/t))
}

// activationPeakBytes is the profile run's activation peak, the larger
// of its two phases (PyTorch's allocator peak over the run):
//   - the forward pass over max_num_batched_tokens tokens through one
//     layer: a few hidden-sized buffers and the MLP's gate/up and product
//     at the width a token passes through, or for MoE the larger of the
//     dense layers' and shared experts' and the fused MoE's caches
//     (fusedMoEWorkspaceBytes);
//   - the sampler on one row of logits per sequence (max_num_seqs rows),
//     its allocator peak (SamplerPeak, by rows), while the final
//     hidden states are still held.
func (d Deployment) activationPeakBytes() int64 {
	m := d.Model
	tokens := float64(d.MaxNumBatchedTokens)
	// The gate/up output and product of the MLPs vLLM runs as plain
	// layers: a MoE model's dense layers and shared experts.
	width := float64(m.Intermediate)
	if m.IsMoE() {
		width = float64(m.MoE.SharedIntermediate)
		if m.MoE.DenseLayers > 0 {
			width = math.Max(width, float64(m.Intermediate))
		}
	}
	mlp := tokens * activationBytes * 3 * width / float64(d.TensorParallel)
	if m.IsMoE() {
		mlp = math.Max(mlp, d.fusedMoEWorkspaceBytes(tokens))
	}
	forward := tokens*activationBytes*4*float64(m.Hidden) + mlp
	rows := min(d.MaxNumSeqs, d.MaxNumBatchedTokens)
	return int64(math.Max(forward, tokens*activationBytes*float64(m.Hidden)+float64(rows)*float64(m.Vocab)*d.SamplerPeak.At(rows)))
}

// fusedMoEChunk is the most tokens vLLM's fused MoE sizes its caches for
// (VLLM_FUSED_MOE_CHUNK_SIZE's default, 32768 [approximate: 65536 in some
// releases]); longer batches run in chunks that reuse them.
const fusedMoEChunk = 32768

// fusedMoEWorkspaceBytes is what vLLM's fused MoE (fused_experts_impl)
// allocates in one MoE layer for tokens tokens: with top-k experts, each
// rank's gate/up width N (2·I over TP, or 2·I whole under expert
// parallelism) and hidden size K, one buffer of M·k·max(N, K) serves the
// first and last caches (PR #13625, "Optimize moe intermediate_cache
// usage": cache1 is dead when cache3 is written) and M·k·N/2 holds the
// activation's output; before, cache1 (M·k·N) and cache3 (M·k·K) were two
// buffers. Fine-grained experts (N < K, as DeepSeek's and Qwen3's) make
// cache3's hidden-wide rows the peak; the shared experts' own gate/up
// comes before and is gone by then.
func (d Deployment) fusedMoEWorkspaceBytes(tokens float64) float64 {
	m := d.Model
	n := 2 * float64(m.MoE.ExpertIntermediate)
	if !d.ExpertParallel {
		n /= float64(d.TensorParallel)
	}
	k := float64(m.Hidden)
	perRoute := math.Max(n, k) + n/2
	if d.FusedMoESeparateCaches {
		perRoute = n + k + n/2
	}
	return math.Min(tokens, fusedMoEChunk) * float64(m.MoE.ExpertsPerToken) * perRoute * activationBytes
}

// defaultSamplerBytesPerCell is perf's estimate without a release: one
// fp32 copy of the logits.
const defaultSamplerBytesPerCell = 4

func (d Deployment) nonTorchBytes() int64 {
	override := d.NonTorchBytes
	if d.TensorParallel*d.PipelineParallel > 1 {
		override = d.NonTorchMultiGPUBytes
	}
	if override > 0 {
		return override
	}
	return d.runtimeBytes()
}

// NVLSBytesPerRank is the NVLS buffer NCCL 2.21 reserves on each GPU
// per rank of a communicator: its log's nvlsPerRankSize 301989888, with
// nvlsTotalSize = nvlsPerRankSize × ranks (doc.go, "NVLink SHARP buffers").
const NVLSBytesPerRank = 301989888

// NVLSBytes is the NVLink SHARP buffer memory on each GPU: per communicator
// over the TP group, nvlsPerRankSize × its ranks on the node. NCCL turns
// NVLS on only for more than two local ranks on GPUs whose NVLink switches
// multicast, and only over NVLink.
func (d Deployment) NVLSBytes() int64 {
	if d.NVLSCommunicators <= 0 || !d.GPU.NVLinkSHARP || (d.Link.Name != "" && d.Link.Name != "nvlink") {
		return 0
	}
	p := d.Placement()
	local := p.TensorParallel / max(p.TPNodes(), 1)
	if local <= 2 {
		return 0
	}
	return int64(d.NVLSCommunicators) * NVLSBytesPerRank * int64(local)
}

// maxSeqLenToCapture is the longest sequence V0 decodes from a CUDA graph:
// --max-seq-len-to-capture (8192 by default), capped at max_model_len as
// vLLM's ModelConfig does.
func (d Deployment) maxSeqLenToCapture() int {
	n := d.MaxSeqLenToCapture
	if n <= 0 {
		n = v0MaxSeqLenToCapture
	}
	if d.MaxModelLen > 0 {
		n = min(n, d.MaxModelLen)
	}
	return n
}

// runtimeBytes is perf's estimate of the memory the CUDA runtime,
// workspaces and NCCL occupy on each GPU.
func (d Deployment) runtimeBytes() int64 {
	if d.TensorParallel*d.PipelineParallel > 1 {
		return nonTorchBytesMultiGPU
	}
	return nonTorchBytesSingleGPU
}

// Capacity computes the KV cache vLLM would allocate, or the error vLLM
// would stop with. Every GPU runs the same profile, and vLLM keeps the
// smallest block count, so the busiest stage decides.
//
//	blocks = floor((memory·utilization − weights − activation peak − non-torch) / block bytes)
func (d Deployment) Capacity() (Capacity, error) {
	r, err := d.Resolve()
	if err != nil {
		return Capacity{}, err
	}
	c, err := r.capacity()
	var se *StartupError
	if errors.As(err, &se) && se.Reason == ReasonWeightsExceedGPU {
		se.SuggestedTensorParallel = r.SmallestFittingTP()
		se.Advice = r.tensorParallelAdvice(se.SuggestedTensorParallel)
		se.Message += se.Advice
	}
	return c, err
}

// maxSuggestedTP bounds the search for a tensor-parallel size that fits.
const maxSuggestedTP = 64

// SmallestFittingTP is the smallest tensor-parallel size, keeping every
// other setting, at which the deployment starts (weights, activations and
// one max_model_len request of KV cache fit on each GPU), or 0 when none up
// to 64 does.
func (d Deployment) SmallestFittingTP() int {
	for t := 1; t <= maxSuggestedTP; t++ {
		try := d
		try.TensorParallel = t
		r, err := try.Resolve()
		if err != nil {
			continue
		}
		if _, err := r.capacity(); err == nil {
			return t
		}
	}
	return 0
}

func (d Deployment) tensorParallelAdvice(t int) string {
	if t == 0 {
		return fmt.Sprintf(" No tensor_parallel_size up to %d fits at max_model_len %d; add pipeline parallelism or use a quantized checkpoint.", maxSuggestedTP, d.MaxModelLen)
	}
	return fmt.Sprintf(" Use tensor_parallel_size %d, the smallest that fits at max_model_len %d, or a quantized checkpoint.", t, d.MaxModelLen)
}

// capacity is Capacity for a resolved deployment.
func (d Deployment) capacity() (Capacity, error) {
	r := d
	nvls := r.NVLSBytes()
	c := Capacity{
		EngineVersion:       r.EngineVersion,
		BlockSize:           r.BlockSize,
		BlockBytes:          int64(r.BlockSize) * r.kvBytesPerTokenPerGPU(),
		WeightBytes:         r.weightBytesPerGPU(),
		ActivationBytes:     r.activationPeakBytes(),
		NonTorchBytes:       r.nonTorchBytes() + nvls,
		NVLSBytes:           nvls,
		MaxModelLen:         r.MaxModelLen,
		MaxNumBatchedTokens: r.MaxNumBatchedTokens,
		MaxNumSeqs:          r.MaxNumSeqs,
	}
	budget := float64(r.GPU.MemoryBytes) * r.GPUMemoryUtilization
	available := budget - float64(c.WeightBytes+c.ActivationBytes+c.NonTorchBytes)
	c.KVCacheBytes = int64(available)
	// vLLM would die loading the weights (CUDA out of memory) and its
	// cache error would advise raising gpu_memory_utilization, which cannot
	// help when the weights and the runtime's own memory exceed the GPU.
	// The runtime occupies the GPU however a release's profile counts it
	// (NonTorchBytes), so this physical check keeps perf's own estimate.
	runtime := r.runtimeBytes()
	if need := c.WeightBytes + runtime; need > r.GPU.MemoryBytes {
		per := "one"
		if n := r.TensorParallel * r.PipelineParallel; n > 1 {
			per = fmt.Sprintf("each of %d", n)
		}
		return c, startupError(ReasonWeightsExceedGPU,
			"Model weights need %.2f GiB per GPU, more than %s %s holds (%.2f GiB, of which %.2f GiB go to the CUDA runtime); raising gpu_memory_utilization cannot help.",
			float64(c.WeightBytes)/gib, per, r.GPU.Name, float64(r.GPU.MemoryBytes)/gib, float64(runtime)/gib)
	}
	blocks := math.Floor(available / float64(c.BlockBytes))

	noMemory := startupError(ReasonNoCacheMemory,
		"No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when initializing the engine.")
	if r.EngineVersion == "v0" {
		if blocks <= 0 {
			return c, noMemory
		}
		c.GPUBlocks = int(blocks)
		c.CPUBlocks = int(math.Floor(r.SwapSpaceGiB * gib / float64(c.BlockBytes)))
		if r.MaxModelLen > c.Tokens() {
			return c, startupError(ReasonMaxModelLenExceedsCache,
				"The model's max seq len (%d) is larger than the maximum number of tokens that can be stored in KV cache (%d). Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine.",
				r.MaxModelLen, c.Tokens())
		}
		return c, nil
	}

	if available <= 0 {
		return c, noMemory
	}
	blocksPerRequest := (r.MaxModelLen + r.BlockSize - 1) / r.BlockSize
	needed := float64(blocksPerRequest) * float64(c.BlockBytes)
	if needed > available {
		estimate := ""
		if fit := int64(blocks) * int64(r.BlockSize); fit > 0 {
			estimate = fmt.Sprintf(" Based on the available memory, the estimated maximum model length is %d.", fit)
		}
		return c, startupError(ReasonMaxModelLenExceedsCache,
			"To serve at least one request with the models's max seq len (%d), (%.2f GiB KV cache is needed, which is larger than the available KV cache memory (%.2f GiB).%s Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine.",
			r.MaxModelLen, needed/gib, available/gib, estimate)
	}
	c.GPUBlocks = int(blocks)
	return c, nil
}
