package perf

import (
	"fmt"
	"math"
	"slices"
	"strings"
)

// The table-driven step model: GEMMs, attention and collectives timed from
// measured kernel tables (kerneltables.go), looked up once per deployment
// into one-dimensional curves that a step reads with one interpolation
// each. doc.go ("Kernel tables") explains every rule.

// KernelSource says where a deployment's kernel times come from.
type KernelSource struct {
	// Mode is "measured" (the GPU's own tables), "derived" (another GPU's
	// tables of the same architecture, scaled) or "roofline" (no table).
	Mode string
	// GEMM and Attention name the GPUs whose tables are used.
	GEMM, Attention string
	// Reason says why the roofline stands in ("no table").
	Reason string
	// MoE names the fused-MoE table a MoE model's routed experts are
	// timed from ("H200 fp8-block 7168x2048x8x256": GPU, weight format and
	// the measured expert shape); empty for dense models.
	MoE string
	// MLA names the MLA decode block table an MLA model's attention is
	// timed from in decode ("H200 fp8-block+bf16-kv, 16 heads"); empty
	// when none covers it (mla.go).
	MLA string
	// BlockFP8 names the kernel a block-wise FP8 checkpoint's linear
	// layers are timed as, when it is not the per-tensor table's
	// ("vLLM CUTLASS blockwise, 1.56× per-tensor"); empty otherwise.
	BlockFP8 string
	// MatmulRates names the measured matmul rates a derived GPU's
	// compute is scaled by ("L4 70.89, L40S 269.15 TFLOP/s"); empty where
	// the data sheets' peaks are used (measuredComputeRatio).
	MatmulRates string
	// UnpackedDecodes says how a step's decodes run beside its prompt
	// tokens when FlashAttention 2 runs them unpacked ("5× KV reads,
	// FlashAttention 2"); empty where they run as the decode table's.
	UnpackedDecodes string
	// MLAPrefill says how MLA's prefill attention is shaped when vLLM pads
	// V to the query/key width ("V padded to 192, 1.2× the FLOPs");
	// empty otherwise (Deployment.mlaPadsV).
	MLAPrefill string
}

// String is what sim's engine section prints: "measured: H100-SXM",
// "derived from A40 (attention: A100-80GB)", "roofline: no table".
func (s KernelSource) String() string {
	tables := ""
	if s.MoE != "" {
		tables = "; fused MoE: " + s.MoE
	}
	if s.MLA != "" {
		tables += "; MLA decode block: " + s.MLA
	}
	if s.BlockFP8 != "" {
		tables += "; block-FP8 linears: " + s.BlockFP8
	}
	if s.MLAPrefill != "" {
		tables += "; MLA prefill: " + s.MLAPrefill
	}
	if s.UnpackedDecodes != "" {
		tables += "; decodes beside prompt tokens: " + s.UnpackedDecodes
	}
	switch s.Mode {
	case "measured":
		return "measured: " + s.GEMM + tables
	case "derived":
		from := s.GEMM
		if s.Attention != "" && s.Attention != s.GEMM {
			from = fmt.Sprintf("%s (attention: %s)", s.GEMM, s.Attention)
		}
		if s.MatmulRates != "" {
			from += ", compute at measured matmul rates (" + s.MatmulRates + ")"
		}
		return "derived from " + from + tables
	}
	return "roofline: " + s.Reason
}

// kernelOrigin maps a catalog GPU to the measured GPUs its GEMM and
// attention tables come from: itself, or the nearest measured part of its
// architecture (doc.go cites why each pair is the same silicon family).
var kernelOrigin = map[string]struct{ gemm, attention string }{
	"H100-SXM":  {"H100-SXM", "H100-SXM"},
	"H200":      {"H200", "H200"},
	"A100-80GB": {"A100-80GB", "A100-80GB"},
	"L40S":      {"L40S", "L40S"},
	"B200":      {"B200", "B200"},
	"A40":       {"A40", "A100-80GB"},
	"A10":       {"A40", "A100-80GB"},
	"A10G":      {"A40", "A100-80GB"},
	"L4":        {"L40S", "L40S"},
	"L40":       {"L40S", "L40S"},
	"RTX-4090":  {"L40S", "L40S"},
	"H20":       {"H100-SXM", "H100-SXM"},
	"H100-PCIe": {"H100-SXM", "H100-SXM"},
	"H100-NVL":  {"H100-SXM", "H100-SXM"},
	"A100-40GB": {"A100-80GB", "A100-80GB"},
	// The PCIe cards: the SXM part's die at a lower power limit.
	"A100-40GB-PCIe": {"A100-80GB", "A100-80GB"},
	"A100-80GB-PCIe": {"A100-80GB", "A100-80GB"},
}

// measuredSpecs are data-sheet rates of measured GPUs that the catalog
// may not carry, for scaling their tables to a derived GPU: A40 (NVIDIA
// A40 data sheet: 84 SMs at 1740 MHz boost, 149.7 TF dense BF16 tensor,
// 696 GB/s GDDR6).
var measuredSpecs = map[string]GPU{
	"A40": {Name: "A40", BF16FLOPS: 149.7 * tf, MemoryBandwidth: 696 * gb},
}

func measuredGPU(name string) (GPU, bool) {
	if g, ok := measuredSpecs[name]; ok {
		return g, true
	}
	g, err := LookupGPU(name)
	return g, err == nil
}

