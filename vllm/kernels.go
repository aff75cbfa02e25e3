package vllm

import (
	"fmt"
	"strings"

	"github.com/servebench/servebench/perf"
)

// Which quantized-GEMM kernel each release runs (perf.KernelPolicy; perf's
// doc.go cites the PRs):
//   - GPTQ: vLLM converts GPTQ checkpoints to Marlin by itself since PR
//     #3922 (merged 2024-04-29, between the version bumps of 0.4.1 on
//     04-19 and 0.4.2 on 05-04 in vLLM's history, so first in 0.4.2);
//     before, the "gptq" method ran the ExLlamaV2 kernel. Every release
//     line modelled here (0.5 on) runs Marlin on NVIDIA Ampere and newer.
//   - AWQ: awq_marlin became automatic with PR #6612 in 0.5.3; 0.5.0 to
//     0.5.2 ran the AutoAWQ GEMM kernel.
//   - FP8: W8A8 on GPUs with FP8 tensor cores (Ada, Hopper, Blackwell),
//     weight-only FP8 Marlin (W8A16) on Ampere (perf.QuantKernelFor).
//   - Attention on Hopper: FlashAttention 3 from 0.7.0 (fa3Since),
//     FlashAttention 2 before (perf.KernelPolicy.HopperFA2).
//   - Attention calls per step: V1's FlashAttention backend runs a
//     step's prompt tokens and decodes in one flash_attn_varlen_func call
//     (FlashAttentionImpl.forward in the v0.11.0 tree, commit b8b302cd;
//     its metadata builder's comment names FlashAttention 2's "special
//     max_query_len=1 packed-GQA handling"); V0's backend calls prefill
//     and decode apart (perf.KernelPolicy.V1UnifiedAttention).
//   - Dense GEMMs on ROCm: vLLM's own skinny GEMMs for steps of one or
//     two rows from 0.8.5 (rocmSkinnySince), hipBLASLt otherwise
//     (perf.KernelPolicy.ROCmSkinnyRows).
//   - MLA prefill attention: V padded to the query/key head dim on
//     Hopper before 0.8.5 (mlaUnpaddedFA3Since) and on Blackwell before
//     0.10.0 (mlaFlashInferPrefillSince), always elsewhere.
//   - Block-wise FP8 linears on Hopper: vLLM's CUTLASS blockwise kernel
//     from 0.7.1 to 0.10.x (blockFP8CUTLASSSince/Before,
//     perf.KernelPolicy.BlockFP8CUTLASS).
var (
	gptqMarlinSince = Release{0, 4, 2}
	awqMarlinSince  = Release{0, 5, 3}
	// marlinConversionSince is each method's release of the two above.
	marlinConversionSince = map[string]Release{"gptq": gptqMarlinSince, "awq": awqMarlinSince}
)

// fa3Since: vLLM runs FlashAttention 3 on Hopper from PR #12093 ("[Kernel]
// Flash Attention 3 Support", opened 2025-01-15; issue #12429 of
// 2025-01-25: "As of #12093 Flash Attention 3 is now supported in vLLM for
// Hopper GPUs (SM 9.0)", the default there as get_flash_attn_version
// reads: "if hopper default to FA3, otherwise stick to FA2"), for V0's and
// V1's FlashAttention backends alike; merged 2025-01-23 as commit
// 978b45f, so first in 0.7.0 (2025-01-27). Before, vllm-flash-attn was
// FlashAttention 2.
var fa3Since = Release{0, 7, 0}

// mlaUnpaddedFA3Since: PR #13111 ("[Attention] Update to lastest FA3
// code", merged 2025-04-17, after 0.8.4 of 2025-04-14) lets MLA's prefill
// hand V to FlashAttention 3 on Hopper at its own head dim; before, V0's
// and V1's MLA backends padded it to the query/key width there too
// (perf.KernelPolicy.MLAPadVOnFA3).
var mlaUnpaddedFA3Since = Release{0, 8, 5}

