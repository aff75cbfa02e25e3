package perf

import (
	"math"
	"time"
)

// Per-step costs outside the forward pass (doc.go explains each value).
const (
	// stepOverheadV1/V0: scheduling, input preparation, sampling and output
	// processing once per step; V1 overlaps more of it with the GPU.
	stepOverheadV1 = 400 * time.Microsecond
	stepOverheadV0 = 1000 * time.Microsecond
	// perSequenceOverheadV1/V0: the per-request share of that work.
	perSequenceOverheadV1 = 2 * time.Microsecond
	perSequenceOverheadV0 = 10 * time.Microsecond
	// eagerGapPerLayer: GPU idle time between a layer's small kernels when
	// they are launched one by one instead of replayed from a CUDA graph
	// (V1's decode steps past its captured sizes).
	eagerGapPerLayer = 25 * time.Microsecond
	// eagerLaunchPerLayer: the CPU time eager PyTorch takes to launch one
	// decoder layer's kernels one by one from Python, which bounds a step
	// run without a CUDA graph or torch.compile from below (doc.go, "CPU
	// overhead per step"): vLLM PR #1440's Llama-2-7B decode at batch 1,
	// 12.0 ms a token eager against 10.5 ms from a graph.
	eagerLaunchPerLayer = 350 * time.Microsecond
	// piecewiseGapPerLayer: GPU idle time per layer when V1 replays
	// piecewise CUDA graphs, which leave each layer's attention to run
	// eagerly from Python between two graphs (doc.go, "CPU overhead per
	// step"): vLLM PR #20059's Qwen2.5-1.5B-Instruct (28 layers, ShareGPT
	// at 1 request/s) decoded at a median ITL of 5.39 ms from piecewise
	// graphs and 4.97–5.03 ms from full ones, 0.36–0.42 ms a step; PR
	// #10058's Llama-3.1-8B latency benchmark, 128 steps, took 1.04 s on
	// V1's piecewise graphs and 0.99 s on V0's full ones (12 µs a layer).
	piecewiseGapPerLayer = 14 * time.Microsecond
	// swapCopyOverhead: vLLM swaps one cudaMemcpyAsync per block, per
	// layer, for K and for V.
	swapCopyOverhead = 2 * time.Microsecond
	// CUDA-graph coverage: V0 captures decode-only batches up to 256
	// sequences (0.5.x's _BATCH_SIZES_TO_CAPTURE), from 0.6.0 up to
	// max_num_seqs padded to a captured size, at most 8·1024 (PR #7894,
	// "extend cuda graph size for H200", merged 2024-08-27; v0.6.1.post2's
	// _get_max_graph_batch_size); V1 (0.8.5 piecewise graphs) batches up to
	// 512 tokens.
	v0GraphMaxDecodes        = 256
	v0GraphMaxDecodesSince06 = 8 * 1024
	v1GraphMaxTokens         = 512
	// v0MaxSeqLenToCapture is V0's default --max-seq-len-to-capture
	// (max_context_len_to_capture before vLLM 0.4.1): decode steps with a
	// longer sequence run eagerly (ModelConfig caps it at max_model_len).
	v0MaxSeqLenToCapture = 8192
)