// deriveScale turns a time measured on src into one on dst for a kernel
// whose roofline on src is flops at peak and bytes at bandwidth: the
// compute share scales with the peaks (SM count × clock × rate per SM, the
// data sheets' dense figures) corrected by measured matmul rates where
// both parts have one (measuredComputeRatio), the memory share with the
// bandwidths.
func deriveScale(src, dst GPU, fp8 bool, flops, bytes float64) float64 {
	return deriveMixedScale(src, dst, fp8, flops, 0, bytes)
}

// deriveMixedScale is deriveScale for a kernel whose flops run at its
// weights' rate (FP8's when fp8) and bf16Flops at BF16's, such as MLA's
// block-FP8 projections beside its attention.
func deriveMixedScale(src, dst GPU, fp8 bool, flops, bf16Flops, bytes float64) float64 {
	if src.Name == dst.Name {
		return 1
	}
	ps := src.BF16FLOPS
	if fp8 && src.FP8FLOPS > 0 && dst.FP8FLOPS > 0 {
		ps = src.FP8FLOPS
	}
	c, a, m := flops/ps, 0.0, bytes/src.MemoryBandwidth
	if bf16Flops > 0 {
		a = bf16Flops / src.BF16FLOPS
	}
	if c+a+m == 0 {
		return 1
	}
	f, fa := c/(c+a+m), a/(c+a+m)
	return f/measuredComputeRatio(src, dst, fp8) + fa/measuredComputeRatio(src, dst, false) + (1-f-fa)*src.MemoryBandwidth/dst.MemoryBandwidth
}

// calibrated is the factor a calibration's EfficiencyScale puts on a
// measured kernel time: its roofline compute share (on g) over the compute
// scale, its memory share over the bandwidth scale.
func calibrated(g GPU, fp8 bool, flops, bytes float64) float64 {
	sc, sb := g.Scale.compute(), g.Scale.bandwidth()
	if sc == 1 && sb == 1 {
		return 1
	}
	return shareScaled(g, fp8, flops, bytes, sc, sb)
}

// inModelComputeRate is the rate a GEMM's compute runs at inside a
// model's layer, as a share of the rate aiconfigurator measured for it on
// its own (doc.go, "In-model GEMMs"; TestInModelComputeRateMatchesVidur
// recomputes it from Vidur's figures).
const inModelComputeRate = 0.87

// inModelWeightRate is the rate a GEMM's weight read runs at inside a
// model's layer, as a share of the rate aiconfigurator measured for it on
// its own, by the table's GPU: Vidur's in-layer times of the same
// operators where the weight read decides (roofline compute share ≤ 0.2),
// median (doc.go, "In-model GEMMs"; TestInModelComputeRateMatchesVidur
// recomputes both). A table of a GPU Vidur did not measure keeps its
// rate: the two measured dies differ (the H100 reads 5% slower in the
// layer, the A100 1% faster), so neither carries to a third.
var inModelWeightRate = map[string]float64{"H100-SXM": 0.949, "A100-80GB": 1.013}

// inModel is the factor the in-model rates put on a GEMM time measured on
// its own on src: the roofline's compute share slows by
// inModelComputeRate, its memory share by src's inModelWeightRate.
func inModel(src GPU, fp8 bool, flops, bytes float64) float64 {
	w, ok := inModelWeightRate[src.Name]
	if !ok {
		w = 1
	}
	return shareScaled(src, fp8, flops, bytes, inModelComputeRate, w)
}

// shareScaled divides a kernel time's roofline compute share on g by
// computeScale and its memory share by bandwidthScale.
func shareScaled(g GPU, fp8 bool, flops, bytes, computeScale, bandwidthScale float64) float64 {
	peak := g.BF16FLOPS
	if fp8 && g.FP8FLOPS > 0 {
		peak = g.FP8FLOPS
	}
	c, m := flops/peak, bytes/g.MemoryBandwidth
	if c+m == 0 {
		return 1
	}
	f := c / (c + m)
	return f/computeScale + (1-f)/bandwidthScale
}

// curve is a time as a function of one coordinate, on a log grid:
// interpolated linearly in log–log, held below the first point and
// proportional past the last (more tokens or bytes, more time).
type curve struct {
	xs, logs []float64 // log coordinates and log times
	// dense holds at(i) for whole i below its length, so that a step's
	// token and row counts cost an index, not a log and an exp.
	dense    []float64
	last     float64 // exp(last log coordinate)
	lastTime float64
}

func newCurve(xs []float64, f func(x float64) float64) *curve {
	c := &curve{}
	for _, x := range xs {
		c.xs = append(c.xs, math.Log(x))
		c.logs = append(c.logs, math.Log(f(x)))
	}
	c.last, c.lastTime = xs[len(xs)-1], math.Exp(c.logs[len(c.logs)-1])
	return c
}

// densify tabulates the curve at every whole coordinate up to n (at most
// 1<<16 of them).
func (c *curve) densify(n int) *curve {
	n = min(max(n, 0), 1<<16)
	d := make([]float64, n+1)
	for i := range d {
		d[i] = c.at(float64(i))
	}
	c.dense = d
	return c
}

// at is the time at x (seconds); x ≤ 0 costs nothing.
func (c *curve) at(x float64) float64 {
	if i := int(x); float64(i) == x && i >= 0 && i < len(c.dense) {
		return c.dense[i]
	}
	if !(x > 0) {
		return 0
	}
	if x >= c.last {
		return c.lastTime * x / c.last
	}
	lx := math.Log(x)
	if lx <= c.xs[0] {
		return math.Exp(c.logs[0])
	}
	i := 1
	for lx > c.xs[i] {
		i++
	}
	w := (lx - c.xs[i-1]) / (c.xs[i] - c.xs[i-1])
	return math.Exp(c.logs[i-1] + w*(c.logs[i]-c.logs[i-1]))
}