// mlaFlashInferPrefillSince: PR #20034 ("[Attention] MLA - Flashinfer
// Ragged Prefill", merged 2025-07-10, after 0.9.2 of 2025-07-08, so from
// 0.10.0) runs V1's MLA prefill on FlashInfer on Blackwell when
// FlashInfer is installed ("default to flashinfer prefill if its available
// since its faster than FA2"), which takes V at its own width; V0's MLA
// backend kept FlashAttention (perf.KernelPolicy.MLAFlashInferPrefill).
var mlaFlashInferPrefillSince = Release{0, 10, 0}

// rocmSkinnySince: PR #15830 ("[Performance][ROCm] Add skinny gemms for
// unquantized linear on ROCm", opened 2025-03-31, approved 2025-04-09,
// on by default as in AMD's fork) reads the bf16/fp16 weights of steps of
// up to rocmSkinnyRows rows with vLLM's own wvSplitK kernels instead of
// hipBLASLt; its follow-up PR #17011 extended them to the vocabulary
// embedding. vLLM's history has them merged on 2025-04-21 (commit
// 188b7f9) and 2025-04-25 (54271bb), after 0.8.4 (2025-04-14), so 0.8.5
// (2025-04-28) is the first release with either. utils.py's rocm_unquantized_gemm_impl of 2026 takes up to 5
// rows on the MI300X (gfx942) [not modelled: the release of that
// extension is not established].
var rocmSkinnySince = Release{0, 8, 5}

// blockFP8CUTLASSSince and blockFP8CUTLASSBefore bound the releases whose
// block-wise FP8 linear layers (DeepSeek-V3's 128×128 weight scales) run
// vLLM's own SM90 CUTLASS blockwise kernel on Hopper. PR #11868 ("Update
// cutlass_scaled_mm to support 2d group (blockwise) scaling") added it;
// CUTLASS issue #2087 (2025-02-07) points at its collective in vLLM
// v0.7.1's tree, and PR #13996 (2025-02-27, DeepSeek-R1 on 8×H200) calls
// it "our existing CUTLASS Block FP8", the default; PR #11868 was merged
// on 2025-01-30 (commit 9798b2f), so first in 0.7.1 (2025-02-01). Before it, 0.6.6 and 0.7.0 ran a Triton kernel that vLLM's
// benchmark README times 1.6–2.5× the per-tensor table where it had tuned
// configurations; sim times those releases as per-tensor FP8 [open]. PR
// #19085 (2025-06) let these layers run DeepGEMM under VLLM_USE_DEEP_GEMM,
// and PR #24462 ("[Kernels] Enable DeepGEMM by default", commit 4ac510f
// of 2025-09-17, after 0.10.2 of 2025-09-13) turned it on from 0.11.0;
// vLLM issue #25915's 0.10.2 FP8 figures match the CUTLASS rate.
// aiconfigurator's 0.24 sweep on an H200 times DeepGEMM at the per-tensor
// kernel's rate at large M (460 against 464 µs at 8192×4096×7168), so from
// 0.11.0 sim keeps the per-tensor table [assumption: DeepGEMM installed;
// without it vLLM falls back to upstream CUTLASS's kernel (PR #23280),
// which measures 1.5–2.0× the per-tensor table on an H100 too].
//
// DeepGEMM needs the deep_gemm package: vLLM's docker images build it in
// (PR #21533, 2025-07), its wheels do not (PR #25592, which tried, was
// closed). Options.DeepGEMM (sim --deep-gemm) overrides the default:
// "off" runs the CUTLASS rate from 0.7.1 on, "on" the per-tensor rate
// from deepGEMMLinearSince, PR #19085's release (commit b8e809a of
// 2025-06-11, the day after 0.9.1, so 0.9.2).
var (
	blockFP8CUTLASSSince  = Release{0, 7, 1}
	blockFP8CUTLASSBefore = Release{0, 11, 0}
	deepGEMMLinearSince   = Release{0, 9, 2}
)

// rocmSkinnyRows: the batch bound PR #15830 states ("when the batch size
// is <= 2").
const rocmSkinnyRows = 2