// Roofline is the analytic step-time model of reference D: per pipeline
// stage, max(FLOPs/(peak·MFU), bytes/(bandwidth·MBU)), plus tensor-parallel
// all-reduces, pipeline sends, KV swap copies and a per-step CPU overhead.
// All coefficients are precomputed so StepTime is a few multiply-adds.
type Roofline struct {
	d Deployment

	stages float64 // pipeline stages, traversed one after another

	// Seconds, per GPU of one stage.
	prefillTokenCompute float64 // linear-layer GEMMs per prefill token
	decodeTokenCompute  float64 // linear-layer GEMMs per decode token
	attnPairCompute     float64 // per causal (query, key) pair
	sampleCompute       float64 // lm_head GEMM per sampled row (last stage)
	layerWeightMemory   float64 // streaming the stage's layer weights (all but routed experts)
	// MoE: streaming one routed expert's weights in every MoE layer of the
	// stage, per GPU; a step reads the experts its tokens were routed to.
	expertMemory             float64
	experts, expertsPerToken float64
	headMemory               float64 // streaming the lm_head shard (last stage)
	// hipBLASLt's longer weight reads on ROCm (hipBLASLtWeightSlowdown),
	// for steps of more rows than vLLM's skinny GEMMs take; 1 elsewhere.
	layerWeightSlowdown, headWeightSlowdown float64
	skinnyRows                              float64
	kvTokenMemory                           float64 // reading or writing one token's K and V
	// l2Bytes and kvLayerTokenBytes bound the shared prefix blocks whose
	// decode reads L2 serves (l2Served): the GPU's L2 against one layer's
	// footprint of them on one rank.
	l2Bytes, kvLayerTokenBytes float64
	actTokenMemory             float64 // activation traffic per token

	// TP all-reduces and PP sends: a fixed part and a part per token.
	commFixed, commPerToken float64
	// TP gather of vocab-parallel logits, when any sequence samples.
	gatherLatency, gatherPerSample float64
	// inputBroadcast is the NCCL broadcasts of a step's inputs to the TP
	// group (Deployment.StepInputBroadcasts), each one collective's
	// latency.
	inputBroadcast float64
	// crossNodeTP is a TP group spanning nodes: its all-reduces are timed
	// per step from the message size, because NCCL switches between tree
	// (small messages) and ring (large) there; nil within one node.
	crossNodeTP             *Collective
	allReduces, hiddenBytes float64
	// PP only: one stage's share of the TP all-reduces, and one send of
	// activations between consecutive stages (pipeline.go); across nodes
	// the slowest boundary's send.
	stageCommFixed, stageCommPerToken float64
	sendFixed, sendPerToken           float64

	eff tableEfficiency // token, context and kernel curves

	// kern times the stage's GPU work from measured kernel tables; nil
	// when no table covers the deployment (source says why).
	kern   *stepKernels
	source KernelSource
	// tpAllReduce and tpGather time one TP all-reduce by tokens and one
	// logits gather by sampled rows from measured collective tables (one node, NVLink
	// or PCIe through host memory); nil for the parametric link model.
	tpAllReduce, tpGather *curve
	// sampler times the release's sampler by sampled rows (last stage);
	// nil when the deployment carries no sampler figures.
	sampler *curve

	fixedOverhead float64
	perSequence   float64
	eagerGap      float64
	// piecewiseGap is the GPU idle time of a step replayed from V1's
	// piecewise graphs (piecewiseGapPerLayer · layers; zero on V0 and
	// ROCm, which pay none); fullDecodeGraphs
	// replays decode-only steps from full graphs instead.
	piecewiseGap     float64
	fullDecodeGraphs bool
	// eagerLaunch is eager PyTorch's CPU time to launch every layer of a
	// stage one kernel at a time (eagerLaunchPerLayer · stage layers).
	eagerLaunch    float64
	enforceEager   bool
	v0             bool
	swapBlockCost  float64
	graphMaxDecode int
	graphMaxTokens int
	graphMaxSeqLen int // V0's max_seq_len_to_capture
}

var _ StepModel = (*Roofline)(nil)

// NewRoofline builds the roofline model for a deployment (defaults filled
// as in Deployment.Resolve). It does not need the deployment to fit in
// memory; Capacity answers that.
func NewRoofline(d Deployment) (*Roofline, error) {
	d, err := d.Resolve()
	if err != nil {
		return nil, err
	}
	r := newRooflineWork(d)
	r.setOverheads()
	r.kern, r.source = kernelPlan(d, r)
	r.sampler = newSamplerCurve(d)
	if d.TensorParallel > 1 {
		r.setTPCollectives()
	}
	if d.PipelineParallel > 1 {
		r.setPipelineSends()
	}
	return r, nil
}

// WithLaunchSpeed is r on a host whose CPU launches eager kernels (V0's,
// and V1's under --enforce-eager) speed times as fast (--host-speed):
// every stage's launch bound divides by it. The rest of the model is
// shared with r.
func (r *Roofline) WithLaunchSpeed(speed float64) *Roofline {
	if speed == 1 || !(speed > 0) {
		return r
	}
	c := *r
	c.eagerLaunch /= speed
	return &c
}

// GEMMPeak is the dense peak m's linear layers run at on g: the FP8 peak
// for FP8 weights on a GPU with FP8 units (W8A8), the 16-bit peak
// otherwise (unquantized, weight-only GPTQ/AWQ, and FP8 as W8A16 on a GPU
// without them).
func GEMMPeak(m Model, g GPU) float64 {
	if m.Quantization.Method == "fp8" && g.FP8FLOPS > 0 {
		return g.FP8FLOPS
	}
	return g.BF16FLOPS
}

