package perf

import (
	"fmt"
	"math"
)

// Efficiency tables: the fraction of a GPU's peak that vLLM's kernels
// attain, by GPU family, by tokens per step, by context length and by
// quantization kernel. doc.go ("Efficiency tables") cites the measurement
// behind every number and marks each assumption.

// EfficiencyScale multiplies the attained efficiencies of a GPU: the
// factors a calibration fits. Zero means 1 (no change).
type EfficiencyScale struct {
	// Compute scales the fraction of peak FLOP/s reached by GEMMs and
	// attention (it sets prefill time).
	Compute float64
	// Bandwidth scales the fraction of peak memory bandwidth reached when
	// streaming weights and KV (it sets decode time).
	Bandwidth float64
}

func (s EfficiencyScale) compute() float64   { return orOne(s.Compute) }
func (s EfficiencyScale) bandwidth() float64 { return orOne(s.Bandwidth) }

func orOne(v float64) float64 {
	if v == 0 {
		return 1
	}
	return v
}

// curvePoint is one measured (x, relative efficiency) pair; curves are
// interpolated linearly in log2(x) and held flat outside the measured range.
type curvePoint struct{ x, y float64 }

// gemmTokenCurve: dense BF16 GEMM throughput on H100 (XLA's measured matmul
// table, sm_90, b=1, n=k=4096) at M = tokens in the step, relative to
// M = 4096: 412.0, 738.5 and 783.3 TFLOP/s at M = 256, 1024, 4096.
// Below M = 256 it is held at the M = 256 value. It applies to steps with
// a prefill; decode-only steps are bound by streaming the weights, which
// the roofline's memory term times, and take the saturated rate.
var gemmTokenCurve = []curvePoint{{256, 0.526}, {1024, 0.943}, {4096, 1}}

// attentionContextCurve: FlashAttention-3 forward throughput on H100 (head
// dim 128, pytorch/benchmark PR #2391) by sequence length, relative to 16k:
// 430.3, 517.1, 565.5, 590.2, 614.2, 620.7 TFLOP/s at 512 … 16k. Longer
// contexts (to 128k) are held at the 16k value [assumption: the kernel is
// saturated by then].
var attentionContextCurve = []curvePoint{{512, 0.693}, {1024, 0.833}, {2048, 0.911}, {4096, 0.951}, {8192, 0.990}, {16384, 1}}

func interpolateLog2(curve []curvePoint, x float64) float64 {
	if x <= curve[0].x {
		return curve[0].y
	}
	last := curve[len(curve)-1]
	if x >= last.x {
		return last.y
	}
	for i := 1; i < len(curve); i++ {
		if hi := curve[i]; x <= hi.x {
			lo := curve[i-1]
			f := math.Log2(x/lo.x) / math.Log2(hi.x/lo.x)
			return lo.y + f*(hi.y-lo.y)
		}
	}
	return last.y
}

// familyEfficiency is what one GPU family's kernels attain at saturation.
type familyEfficiency struct {
	gemm      float64 // dense BF16 GEMM, fraction of the BF16 peak
	fp8GEMM   float64 // dense FP8 GEMM, fraction of the FP8 peak
	attention float64 // FlashAttention forward at long context, fraction of the BF16 peak
}

// gpuFamilyEfficiency is keyed by catalog GPU name. GPUs described by a
// YAML file are not in it and keep their flat mfu/mbu.
var gpuFamilyEfficiency = map[string]familyEfficiency{
	"H100-SXM":  {gemm: 0.803, fp8GEMM: 0.709, attention: 0.628},
	"H200":      {gemm: 0.803, fp8GEMM: 0.734, attention: 0.628},
	"B200":      {gemm: 0.776, fp8GEMM: 0.763, attention: 0.776 * hopperAttentionToGEMM},
	"A100-80GB": {gemm: 0.869, attention: 0.73},
	"A100-40GB": {gemm: 0.869, attention: 0.73},
	"MI300X":    {gemm: 0.514, fp8GEMM: 0.514, attention: 0.514 * hopperAttentionToGEMM},
	// Parts the matmul-rate table has (measuredFamily;
	// TestEfficiencyRowsFollowMatmulRates).
	"L4":             measuredFamily("L4", true, ampereAttentionToGEMM),
	"L40S":           measuredFamily("L40S", true, ampereAttentionToGEMM),
	"RTX-4090":       measuredFamily("RTX-4090", true, ampereAttentionToGEMM),
	"H20":            measuredFamily("H20", true, hopperAttentionToGEMM),
	"H100-PCIe":      measuredFamily("H100-PCIe", true, hopperAttentionToGEMM),
	"A100-40GB-PCIe": measuredFamily("A100-40GB-PCIe", false, ampereAttentionToGEMM),
	// No public matmul measurement of the A10: the catalog's MFU (doc.go)
	// stands for its GEMM rate.
	"A10": {gemm: 0.50, attention: 0.50 * ampereAttentionToGEMM},
	// Parts without a measurement of their own take the row of the part
	// with the same die (doc.go).
	"A10G":           {gemm: 0.50, attention: 0.50 * ampereAttentionToGEMM},
	"A40":            {gemm: 0.50, attention: 0.50 * ampereAttentionToGEMM},
	"L40":            measuredFamily("L40S", true, ampereAttentionToGEMM),
	"A100-80GB-PCIe": {gemm: 0.869, attention: 0.73},
	"H100-NVL":       {gemm: 0.803, fp8GEMM: 0.709, attention: 0.628},
	"MI325X":         {gemm: 0.514, fp8GEMM: 0.514, attention: 0.514 * hopperAttentionToGEMM},
}

