package vllm

import "github.com/servebench/servebench/perf"

// Which quantized-GEMM kernel each release runs (perf.KernelPolicy; perf's
// doc.go cites the PRs):
//   - GPTQ: vLLM converts GPTQ checkpoints to Marlin by itself since PR
//     #3922 (April 2024, first in 0.4.1 [inferred from the merge date]);
//     before, the "gptq" method ran the ExLlamaV2 kernel. Every release
//     line modelled here (0.5 on) runs Marlin on NVIDIA Ampere and newer.
//   - AWQ: awq_marlin became automatic with PR #6612 in 0.5.3; 0.5.0 to
//     0.5.2 ran the AutoAWQ GEMM kernel.
//   - FP8: W8A8 on GPUs with FP8 tensor cores (Ada, Hopper, Blackwell),
//     weight-only FP8 Marlin (W8A16) on Ampere (perf.QuantKernelFor).
var (
	gptqMarlinSince = Release{0, 4, 1}
	awqMarlinSince  = Release{0, 5, 3}
)

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

// kernelPolicy is rel's choice of quantized-GEMM kernels.
func kernelPolicy(rel Release) perf.KernelPolicy {
	return perf.KernelPolicy{
		GPTQExLlama: rel.less(gptqMarlinSince),
		AWQGEMM:     rel.less(awqMarlinSince),
	}
}

// KernelSource says whether measured kernel tables or the roofline time
// the GPU side of the steps (sim's engine section prints it).
func (m *HostStepModel) KernelSource() perf.KernelSource {
	if k, ok := m.GPU.(interface{ KernelSource() perf.KernelSource }); ok {
		return k.KernelSource()
	}
	return perf.KernelSource{Mode: "roofline", Reason: "no table"}
}
