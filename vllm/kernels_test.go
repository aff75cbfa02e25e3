package vllm_test

import (
	"testing"

	"github.com/servebench/servebench/perf"
	"github.com/servebench/servebench/vllm"
)

// TestKernelPolicyPerRelease: the release picks the quantized-GEMM kernel
// (AWQ ran the AutoAWQ GEMM kernel before 0.5.3), and the resolved step
// model says where its kernel times come from.
func TestKernelPolicyPerRelease(t *testing.T) {
	cases := []struct {
		version, gpu string
		wantAWQGEMM  bool
		wantSource   string
	}{
		{"0.5.0", "H100", true, "measured: H100-SXM"},
		{"0.5.2", "A10", true, "derived from A40 (attention: A100-80GB)"},
		{"0.5.3", "H100", false, "measured: H100-SXM"},
		{"0.8.5", "MI300X", false, "roofline: no table"},
	}
	for _, c := range cases {
		t.Run(c.version+" "+c.gpu, func(t *testing.T) {
			r, err := resolve(t, c.version, "", "Qwen2.5-7B-Instruct", c.gpu, vllm.Options{MaxModelLen: 4096})
			if err != nil {
				t.Fatal(err)
			}
			if got := r.Deployment.Kernels; got.AWQGEMM != c.wantAWQGEMM || got.GPTQExLlama {
				t.Errorf("kernel policy %+v, want AWQGEMM %v and Marlin for GPTQ", got, c.wantAWQGEMM)
			}
			ks, ok := r.StepModel.(interface{ KernelSource() perf.KernelSource })
			if !ok {
				t.Fatalf("step model %T does not say its kernel source", r.StepModel)
			}
			if got := ks.KernelSource().String(); got != c.wantSource {
				t.Errorf("kernel source %q, want %q", got, c.wantSource)
			}
		})
	}
}
