package perf

import (
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/servebench/servebench/internal/golden"

	"github.com/google/go-cmp/cmp"
)

func deployment(t testing.TB, model, gpu string, edit func(*Deployment)) Deployment {
	t.Helper()
	d := DefaultDeployment(mustModel(t, model), mustGPU(t, gpu))
	if edit != nil {
		edit(&d)
	}
	return d
}

func TestCapacityQwen2_7BOnH100(t *testing.T) {
	c, err := deployment(t, "Qwen2-7B", "H100", nil).Capacity()
	if err != nil {
		t.Fatal(err)
	}
	// 71.2 GiB budget − 14.19 GiB weights − 1.09 GiB activations (the
	// forward pass over 8192 tokens outweighs one fp32 logits copy for
	// 1024 sequences) − 1.25 GiB non-torch = 54.7 GiB of 896 KiB blocks
	// (doc.go).
	if c.BlockBytes != 896<<10 {
		t.Errorf("BlockBytes = %d, want 896 KiB", c.BlockBytes)
	}
	if c.GPUBlocks != 63989 || c.Tokens() != 1023824 {
		t.Errorf("GPUBlocks = %d (%d tokens), want 63989 (1,023,824 tokens)", c.GPUBlocks, c.Tokens())
	}
	// Without the activation peak and non-torch memory the budget would hold
	// (71.2 − 14.19) GiB / 56 KiB ≈ 1.07 M tokens.
	upper := int((float64(c.WeightBytes) + float64(c.KVCacheBytes) + float64(c.ActivationBytes) + float64(c.NonTorchBytes) - float64(c.WeightBytes)) / float64(56<<10))
	if c.Tokens() >= upper || float64(c.Tokens()) < 0.9*float64(upper) {
		t.Errorf("Tokens() = %d, want a little under the activation-free bound %d", c.Tokens(), upper)
	}
	if c.CPUBlocks != 0 {
		t.Errorf("V1 CPUBlocks = %d, want 0 (no swap space in V1)", c.CPUBlocks)
	}
	if c.MaxModelLen != 131072 || c.MaxNumBatchedTokens != 8192 || c.MaxNumSeqs != 1024 {
		t.Errorf("resolved limits = %d/%d/%d, want 131072/8192/1024", c.MaxModelLen, c.MaxNumBatchedTokens, c.MaxNumSeqs)
	}
	if got := c.MaxConcurrency(131072); fmt.Sprintf("%.2f", got) != "7.81" {
		t.Errorf("MaxConcurrency(131072) = %.4f, want 7.81", got)
	}
	wantLog := []string{
		"GPU KV cache size: 1,023,824 tokens",
		"Maximum concurrency for 131,072 tokens per request: 7.81x",
	}
	if diff := cmp.Diff(wantLog, c.LogLines()); diff != "" {
		t.Errorf("LogLines (-want +got):\n%s", diff)
	}

	v0, err := deployment(t, "Qwen2-7B", "H100", func(d *Deployment) { d.EngineVersion = "v0" }).Capacity()
	if err != nil {
		t.Fatal(err)
	}
	// 4 GiB of swap in 896 KiB blocks.
	if v0.CPUBlocks != 4681 {
		t.Errorf("V0 CPUBlocks = %d, want 4681", v0.CPUBlocks)
	}
	// V0 turns on chunked prefill above 32K, so its dummy batch is 512
	// tokens and it keeps more memory for the cache than V1.
	if v0.MaxNumBatchedTokens != 512 || v0.GPUBlocks <= c.GPUBlocks {
		t.Errorf("V0: %d batched tokens, %d blocks; want 512 and more than V1's %d", v0.MaxNumBatchedTokens, v0.GPUBlocks, c.GPUBlocks)
	}
	if got := v0.LogLines()[0]; got != fmt.Sprintf("# GPU blocks: %d, # CPU blocks: 4681", v0.GPUBlocks) {
		t.Errorf("V0 log line = %q", got)
	}
}