// v0LargeGraphsSince: V0 captures decode graphs up to max_num_seqs (padded
// to a multiple of 8, at most 8192) from PR #7894 ("extend cuda graph size
// for H200", merged 2024-08-27, so 0.6.0; v0.6.1.post2's
// _BATCH_SIZES_TO_CAPTURE runs to 8·1024), where 0.5.x stopped at 256
// (v0.5.4's list); larger batches ran eagerly.
var v0LargeGraphsSince = Release{0, 6, 0}

// v1GraphsByMaxSeqsSince: V1 captures CUDA graphs up to min(2 ×
// max_num_seqs, 512) tokens from PR #20628 (merged 2025-07-08, after PR
// #20062 had tied them to max_num_seqs two weeks before), so 0.10.0
// [approximate release: 0.9.2 came out the same week]; before, its
// default cuda_graph_sizes was [512] whatever max_num_seqs.
var v1GraphsByMaxSeqsSince = Release{0, 10, 0}

// v1FullDecodeGraphsSince: V1 replays decode-only steps from full CUDA
// graphs (cudagraph_mode FULL_AND_PIECEWISE) by default from PR #25444
// ("Change default CUDAGraphMode from PIECEWISE to FULL_AND_PIECEWISE",
// opened 2025-09-23), which v0.11.0's release notes list ("This releases
// turns on FULL_AND_PIECEWISE as the CUDA graph mode default"); before,
// every captured step replayed piecewise graphs.
var v1FullDecodeGraphsSince = Release{0, 11, 0}

// MLA (DeepSeek's latent attention) as MLA, per engine: V0 from 0.7.1,
// whose release introduced it (vLLM issue #12835 compares its MLA with
// 0.6.6.post1's), V1 from 0.8.0 (PR #13789, "[Attention] MLA support for
// V1", opened 2025-02-24, after 0.7.3) [inferred: first release after the
// merge]. Before, vLLM decompressed the latent into every head's K and V
// and cached those (perf.MLA.Expanded).
var (
	mlaSinceV0 = Release{0, 7, 1}
	mlaSinceV1 = Release{0, 8, 0}
)

// expandsMLA reports whether rel's engine runs an MLA model as ordinary
// multi-head attention.
func expandsMLA(rel Release, v1 bool) bool {
	if v1 {
		return rel.less(mlaSinceV1)
	}
	return rel.less(mlaSinceV0)
}

// kernelPolicy is rel's choice of kernels (quantized GEMMs, Hopper's
// prefill attention, V1's one attention call a step) under
// --quantization quantization and --deep-gemm deepGEMM. Naming "gptq" or
// "awq" explicitly keeps a checkpoint vLLM would convert to Marlin on the
// older kernel: PR #3922's description gives LLM(..., quantization="gptq")
// as the way to "use old gptq kernels", and GPTQMarlinConfig and
// AWQMarlinConfig's override_quantization_method convert only when the
// flag is unset, "marlin" or their own name, logging "you specified
// quantization=gptq explicitly, so forcing gptq" (likewise awq) otherwise.
func kernelPolicy(rel Release, v1 bool, quantization, deepGEMM string) perf.KernelPolicy {
	flag := strings.ToLower(strings.TrimSpace(quantization))
	cutlass := !rel.less(blockFP8CUTLASSSince) && rel.less(blockFP8CUTLASSBefore)
	switch deepGEMMSetting(deepGEMM) {
	case "on":
		cutlass = false
	case "off":
		cutlass = !rel.less(blockFP8CUTLASSSince)
	}
	p := perf.KernelPolicy{
		GPTQExLlama: rel.less(gptqMarlinSince) || flag == "gptq",
		AWQGEMM:     rel.less(awqMarlinSince) || flag == "awq",
		HopperFA2:   rel.less(fa3Since),

		BlockFP8CUTLASS:      cutlass,
		V1UnifiedAttention:   v1,
		MLAPadVOnFA3:         rel.less(mlaUnpaddedFA3Since),
		MLAFlashInferPrefill: v1 && !rel.less(mlaFlashInferPrefillSince),
	}
	if !rel.less(rocmSkinnySince) {
		p.ROCmSkinnyRows = rocmSkinnyRows
	}
	return p
}