// stepKernels is a deployment's table-driven model of one pipeline
// stage's GPU work per step.
type stepKernels struct {
	source KernelSource

	layers float64 // layers in the busiest stage
	// linear is every GEMM of the stage's layers but the routed experts,
	// by tokens in the step; head is the lm_head by sampled rows.
	linear, head *curve
	// moe is the stage's MoE layers' routed experts, run as vLLM's fused
	// MoE kernel, by tokens in the step (fusedmoe.go).
	moe *curve
	// expert is one routed expert's up and down GEMMs by its tokens, in
	// every MoE layer of the stage, for MoE models no fused-MoE table
	// covers; experts and perToken as in Roofline.
	expert             *curve
	experts, perToken  float64
	expertParallelDivs float64 // ranks sharing the touched experts (EP), else 1
	// prefill is one layer's prefill attention by (equivalent prompt
	// length, prompts); decode one layer's decode attention by (mean
	// context, decodes). Both at the deployment's heads per GPU.
	prefill, decode *kernelTable
	maxISL          float64 // the prefill table's longest prompt
	// smallKernels is the stage's per-layer kernels outside GEMMs and
	// attention (norms, rotary embedding, activation) by tokens in the
	// step, from Vidur's measurements (elementwise.go); tokenTraffic is
	// the memory time per token the tables do not cover: the new tokens'
	// KV writes, and without smallKernels the roofline's activation
	// traffic.
	smallKernels *curve
	tokenTraffic float64
	// mlaDecode is, per layer, what the measured MLA block in decode
	// takes beyond the parts above by (mean context, decodes); nil
	// without a table for the deployment (mla.go).
	mlaDecode  *mlaExcess
	mlaContext *curve
	// unpackedDecodeGroups is how many times a decode's KV cache is read
	// in a step that also holds prompt tokens, where the decodes run
	// unpacked (unpackedDecodeGroups); 0 where they run as the decode
	// table's.
	unpackedDecodeGroups float64
}

// kernelPlan finds the tables for a deployment; nil (and the reason) when
// the roofline must stand in.
func kernelPlan(d Deployment, r *Roofline) (*stepKernels, KernelSource) {
	g, m := d.GPU, d.Model
	if d.NoKernelTables {
		return nil, KernelSource{Mode: "roofline", Reason: "kernel tables off"}
	}
	origin, ok := kernelOrigin[g.Name]
	if !ok || !isCatalogGPU(g) {
		return nil, KernelSource{Mode: "roofline", Reason: "no table"}
	}
	cat := kernelTables()
	gemmSrc, ok1 := measuredGPU(origin.gemm)
	attnSrc, ok2 := measuredGPU(origin.attention)
	prefillT := cat.find("attention-prefill", origin.attention, "")
	decodeT := cat.find("attention-decode", origin.attention, "")
	if !ok1 || !ok2 || prefillT == nil || decodeT == nil {
		return nil, KernelSource{Mode: "roofline", Reason: "no table"}
	}
	kernel := d.Kernels.Kernel(m, g)
	gemm := newGEMMTimer(cat, gemmSrc, g, kernel, m)
	if gemm == nil {
		return nil, KernelSource{Mode: "roofline", Reason: "no table"}
	}
	src := KernelSource{Mode: "measured", GEMM: origin.gemm, Attention: origin.attention}
	if origin.gemm != g.Name || origin.attention != g.Name {
		src.Mode = "derived"
		src.MatmulRates = matmulRatesNote(gemmSrc, g)
	}

	t := float64(d.TensorParallel)
	hidden := float64(m.Hidden)
	k := &stepKernels{layers: float64(d.stageLayers()), expertParallelDivs: 1}
	layers := k.layers
	moeLayers := float64(m.moeLayers()) * d.stageFraction()
	k.smallKernels = newElementwiseCurve(d, cat, layers, moeLayers)
	k.tokenTraffic = r.kvTokenMemory
	if k.smallKernels == nil {
		k.tokenTraffic += r.actTokenMemory
	}
	// The modules a checkpoint leaves unquantized run 16-bit GEMMs, and so
	// does the lm_head: vLLM's FP8 and compressed-tensors methods quantize
	// linear layers only, GPTQ's and AWQ's (Marlin) the lm_head only with
	// "lm_head": true in the checkpoint's config, which sim does not read
	// (WeightBytes counts the lm_head at 16 bits too).
	unquantized := gemm
	if kernel != KernelDense {
		if unquantized = newGEMMTimer(cat, gemmSrc, g, KernelDense, m); unquantized == nil {
			return nil, KernelSource{Mode: "roofline", Reason: "no table"}
		}
	}
	linear := gemm
	if slow := blockFP8Slowdown(d, gemmSrc, kernel); slow != 1 {
		linear = gemm.slowed(slow)
		src.BlockFP8 = fmt.Sprintf("vLLM CUTLASS blockwise, %.2f× per-tensor", slow)
	}
	k.setLinear(d, linear, unquantized, moeLayers)
	k.setMLAContext(d, linear)
	vocab := float64(m.Vocab) / t
	k.head = newCurve(kernelGridM, func(rows float64) float64 { return unquantized.at(rows, vocab, hidden) }).densify(d.MaxNumSeqs)
	if m.IsMoE() {
		k.moe, src.MoE = newMoECurve(d, cat, moeLayers)
	}
	if m.IsMoE() && k.moe == nil {
		k.setExpertGEMMs(d, gemm, moeLayers)
	}

	k.setAttention(d, prefillT, decodeT, attnSrc)
	src.MLAPrefill = d.mlaPrefillNote()
	if k.unpackedDecodeGroups = unpackedDecodeGroups(d, origin.attention); k.unpackedDecodeGroups > 0 {
		src.UnpackedDecodes = fmt.Sprintf("%g× KV reads, FlashAttention 2", k.unpackedDecodeGroups)
	}
	// The MLA decode block was measured under vLLM 0.24, whose block-FP8
	// linears run DeepGEMM at the per-tensor table's rate (doc.go,
	// "Kernel tables"), so its excess stays over the per-tensor parts and
	// a CUTLASS release's projections add their extra time through
	// k.linear.
	src.MLA = k.setMLADecode(d, cat, gemm)
	k.source = src
	return k, src
}