// newRooflineWork is the roofline with the GPU work of one stage priced:
// seconds of compute and of memory traffic per token, pair, sampled row
// and step, and for MoE per routed expert. The caller resolves d.
func newRooflineWork(d Deployment) *Roofline {
	m, g := d.Model, d.GPU
	t := float64(d.TensorParallel)
	layers := float64(d.stageLayers())

	gemmPeak := GEMMPeak(m, g)
	eff := efficiencyFor(g, m, d.Kernels.Kernel(m, g))
	compute := g.Scale.compute()
	bandwidth := g.MemoryBandwidth * g.MBU * g.Scale.bandwidth()
	hidden := float64(m.Hidden)
	vocabRow := float64(m.Vocab) * hidden / t
	stage := d.stageFraction()
	bpp := m.linearBytesPerParam()
	padV := d.mlaPadsV()

	gemmFlops := 2 * float64(m.ActiveLinearParams()) * stage / t
	// Modules a checkpoint leaves unquantized run at the BF16 rate; zero
	// without them.
	skippedFlops := 2 * float64(m.skippedLinearParams()) * stage / t
	skippedSlowdown := skippedFlops/g.BF16FLOPS - skippedFlops/gemmPeak
	r := &Roofline{
		d:                   d,
		stages:              float64(d.PipelineParallel),
		eff:                 eff,
		prefillTokenCompute: gemmFlops/(gemmPeak*eff.prefill*compute) + skippedSlowdown/(eff.prefill*compute),
		decodeTokenCompute:  gemmFlops/(gemmPeak*eff.decode*compute) + skippedSlowdown/(eff.decode*compute),
		attnPairCompute:     layers * m.attentionFLOPsPerPair(padV) / t / (g.BF16FLOPS * eff.attention * compute),
		sampleCompute:       2 * vocabRow / (g.BF16FLOPS * g.MFUDecode * compute),
		layerWeightMemory:   m.sharedLinearBytes(stage, t) / bandwidth,
		headMemory:          vocabRow * activationBytes / bandwidth,
		kvTokenMemory:       float64(d.kvBytesPerTokenPerGPU()) / bandwidth,
		l2Bytes:             float64(g.L2Bytes),
		kvLayerTokenBytes:   float64(d.kvBytesPerTokenPerGPU()) / max(layers, 1),
		actTokenMemory: layers * activationBytes *
			(6*hidden + m.attentionActivationWidth(padV)/t + 3*m.mlpActiveWidth()/t) / bandwidth,
		layerWeightSlowdown: 1,
		headWeightSlowdown:  1,
	}
	if k := d.Kernels.Kernel(m, g); IsROCm(g) && isCatalogGPU(g) && (k == KernelDense || k == KernelFP8) {
		r.layerWeightSlowdown, r.headWeightSlowdown = hipBLASLtWeightSlowdown(m, d.TensorParallel, bpp, g.MBU)
		if k == KernelDense { // PR #15830's skinny GEMMs take bf16/fp16 weights only
			r.skinnyRows = float64(d.Kernels.ROCmSkinnyRows)
		}
	}
	if m.IsMoE() {
		r.experts, r.expertsPerToken = float64(m.MoE.Experts), float64(m.MoE.ExpertsPerToken)
		r.expertMemory = float64(m.moeLayers()) * stage * float64(m.routedExpertParams()) * bpp / t / bandwidth
	}
	return r
}