// Each error vLLM raises at startup, word for word.
func TestCapacityErrorTexts(t *testing.T) {
	tests := []struct {
		name   string
		d      Deployment
		reason StartupReason
		want   string
	}{
		// vLLM itself runs out of memory loading these weights, and its
		// cache error would wrongly advise raising gpu_memory_utilization.
		{"70B on one A100 (V0)", deployment(t, "Llama-3-70B", "A100-80GB", func(d *Deployment) { d.EngineVersion = "v0" }),
			ReasonWeightsExceedGPU,
			"Model weights need 131.41 GiB per GPU, more than one A100-80GB holds (79.15 GiB, of which 1.25 GiB go to the CUDA runtime); raising gpu_memory_utilization cannot help. Use tensor_parallel_size 2, the smallest that fits at max_model_len 8192, or a quantized checkpoint."},
		{"70B on one A100 (V1)", deployment(t, "Llama-3-70B", "A100-80GB", nil),
			ReasonWeightsExceedGPU,
			"Model weights need 131.41 GiB per GPU, more than one A100-80GB holds (79.15 GiB, of which 1.25 GiB go to the CUDA runtime); raising gpu_memory_utilization cannot help. Use tensor_parallel_size 2, the smallest that fits at max_model_len 8192, or a quantized checkpoint."},
		// At 131072 tokens TP=2 leaves too little KV cache for one request.
		{"Llama-3.1-70B on one H100", deployment(t, "Llama-3.1-70B", "H100", nil),
			ReasonWeightsExceedGPU,
			"Model weights need 131.41 GiB per GPU, more than one H100-SXM holds (79.11 GiB, of which 1.25 GiB go to the CUDA runtime); raising gpu_memory_utilization cannot help. Use tensor_parallel_size 4, the smallest that fits at max_model_len 131072, or a quantized checkpoint."},
		{"Llama-3.1-70B at 8K on one H100", deployment(t, "Llama-3.1-70B", "H100", func(d *Deployment) { d.MaxModelLen = 8192; d.GPUMemoryUtilization = 0.95 }),
			ReasonWeightsExceedGPU,
			"Model weights need 131.41 GiB per GPU, more than one H100-SXM holds (79.11 GiB, of which 1.25 GiB go to the CUDA runtime); raising gpu_memory_utilization cannot help. Use tensor_parallel_size 2, the smallest that fits at max_model_len 8192, or a quantized checkpoint."},
		{"70B on one L4 needs more than 8 GPUs", deployment(t, "Llama-3.1-70B", "L4", nil),
			ReasonWeightsExceedGPU,
			"Model weights need 131.41 GiB per GPU, more than one L4 holds (22.00 GiB, of which 1.25 GiB go to the CUDA runtime); raising gpu_memory_utilization cannot help. Use tensor_parallel_size 16, the smallest that fits at max_model_len 131072, or a quantized checkpoint."},
		{"V0 max seq len above the cache", deployment(t, "Qwen2-7B", "A10", func(d *Deployment) { d.EngineVersion = "v0" }),
			ReasonMaxModelLenExceedsCache,
			"The model's max seq len (131072) is larger than the maximum number of tokens that can be stored in KV cache (78960). Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine."},
		{"V1 max seq len above the cache", deployment(t, "Qwen2-7B", "A10", nil),
			ReasonMaxModelLenExceedsCache,
			"To serve at least one request with the models's max seq len (131072), (7.00 GiB KV cache is needed, which is larger than the available KV cache memory (4.09 GiB). Based on the available memory, the estimated maximum model length is 76656. Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine."},
		{"utilization above 1", deployment(t, "Qwen2-7B", "H100", func(d *Deployment) { d.GPUMemoryUtilization = 1.5 }),
			ReasonGPUMemoryUtilization, "GPU memory utilization must be greater than 0 and at most 1.0. Got 1.5."},
		{"utilization 2", deployment(t, "Qwen2-7B", "H100", func(d *Deployment) { d.GPUMemoryUtilization = 2 }),
			ReasonGPUMemoryUtilization, "GPU memory utilization must be greater than 0 and at most 1.0. Got 2.0."},
		{"negative utilization", deployment(t, "Qwen2-7B", "H100", func(d *Deployment) { d.GPUMemoryUtilization = -0.5 }),
			ReasonGPUMemoryUtilization, "GPU memory utilization must be greater than 0 and at most 1.0. Got -0.5."},
		{"NaN utilization", deployment(t, "Qwen2-7B", "H100", func(d *Deployment) { d.GPUMemoryUtilization = math.NaN() }),
			ReasonGPUMemoryUtilization, "GPU memory utilization must be greater than 0 and at most 1.0. Got NaN."},
		{"expert parallel on a dense model", deployment(t, "Qwen2-7B", "H100", func(d *Deployment) { d.ExpertParallel = true }),
			ReasonExpertParallel, "Expert parallelism needs a mixture-of-experts model; Qwen2-7B is dense. Turn enable_expert_parallel off."},
		{"heads not divisible by TP", deployment(t, "Qwen2-7B", "H100", func(d *Deployment) { d.TensorParallel = 8 }),
			ReasonTensorParallel, "Total number of attention heads (28) must be divisible by tensor parallel size (8)."},
		{"layers not divisible by PP (V0)", deployment(t, "Qwen2-7B", "H100", func(d *Deployment) { d.PipelineParallel = 3; d.EngineVersion = "v0" }),
			ReasonPipelineParallel, "Total number of hidden layers (28) must be divisible by pipeline parallel size (3)."},
		{"max_model_len above the model's", deployment(t, "Llama-3-8B", "H100", func(d *Deployment) { d.MaxModelLen = 16384 }),
			ReasonMaxModelLenExceedsModel,
			"User-specified max_model_len (16384) is greater than the derived max_model_len (max_position_embeddings=8192 or model_max_length=None in model's config.json). This may lead to incorrect model outputs or CUDA errors. To allow overriding this maximum, set the env var VLLM_ALLOW_LONG_MAX_MODEL_LEN=1"},
		{"unknown kv cache dtype", deployment(t, "Qwen2-7B", "H100", func(d *Deployment) { d.KVCacheDType = "int4" }),
			ReasonKVCacheDType, "Unknown kv cache dtype: int4"},
		{"utilization too small", deployment(t, "Qwen2-7B", "H100", func(d *Deployment) { d.GPUMemoryUtilization = 0.1 }),
			ReasonNoCacheMemory,
			"No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when initializing the engine."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tt.d.Capacity()
			var se *StartupError
			if !errors.As(err, &se) {
				t.Fatalf("Capacity() error = %v, want a *StartupError", err)
			}
			if se.Reason != tt.reason {
				t.Errorf("Reason = %s, want %s", se.Reason, tt.reason)
			}
			if err.Error() != tt.want {
				t.Errorf("error text\n got: %s\nwant: %s", err, tt.want)
			}
		})
	}
}