// setLinear times every GEMM of the stage's layers but the routed experts
// by tokens in the step: attention projections, dense MLPs and the MoE
// layers' router and shared experts. The layers a checkpoint leaves
// unquantized run on the unquantized timer, and so does the router:
// vLLM builds DeepSeek's, Mixtral's and Qwen2-MoE's gate with
// quant_config=None, and Qwen3-MoE's, which takes the checkpoint's config
// since PR #22017, is listed in its FP8 checkpoints' modules_to_not_convert.
func (k *stepKernels) setLinear(d Deployment, gemm, unquantized *gemmTimer, moeLayers float64) {
	m, t, hidden, layers := d.Model, float64(d.TensorParallel), float64(d.Model.Hidden), k.layers
	denseLayers := layers - moeLayers
	attnGEMMs := m.attentionGEMMs(d.TensorParallel)
	dense := m.denseMLPGEMMs(d.TensorParallel)
	skippedAttn := float64(m.Quantization.SkippedAttentionLayers) * d.stageFraction()
	skippedMLP := float64(m.Quantization.SkippedMLPLayers) * d.stageFraction()
	var shared []gemmShape
	if s := float64(m.MoE.SharedIntermediate); m.IsMoE() && s > 0 {
		shared = []gemmShape{{"shared_expert.gate_up_proj", 2 * s / t, hidden}, {"shared_expert.down_proj", hidden, s / t}}
	}
	// split times count layers of a GEMM, skipped of them unquantized.
	split := func(tokens float64, s gemmShape, count, skipped float64) float64 {
		v := (count - skipped) * gemm.at(tokens, s.n, s.k)
		if skipped > 0 {
			v += skipped * unquantized.at(tokens, s.n, s.k)
		}
		return v
	}
	k.linear = newCurve(kernelGridM, func(tokens float64) float64 {
		sum := 0.0
		for _, s := range attnGEMMs {
			sum += split(tokens, s, layers, skippedAttn)
		}
		for _, s := range dense {
			sum += split(tokens, s, denseLayers, skippedMLP)
		}
		for _, s := range shared {
			sum += moeLayers * gemm.at(tokens, s.n, s.k)
		}
		if m.IsMoE() {
			sum += moeLayers * unquantized.at(tokens, float64(m.MoE.Experts), hidden)
		}
		return sum
	})
	k.linear.densify(d.MaxNumBatchedTokens + d.MaxNumSeqs)
}

// setMLAContext sets k.mlaContext for a model run as MLA. vLLM caches
// only the latent of each token, so a prefill chunk with tokens already
// cached (earlier chunks of its prompt, prefix-cache hits) gathers their
// latents and runs kv_b_proj over all of them to rebuild the keys and
// values its new tokens attend to, in every layer and every step the
// chunk runs (MLACommonImpl._compute_prefill_context, V1's MLA from
// 0.8.0). The GEMM is the layer's own kv_b_proj (doc.go, "Kernel tables").
func (k *stepKernels) setMLAContext(d Deployment, linear *gemmTimer) {
	m := d.Model
	if !m.IsMLA() || m.MLA.Expanded {
		return
	}
	for _, s := range m.attentionGEMMs(d.TensorParallel) {
		if s.name == "kv_b_proj" {
			layers := k.layers
			k.mlaContext = newCurve(mlaContextGrid, func(tokens float64) float64 { return layers * linear.at(tokens, s.n, s.k) })
		}
	}
}

// mlaContextGrid extends the M grid to the contexts a long prompt's last
// chunks carry.
var mlaContextGrid = append(slices.Clone(kernelGridM), 16384, 32768, 65536, 131072)

// setExpertGEMMs times the routed experts as two GEMMs each (gate-up and
// down) where no fused-MoE table covers the deployment.
func (k *stepKernels) setExpertGEMMs(d Deployment, gemm *gemmTimer, moeLayers float64) {
	m, t, hidden := d.Model, float64(d.TensorParallel), float64(d.Model.Hidden)
	k.experts, k.perToken = float64(m.MoE.Experts), float64(m.MoE.ExpertsPerToken)
	width := float64(m.MoE.ExpertIntermediate) / t
	if d.ExpertParallel {
		width, k.expertParallelDivs = float64(m.MoE.ExpertIntermediate), t
	}
	k.expert = newCurve(kernelGridM, func(tokens float64) float64 {
		return moeLayers * (gemm.at(tokens, 2*width, hidden) + gemm.at(tokens, hidden, width))
	})
}