// setOverheads sets the costs outside the forward pass: the engine's CPU
// work per step and per sequence, launch gaps of steps without CUDA
// graphs, and the copies of a swapped block.
func (r *Roofline) setOverheads() {
	d := r.d
	layers := float64(d.stageLayers())
	r.enforceEager = d.EnforceEager
	r.v0 = d.EngineVersion == "v0"
	r.graphMaxDecode = v0GraphMaxDecodes
	if d.V0GraphsUpToMaxSeqs {
		r.graphMaxDecode = min(cudaGraphBatch(max(d.MaxNumSeqs, 1)), v0GraphMaxDecodesSince06)
	}
	r.graphMaxTokens = v1GraphMaxTokens
	if d.V1GraphsByMaxSeqs {
		r.graphMaxTokens = capturedAtMost(min(2*max(d.MaxNumSeqs, 1), v1GraphMaxTokens))
	}
	r.graphMaxSeqLen = d.maxSeqLenToCapture()
	r.eagerGap = eagerGapPerLayer.Seconds() * float64(d.Model.Layers)
	if !r.v0 && !IsROCm(d.GPU) {
		// V0 replays whole-model graphs. The measurements are NVIDIA's; on
		// an MI300X, vLLM PR #15830's Llama-3.1-70B latency (0.8.4, TP 8)
		// is within 5% without a gap (package vllm,
		// TestROCmSkinnyGEMMAgainstPR15830) [open].
		r.piecewiseGap = piecewiseGapPerLayer.Seconds() * float64(d.Model.Layers)
	}
	r.fullDecodeGraphs = d.V1FullDecodeGraphs
	r.eagerLaunch = eagerLaunchPerLayer.Seconds() * layers
	r.swapBlockCost = float64(int64(d.BlockSize)*d.kvBytesPerTokenPerGPU())/d.GPU.PCIeBandwidth +
		2*layers*swapCopyOverhead.Seconds()
	if r.v0 {
		r.fixedOverhead, r.perSequence = stepOverheadV0.Seconds(), perSequenceOverheadV0.Seconds()
	} else {
		r.fixedOverhead, r.perSequence = stepOverheadV1.Seconds(), perSequenceOverheadV1.Seconds()
	}
}

// setTPCollectives prices a TP>1 deployment's all-reduces and logits
// gather: per message size across nodes, from measured collective tables
// where they cover the link, else from the parametric link model.
func (r *Roofline) setTPCollectives() {
	d := r.d
	m := d.Model
	tp := d.TensorParallel
	t := float64(tp)
	hidden := float64(m.Hidden)
	// Two all-reduces per layer (attention output, MLP output) plus one
	// for the vocab-parallel embedding.
	allReduces := 2*float64(m.Layers) + 1
	c := d.TPCollective()
	// A broadcast of a few hundred bytes costs what NCCL's smallest
	// all-gather does [assumption: the measured sweeps hold no broadcast].
	broadcast := c.allGatherSeconds(0)
	if c.multiNode() {
		r.crossNodeTP, r.allReduces, r.hiddenBytes = &c, allReduces, hidden*activationBytes
		r.gatherLatency = broadcast
		r.gatherPerSample = c.allGatherSeconds(float64(m.Vocab)*activationBytes) - r.gatherLatency
	} else if ar, ag, smallest := tableCollectives(d); ar != nil {
		r.allReduces, r.tpAllReduce, r.tpGather = allReduces, ar, ag
		broadcast = smallest
	} else {
		latency := d.Link.allReduceTime(tp, 0)
		r.commFixed += allReduces * latency
		r.commPerToken += allReduces * (d.Link.allReduceTime(tp, hidden*activationBytes) - latency)
		r.gatherLatency = d.Link.Latency.Seconds()
		r.gatherPerSample = (t - 1) / t * float64(m.Vocab) * activationBytes / d.Link.Bandwidth
	}
	r.inputBroadcast = float64(max(d.StepInputBroadcasts, 0)) * broadcast
}

// setPipelineSends splits the TP communication across PP>1 stages and
// adds the sends of activations between consecutive stages. It needs the
// TP terms set first.
func (r *Roofline) setPipelineSends() {
	d := r.d
	hidden := float64(d.Model.Hidden)
	r.stageCommFixed, r.stageCommPerToken = r.commFixed/r.stages, r.commPerToken/r.stages
	if d.Nodes > 1 {
		// Stage boundaries inside a node cross the GPU link, the others
		// the network (Placement).
		for s := range d.PipelineParallel - 1 {
			l := d.StageLink(s)
			fixed, perToken := l.Latency.Seconds(), 2*hidden*activationBytes/l.Bandwidth
			r.commFixed += fixed
			r.commPerToken += perToken
			r.sendFixed, r.sendPerToken = max(r.sendFixed, fixed), max(r.sendPerToken, perToken)
		}
		return
	}
	// Each stage boundary sends hidden states and the residual.
	r.sendFixed, r.sendPerToken = d.Link.Latency.Seconds(), 2*hidden*activationBytes/d.Link.Bandwidth
	sends := float64(d.PipelineParallel - 1)
	r.commFixed += sends * d.Link.Latency.Seconds()
	r.commPerToken += sends * 2 * hidden * activationBytes / d.Link.Bandwidth
}

// Deployment is the resolved deployment the model was built for.
func (r *Roofline) Deployment() Deployment { return r.d }