func TestYarnDerivedLengthInError(t *testing.T) {
	m, err := LookupModel("testdata/qwen2.5-7b-instruct-yarn")
	if err != nil {
		t.Fatal(err)
	}
	d := DefaultDeployment(m, mustGPU(t, "H100"))
	d.MaxModelLen = 200000
	_, err = d.Capacity()
	want := "User-specified max_model_len (200000) is greater than the derived max_model_len (max_position_embeddings=131072.0 or model_max_length=None in model's config.json)."
	if err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("error = %v\nwant prefix %s", err, want)
	}
	d.MaxModelLen = 131072
	if _, err := d.Capacity(); err != nil {
		t.Errorf("max_model_len 131072 within the yarn-scaled length: %v", err)
	}
}

func TestResolveErrors(t *testing.T) {
	tests := []struct {
		name string
		edit func(*Deployment)
		want string
	}{
		{"no model", func(d *Deployment) { d.Model = Model{} }, "no model"},
		{"no GPU", func(d *Deployment) { d.GPU = GPU{} }, "no GPU"},
		{"engine", func(d *Deployment) { d.EngineVersion = "v2" }, `engine version "v2"`},
		{"negative TP", func(d *Deployment) { d.TensorParallel = -2 }, "tensor parallel size -2"},
		{"negative swap", func(d *Deployment) { d.SwapSpaceGiB = -1 }, "swap space is -1 GiB"},
		{"negative block", func(d *Deployment) { d.BlockSize = -16 }, "block size -16"},
		{"negative max len", func(d *Deployment) { d.MaxModelLen = -1 }, "max_model_len is -1"},
		{"negative batched", func(d *Deployment) { d.MaxNumBatchedTokens = -1 }, "must not be negative"},
		{"nvlink on a 4090", func(d *Deployment) {
			d.GPU = mustGPU(t, "RTX-4090")
			d.TensorParallel = 2
			d.Link, _ = LookupLink("nvlink")
		}, "RTX-4090 has no NVLink"},
		{"KV heads vs TP", func(d *Deployment) {
			d.Model.Heads, d.Model.KVHeads, d.Model.Hidden = 12, 3, 12*128
			d.TensorParallel = 2
		}, "Total number of KV heads (3) and tensor parallel size (2) must divide one another"},
		{"PP above layers", func(d *Deployment) { d.PipelineParallel = 29 }, "Pipeline parallel size (29) is larger than the number of hidden layers (28)."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := deployment(t, "Qwen2-7B", "H100", tt.edit)
			_, err := d.Capacity()
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Capacity() error = %v, want it to contain %q", err, tt.want)
			}
			if _, err := NewRoofline(d); err == nil {
				t.Errorf("NewRoofline accepted what Capacity refused")
			}
		})
	}
}