// setAttention slices the attention tables at the deployment's heads per
// GPU, in head-dim-128 units: the prefill table's query heads carry the
// FLOPs per pair, the decode table's KV heads the bytes per cached token.
// A GPU whose attention comes from another part's table keeps the
// table's launch floor (its smallest problem's time, 12.5 µs for the
// A100's decode kernel) and scales only the time above it by deriveScale:
// a launch is not 3.4× longer on an A10G for having 3.4× less bandwidth.
// Reading the table at a stretched batch instead, as the per-layer kernels
// and the sampler do, would move along the source's cache knees (the
// L40S's 96 MB L2 holds a small batch's KV cache, an L4's 48 MB does not
// hold the same bytes at a 2.9× batch) and slow mid-size batches beyond
// the bandwidth ratio.
func (k *stepKernels) setAttention(d Deployment, prefillT, decodeT *kernelTable, attnSrc GPU) {
	m, g, t := d.Model, d.GPU, float64(d.TensorParallel)
	headsEq := m.attentionFLOPsPerPair(d.mlaPadsV()) / t / (4 * 128)
	kvEq := float64(m.kvElementsPerTokenLayer(d.TensorParallel)) / (2 * 128)
	prefillScale, decodeScale := 1.0, 1.0
	if isFP8KVCache(d.KVCacheDType) {
		prefillScale, decodeScale = prefillT.fp8KVRatio(), decodeT.fp8KVRatio()
	}
	fa2 := d.Kernels.HopperFA2 && hopperTables[attnSrc.Name]
	// The smallest problem's time is the launch floor (the tables are
	// monotone, so no cell is faster).
	prefillFloor := prefillT.at(prefillT.axes[0].values[0], prefillT.axes[1].values[0], headsEq)
	decodeFloor := decodeAt(decodeT, decodeT.axes[0].values[0], decodeT.axes[1].values[0], kvEq)
	k.prefill = prefillT.slice(func(isl, batch float64) float64 {
		pairs := batch * isl * (isl + 1) / 2
		flops := 4 * 128 * headsEq * pairs
		bytes := activationBytes * 4 * 128 * headsEq * batch * isl
		t := aboveFloor(prefillT.at(isl, batch, headsEq), prefillFloor, deriveScale(attnSrc, g, false, flops, bytes))
		if fa2 {
			t *= interpolateLog2(fa2OverFA3, isl)
		}
		return t * prefillScale * calibrated(g, false, flops, bytes)
	})
	k.maxISL = prefillT.axes[0].values[len(prefillT.axes[0].values)-1]
	k.decode = decodeT.slice(func(ctx, batch float64) float64 {
		bytes := activationBytes * 2 * 128 * kvEq * batch * ctx
		flops := 4 * 128 * 4 * kvEq * batch * ctx
		t := aboveFloor(decodeAt(decodeT, ctx, batch, kvEq), decodeFloor, deriveScale(attnSrc, g, false, flops, bytes))
		return t * decodeScale * calibrated(g, false, flops, bytes)
	})
}

// mlaPadsV reports whether the deployment's MLA prefill attention pads V
// (v_head_dim) with zeros to the query/key width (qk_nope + qk_rope, 128 →
// 192 on DeepSeek-V3) and cuts the output back, doing 1.2× the attention
// FLOPs: vLLM's MLA backends (MLACommonImpl) pad for every FlashAttention
// that cannot take different head dims. PR #13111 ("[Attention] Update to
// lastest FA3 code", merged 2025-04-17, so from 0.8.5) stopped padding for
// FlashAttention 3 on compute capability 9.0; PR #20034 ("[Attention] MLA
// - Flashinfer Ragged Prefill", merged 2025-07-10, so from 0.10.0) runs
// Blackwell's (compute capability 10.0) prefill on FlashInfer, which takes
// the two widths, where FlashInfer is installed [assumed, as in vLLM's
// images]. The v0.11.0 tree's _pad_v skips nothing else; ROCm's upstream
// flash_attn pads too. The GPU's architecture is its attention tables'
// (kernelOrigin); a part without tables runs FlashAttention 2 or ROCm's.
func (d Deployment) mlaPadsV() bool {
	if !d.Model.IsMLA() || d.Model.MLA.Expanded {
		return false
	}
	switch attention := kernelOrigin[d.GPU.Name].attention; {
	case attention == "B200":
		return !d.Kernels.MLAFlashInferPrefill
	case hopperTables[attention] && !d.Kernels.HopperFA2: // FlashAttention 3
		return d.Kernels.MLAPadVOnFA3
	}
	return true
}

// mlaPrefillNote is what sim's engine section says of MLA's prefill
// attention: the padding where vLLM pads V, nothing otherwise.
func (d Deployment) mlaPrefillNote() string {
	if !d.mlaPadsV() {
		return ""
	}
	m := d.Model
	return fmt.Sprintf("V padded to %d, %.2g× the FLOPs", m.mlaPrefillVWidth(true),
		m.attentionFLOPsPerPair(true)/m.attentionFLOPsPerPair(false))
}

// hopperTables are the GPUs whose kernel tables were measured on Hopper:
// where vLLM's prefill ran FlashAttention 2 before FlashAttention 3
// (KernelPolicy.HopperFA2) and block-FP8 linears ran its SM90 CUTLASS
// blockwise kernel (KernelPolicy.BlockFP8CUTLASS).
var hopperTables = map[string]bool{"H100-SXM": true, "H200": true}

// aboveFloor is a kernel time measured on one GPU as it runs on another
// that does the same work scale× as long: the launch floor stays, the
// time above it scales.
func aboveFloor(t, floor, scale float64) float64 {
	return floor + (t-floor)*scale
}