// measuredFamily is the row of a part the matmul-rate table has
// (kerneltables/matmul-rates.tsv): its measured rate over its data sheet's
// BF16 peak, capped at 1 (an RTX 4090 boosts above its data sheet's
// clock), FP8 at Hopper's FP8/BF16 ratio where the part runs FP8 GEMMs,
// attention at its architecture's attention/GEMM ratio.
func measuredFamily(name string, fp8 bool, attentionToGEMM float64) familyEfficiency {
	g, err := LookupGPU(name)
	rate, ok := matmulRate(name)
	if err != nil || !ok {
		panic(fmt.Sprintf("perf: no measured matmul rate for catalog GPU %s", name))
	}
	gemm := math.Min(rate/g.BF16FLOPS, 1)
	fam := familyEfficiency{gemm: gemm, attention: gemm * attentionToGEMM}
	if fp8 {
		fam.fp8GEMM = gemm * hopperFP8ToBF16
	}
	return fam
}

// Ratios used where a family lacks its own measurement (doc.go).
const (
	hopperAttentionToGEMM = 0.628 / 0.803 // FA3 vs cuBLAS on H100
	ampereAttentionToGEMM = 0.73 / 0.869  // FA2 vs cuBLAS on A100
	hopperFP8ToBF16       = 0.709 / 0.803 // FP8 vs BF16 GEMM on H100
)

// QuantKernel names the GEMM kernel vLLM runs for a checkpoint's linear
// layers on a GPU.
type QuantKernel string

const (
	KernelDense   QuantKernel = "dense"    // BF16/FP16 cuBLAS
	KernelMarlin  QuantKernel = "marlin"   // GPTQ/AWQ W4A16, and FP8 W8A16 without FP8 units
	KernelExLlama QuantKernel = "exllama"  // GPTQ W4A16 through ExLlamaV2 (before Marlin, and on ROCm)
	KernelAWQ     QuantKernel = "awq-gemm" // AWQ W4A16 through the AutoAWQ GEMM kernel (before awq_marlin)
	KernelFP8     QuantKernel = "fp8-w8a8" // FP8 weights and activations on FP8 tensor cores
)

// KernelPolicy is which quantized-GEMM kernel a vLLM release picks where
// it had a choice; the zero value is today's (Marlin for GPTQ and AWQ).
// Package vllm sets it per release (doc.go cites the switch-over PRs).
type KernelPolicy struct {
	// GPTQExLlama: GPTQ checkpoints run the ExLlamaV2 kernel, as before
	// vLLM converted them to Marlin by itself (PR #3922).
	GPTQExLlama bool
	// AWQGEMM: AWQ checkpoints run the AutoAWQ GEMM kernel, as before
	// awq_marlin became automatic (PR #6612, vLLM 0.5.3).
	AWQGEMM bool
	// HopperFA2: prefill attention on Hopper runs FlashAttention 2, as
	// before vLLM made FlashAttention 3 its default there (PR #12093);
	// the Hopper tables time FlashAttention 3.
	HopperFA2 bool
	// ROCmSkinnyRows: on ROCm, steps of at most this many rows read
	// bf16/fp16 weights through vLLM's own skinny GEMMs (PR #15830) rather
	// than hipBLASLt; 0 before them.
	ROCmSkinnyRows int
	// BlockFP8CUTLASS: on Hopper, the linear layers of a block-wise FP8
	// checkpoint (128×128 weight scales, DeepSeek-V3's) run vLLM's own
	// CUTLASS blockwise kernel (PR #11868), which takes
	// blockFP8CUTLASSSlowdown times the per-tensor FP8 table's time; off,
	// they are timed as per-tensor FP8 (DeepGEMM's rate, later releases).
	BlockFP8CUTLASS bool
	// V1UnifiedAttention: a step's prompt tokens and decodes go to one
	// FlashAttention varlen call, as vLLM V1's FlashAttention backend
	// makes them (V0 calls prefill and decode apart); on FlashAttention
	// 2 the decodes then run unpacked (unpackedDecodeGroups).
	V1UnifiedAttention bool
	// MLAPadVOnFA3: MLA's prefill attention pads V to the query/key head
	// width on FlashAttention 3 too, as vLLM did everywhere before PR
	// #13111 (Deployment.mlaPadsV).
	MLAPadVOnFA3 bool
	// MLAFlashInferPrefill: on Blackwell, MLA's prefill attention runs
	// FlashInfer's ragged kernel, which takes V at its own width (vLLM
	// V1 from PR #20034); otherwise FlashAttention 2 with V padded.
	MLAFlashInferPrefill bool
}

