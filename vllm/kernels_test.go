package vllm_test

import (
	"testing"

	"github.com/servebench/servebench/engine"
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

// TestMLAPerRelease: releases before MLA support cache DeepSeek's heads
// whole (V0 before 0.7.1, V1 before 0.8.0), so the same GPU holds about
// 14× fewer tokens of DeepSeek-V2-Lite.
func TestMLAPerRelease(t *testing.T) {
	cases := []struct {
		version      string
		eng          engine.Version
		wantExpanded bool
	}{
		{"0.6.6", engine.V0, true},
		{"0.7.0", engine.V0, true},
		{"0.7.1", engine.V0, false},
		{"0.7.3", engine.V1, true},
		{"0.8.0", engine.V1, false},
		{"0.11.0", engine.V1, false},
	}
	tokens := map[bool]int{}
	for _, c := range cases {
		t.Run(c.version+" "+string(c.eng), func(t *testing.T) {
			r, err := resolve(t, c.version, c.eng, "DeepSeek-V2-Lite", "H100", vllm.Options{MaxModelLen: 4096})
			if err != nil {
				t.Fatal(err)
			}
			if got := r.Deployment.Model.MLA.Expanded; got != c.wantExpanded {
				t.Errorf("MLA expanded = %v, want %v", got, c.wantExpanded)
			}
			if c.eng == engine.V1 {
				tokens[c.wantExpanded] = r.Capacity.Tokens()
			}
		})
	}
	if ratio := float64(tokens[false]) / float64(tokens[true]); ratio < 10 || ratio > 16 {
		t.Errorf("V1 KV tokens with MLA %d, expanded %d: ratio %.1f, want the 14.2× of 442,368 over 31,104 bytes a token (less the activation peak)", tokens[false], tokens[true], ratio)
	}
}