// decodeAt is the decode table at a KV-head count per GPU that may lie past
// its last column (8). The decode kernel splits its work into (sequence,
// KV head) units, and the tables' cells agree along constant batch × heads
// (median 0.7–3.1% on every table: TestDecodeTablesFoldHeadsIntoBatch), so
// b sequences with h > 8 heads cost what b·h/8 sequences with 8 do.
// Scaling the 8-head time by h/8 instead would multiply the small-batch
// latency floor too: 4× for a 32-head model such as Llama-2-7B at batch 1.
func decodeAt(t *kernelTable, ctx, batch, kvHeads float64) float64 {
	heads := t.axes[2].values
	if last := heads[len(heads)-1]; kvHeads > last {
		batch, kvHeads = batch*kvHeads/last, last
	}
	return t.at(ctx, batch, kvHeads)
}

// kernelGridM are the token counts the per-deployment curves are built
// at: the GEMM tables' M axis, where interpolation is exact.
var kernelGridM = []float64{1, 2, 4, 8, 16, 32, 48, 64, 96, 128, 192, 256, 512, 768, 1024, 2048, 4096, 8192}

// gemmShape is a linear layer (vLLM's module name) with output width N
// and input width K.
type gemmShape struct {
	name string
	n, k float64
}

// attentionGEMMs are one layer's attention projections on one of t ranks:
// QKV and O, or MLA's query, latent and output projections.
func (m Model) attentionGEMMs(t int) []gemmShape {
	tf := float64(t)
	d := float64(m.Hidden)
	h := float64(m.Heads) / tf
	if m.IsMLA() {
		a := m.MLA
		qk := float64(a.QKNopeHeadDim + a.QKRopeHeadDim)
		var out []gemmShape
		if a.QLoraRank > 0 {
			out = append(out, gemmShape{"q_a_proj", float64(a.QLoraRank), d}, gemmShape{"q_b_proj", h * qk, float64(a.QLoraRank)})
		} else {
			out = append(out, gemmShape{"q_proj", h * qk, d})
		}
		return append(out,
			gemmShape{"kv_a_proj_with_mqa", float64(a.KVLoraRank + a.QKRopeHeadDim), d},
			gemmShape{"kv_b_proj", h * float64(a.QKNopeHeadDim+a.VHeadDim), float64(a.KVLoraRank)},
			gemmShape{"o_proj", d, h * float64(a.VHeadDim)})
	}
	hd := float64(m.HeadDim)
	kv := math.Max(float64(m.KVHeads)/tf, 1)
	return []gemmShape{{"qkv_proj", (h + 2*kv) * hd, d}, {"o_proj", d, h * hd}}
}

// denseMLPGEMMs are a dense layer's fused gate-up and down projections on
// one of t ranks.
func (m Model) denseMLPGEMMs(t int) []gemmShape {
	f, d := float64(m.Intermediate)/float64(t), float64(m.Hidden)
	return []gemmShape{{"gate_up_proj", 2 * f, d}, {"down_proj", d, f}}
}

// LinearShape is one linear layer on one tensor-parallel rank:
// y[M, N] = x[M, K]·W[N, K]ᵀ, named as vLLM's module.
type LinearShape struct {
	Name string
	N, K int
}

// LinearShapes are the GEMMs the step model times for one layer on one of
// tp ranks, as vLLM shards them (attention projections, and a dense
// layer's MLP), then the lm_head over the vocabulary's share.
func (m Model) LinearShapes(tp int) []LinearShape {
	shapes := m.attentionGEMMs(tp)
	if m.moeLayers() < m.Layers {
		shapes = append(shapes, m.denseMLPGEMMs(tp)...)
	}
	shapes = append(shapes, gemmShape{"lm_head", float64(m.Vocab) / float64(tp), float64(m.Hidden)})
	out := make([]LinearShape, len(shapes))
	for i, s := range shapes {
		out[i] = LinearShape{Name: s.name, N: int(math.Round(s.n)), K: int(math.Round(s.k))}
	}
	return out
}

// gemmTimer times one GEMM on the deployment's GPU from a measured table.
type gemmTimer struct {
	table        *kernelTable
	src, dst     GPU
	fp8          bool
	weightFactor float64 // bytes per weight relative to the table's dtype
	kernel       QuantKernel
	byNK         bool // the table's axes are (M, N·K)
	// isolated: the table timed each GEMM on its own (aiconfigurator's),
	// not inside a model's layer (Vidur's A40 table), so inModel applies.
	isolated bool
	// slowdown multiplies every time (blockFP8Slowdown); 0 is none.
	slowdown float64
}

func newGEMMTimer(cat *kernelCatalog, src, dst GPU, kernel QuantKernel, m Model) *gemmTimer {
	g := &gemmTimer{src: src, dst: dst, kernel: kernel, weightFactor: 1}
	if kernel == KernelFP8 {
		if t := cat.find("gemm", src.Name, "fp8"); t != nil {
			g.table, g.fp8 = t, true
		}
	}
	if g.table == nil {
		g.table = cat.find("gemm", src.Name, "bf16")
		if g.table == nil {
			g.table = cat.find("gemm-nk", src.Name, "bf16")
			g.byNK = g.table != nil
		}
		if g.table == nil {
			return nil
		}
		// Weight-only kernels (W4A16, W8A16) read fewer bytes than the
		// bf16 GEMM the table measured.
		g.weightFactor = m.linearBytesPerParam() / activationBytes
		if kernel == KernelDense {
			g.weightFactor = 1
		}
	}
	g.isolated = strings.Contains(g.table.header["source"], "ai-dynamo/aiconfigurator")
	return g
}

