package perf

import (
	"fmt"
	"math"
	"strings"
)

// vLLM runs a MoE layer's routed experts as one fused kernel (a Triton
// grouped GEMM for 16-bit and FP8 weights, Marlin's MoE kernel for 4-bit
// ones), not as a GEMM per expert: its time comes from aiconfigurator's
// measurements of that kernel (kerneltables/moe-*.txt) at the expert shape
// of a published model, by tokens in the step and TP size. doc.go ("Fused
// MoE") cites them and states how another shape or GPU is derived.

// moeShape is one measured expert shape: hidden size, expert width, routed
// experts per token and routed experts per layer.
type moeShape struct{ hidden, inter, topk, experts float64 }

// moeTableShapes parses a moe table's "shapes" header: the shape axis'
// values 1..n name these shapes in order.
func moeTableShapes(t *kernelTable) ([]moeShape, error) {
	_, list, ok := strings.Cut(t.header["shapes"], ":")
	if !ok {
		return nil, fmt.Errorf("kernel table %s: no shapes header", t.file)
	}
	var out []moeShape
	for _, f := range strings.Fields(list) {
		var s moeShape
		if _, err := fmt.Sscanf(f, "%gx%gx%gx%g", &s.hidden, &s.inter, &s.topk, &s.experts); err != nil || !(s.hidden > 0 && s.inter > 0 && s.topk > 0 && s.experts > 0) {
			return nil, fmt.Errorf("kernel table %s: shape %q is not HIDDENxINTERxTOPKxEXPERTS", t.file, f)
		}
		out = append(out, s)
	}
	if len(t.axes) != 3 || len(out) != len(t.axes[0].values) {
		return nil, fmt.Errorf("kernel table %s: %d shapes for a shape axis of %d", t.file, len(out), len(t.axes[0].values))
	}
	return out, nil
}

// nearestMoEShape is the measured shape closest to s: the same share of
// experts per token first (it sets how many experts a step touches), then
// the same expert size (hidden × width); exact when the model was measured.
func nearestMoEShape(shapes []moeShape, s moeShape) int {
	best, bestD := 0, math.Inf(1)
	for i, c := range shapes {
		d := 2*math.Abs(math.Log(s.topk/s.experts)-math.Log(c.topk/c.experts)) +
			math.Abs(math.Log(s.hidden*s.inter)-math.Log(c.hidden*c.inter)) +
			0.1*math.Abs(math.Log(s.topk/c.topk))
		if d < bestD {
			best, bestD = i, d
		}
	}
	return best
}

// moeDtype is the table a model's routed experts are timed from: the
// checkpoint's weight format as vLLM's MoE kernels take it.
func moeDtype(m Model, g GPU) string {
	q := m.Quantization
	switch {
	case q.Method == "fp8" && g.FP8FLOPS > 0 && q.WeightBlockSize > 0:
		return "fp8-block"
	case q.Method == "fp8" && g.FP8FLOPS > 0:
		return "fp8"
	case (q.Method == "gptq" || q.Method == "awq") && q.Bits == 4:
		return "int4"
	}
	return "bf16"
}

// moeOrigins are the GPUs with measured fused-MoE tables; a GPU maps to
// its own, or (kernelOrigin's GEMM origin) its architecture's; others are
// derived from H100-SXM by deriveScale [assumption: the fused kernel
// reaches the same share of each part's roofline].
var moeOrigins = map[string]bool{"H100-SXM": true, "H200": true, "B200": true}

// moeMaxTableRanks is the largest TP size the tables hold (one node).
const moeMaxTableRanks = 8

// newMoECurve is the fused MoE time of the stage's MoE layers by tokens in
// the step, on deployment d; nil when no table applies.
func newMoECurve(d Deployment, cat *kernelCatalog, moeLayers float64) (*curve, string) {
	m, g := d.Model, d.GPU
	origin := kernelOrigin[g.Name].gemm
	if !moeOrigins[origin] {
		origin = "H100-SXM"
	}
	dtype := moeDtype(m, g)
	kind := "moe"
	if d.ExpertParallel {
		kind = "moe-ep"
	}
	table := cat.find(kind, origin, dtype)
	if table == nil && kind == "moe-ep" {
		// No EP sweep for this weight format (4-bit): the TP table, which
		// gives each GPU the same 1/t of the expert work.
		kind = "moe"
		table = cat.find(kind, origin, dtype)
	}
	if table == nil {
		dtype = "bf16"
		table = cat.find(kind, origin, dtype)
	}
	src, ok := measuredGPU(origin)
	if table == nil || !ok {
		return nil, ""
	}
	shapes, err := moeTableShapes(table)
	if err != nil {
		panic(fmt.Sprintf("perf: embedded kernel tables: %v", err))
	}
	want := moeShape{float64(m.Hidden), float64(m.MoE.ExpertIntermediate), float64(m.MoE.ExpertsPerToken), float64(m.MoE.Experts)}
	i := nearestMoEShape(shapes, want)
	s := shapes[i]
	// Another shape: the same kernel at the measured shape, scaled by the
	// work per token (hidden × width × experts per token), which sets both
	// the FLOPs and, while each token reaches experts of its own, the
	// expert weights read.
	shapeScale := want.hidden * want.inter * want.topk / (s.hidden * s.inter * s.topk)
	ranks := float64(d.TensorParallel)
	rankScale := 1.0
	if ranks > moeMaxTableRanks {
		rankScale, ranks = moeMaxTableRanks/ranks, moeMaxTableRanks
	}
	fp8 := dtype == "fp8" || dtype == "fp8-block"
	bpw := m.linearBytesPerParam()
	// One rank's share: a slice of every expert (TP) or whole experts, a
	// 1/t share of them and of the tokens' expert work (EP).
	width, experts, pairsShare := want.inter/float64(d.TensorParallel), want.experts, 1.0
	if kind == "moe-ep" {
		width, experts, pairsShare = want.inter, want.experts/float64(d.TensorParallel), 1/float64(d.TensorParallel)
	}
	c := newCurve(kernelGridM, func(tokens float64) float64 {
		// The roofline's FLOPs and bytes of the layer on one rank, for
		// deriving another GPU's time and for a calibration's scales.
		touched := experts * (1 - math.Pow(1-want.topk/want.experts, tokens))
		pairs := tokens * want.topk * pairsShare
		flops := 2 * 3 * want.hidden * width * pairs
		bytes := touched*3*want.hidden*width*bpw + activationBytes*pairs*(2*want.hidden+3*width)
		t := table.at(float64(i+1), ranks, tokens) * shapeScale * rankScale
		return moeLayers * t * deriveScale(src, g, fp8, flops, bytes) * calibrated(g, fp8, flops, bytes)
	})
	name := fmt.Sprintf("%s %s %s", origin, dtype, s)
	if kind == "moe-ep" {
		name += " EP"
	}
	return c.densify(d.MaxNumBatchedTokens + d.MaxNumSeqs), name
}

func (s moeShape) String() string {
	return fmt.Sprintf("%gx%gx%gx%g", s.hidden, s.inter, s.topk, s.experts)
}
