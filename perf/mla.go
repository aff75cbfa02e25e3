package perf

import "fmt"

// MLA's decode path as vLLM runs it (doc.go, "MLA decode module"): the
// measured attention block of DeepSeek-V3's shape in decode replaces the
// sum of its parts the other tables give, which leaves out the absorbed
// per-head matmuls, the activation quantization of block-wise FP8
// projections and the MLA kernel's own costs.

// mlaTableShape is the attention block aiconfigurator measured
// (DeepSeek-V3's): any model with these widths, run as MLA (not
// Expanded), reads the table at its query heads per GPU.
var mlaTableShape = struct {
	hidden int
	mla    MLA
}{7168, MLA{QLoraRank: 1536, KVLoraRank: 512, QKNopeHeadDim: 128, QKRopeHeadDim: 64, VHeadDim: 128}}

// mlaDecodeDtype names the table variant for a deployment: the
// projections' weights (block-wise FP8 on a GPU with FP8 units, or 16-bit)
// and the KV cache's dtype; "" when no variant was measured.
func mlaDecodeDtype(d Deployment) string {
	q := d.Model.Quantization
	var gemm string
	switch {
	case q.SkippedAttentionLayers > 0:
		return ""
	case q.Method == "":
		gemm = "bf16"
	case q.Method == "fp8" && q.WeightBlockSize > 0 && d.GPU.FP8FLOPS > 0:
		gemm = "fp8-block"
	default:
		return ""
	}
	if isFP8KVCache(d.KVCacheDType) {
		return gemm + "+fp8-kv"
	}
	return gemm + "+bf16-kv"
}

// setMLADecode sets k.mlaDecode: per layer, by (mean context, decodes),
// the measured MLA block in decode less what k's GEMM, decode-attention
// and small-kernel tables give the same rows (negative where those give
// more). nil unless the model has the measured shape, the GPU its own
// table (H100-SXM, H200) and the weights and cache a measured variant.
// It returns the table's name for KernelSource.MLA ("" without one).
func (k *stepKernels) setMLADecode(d Deployment, cat *kernelCatalog, gemm *gemmTimer) string {
	m, g := d.Model, d.GPU
	if m.Hidden != mlaTableShape.hidden || m.MLA != mlaTableShape.mla {
		return ""
	}
	dtype := mlaDecodeDtype(d)
	if dtype == "" || k.decode == nil {
		return ""
	}
	table := cat.find("mla-decode", g.Name, dtype)
	small := newElementwiseTimer(d, cat)
	if table == nil || small == nil {
		return ""
	}
	heads := float64(m.Heads) / float64(d.TensorParallel)
	projections := m.attentionGEMMs(d.TensorParallel)
	ops := m.mlaOps(d.TensorParallel, 1)
	scale := calibrated(g, false, 0, 1)
	k.mlaDecode = table.slice(func(ctx, batch float64) float64 {
		parts := k.decode.at2(ctx, batch) + small(ops, batch)
		for _, s := range projections {
			parts += gemm.at(batch, s.n, s.k)
		}
		return table.at(ctx, batch, heads)*scale - parts
	})
	return fmt.Sprintf("%s %s, %g heads", g.Name, dtype, heads)
}