func TestResolveDefaults(t *testing.T) {
	tests := []struct {
		name                      string
		d                         Deployment
		mml, batched, seqs, block int
		link                      string
	}{
		{"zero value fields", Deployment{Model: mustModel(t, "Llama-3-8B"), GPU: mustGPU(t, "H100")}, 8192, 8192, 1024, 16, ""},
		{"V1 small GPU", deployment(t, "Qwen2-0.5B", "L4", nil), 131072, 2048, 256, 16, ""},
		{"V0 short model", deployment(t, "Llama-3-8B", "A100-80GB", func(d *Deployment) { d.EngineVersion = "v0" }), 8192, 8192, 256, 16, ""},
		{"V0 long model chunks", deployment(t, "Llama-3.1-8B", "A100-80GB", func(d *Deployment) { d.EngineVersion = "V0" }), 131072, 512, 256, 16, ""},
		{"V0 tiny max len", deployment(t, "Llama-3-8B", "A100-80GB", func(d *Deployment) { d.EngineVersion = "v0"; d.MaxModelLen = 1024 }), 1024, 2048, 256, 16, ""},
		{"explicit values kept", deployment(t, "Llama-3-8B", "H100", func(d *Deployment) {
			d.MaxModelLen, d.MaxNumBatchedTokens, d.MaxNumSeqs, d.BlockSize = 4096, 1024, 64, 32
		}), 4096, 1024, 64, 32, ""},
		{"TP default link on NVLink GPU", deployment(t, "Llama-3-8B", "H100", func(d *Deployment) { d.TensorParallel = 2 }), 8192, 8192, 1024, 16, "nvlink"},
		{"TP default link on PCIe GPU", deployment(t, "Llama-3-8B", "L40S", func(d *Deployment) { d.TensorParallel = 2 }), 8192, 2048, 256, 16, "pcie-host"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := tt.d.Resolve()
			if err != nil {
				t.Fatal(err)
			}
			if r.MaxModelLen != tt.mml || r.MaxNumBatchedTokens != tt.batched || r.MaxNumSeqs != tt.seqs || r.BlockSize != tt.block {
				t.Errorf("resolved %d/%d/%d/%d, want %d/%d/%d/%d (max_model_len/batched/seqs/block)",
					r.MaxModelLen, r.MaxNumBatchedTokens, r.MaxNumSeqs, r.BlockSize, tt.mml, tt.batched, tt.seqs, tt.block)
			}
			if r.TensorParallel < 1 || r.PipelineParallel < 1 || r.GPUMemoryUtilization != 0.9 || r.KVCacheDType != "auto" {
				t.Errorf("resolved %+v: want TP/PP ≥ 1, utilization 0.9, kv auto", r)
			}
			if r.Link.Name != tt.link {
				t.Errorf("link = %q, want %q", r.Link.Name, tt.link)
			}
		})
	}
	// NVLink is capped by the GPU's own rate.
	r, err := deployment(t, "Llama-3-8B", "A100-80GB", func(d *Deployment) { d.TensorParallel = 2 }).Resolve()
	if err != nil || r.Link.Bandwidth != 300e9 {
		t.Errorf("A100 NVLink bandwidth = %v (%v), want 300 GB/s", r.Link.Bandwidth, err)
	}
}