// blockFP8CUTLASSSlowdown is how many times the per-tensor FP8 table's
// time vLLM's CUTLASS blockwise kernel takes for the same GEMM on Hopper:
// the median, over the 11 shapes of vLLM's DeepGEMM benchmark README (an
// H100 80GB HBM3, 2025-02-26) whose CUTLASS time stands clear of the
// Python dispatch floor (≥ 45 µs), of that time over the H100-SXM table's
// (1.40–1.60; testdata/kernels/vllm-block-fp8-h100.tsv,
// TestBlockFP8CUTLASSMatchesVLLMBenchmark recomputes it). The ratio holds
// where weights decide (M = 8–128 with 132 MB of them) as where FLOPs do
// (M = 1,024–4,096), so it scales the whole time.
const blockFP8CUTLASSSlowdown = 1.56

// blockFP8Slowdown is the factor on a deployment's quantized linear
// layers for the block-FP8 kernel its release runs: 1 unless the
// checkpoint is block-wise FP8, run as W8A8 on a GPU timed from a Hopper
// table, by a release that picks vLLM's CUTLASS blockwise kernel.
func blockFP8Slowdown(d Deployment, gemmSrc GPU, kernel QuantKernel) float64 {
	q := d.Model.Quantization
	if !d.Kernels.BlockFP8CUTLASS || kernel != KernelFP8 || q.WeightBlockSize <= 0 || !hopperTables[gemmSrc.Name] {
		return 1
	}
	return blockFP8CUTLASSSlowdown
}

// slowed is g with every time multiplied by factor.
func (g *gemmTimer) slowed(factor float64) *gemmTimer {
	s := *g
	s.slowdown = factor
	return &s
}

// at is one GEMM of m rows, n outputs and k inputs, in seconds.
func (g *gemmTimer) at(m, n, k float64) float64 {
	if g.slowdown > 0 {
		return g.slowdown * g.base(m, n, k)
	}
	return g.base(m, n, k)
}

// base is at before the kernel's slowdown.
func (g *gemmTimer) base(m, n, k float64) float64 {
	var t float64
	if g.byNK {
		t = g.table.at(m, n*k)
	} else {
		t = g.table.at(m, n, k)
	}
	flops := 2 * m * n * k
	bytes := activationBytes * (m*k + m*n + n*k)
	if g.isolated {
		t *= inModel(g.src, g.fp8, flops, bytes)
	}
	t *= deriveScale(g.src, g.dst, g.fp8, flops, bytes) * calibrated(g.dst, g.fp8, flops, bytes)
	if g.weightFactor == 1 {
		return t
	}
	// A weight-only kernel (W4A16, W8A16): the bf16 time's compute share
	// runs at the kernel's large-M rate relative to cuBLAS, its memory
	// share reads the narrower weights at the kernel's attained share of
	// bandwidth. The shares are the roofline's on the deployment's GPU.
	c := flops / g.dst.BF16FLOPS
	mem := bytes / g.dst.MemoryBandwidth
	f := c / (c + mem)
	weights := activationBytes * n * k
	narrower := (bytes - weights + weights*g.weightFactor) / bytes
	eff := tableEfficiency{kernel: g.kernel}
	return t * (f/kernelPrefillFactor(g.kernel, g.src.Name) + (1-f)*narrower/eff.weightStreamFactor(m))
}

// slice evaluates a three-axis attention table along its first two axes
// at the deployment's third coordinate, scaled (f gives the time).
func (t *kernelTable) slice(f func(x0, x1 float64) float64) *kernelTable {
	s := &kernelTable{file: t.file, kind: t.kind, gpu: t.gpu, header: t.header, axes: t.axes[:2]}
	for _, a := range t.axes[0].values {
		for _, b := range t.axes[1].values {
			s.values = append(s.values, f(a, b))
		}
	}
	s.takeLogs()
	return s
}

// fp8KVRatio is the table's measured fp8-KV / bf16-KV time ratio, 1 when
// it has none.
func (t *kernelTable) fp8KVRatio() float64 {
	var r float64
	if _, err := fmt.Sscanf(t.header["fp8_kv_ratio"], "%g", &r); err != nil || !(r > 0) {
		return 1
	}
	return r
}

// layerSeconds is the stage's GPU time for a step's layers (without the
// lm_head), from the tables: GEMMs and the small kernels over rows (the
// tokens padded to a CUDA graph's batch), attention and KV writes over the
// real tokens. l2Served decode reads come from L2 (Roofline.l2Served):
// decode attention is timed at the context its HBM reads leave.
func (k *stepKernels) layerSeconds(s StepShape, prefill, decode, tokens, rows, l2Served float64) float64 {
	t := k.linear.at(rows)
	if k.moe != nil {
		t += k.moe.at(rows)
	} else if k.expert != nil {
		touched := k.experts * (1 - math.Pow(1-k.perToken/k.experts, rows))
		perExpert := rows * k.perToken / touched
		t += touched / k.expertParallelDivs * k.expert.at(perExpert)
	}
	decodeCtx := nonNegative64(s.DecodeContext)
	if decodeCtx == 0 && prefill == 0 {
		// A decode-only shape built without DecodeContext: every pair is
		// a decode's.
		decodeCtx = nonNegative64(s.AttnPairs)
	}
	if prefill > 0 && s.Prefills > 0 {
		pairs := nonNegative64(s.AttnPairs) - decodeCtx
		if pairs > 0 {
			// n prompts of the length whose causal pairs average as many
			// keys per query, clamped to the table (long contexts run at
			// its longest prompt's efficiency), scaled to the step's pairs.
			n := float64(s.Prefills)
			isl := math.Min(math.Max(2*pairs/prefill, 1), k.maxISL)
			work := pairs / (n * isl * (isl + 1) / 2)
			t += k.layers * k.prefill.at2(isl, n) * work
		}
	}
	if decode > 0 {
		ctx := math.Max((decodeCtx-math.Min(l2Served, decodeCtx))/decode, 1)
		units := decode
		if prefill > 0 && k.unpackedDecodeGroups > 1 {
			// Each query head is its own unit, reading its KV head's
			// cache (doc.go, "Decodes beside prompt tokens").
			units *= k.unpackedDecodeGroups
		}
		t += k.layers * k.decode.at2(ctx, units)
		if k.mlaDecode != nil {
			t += k.layers * k.mlaDecode.at2(ctx, decode)
		}
	}
	if k.mlaContext != nil && prefill > 0 {
		// KVTokens is Σ(c_i+p_i) over the prefill chunks and Σ(ℓ_j+1)
		// over the decodes, so what is left is Σc_i.
		if ctx := float64(nonNegative64(s.KVTokens)) - prefill - decodeCtx - decode; ctx > 0 {
			t += k.mlaContext.at(ctx)
		}
	}
	if k.smallKernels != nil {
		t += k.smallKernels.at(rows)
	}
	return t + tokens*k.tokenTraffic
}