// KernelSource says whether measured kernel tables (the GPU's own or a
// sibling's) or the roofline time this deployment's steps.
func (r *Roofline) KernelSource() KernelSource { return r.source }

// tpCommSeconds is a step's TP all-reduces when they are timed from
// measured tables or per message across nodes (0 otherwise: the linear
// commFixed/commPerToken terms hold them).
func (r *Roofline) tpCommSeconds(tokens float64) float64 {
	switch {
	case r.tpAllReduce != nil:
		return r.allReduces * r.tpAllReduce.at(tokens)
	case r.crossNodeTP != nil:
		ar, _ := r.crossNodeTP.allReduceSeconds(tokens * r.hiddenBytes)
		return r.allReduces * ar
	}
	return 0
}

// gatherSeconds is the logits gather of a step that samples rows.
func (r *Roofline) gatherSeconds(sampled float64) float64 {
	if r.tpGather != nil {
		return r.tpGather.at(sampled)
	}
	return r.gatherLatency + sampled*r.gatherPerSample
}

// StepBreakdown splits one step's predicted time.
type StepBreakdown struct {
	// Compute and Memory are the FLOP time and byte time summed over
	// pipeline stages; GPU is Σ over stages of max(compute, memory), plus
	// the sampler's kernels on the last stage.
	Compute, Memory, GPU time.Duration
	// Communication is TP all-reduces and gathers plus PP sends.
	Communication time.Duration
	// Overhead is CPU-side per-step work (a host model replaces it).
	Overhead time.Duration
	// LaunchGaps is GPU idle time between kernels launched one by one,
	// in steps that run without CUDA graphs.
	LaunchGaps time.Duration
	// GraphGaps is GPU idle time between V1's piecewise CUDA graphs, where
	// each layer's attention runs eagerly (piecewiseGapPerLayer).
	GraphGaps time.Duration
	// Launch is the CPU time eager PyTorch takes to launch such a step's
	// kernels (V0, or V1 under --enforce-eager; zero otherwise), at the
	// roofline's launch speed (WithLaunchSpeed): LaunchGaps is what of it
	// outlasts the GPU's work.
	Launch time.Duration
	// Swap is V0 swap-in/out copies over PCIe.
	Swap  time.Duration
	Total time.Duration
}

// ComputeBound reports whether FLOPs rather than bytes set the GPU time.
func (b StepBreakdown) ComputeBound() bool { return b.Compute > b.Memory }

type stepSeconds struct {
	compute, memory, gpu, comm, overhead, gaps, swap float64
	// pieces is the GPU idle time between V1's piecewise graphs.
	pieces float64
	// launch is V0's kernel launches of an eager step (CPU time, which
	// gaps waits out; not part of total).
	launch float64
}

func (p stepSeconds) total() float64 {
	return p.gpu + p.comm + p.overhead + p.gaps + p.pieces + p.swap
}

func nonNegative(v int) float64 { return float64(max(v, 0)) }

func nonNegative64(v int64) float64 { return float64(max(v, 0)) }

// larger is max for values known not to be NaN, without the builtin's
// NaN and signed-zero handling on this hot path.
func larger(a, b float64) float64 {
	if a > b {
		return a
	}
	return b
}

// stageWork is one pipeline stage's share of a step: its layers' compute
// and memory time, and the lm_head's, which only the last stage runs.
// tokens are the rows the layers and collectives run: the step's tokens,
// padded to the CUDA graph's batch when the step replays one.
type stageWork struct {
	tokens, decode, sampled   float64
	layerCompute, layerMemory float64
	headCompute, headMemory   float64
	// sampler is the sampler's kernels after the lm_head (last stage).
	sampler float64
}

