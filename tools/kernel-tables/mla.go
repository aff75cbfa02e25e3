package main

import (
	"fmt"
	"path/filepath"
	"strings"
)

// vLLM's MLA attention module in decode (aiconfigurator's
// mla_generation_module): DeepSeek-V3's whole attention block of one layer
// on one GPU (the replicated q_a and kv_a projections and their norms,
// q_b, rotary embedding, the absorbed per-head matmuls, the MLA decode
// kernel, o_proj, with the activation quantization block-wise FP8 weights
// need), by context, batch and query heads per GPU (128/TP for
// DeepSeek-V3/R1). vLLM picks the kernel by the KV cache's dtype:
// FLASH_ATTN_MLA for a 16-bit cache, FlashMLA for an fp8 one.

// mlaSystems are the vLLM collections taken, by servebench GPU name: the
// newest, which sweeps every head count (0.19.0's names no kernel and
// sweeps 16, 32 and 128 heads only).
var mlaSystems = map[string]string{"H100-SXM": "0.24.0", "H200": "0.24.0"}

var (
	mlaContext = powersOfTwo(2, 131072)
	mlaBatch   = powersOfTwo(1, 1024)
	mlaHeads   = powersOfTwo(1, 128)
)

// mlaVariants: the projections' weights (gemm_type) and the KV cache
// dtype, with the kernel vLLM runs for that cache and servebench's name.
var mlaVariants = []struct{ gemm, kv, kernel, short string }{
	{"bfloat16", "bfloat16", "FLASH_ATTN_MLA", "bf16+bf16-kv"},
	{"fp8_block", "bfloat16", "FLASH_ATTN_MLA", "fp8-block+bf16-kv"},
	{"bfloat16", "fp8", "FLASHMLA", "bf16+fp8-kv"},
	{"fp8_block", "fp8", "FLASHMLA", "fp8-block+fp8-kv"},
}

func (a aiconfigurator) writeMLA(out string, g aicGPU) error {
	version, ok := mlaSystems[g.name]
	if !ok {
		return nil
	}
	rel := filepath.Join(g.system, "mla", "vllm", version, "mla_generation_module_perf.parquet")
	rows, err := readParquet(filepath.Join(a.root, aicData, rel))
	if err != nil {
		return err
	}
	for _, v := range mlaVariants {
		grid := newGrid(axis{"context", mlaContext}, axis{"batch", mlaBatch}, axis{"heads", mlaHeads})
		device, model := "", ""
		for _, r := range rows {
			if r["kernel_source"] != v.kernel || r["gemm_type"] != v.gemm || r["kv_cache_dtype"] != v.kv || r["tp_size"] != "1" {
				continue
			}
			if grid.set([]float64{num(r["step"]), num(r["batch_size"]), num(r["num_heads"])}, 1000*num(r["latency"])) {
				device, model = r["device"], r["model"]
			}
		}
		if grid.measured() == 0 {
			return fmt.Errorf("%s: no %s rows for gemm_type %s, kv_cache_dtype %s", rel, v.kernel, v.gemm, v.kv)
		}
		// More context or more sequences is more work; more heads per GPU
		// too (the projections' q_b and o_proj widths and the kernel's).
		changed := grid.envelope()
		t := table{
			file: fmt.Sprintf("mla-decode-%s-%s.txt", fileStem(g.name), strings.ReplaceAll(v.short, "+", "-")),
			header: append(a.header("mla-decode", g.name, rel, device,
				fmt.Sprintf("framework vllm %s, op mla_generation_module, model %s, kernel_source %s, gemm_type %s, kv_cache_dtype %s, tp_size 1 (heads are per GPU)",
					version, model, v.kernel, v.gemm, v.kv)),
				[2]string{"dtype", v.short},
				[2]string{"shape", "hidden 7168, q_lora_rank 1536, kv_lora_rank 512, qk_nope_head_dim 128, qk_rope_head_dim 64, v_head_dim 128"},
				[2]string{"cleaning", fmt.Sprintf("monotone envelope: %d of %d cells took a larger problem's lower time", changed, grid.measured())}),
			grid: grid,
		}
		if err := t.write(out); err != nil {
			return err
		}
	}
	return nil
}
