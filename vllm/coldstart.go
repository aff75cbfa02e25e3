package vllm

import (
	"time"

	"github.com/servebench/servebench/perf"
)

// A server started with an empty Triton cache (a fresh container without
// ~/.triton mounted: --cold-start) compiles vLLM's Triton fused-MoE kernel
// (fused_moe_kernel) while serving, the first time a step needs a variant
// of it that startup did not run. Triton compiles one binary per set of
// compile-time constants and per specialisation of its integer
// arguments, and two of those vary with the step's token count M (vLLM PR
// #55268 describes both; PR #49903 states Triton's rule, "== 1", "% 16 ==
// 0" or neither):
//
//   - the tile configuration, which try_get_optimal_moe_config takes from
//     the tuned config file's entry nearest to M (fusedMoEConfigKeys);
//   - whether num_valid_tokens (M × top-k) and EM, the sorted-token
//     buffer moe_align_block_size pads to M × top-k + E × (BLOCK_SIZE_M −
//     1), are multiples of 16.
//
// Each variant compiles twice, for the gate/up GEMM and for the down GEMM
// (MUL_ROUTED_WEIGHT and top_k are constants, so they are different
// kernels). Startup runs the profile step (max_num_batched_tokens tokens)
// and, without --enforce-eager, captures a CUDA graph per batch size
// (perf.Roofline.CapturedBatches); a step that replays a graph compiles
// nothing. Every TP rank compiles at once, so a step pays the compile time
// once; the engine waits for it, so the step is host-bound.
//
// sim also counts the prefill of the benchmark client's initial test
// prompt (vLLM's benchmark and servebench bench send the first request
// once before timing) as run before serving; a fleet's instances do not.
//
// Left out: checkpoints whose tuned file lists other sizes, or that have
// no tuned file (vLLM's default configuration then has fewer tiles, so
// fewer variants); a tile two entries share (they compile once); Triton
// kernels outside the fused MoE; pipeline stages compiling one after
// another.

// fusedMoEConfigKeys are the batch sizes vLLM's tuned fused-MoE config
// files list, the batch sizes its MoE tuning script sweeps (e.g.
// vllm/model_executor/layers/fused_moe/configs/E=8,N=7168,
// device_name=NVIDIA_H100_80GB_HBM3.json, read at commit 02ba322).
var fusedMoEConfigKeys = []int{1, 2, 4, 8, 16, 24, 32, 48, 64, 96, 128, 256, 512, 1024, 1536, 2048, 3072, 4096}

// fusedMoEKernelsPerVariant: the gate/up and the down GEMM.
const fusedMoEKernelsPerVariant = 2

// tritonCompileTime is one fused_moe_kernel compile on the default host
// [fit: the largest TTFTs of inference-sim's Mixtral-8x7B runs, split fit;
// doc.go, "Cold start"].
const tritonCompileTime = 880 * time.Millisecond

// ColdStart says what a server on an empty Triton cache compiles while it
// serves (Resolved.ColdStart; nil: a warm cache, or nothing to compile).
// It holds no state: each server process takes its own JITCache.
type ColdStart struct {
	experts, topk int
	// compile is one variant's compiles on this host.
	compile time.Duration
	// startup are the token counts the server ran before serving.
	startup []int
	// replayed reports a step that replays a captured CUDA graph.
	replayed func(perf.StepShape) bool
}

// coldStart is the cold start of a deployment served by roof on host, or
// nil when its steps run no Triton fused-MoE kernel: a dense model, or
// 4-bit experts, which run Marlin's precompiled MoE kernel.
func coldStart(d perf.Deployment, roof *perf.Roofline, host HostOverhead) *ColdStart {
	m := d.Model
	if !m.IsMoE() || m.Quantization.Method == "gptq" || m.Quantization.Method == "awq" {
		return nil
	}
	c := &ColdStart{
		experts:  m.MoE.Experts,
		topk:     m.MoE.ExpertsPerToken,
		compile:  host.scaled(fusedMoEKernelsPerVariant * tritonCompileTime),
		startup:  append([]int{d.MaxNumBatchedTokens}, roof.CapturedBatches()...),
		replayed: roof.Replayed,
	}
	if d.ExpertParallel {
		// Each rank holds experts/TP of them: the kernel sees its local
		// count, which EM's padding follows.
		c.experts = max(c.experts/max(d.TensorParallel, 1), 1)
	}
	return c
}

// fusedMoEVariant is one compiled binary pair of fused_moe_kernel.
type fusedMoEVariant struct {
	configKey               int
	validDiv16, paddedDiv16 bool
}

// variant is the fused-MoE variant a step of tokens rows runs.
func (c *ColdStart) variant(tokens int) fusedMoEVariant {
	valid := tokens * c.topk
	// EM = valid + E·(BLOCK_SIZE_M − 1); every tuned BLOCK_SIZE_M is a
	// multiple of 16, so EM ≡ valid − E (mod 16).
	padded := ((valid-c.experts)%16 + 16) % 16
	return fusedMoEVariant{configKey: nearestConfigKey(tokens), validDiv16: valid%16 == 0, paddedDiv16: padded == 0}
}

// nearestConfigKey is the tuned entry try_get_optimal_moe_config picks,
// min(keys, key=|key − M|): the smaller key on a tie.
func nearestConfigKey(tokens int) int {
	best := fusedMoEConfigKeys[0]
	for _, k := range fusedMoEConfigKeys[1:] {
		if abs(k-tokens) < abs(best-tokens) {
			best = k
		}
	}
	return best
}

func abs(v int) int {
	if v < 0 {
		return -v
	}
	return v
}

// JITCache is one server process's compiled fused-MoE variants.
type JITCache struct {
	c        *ColdStart
	compiled map[fusedMoEVariant]bool
}

// NewCache is a server's cache after startup; nil for a nil ColdStart
// (whose Compile is always 0).
func (c *ColdStart) NewCache() *JITCache {
	if c == nil {
		return nil
	}
	j := &JITCache{c: c, compiled: make(map[fusedMoEVariant]bool)}
	for _, n := range c.startup {
		j.Warm(n)
	}
	return j
}

// Warm records a step of tokens rows run before the timed requests, such
// as the benchmark client's initial test prompt.
func (j *JITCache) Warm(tokens int) {
	if j != nil && tokens > 0 {
		j.compiled[j.c.variant(tokens)] = true
	}
}

// Compile is the time step s spends compiling before it runs, and records
// what it compiled: call it once per step the engine runs.
func (j *JITCache) Compile(s perf.StepShape) time.Duration {
	if j == nil {
		return 0
	}
	tokens := s.Tokens()
	if tokens <= 0 || j.c.replayed(s) {
		return 0
	}
	v := j.c.variant(tokens)
	if j.compiled[v] {
		return 0
	}
	j.compiled[v] = true
	return j.c.compile
}