// work is the per-stage work of a step with tokens.
func (r *Roofline) work(s StepShape) stageWork {
	prefill, decode := nonNegative(s.PrefillTokens), nonNegative(s.Decodes)
	tokens := prefill + decode
	rows := r.graphRows(s, tokens)
	sampled := decode + nonNegative(s.PrefillsDone)
	kv, pairs := nonNegative64(s.KVTokens), nonNegative64(s.AttnPairs)

	l2 := r.l2Served(s)
	if r.kern != nil {
		w := stageWork{tokens: rows, decode: decode, sampled: sampled,
			layerCompute: r.kern.layerSeconds(s, prefill, decode, tokens, rows, l2)}
		if sampled > 0 {
			w.headCompute = r.kern.head.at(sampled)
			w.sampler = r.samplerSeconds(sampled)
		}
		return w
	}
	// The token curve is measured on prefill-sized GEMMs; a decode-only
	// step is bound by streaming weights, which the memory term times.
	gemmShape := 1.0
	if prefill > 0 {
		gemmShape = r.eff.gemmShape(rows)
	}
	layerCompute := (prefill*r.prefillTokenCompute+(rows-prefill)*r.decodeTokenCompute)/gemmShape +
		pairs*r.attnPairCompute/r.eff.attentionShape(pairs/tokens)
	shared, head := r.layerWeightMemory, r.headMemory
	if rows > r.skinnyRows {
		shared, head = shared*r.layerWeightSlowdown, head*r.headWeightSlowdown
	}
	weights := shared + r.touchedExperts(rows)*r.expertMemory
	layerMemory := weights/r.eff.weightStreamFactor(rows) + (kv-l2)*r.kvTokenMemory + rows*r.actTokenMemory
	w := stageWork{tokens: rows, decode: decode, sampled: sampled, layerCompute: layerCompute, layerMemory: layerMemory}
	if sampled > 0 {
		w.headCompute, w.headMemory = sampled*r.sampleCompute, head
		w.sampler = r.samplerSeconds(sampled)
	}
	return w
}

// l2Served is how many of a step's decode KV reads L2 serves rather than
// HBM: the reads of shared prefix blocks beyond each block's first
// (StepShape.SharedDecodeContext), all of them while one layer's shared
// blocks fit in the GPU's L2, that share of them when they do not.
func (r *Roofline) l2Served(s StepShape) float64 {
	shared := float64(nonNegative64(s.SharedDecodeContext))
	if shared == 0 || r.l2Bytes <= 0 {
		return 0
	}
	footprint := float64(nonNegative64(s.SharedPrefixTokens)) * r.kvLayerTokenBytes
	if footprint <= r.l2Bytes {
		return shared
	}
	return shared * r.l2Bytes / footprint
}

// samplerSeconds is the sampler's GPU time for a step that samples rows.
func (r *Roofline) samplerSeconds(sampled float64) float64 {
	if r.sampler == nil {
		return 0
	}
	return r.sampler.at(sampled)
}

// seconds splits a step into its parts; StepTime is their sum.
func (r *Roofline) seconds(s StepShape) stepSeconds {
	var out stepSeconds
	out.swap = float64(max(s.SwapInBlocks, 0)+max(s.SwapOutBlocks, 0)) * r.swapBlockCost
	if nonNegative(s.PrefillTokens)+nonNegative(s.Decodes) == 0 {
		return out
	}
	w := r.work(s)
	tokens, sampled := w.tokens, w.sampled
	layerCompute, layerMemory, headCompute, headMemory := w.layerCompute, w.layerMemory, w.headCompute, w.headMemory
	out.comm = r.commFixed + tokens*r.commPerToken + r.tpCommSeconds(tokens) + r.stages*r.inputBroadcast
	if sampled > 0 {
		out.comm += r.gatherSeconds(sampled)
	}
	out.compute = r.stages*layerCompute + headCompute
	out.memory = r.stages*layerMemory + headMemory
	out.gpu = (r.stages-1)*larger(layerCompute, layerMemory) + larger(layerCompute+headCompute, layerMemory+headMemory) + w.sampler
	out.overhead = r.fixedOverhead + r.perSequence*(w.decode+nonNegative(s.Prefills))
	switch {
	case r.Replayed(s):
		if !(r.fullDecodeGraphs && s.PrefillTokens <= 0) {
			out.pieces = r.piecewiseGap
		}
	case r.v0 || r.enforceEager:
		// Eager PyTorch launches each layer's kernels from Python: the
		// GPU waits for the launches when its own work is shorter, on
		// every stage. V0 runs so every step without a graph (a prompt
		// of a few hundred tokens is such a step); V1 under
		// --enforce-eager runs so every step, since vLLM then leaves
		// torch.compile off too (VllmConfig: CompilationLevel
		// NO_COMPILATION unless a level is given).
		out.launch = r.stages * r.eagerLaunch
		out.gaps = larger(out.launch-out.gpu-out.comm, 0)
	case s.PrefillTokens <= 0:
		// V1's decode steps past the captured sizes; a prompt's kernels
		// outlast their launches [inferred].
		out.gaps = r.eagerGap
	}
	return out
}