// Tensor parallelism splits weights and KV heads; pipeline parallelism
// splits layers.
func TestParallelShares(t *testing.T) {
	const gib = 1 << 30
	one, err := deployment(t, "Llama-3-70B", "H100", nil).Resolve()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name           string
		tp, pp         int
		kvHeadsPerRank int
		layers         int
	}{
		{"TP1", 1, 1, 8, 80},
		{"TP2", 2, 1, 4, 80},
		{"TP8", 8, 1, 1, 80},
		{"PP2", 1, 2, 8, 40},
		{"TP4 PP2", 4, 2, 2, 40},
		{"TP4 PP4", 4, 4, 2, 20},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := deployment(t, "Llama-3-70B", "H100", func(d *Deployment) {
				d.TensorParallel, d.PipelineParallel = tt.tp, tt.pp
			}).Resolve()
			if err != nil {
				t.Fatal(err)
			}
			kvHeadsPerRank := int(d.Model.kvElementsPerTokenLayer(d.TensorParallel)) / (2 * d.Model.HeadDim)
			if kvHeadsPerRank != tt.kvHeadsPerRank || d.stageLayers() != tt.layers {
				t.Errorf("kv heads/rank %d, layers/stage %d; want %d, %d", kvHeadsPerRank, d.stageLayers(), tt.kvHeadsPerRank, tt.layers)
			}
			wantKV := int64(2 * tt.layers * tt.kvHeadsPerRank * 128 * 2)
			if d.kvBytesPerTokenPerGPU() != wantKV {
				t.Errorf("KV bytes/token/GPU = %d, want %d", d.kvBytesPerTokenPerGPU(), wantKV)
			}
			// Linear weights split over all GPUs; the vocab shard over TP ranks.
			linear := float64(one.Model.LinearParams()) * 2 / float64(tt.tp*tt.pp)
			vocab := float64(one.Model.EmbeddingParams()) * 2 / float64(tt.tp)
			if tt.pp == 1 {
				vocab *= 2 // embedding and lm_head on the same GPU
			}
			if got := float64(d.weightBytesPerGPU()); !within(got, linear+vocab, 1e-9) {
				t.Errorf("weights/GPU = %.3f GiB, want %.3f GiB", got/gib, (linear+vocab)/gib)
			}
		})
	}
	// KV heads are replicated when TP exceeds them: 2 heads on 4 ranks.
	d, err := deployment(t, "Qwen2-0.5B", "H100", func(d *Deployment) {
		d.Model.Heads, d.Model.Hidden, d.Model.HeadDim = 16, 1024, 64
		d.TensorParallel = 4
	}).Resolve()
	if err != nil {
		t.Fatal(err)
	}
	if got := d.Model.kvElementsPerTokenLayer(d.TensorParallel); got != 2*64 {
		t.Errorf("KV elements per token and layer = %d, want 128 (one replicated head)", got)
	}
	// V1 accepts uneven pipeline stages; the largest one decides.
	d, err = deployment(t, "Qwen2-7B", "H100", func(d *Deployment) { d.PipelineParallel = 3 }).Resolve()
	if err != nil || d.stageLayers() != 10 {
		t.Errorf("V1 PP=3 on 28 layers: %v, stage layers %d, want 10", err, d.stageLayers())
	}
}

