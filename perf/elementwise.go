package perf

import "math"

// A layer's small kernels outside GEMMs and attention (vLLM's RMSNorm,
// rotary embedding and SiLU-and-mul) as Vidur measured them
// (kerneltables/elementwise-*.txt): a few microseconds each at decode
// batch sizes, bandwidth-bound at prefill sizes. doc.go ("Per-layer
// kernels") cites the data and the op counts.

// elementwiseOp indexes the op axis of the elementwise tables.
type elementwiseOp float64

const (
	opRMSNorm    elementwiseOp = 1
	opRotary     elementwiseOp = 2
	opSiluAndMul elementwiseOp = 3
)

// elementwiseOrigin is the Vidur profile a GPU's small kernels are read
// from: its own, or the measured part closest in memory system (the ops
// are bandwidth-bound): HBM Hopper and Blackwell parts from H100, the
// A100s from A100, GDDR parts (Ampere GA102 and Ada) from A40.
var elementwiseOrigin = map[string]string{
	"H100-SXM": "H100-SXM", "H200": "H100-SXM", "H20": "H100-SXM", "H100-PCIe": "H100-SXM", "H100-NVL": "H100-SXM", "B200": "H100-SXM",
	"A100-80GB": "A100-80GB", "A100-40GB": "A100-80GB", "A100-80GB-PCIe": "A100-80GB", "A100-40GB-PCIe": "A100-80GB",
	"A40": "A40", "A10": "A40", "A10G": "A40", "L4": "A40", "L40": "A40", "L40S": "A40", "RTX-4090": "A40",
}

// layerOp is one small kernel of a layer: which op, how many elements it
// touches per token (its width on one GPU) and how many of the stage's
// layers run it.
type layerOp struct {
	op     elementwiseOp
	width  float64
	layers float64
}

// layerOps lists the small kernels of one step of a stage with layers
// (moeLayers of them MoE), as vLLM's model code runs them: two fused
// residual-add RMSNorms per layer (MLA adds q_a and kv_a norms, Qwen3 the
// per-head q and k norms), the rotary embedding of q and k, and
// SiLU-and-mul of dense MLPs and shared experts (the routed experts' is
// inside the fused MoE kernel).
func (m Model) layerOps(t int, layers, moeLayers float64) []layerOp {
	tf := float64(t)
	ops := []layerOp{{opRMSNorm, float64(m.Hidden), 2 * layers}}
	if m.IsMLA() {
		ops = append(ops, m.mlaOps(t, layers)...)
	} else {
		ops = append(ops, layerOp{opRotary, (float64(m.Heads)/tf + math.Max(float64(m.KVHeads)/tf, 1)) * float64(m.HeadDim), layers})
	}
	if m.QKNorm {
		heads, kvHeads := float64(m.Heads)/tf, math.Max(float64(m.KVHeads)/tf, 1)
		ops = append(ops, layerOp{opRMSNorm, heads * float64(m.HeadDim), layers}, layerOp{opRMSNorm, kvHeads * float64(m.HeadDim), layers})
	}
	if dense := layers - moeLayers; dense > 0 {
		ops = append(ops, layerOp{opSiluAndMul, float64(m.Intermediate) / tf, dense})
	}
	if s := float64(m.MoE.SharedIntermediate); moeLayers > 0 && s > 0 {
		ops = append(ops, layerOp{opSiluAndMul, s / tf, moeLayers})
	}
	return ops
}

// mlaOps are MLA's small kernels inside its attention block, on layers:
// the q_a (when the query is low-rank) and kv_a RMSNorms and the rotary
// embedding of the queries' and the shared key's RoPE parts.
func (m Model) mlaOps(t int, layers float64) []layerOp {
	a := m.MLA
	var ops []layerOp
	if a.QLoraRank > 0 {
		ops = append(ops, layerOp{opRMSNorm, float64(a.QLoraRank), layers})
	}
	return append(ops,
		layerOp{opRMSNorm, float64(a.KVLoraRank), layers},
		layerOp{opRotary, (float64(m.Heads)/float64(t) + 1) * float64(a.QKRopeHeadDim), layers})
}

// newElementwiseCurve is the stage's small kernels by tokens in the step;
// nil when the GPU has no profile to read.
func newElementwiseCurve(d Deployment, cat *kernelCatalog, layers, moeLayers float64) *curve {
	timer := newElementwiseTimer(d, cat)
	if timer == nil {
		return nil
	}
	ops := d.Model.layerOps(d.TensorParallel, layers, moeLayers)
	return newCurve(kernelGridM, func(tokens float64) float64 {
		return timer(ops, tokens)
	}).densify(d.MaxNumBatchedTokens + d.MaxNumSeqs)
}

// newElementwiseTimer times small kernels on the deployment's GPU at a
// step's tokens; nil when the GPU has no profile to read. A GPU derived
// from another runs each kernel as the origin would on bandwidth-scaled
// elements, so a launch-bound kernel keeps its floor and a
// bandwidth-bound one scales with the bandwidths.
func newElementwiseTimer(d Deployment, cat *kernelCatalog) func(ops []layerOp, tokens float64) float64 {
	g := d.GPU
	origin := elementwiseOrigin[g.Name]
	table := cat.find("elementwise", origin, "")
	src, ok := measuredGPU(origin)
	if table == nil || !ok {
		return nil
	}
	stretch := src.MemoryBandwidth / g.MemoryBandwidth
	if src.Name == g.Name {
		stretch = 1
	}
	scale := calibrated(g, false, 0, 1)
	return func(ops []layerOp, tokens float64) float64 {
		sum := 0.0
		for _, o := range ops {
			sum += o.layers * table.at2(float64(o.op), tokens*o.width*stretch)
		}
		return sum * scale
	}
}
