package perf

import (
	"fmt"
	"strings"
)

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
// more). nil unless the model has the measured shape, the GPU a table of
// its own (H100-SXM, H200) or of its origin (H20, H100-PCIe, H100-NVL from
// H100-SXM, as their other tables) and the weights and cache a measured
// variant. It returns the table's name for KernelSource.MLA ("" without
// one).
func (k *stepKernels) setMLADecode(d Deployment, cat *kernelCatalog, gemm *gemmTimer) string {
	m, g := d.Model, d.GPU
	if m.Hidden != mlaTableShape.hidden || m.MLA != mlaTableShape.mla {
		return ""
	}
	dtype := mlaDecodeDtype(d)
	if dtype == "" || k.decode == nil {
		return ""
	}
	origin := g.Name
	table := cat.find("mla-decode", origin, dtype)
	if table == nil {
		origin = kernelOrigin[g.Name].gemm
		table = cat.find("mla-decode", origin, dtype)
	}
	src, ok := measuredGPU(origin)
	small := newElementwiseTimer(d, cat)
	if table == nil || !ok || small == nil {
		return ""
	}
	heads := float64(m.Heads) / float64(d.TensorParallel)
	projections := m.attentionGEMMs(d.TensorParallel)
	ops := m.mlaOps(d.TensorParallel, 1)
	scale := calibrated(g, false, 0, 1)
	work := mlaDecodeWork(d, heads, projections, strings.HasPrefix(dtype, "fp8-block"))
	floor := table.at(table.axes[0].values[0], table.axes[1].values[0], heads)
	k.mlaDecode = &mlaExcess{
		block: table.slice(func(ctx, batch float64) float64 {
			return aboveFloor(table.at(ctx, batch, heads), floor, work.deriveScale(src, g, ctx, batch)) * scale
		}),
		parts: table.slice(func(ctx, batch float64) float64 {
			parts := k.decode.at2(ctx, batch) + small(ops, batch)
			for _, s := range projections {
				parts += gemm.at(batch, s.n, s.k)
			}
			return parts
		}),
	}
	if origin != g.Name {
		return fmt.Sprintf("derived from %s %s, %g heads", origin, dtype, heads)
	}
	return fmt.Sprintf("%s %s, %g heads", g.Name, dtype, heads)
}

// mlaExcess is the measured MLA block less its parts, kept as two tables
// on the block table's grid and subtracted when read. The difference
// changes sign: at long contexts the decode-attention table, which times
// the latent reads as a GQA kernel's, outgrows the measured block (64
// sequences of 60,000 tokens on an H200: 2.0 ms against the block's
// 1.1 ms). Tables interpolate in log space, so one table of the
// differences gave NaN past the sign change, and a NaN layer time read
// as no GPU time at all.
type mlaExcess struct {
	block, parts *kernelTable
}

// at2 is the excess for decodes of mean context ctx.
func (e *mlaExcess) at2(ctx, batch float64) float64 {
	return e.block.at2(ctx, batch) - e.parts.at2(ctx, batch)
}

// mlaWork is the roofline work of one layer's MLA block in decode on one
// GPU, for deriving a GPU's time from its origin's table: the projections'
// weights read once a step and their FLOPs per row, and the latent KV
// cache read and its FLOPs per context token of each sequence.
type mlaWork struct {
	weightBytes, projFLOPsPerRow       float64
	kvBytesPerToken, attnFLOPsPerToken float64
	fp8Projections                     bool
}

func mlaDecodeWork(d Deployment, heads float64, projections []gemmShape, fp8 bool) mlaWork {
	a := d.Model.MLA
	w := mlaWork{fp8Projections: fp8}
	for _, s := range projections {
		w.weightBytes += s.n * s.k * d.Model.linearBytesPerParam()
		w.projFLOPsPerRow += 2 * s.n * s.k
	}
	latent, rope := float64(a.KVLoraRank), float64(a.QKRopeHeadDim)
	kvBytes := float64(activationBytes)
	if isFP8KVCache(d.KVCacheDType) {
		kvBytes = 1
	}
	w.kvBytesPerToken = (latent + rope) * kvBytes
	// Each head's query meets every cached latent (scores over latent and
	// rope dims) and reads the latents back (values).
	w.attnFLOPsPerToken = heads * 2 * (latent + rope + latent)
	return w
}

// deriveScale is the block's time on dst over its time on src
// (deriveMixedScale) for decodes of ctx tokens.
func (w mlaWork) deriveScale(src, dst GPU, ctx, batch float64) float64 {
	return deriveMixedScale(src, dst, w.fp8Projections, w.projFLOPsPerRow*batch, w.attnFLOPsPerToken*ctx*batch,
		w.weightBytes+w.kvBytesPerToken*ctx*batch)
}