func TestCapacityGrowsWithParallelism(t *testing.T) {
	var prev int
	for _, tp := range []int{2, 4, 8} {
		// At TP=2 the 65.7 GiB of weights per GPU leave room for ~5.5k
		// tokens, so the default 8192 would not start.
		c, err := deployment(t, "Llama-3-70B", "H100", func(d *Deployment) { d.TensorParallel = tp; d.MaxModelLen = 4096 }).Capacity()
		if err != nil {
			t.Fatalf("TP=%d: %v", tp, err)
		}
		if c.Tokens() <= prev {
			t.Errorf("TP=%d holds %d tokens, not more than %d", tp, c.Tokens(), prev)
		}
		prev = c.Tokens()
	}
	auto, err := deployment(t, "Llama-3-8B", "A100-80GB", nil).Capacity()
	if err != nil {
		t.Fatal(err)
	}
	fp8, err := deployment(t, "Llama-3-8B", "A100-80GB", func(d *Deployment) { d.KVCacheDType = "fp8" }).Capacity()
	if err != nil {
		t.Fatal(err)
	}
	if fp8.GPUBlocks != 2*auto.GPUBlocks && fp8.GPUBlocks != 2*auto.GPUBlocks+1 {
		t.Errorf("fp8 KV cache: %d blocks, want twice auto's %d", fp8.GPUBlocks, auto.GPUBlocks)
	}
	eager, err := deployment(t, "Llama-3-8B", "A100-80GB", func(d *Deployment) { d.EnforceEager = true }).Capacity()
	if err != nil || eager.GPUBlocks != auto.GPUBlocks {
		t.Errorf("enforce-eager: %d blocks (%v), want %d (graphs are captured after the cache is sized)", eager.GPUBlocks, err, auto.GPUBlocks)
	}
}

func TestMaxConcurrencyAndThousands(t *testing.T) {
	c := Capacity{GPUBlocks: 1000, BlockSize: 16}
	tests := []struct {
		tokens int
		want   float64
	}{{16000, 1}, {32000, 0.5}, {1000, 16}, {0, 0}, {-5, 0}}
	for _, tt := range tests {
		if got := c.MaxConcurrency(tt.tokens); got != tt.want {
			t.Errorf("MaxConcurrency(%d) = %v, want %v", tt.tokens, got, tt.want)
		}
	}
	for n, want := range map[int64]string{0: "0", 999: "999", 1000: "1,000", 1012960: "1,012,960", -1234567: "-1,234,567"} {
		if got := thousands(n); got != want {
			t.Errorf("thousands(%d) = %q, want %q", n, got, want)
		}
	}
}

