package vllm

import (
	"fmt"

	"github.com/servebench/servebench/engine"
)

// vLLM prints its memory profile's parts from 0.6.4 on: one "Memory
// profiling results" line (PR #9352), then from 0.6.5 the weights /
// non-torch / activation / KV breakdown (PR #10511). Earlier releases
// print only the block counts.
var (
	memoryLogSince    = Release{0, 6, 4}
	memoryLogOverhaul = Release{0, 6, 5}
)

const gibibyte = 1 << 30

// MemoryLines are the startup lines about the memory profile and the KV
// cache it leaves, in the release's wording: vLLM ≥ 0.6.5's "model weights
// take …" breakdown (earlier releases print no breakdown, so servebench
// prints its own, marked "modelled"), then the block counts (V0) or KV
// cache size (V1) and the concurrency line.
func MemoryLines(r *Resolved) []string {
	c, d := r.Capacity, r.Deployment
	budget := float64(d.GPU.MemoryBytes) * d.GPUMemoryUtilization
	gib := func(b float64) string { return fmt.Sprintf("%.2fGiB", b/gibibyte) }
	rows := min(d.MaxNumSeqs, d.MaxNumBatchedTokens)
	perCell := d.SamplerPeak.At(rows)
	logits := float64(rows) * float64(d.Model.Vocab) * perCell
	sampler := fmt.Sprintf("the sampler's peak %s (%d rows x %d vocab x %.1f bytes)", gib(logits), rows, d.Model.Vocab, perCell)
	nonTorch, nvls := gib(float64(c.NonTorchBytes)), ""
	if c.NVLSBytes > 0 {
		nvls = fmt.Sprintf("; NCCL's NVLink SHARP buffers are %s of non_torch_memory", gib(float64(c.NVLSBytes)))
		nonTorch += fmt.Sprintf(" (NVLink SHARP buffers %s of it)", gib(float64(c.NVLSBytes)))
	}
	var out []string
	switch {
	case r.Profile.Release.less(memoryLogSince):
		out = append(out, fmt.Sprintf(
			"Memory profile (modelled; vLLM %s logs no breakdown): total_gpu_memory (%s) x gpu_memory_utilization (%.2f) = %s; model weights %s; non_torch_memory %s; activation peak %s: the larger of the forward pass over %d batched tokens and %s; KV cache %s.",
			r.Profile.Release, gib(float64(d.GPU.MemoryBytes)), d.GPUMemoryUtilization, gib(budget),
			gib(float64(c.WeightBytes)), nonTorch, gib(float64(c.ActivationBytes)),
			d.MaxNumBatchedTokens, sampler, gib(float64(c.KVCacheBytes))))
	case r.Profile.Release.less(memoryLogOverhaul):
		initial := float64(c.WeightBytes + c.NonTorchBytes)
		out = append(out, fmt.Sprintf(
			"Memory profiling results: total_gpu_memory=%s initial_memory_usage=%s peak_torch_memory=%s memory_usage_post_profile=%s non_torch_memory=%s kv_cache_size=%s gpu_memory_utilization=%.2f",
			gib(float64(d.GPU.MemoryBytes)), gib(initial), gib(float64(c.WeightBytes+c.ActivationBytes)), gib(initial),
			gib(float64(c.NonTorchBytes)), gib(float64(c.KVCacheBytes)), d.GPUMemoryUtilization),
			fmt.Sprintf("(modelled: peak_torch_memory = weights %s + activation peak %s, the larger of the forward pass over %d batched tokens and %s%s)",
				gib(float64(c.WeightBytes)), gib(float64(c.ActivationBytes)), d.MaxNumBatchedTokens, sampler, nvls))
	default:
		out = append(out,
			fmt.Sprintf("the current vLLM instance can use total_gpu_memory (%s) x gpu_memory_utilization (%.2f) = %s",
				gib(float64(d.GPU.MemoryBytes)), d.GPUMemoryUtilization, gib(budget)),
			fmt.Sprintf("model weights take %s; non_torch_memory takes %s; PyTorch activation peak memory takes %s; the rest of the memory reserved for KV Cache is %s.",
				gib(float64(c.WeightBytes)), gib(float64(c.NonTorchBytes)), gib(float64(c.ActivationBytes)), gib(float64(c.KVCacheBytes))),
			fmt.Sprintf("(modelled: the activation peak is the larger of the forward pass over %d batched tokens and %s%s)",
				d.MaxNumBatchedTokens, sampler, nvls))
		if r.Profile.Engine == engine.V1 {
			out = append(out, fmt.Sprintf("Available KV cache memory: %.2f GiB", float64(c.KVCacheBytes)/gibibyte))
		}
	}
	return append(out, c.LogLines()...)
}