// hipBLASLtWeightRate is the fraction of the MI300X's peak bandwidth (5.3
// TB/s) hipBLASLt attains reading one GEMM's fp16 weights for one row, by
// the weights' bytes: AMD's timings of 14 shapes at M = 1 on an MI300X
// (rocm-libraries PR #12329, column "hipBLASLt MI300X µs"; the mean where
// two shapes weigh the same). Below 90 MB the smallest shape's rate holds
// [assumption]; doc.go says where it applies.
var hipBLASLtWeightRate = []curvePoint{
	{90177536, 0.519}, {132907008, 0.579}, {201326592, 0.617}, {236847104, 0.625},
	{265814016, 0.692}, {473694208, 0.738}, {506068992, 0.787}, {531628032, 0.762},
	{947388416, 0.732}, {1012137984, 0.747}, {1245708288, 0.744}, {2024275968, 0.768},
}

// IsROCm reports whether g is one of the catalog's AMD (gfx942) parts, on
// which vLLM runs ROCm's kernels.
func IsROCm(g GPU) bool { return g.Name == "MI300X" || g.Name == "MI325X" }

// hipBLASLtWeightSlowdown is how much longer hipBLASLt takes than the
// roofline's MBU to stream one layer's dense weights, at bytesPerParam,
// and the lm_head's, at 16 bits (vLLM's FP8 method leaves it
// unquantized), on one of tp ranks: each GEMM at its size's rate.
func hipBLASLtWeightSlowdown(m Model, tp int, bytesPerParam, mbu float64) (layer, head float64) {
	var bytes, atRate float64
	layer, head = 1, 1
	for _, s := range m.LinearShapes(tp) {
		if s.Name == "lm_head" {
			head = mbu / interpolateLog2(hipBLASLtWeightRate, float64(s.N)*float64(s.K)*activationBytes)
			continue
		}
		b := float64(s.N) * float64(s.K) * bytesPerParam
		bytes += b
		atRate += b / interpolateLog2(hipBLASLtWeightRate, b)
	}
	if bytes > 0 {
		layer = mbu * atRate / bytes
	}
	return layer, head
}

// fa2OverFA3 is FlashAttention 2's prefill time over the Hopper tables'
// FlashAttention 3 by prompt length: the median of PyTorch's
// FlashAttention 2 measured on our own H100 SXM and H200 over the
// tables' time at the same points (testdata/gpu-profile, 8 points a
// length; TestFA2OverFA3MatchesProfiles recomputes it). Up to 256 tokens
// the kernels sit at their launch floors, where the measurement found
// FlashAttention 2 no slower (0.71 at 128 tokens, held at 1); from 4K
// tokens FA3 is 1.7× faster, as its paper's 1.5–2.0× says.
var fa2OverFA3 = []curvePoint{{256, 1}, {512, 1.089}, {1024, 1.305}, {2048, 1.5}, {4096, 1.707}, {8192, 1.679}, {16384, 1.69}}

// Kernel is the kernel the release runs for m's linear layers on g.
func (p KernelPolicy) Kernel(m Model, g GPU) QuantKernel {
	k := QuantKernelFor(m, g)
	if k != KernelMarlin {
		return k
	}
	switch {
	case m.Quantization.Method == "gptq" && p.GPTQExLlama:
		return KernelExLlama
	case m.Quantization.Method == "awq" && p.AWQGEMM:
		return KernelAWQ
	}
	return k
}

// QuantKernelFor is the kernel today's vLLM picks: gptq_marlin/awq_marlin
// on NVIDIA GPUs of compute capability ≥ 8.0 (every catalog NVIDIA part),
// ExLlama on ROCm, W8A8 FP8 on GPUs with FP8 units and FP8 Marlin
// (W8A16) on the others.
func QuantKernelFor(m Model, g GPU) QuantKernel {
	switch m.Quantization.Method {
	case "gptq", "awq":
		if IsROCm(g) {
			return KernelExLlama
		}
		return KernelMarlin
	case "fp8":
		if g.FP8FLOPS > 0 {
			return KernelFP8
		}
		return KernelMarlin
	}
	return KernelDense
}