// The golden file pins the capacity of a spread of deployments so that a
// change to any constant shows up as a reviewed diff.
func TestCapacityGolden(t *testing.T) {
	cases := []struct {
		model, gpu string
		edit       func(*Deployment)
	}{
		{"Qwen2-0.5B", "L4", nil},
		{"Qwen2-0.5B", "A10", func(d *Deployment) { d.EngineVersion = "v0"; d.MaxModelLen = 4096 }},
		{"Qwen2-7B", "H100-SXM", nil},
		{"Qwen2-7B", "A100-80GB", func(d *Deployment) { d.EngineVersion = "v0"; d.MaxModelLen = 8192 }},
		{"Qwen2.5-7B-Instruct", "L40S", nil},
		{"Qwen2.5-7B-Instruct-GPTQ-Int4", "RTX-4090", func(d *Deployment) { d.MaxModelLen = 8192 }},
		{"Llama-3-8B", "H100-SXM", func(d *Deployment) { d.KVCacheDType = "fp8" }},
		{"Llama-3-8B", "A100-40GB", func(d *Deployment) { d.EngineVersion = "v0"; d.BlockSize = 32 }},
		{"Llama-3.1-8B", "H200", nil},
		{"Llama-3-70B", "H100-SXM", func(d *Deployment) { d.TensorParallel = 4 }},
		{"Llama-3-70B", "A100-80GB", func(d *Deployment) { d.TensorParallel = 4; d.PipelineParallel = 2; d.EngineVersion = "v0" }},
		{"Llama-3.1-70B", "H200", func(d *Deployment) { d.TensorParallel = 2; d.MaxModelLen = 32768 }},
		{"Llama-3-70B", "A100-80GB", nil},
	}
	var b strings.Builder
	for _, c := range cases {
		d := deployment(t, c.model, c.gpu, c.edit)
		cap, err := d.Capacity()
		r, _ := d.Resolve()
		fmt.Fprintf(&b, "%s on %s, TP=%d PP=%d %s kv=%s block=%d max_model_len=%d\n",
			c.model, c.gpu, r.TensorParallel, r.PipelineParallel, r.EngineVersion, r.KVCacheDType, r.BlockSize, r.MaxModelLen)
		if err != nil {
			fmt.Fprintf(&b, "  error: %v\n\n", err)
			continue
		}
		fmt.Fprintf(&b, "  weights %.2f GiB, activations %.2f GiB, non-torch %.2f GiB, KV %.2f GiB, block %d B\n",
			float64(cap.WeightBytes)/(1<<30), float64(cap.ActivationBytes)/(1<<30), float64(cap.NonTorchBytes)/(1<<30),
			float64(cap.KVCacheBytes)/(1<<30), cap.BlockBytes)
		for _, line := range cap.LogLines() {
			fmt.Fprintf(&b, "  %s\n", line)
		}
		b.WriteString("\n")
	}
	golden.CheckFile(t, filepath.Join("testdata", "capacity.golden"), []byte(b.String()))
}

// VLLM_ALLOW_LONG_MAX_MODEL_LEN=1, which vLLM's own error suggests, lets a
// longer max_model_len through.
func TestAllowLongMaxModelLen(t *testing.T) {
	for _, allow := range []bool{false, true} {
		d := deployment(t, "Llama-3-8B", "H100", func(d *Deployment) { d.MaxModelLen = 16384; d.AllowLongMaxModelLen = allow })
		r, err := d.Resolve()
		var se *StartupError
		switch {
		case allow && (err != nil || r.MaxModelLen != 16384):
			t.Errorf("allowed: Resolve = max_model_len %d, %v; want 16384", r.MaxModelLen, err)
		case !allow && (!errors.As(err, &se) || se.Reason != ReasonMaxModelLenExceedsModel):
			t.Errorf("not allowed: error %v, want %s", err, ReasonMaxModelLenExceedsModel)
		}
	}
}

func TestSamplerPeakAt(t *testing.T) {
	measured := SamplerPeak{Rows: []int{64, 96, 128, 1024}, BytesPerCell: []float64{50, 50, 38, 38}}
	for _, tt := range []struct {
		name string
		peak SamplerPeak
		rows int
		want float64
	}{
		{"no measurement: one fp32 copy", SamplerPeak{}, 256, 4},
		{"below the first row count: held", measured, 8, 50},
		{"at a measured point", measured, 96, 50},
		{"between two points: linear", measured, 112, 44},
		{"past the last: held", measured, 4096, 38},
		{"one point", SamplerPeak{Rows: []int{256}, BytesPerCell: []float64{32}}, 1024, 32},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.peak.At(tt.rows); got != tt.want {
				t.Errorf("At(%d) = %v, want %v", tt.rows, got, tt.want)
			}
		})
	}
}