// PreMarlinQuantizationFlag is the --quantization value under which
// release simulated runs a method's checkpoint on the kernel release ran
// ran it on: the method's own name when ran predates vLLM's automatic
// conversion of that method to Marlin and simulated does not; "" otherwise,
// or when a version does not parse. validate simulates runs of releases
// older than any profile this way.
func PreMarlinQuantizationFlag(ran, simulated, method string) string {
	r, _, errRan := ParseRelease(ReleaseOf(ran))
	s, _, errSim := ParseRelease(ReleaseOf(simulated))
	if errRan != nil || errSim != nil {
		return ""
	}
	conversion, ok := marlinConversionSince[method]
	if ok && r.less(conversion) && !s.less(conversion) {
		return method
	}
	return ""
}

// KernelSource says whether measured kernel tables or the roofline time
// the GPU side of the steps (sim's engine section prints it).
func (m *HostStepModel) KernelSource() perf.KernelSource {
	if k, ok := m.GPU.(interface{ KernelSource() perf.KernelSource }); ok {
		return k.KernelSource()
	}
	return perf.KernelSource{Mode: "roofline", Reason: "no table"}
}

// QuantizationLines are the startup lines vLLM logs about a GPTQ or AWQ
// checkpoint's kernel (GPTQMarlinConfig and AWQMarlinConfig's
// override_quantization_method, and ModelConfig's warning for methods it
// does not consider optimized): conversion to Marlin, or the older kernel
// kept because --quantization named the method explicitly. Releases that
// predate the conversion log nothing about it.
func QuantizationLines(r *Resolved) []LogLine {
	d := r.Deployment
	method := d.Model.Quantization.Method
	marlinSince, ok := marlinConversionSince[method]
	if !ok || perf.QuantKernelFor(d.Model, d.GPU) != perf.KernelMarlin {
		return nil // not GPTQ or AWQ, or ROCm, which has no Marlin to convert to
	}
	older := d.Kernels.GPTQExLlama
	if method == "awq" {
		older = d.Kernels.AWQGEMM
	}
	marlin := method + "_marlin"
	if !older {
		return []LogLine{{Text: fmt.Sprintf("The model is convertible to %s during runtime. Using %s kernel.", marlin, marlin)}}
	}
	var out []LogLine
	if !r.Profile.Release.less(marlinSince) {
		out = append(out, LogLine{Text: fmt.Sprintf("Detected that the model can run with %s, however you specified quantization=%s explicitly, so forcing %s. Use quantization=%s for faster inference", marlin, method, method, marlin)})
	}
	return append(out, LogLine{Warning: true, Text: fmt.Sprintf("%s quantization is not fully optimized yet. The speed can be slower than non-quantized models.", method)})
}

// StartupLines are every startup line sim and serve print before the
// memory profile's: the ignored frontend flag's, the quantized kernel's,
// the distributed setup's, then servebench's own cold-start line.
func StartupLines(r *Resolved) []LogLine {
	var out []LogLine
	if r.FrontendFlagIgnored {
		// vLLM's own wording changed between releases; this says what it
		// means for the run.
		out = append(out, LogLine{Warning: true, Text: "V1 is enabled, but got --disable-frontend-multiprocessing: ignored, the API server and the engine core stay separate processes"})
	}
	return append(append(append(out, QuantizationLines(r)...), DistributedLines(r)...), ColdStartLines(r)...)
}

// ColdStartLines says, with --cold-start on a model that runs Triton's
// fused-MoE kernel, what the empty cache costs (vLLM logs no such line;
// servebench marks it as its own).
func ColdStartLines(r *Resolved) []LogLine {
	if r.ColdStart == nil {
		return nil
	}
	return []LogLine{{Text: fmt.Sprintf("Empty Triton cache: fused_moe_kernel compiles on the first step that needs a variant startup did not run, %.2f s a variant on this host (servebench --cold-start)", r.ColdStart.compile.Seconds())}}
}