// touchedExperts is the expected number of distinct routed experts a step
// of n tokens reads in each MoE layer when each token picks k of E
// uniformly: E·(1−(1−k/E)^n). One decode reads k experts; a large batch
// reads all E, so MoE decode costs grow with batch size until every expert
// is touched. Real routers are skewed, which touches fewer.
func (r *Roofline) touchedExperts(n float64) float64 {
	if r.experts == 0 {
		return 0
	}
	return r.experts * (1 - math.Pow(1-r.expertsPerToken/r.experts, n))
}

// graphRows is the number of rows a step's layers run: vLLM replays a
// graph captured for a fixed batch and pads the step's tokens up to it
// (V0 ModelInputForGPUBuilder's cuda_graph_pad_size, V1
// GPUModelRunner's pad_for_cudagraph). The captured sizes are 1, 2, 4
// and then multiples of 8 (V0's _BATCH_SIZES_TO_CAPTURE; V1's default
// capture list, [1, 2, 4] + range(8, 513, 8), in the 0.8.5-era tree).
// The padding rows cost GEMM, elementwise and collective work; attention,
// KV writes and sampling see only the real ones.
func (r *Roofline) graphRows(s StepShape, tokens float64) float64 {
	if !r.Replayed(s) {
		return tokens
	}
	return float64(cudaGraphBatch(int(tokens)))
}

// capturedAtMost is the largest captured batch size (1, 2, 4, then
// multiples of 8) not above n: vLLM truncates a capture limit that falls
// between two of them.
func capturedAtMost(n int) int {
	if n < 8 {
		switch {
		case n >= 4:
			return 4
		case n >= 2:
			return 2
		}
		return 1
	}
	return n / 8 * 8
}

// cudaGraphBatch is the captured batch a step of n tokens replays.
func cudaGraphBatch(n int) int {
	switch {
	case n <= 2:
		return n
	case n <= 4:
		return 4
	}
	return (n + 7) / 8 * 8
}

// graphed reports whether vLLM would replay this step from a CUDA graph.
func (r *Roofline) graphed(s StepShape) bool {
	if r.v0 {
		return s.PrefillTokens == 0 && s.Decodes <= r.graphMaxDecode && s.MaxDecodeContext < r.graphMaxSeqLen
	}
	return s.PrefillTokens+s.Decodes <= r.graphMaxTokens
}

// Replayed reports whether the step replays a captured CUDA graph, whose
// kernels ran when the graph was captured at startup (never under
// --enforce-eager).
func (r *Roofline) Replayed(s StepShape) bool { return !r.enforceEager && r.graphed(s) }

// CapturedBatches are the token counts vLLM captures CUDA graphs for at
// startup, in ascending order: 1, 2, 4 and the multiples of 8 up to the
// largest batch graphRows pads to (none under --enforce-eager).
func (r *Roofline) CapturedBatches() []int {
	if r.enforceEager {
		return nil
	}
	largest := r.graphMaxTokens
	if r.v0 {
		largest = r.graphMaxDecode
	}
	var out []int
	for _, n := range []int{1, 2, 4} {
		if n <= largest {
			out = append(out, n)
		}
	}
	for n := 8; n <= largest; n += 8 {
		out = append(out, n)
	}
	return out
}

// StepTime predicts one engine step; an empty step takes no time.
func (r *Roofline) StepTime(s StepShape) time.Duration {
	return toDuration(r.seconds(s).total())
}

// toDuration converts seconds, saturating instead of overflowing for
// absurd shapes (a float-to-int conversion out of range is undefined).
func toDuration(sec float64) time.Duration {
	const maxSeconds = float64(math.MaxInt64) / float64(time.Second)
	switch {
	case sec >= maxSeconds:
		return math.MaxInt64
	case sec > 0:
		return time.Duration(sec * float64(time.Second))
	default:
		return 0
	}
}

// Breakdown is StepTime split into its parts.
func (r *Roofline) Breakdown(s StepShape) StepBreakdown {
	p := r.seconds(s)
	d := toDuration
	return StepBreakdown{
		Compute: d(p.compute), Memory: d(p.memory), GPU: d(p.gpu),
		Communication: d(p.comm), Overhead: d(p.overhead), LaunchGaps: d(p.gaps), GraphGaps: d(p.pieces), Launch: d(p.launch), Swap: d(p.swap),
		Total: d(p.total()),
	}
}