// TestFusedMoEWorkspace: the profile run's MoE layers hold vLLM's fused MoE
// caches, M·k·max(N, K) shared by the first and last (PR #13625) plus
// M·k·N/2, with N each rank's gate/up width and K the hidden size. For
// coarse experts (Mixtral, N ≥ K) that is the former estimate (the gate/up
// and product of the top-k experts); for fine-grained ones (DeepSeek's,
// N = 512 at TP 8 against K = 7168) cache3's hidden-wide rows set the peak.
func TestFusedMoEWorkspace(t *testing.T) {
	const tokens = 8192
	for _, c := range []struct {
		name, model string
		edit        func(*Deployment)
		perRoute    float64 // elements per token and routed expert
	}{
		{"DeepSeek-V3 TP 8", "DeepSeek-V3", func(d *Deployment) { d.TensorParallel = 8 }, 7168 + 256},
		{"DeepSeek-V3 EP 8", "DeepSeek-V3", func(d *Deployment) { d.TensorParallel = 8; d.ExpertParallel = true }, 7168 + 2048},
		{"DeepSeek-V3 TP 8, separate caches", "DeepSeek-V3", func(d *Deployment) { d.TensorParallel = 8; d.FusedMoESeparateCaches = true }, 512 + 7168 + 256},
		{"Mixtral TP 2", "Mixtral-8x7B", func(d *Deployment) { d.TensorParallel = 2 }, 14336 + 7168},
		{"Mixtral TP 2, separate caches", "Mixtral-8x7B", func(d *Deployment) { d.TensorParallel = 2; d.FusedMoESeparateCaches = true }, 14336 + 4096 + 7168},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := deployment(t, c.model, "H200", c.edit)
			want := tokens * float64(d.Model.MoE.ExpertsPerToken) * c.perRoute * activationBytes
			if got := d.fusedMoEWorkspaceBytes(tokens); got != want {
				t.Errorf("fused MoE caches at %d tokens: %.0f bytes, want %.0f", tokens, got, want)
			}
		})
	}
	// Mixtral's experts are wide enough that the caches equal the former
	// estimate, so its published block counts do not move.
	mixtral := deployment(t, "Mixtral-8x7B", "H100", func(d *Deployment) { d.TensorParallel = 2 })
	if got, was := mixtral.fusedMoEWorkspaceBytes(tokens), tokens*activationBytes*3*mixtral.Model.mlpActiveWidth()/2; got != was {
		t.Errorf("Mixtral TP 2: %.0f bytes of fused MoE caches, want the former %.0f", got, was)
	}
	// Batches beyond the chunk reuse the chunk's caches.
	dsv3 := deployment(t, "DeepSeek-V3", "H200", func(d *Deployment) { d.TensorParallel = 8 })
	if got, want := dsv3.fusedMoEWorkspaceBytes(4*fusedMoEChunk), dsv3.fusedMoEWorkspaceBytes(fusedMoEChunk); got != want {
		t.Errorf("%d tokens: %.0f bytes of caches, want the %d-token chunk's %.0f", 4*fusedMoEChunk, got, fusedMoEChunk, want)
	}
	// DeepSeek-V3's profile run now peaks in its MoE layers, above the
	// dense-width estimate.
	dsv3.MaxNumBatchedTokens, dsv3.MaxNumSeqs = tokens, 256
	dense := tokens * activationBytes * (3*dsv3.Model.mlpActiveWidth()/8 + 4*float64(dsv3.Model.Hidden))
	if got := float64(dsv3.activationPeakBytes()); got < 1.5*dense {
		t.Errorf("DeepSeek-V3 TP 8 activation peak %.2f GiB, want the fused MoE caches above the dense estimate %.2f GiB", got/(1<<30), dense/(1<<30))
	}
}