// kernelPrefillFactor is the kernel's large-M GEMM rate relative to the
// dense kernel at the same peak, on a deployment whose GEMMs come from
// gemmSource's kernel table ("" for the analytic roofline): Marlin's
// prefill took 12.2 s where ExLlamaV2, which dequantizes and calls cuBLAS
// at large M, took 9.68 s (Llama-70B 4-bit on A100, 1k context, batch
// 16); the GA102 parts (the A40's table) have a measured rate of their own.
func kernelPrefillFactor(k QuantKernel, gemmSource string) float64 {
	switch {
	case k != KernelMarlin:
		return 1
	case gemmSource == "A40":
		return ga102MarlinPrefillFactor
	}
	return 9.68 / 12.2
}

// ga102MarlinPrefillFactor is Marlin's large-M rate relative to fp16 on
// the A10G, applied to the GA102 parts whose GEMMs share the A40's table
// (A10, A10G, A40) [assumption: one die, one ratio]: nm-vllm's A10G
// nightly (2024-03-16) prefilled one 2,048-token prompt of
// OpenHermes-2.5-Mistral-7B at 3,835.1 tokens/s from its Marlin checkpoint
// and 3,903.2 from fp16. Why Marlin keeps up there and not on the A100 is
// not established.
const ga102MarlinPrefillFactor = 3835.1 / 3903.2

// exllamaDecodeCurve is ExLlamaV2's attained weight bandwidth relative to
// an ideal kernel, by tokens per step: close to ideal at batch 1 (Marlin
// README: prior kernels reach the ideal 3.87× at batch 1–2), and half of
// Marlin's at batch 16 (38.57 s vs 79.7 s of decode in the same run as
// above). Marlin itself stays ideal up to batch 16–32.
var exllamaDecodeCurve = []curvePoint{{1, 1}, {16, 38.57 / 79.7}}

// awqDecodeCurve is the AWQ GEMM kernel's decode throughput relative to
// Marlin's on the same checkpoint (sgl-project/sglang#28: Nous-Hermes-2-
// SOLAR-10.7B 4-bit, 79 vs 102 tok/s at batch 1 and 1678 vs 2476 at 64).
var awqDecodeCurve = []curvePoint{{1, 79.0 / 102}, {64, 1678.0 / 2476}}

// tableEfficiency is what the roofline reads for one deployment.
type tableEfficiency struct {
	prefill, decode, attention float64 // saturated fractions of the GEMM / BF16 peaks
	tokenCurve                 bool
	kernel                     QuantKernel
}

// efficiencyFor looks up the tables for a GPU and model; a GPU outside the
// catalog keeps its flat MFU (no token or context curve).
func efficiencyFor(g GPU, m Model, k QuantKernel) tableEfficiency {
	fam, ok := gpuFamilyEfficiency[g.Name]
	if !ok || !isCatalogGPU(g) {
		f := kernelPrefillFactor(k, "")
		return tableEfficiency{prefill: g.MFUPrefill * f, decode: g.MFUDecode * f, attention: g.MFUPrefill, kernel: k}
	}
	gemm := fam.gemm
	if k == KernelFP8 && fam.fp8GEMM > 0 {
		gemm = fam.fp8GEMM
	}
	gemm *= kernelPrefillFactor(k, "")
	return tableEfficiency{prefill: gemm, decode: gemm, attention: fam.attention, tokenCurve: true, kernel: k}
}

// isCatalogGPU reports whether g is the catalog's GPU of that name (a YAML
// file may reuse a name with other numbers).
func isCatalogGPU(g GPU) bool {
	c, err := LookupGPU(g.Name)
	return err == nil && c.BF16FLOPS == g.BF16FLOPS && c.MemoryBandwidth == g.MemoryBandwidth
}

// gemmShape is the token curve for a step of n tokens (1 without tables).
func (t tableEfficiency) gemmShape(n float64) float64 {
	if !t.tokenCurve {
		return 1
	}
	return interpolateLog2(gemmTokenCurve, n)
}

// attentionShape is the context curve at a mean of ctx keys per query.
func (t tableEfficiency) attentionShape(ctx float64) float64 {
	if !t.tokenCurve {
		return 1
	}
	return interpolateLog2(attentionContextCurve, ctx)
}

// weightStreamFactor is the fraction of the ideal weight bandwidth the
// kernel reaches at n tokens per step.
func (t tableEfficiency) weightStreamFactor(n float64) float64 {
	switch t.kernel {
	case KernelExLlama:
		return interpolateLog2(exllamaDecodeCurve, n)
	case KernelAWQ:
		return interpolateLog2(awqDecodeCurve, n)
	}
	return 1
}