// customAllReduceMaxBytes is the largest message vLLM's custom all-reduce
// takes (CustomAllreduce's max_size, 8 MiB); larger ones go to NCCL.
const customAllReduceMaxBytes = 8 << 20

// tableCollectives are a TP group's all-reduce time by tokens and logits
// all-gather time by sampled rows, from measured tables, for one node: over NVLink the GPU's (or its
// origin's) NCCL tables and, up to 8 MiB on 2, 4, 6 or 8 ranks, vLLM's
// custom all-reduce; over PCIe through host memory the L40S node's NCCL
// tables. nil when the link is neither or a user changed its numbers.
// smallest is NCCL's all-gather of the tables' smallest message (512 B)
// on the group: the latency of one collective too small to be carried.
func tableCollectives(d Deployment) (allReduce, allGather *curve, smallest float64) {
	if d.Nodes > 1 || d.TensorParallel < 2 || d.NoKernelTables {
		return nil, nil, 0
	}
	cat := kernelTables()
	var src string
	custom := false
	switch d.Link.Name {
	case "nvlink":
		origin, ok := kernelOrigin[d.GPU.Name]
		if !ok || !isCatalogGPU(d.GPU) {
			return nil, nil, 0
		}
		src, custom = origin.gemm, d.TensorParallel%2 == 0 && d.TensorParallel <= 8
	case "pcie-host":
		src = "L40S"
	default:
		return nil, nil, 0
	}
	ar, ag := cat.find("nccl-all_reduce", src, ""), cat.find("nccl-all_gather", src, "")
	ca := cat.find("custom-allreduce", src, "")
	if ar == nil || ag == nil || (custom && ca == nil) {
		return nil, nil, 0
	}
	// By tokens (one all-reduce of tokens × hidden 16-bit values) and by
	// sampled rows (a gather of rows × vocab logits), on the byte grid.
	ranks := float64(d.TensorParallel)
	perToken := float64(d.Model.Hidden) * activationBytes
	perRow := float64(d.Model.Vocab) * activationBytes
	grid := func(per float64) []float64 {
		var xs []float64
		for _, b := range ar.axes[1].values {
			xs = append(xs, b/per)
		}
		return xs
	}
	allReduce = newCurve(grid(perToken), func(tokens float64) float64 {
		if b := tokens * perToken; custom && b <= customAllReduceMaxBytes {
			return ca.at(ranks, b)
		} else {
			return ar.at(ranks, b)
		}
	}).densify(d.MaxNumBatchedTokens + d.MaxNumSeqs)
	allGather = newCurve(grid(perRow), func(rows float64) float64 { return ag.at(ranks, rows*perRow) }).densify(d.MaxNumSeqs)
	return allReduce, allGather, ag.at(ranks, ag.axes[1].values[0])
}

// unpackedDecodeGroups is the query heads per KV head on one GPU when
// the deployment's decodes share a step's attention call with prompt
// tokens and the kernel then runs them unpacked, each query head reading
// its KV head's cache by itself: vLLM V1's FlashAttention backend, one
// varlen call a step, on FlashAttention 2, which packs a KV head's query
// heads into one unit only when every sequence of the call has one query
// token (doc.go, "Decodes beside prompt tokens"). 0 otherwise: V0 and
// FlashAttention 3 (the Hopper tables, from vLLM 0.7), MLA, an FP8 KV
// cache (which FlashAttention 2 does not take, so V1 picks another
// backend), and parts whose tables are not FlashAttention 2's.
func unpackedDecodeGroups(d Deployment, attentionOrigin string) float64 {
	fa2 := fa2AttentionTables[attentionOrigin] || d.Kernels.HopperFA2 && hopperTables[attentionOrigin]
	if !d.Kernels.V1UnifiedAttention || !fa2 || isFP8KVCache(d.KVCacheDType) ||
		d.Model.IsMLA() && !d.Model.MLA.Expanded || d.Model.KVHeads <= 0 {
		return 0
	}
	t := max(d.TensorParallel, 1)
	queryHeads := float64(d.Model.Heads) / float64(t)
	// KV heads replicate when the TP size exceeds them: one a GPU.
	kvHeads := float64(max(1, d.Model.KVHeads/t))
	if g := queryHeads / kvHeads; g > 1 {
		return g
	}
	return 0
}

// fa2AttentionTables are the attention tables measured on parts where
// vLLM runs FlashAttention 2 (get_flash_attn_version: FA3 only on compute
// capability 9.0): the A100's (Ampere) and the L40S's (Ada), and so every
// part derived from them.
var fa2AttentionTables = map[string]bool{"A100-80GB": true, "L40S": true}
