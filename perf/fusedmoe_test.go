package perf

import (
	"math"
	"strings"
	"testing"
)

// TestFusedMoEShapes: each catalog MoE model finds its own measured expert
// shape in the fused-MoE tables, and a model the sweep did not cover takes
// the nearest one (the same share of experts per token first).
func TestFusedMoEShapes(t *testing.T) {
	table := kernelTables().find("moe", "H100-SXM", "bf16")
	if table == nil {
		t.Fatal("no H100-SXM bf16 fused-MoE table")
	}
	shapes, err := moeTableShapes(table)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct{ model, want string }{
		{"Mixtral-8x7B", "4096x14336x2x8"},
		{"Mixtral-8x22B", "6144x16384x2x8"},
		{"Qwen3-30B-A3B", "2048x768x8x128"},
		{"Qwen3-235B-A22B", "4096x1536x8x128"},
		{"DeepSeek-V3", "7168x2048x8x256"},
		// Not measured: 4 of 60 and 6 of 64 experts, 2048 × 1408.
		{"Qwen1.5-MoE-A2.7B", "2048x768x8x128"},
		{"DeepSeek-V2-Lite", "2048x768x8x128"},
	}
	for _, tt := range tests {
		m := mustModel(t, tt.model)
		s := moeShape{float64(m.Hidden), float64(m.MoE.ExpertIntermediate), float64(m.MoE.ExpertsPerToken), float64(m.MoE.Experts)}
		if got := shapes[nearestMoEShape(shapes, s)].String(); got != tt.want {
			t.Errorf("%s (%s): table shape %s, want %s", tt.model, s, got, tt.want)
		}
	}
}

// TestFusedMoEReadsTable: DeepSeek-R1 (block-wise FP8) on 8 × H200 times
// its routed experts from the H200 fp8-block table at TP 8, one measured
// kernel per MoE layer: at 64 tokens aiconfigurator measured 0.398 ms.
func TestFusedMoEReadsTable(t *testing.T) {
	r := tabled(t, "DeepSeek-R1", "H200", func(d *Deployment) { d.TensorParallel = 8 })
	if got := r.KernelSource().MoE; got != "H200 fp8-block 7168x2048x8x256" {
		t.Fatalf("fused MoE source %q", got)
	}
	m := r.Deployment().Model
	got := r.kern.moe.at(64) / float64(m.moeLayers())
	if want := 398e-6; math.Abs(got/want-1) > 0.01 {
		t.Errorf("one MoE layer at 64 tokens: %.1f µs, want %.1f µs", got*1e6, want*1e6)
	}
	// Decode of 64 sequences, MoE included, stays far below one GEMM per
	// touched expert (every one of the 256, 58 layers, about 15 µs each).
	if step := r.Breakdown(StepShape{Decodes: 64, DecodeContext: 64 * 500, AttnPairs: 64 * 500, KVTokens: 64 * 501}).GPU.Seconds(); step > 0.1 {
		t.Errorf("64-sequence decode takes %.1f ms on the GPU", step*1e3)
	}
}

// TestFusedMoEExpertParallelReadsEPTable: with --enable-expert-parallel
// each of DeepSeek-R1's 8 H200s runs 32 whole experts on every token,
// which aiconfigurator measured apart (moe_ep_size 8, moe_tp_size 1): at
// 8,192 tokens 2.961 ms a layer against 2.328 ms with every expert sliced
// 8 ways, at 64 tokens 0.407 against 0.398 ms. A 4-bit MoE, which has no
// EP table, keeps the TP one.
func TestFusedMoEExpertParallelReadsEPTable(t *testing.T) {
	tp := tabled(t, "DeepSeek-R1", "H200", func(d *Deployment) { d.TensorParallel = 8 })
	ep := tabled(t, "DeepSeek-R1", "H200", func(d *Deployment) { d.TensorParallel, d.ExpertParallel = 8, true })
	if got := ep.KernelSource().MoE; got != "H200 fp8-block 7168x2048x8x256 EP" {
		t.Fatalf("fused MoE source with EP %q", got)
	}
	layers := float64(ep.Deployment().Model.moeLayers())
	for _, c := range []struct{ tokens, ep, tp float64 }{{8192, 2961.32e-6, 2328.01e-6}, {64, 406.86e-6, 398.43e-6}} {
		gotEP, gotTP := ep.kern.moe.at(c.tokens)/layers, tp.kern.moe.at(c.tokens)/layers
		if math.Abs(gotEP/c.ep-1) > 0.01 || math.Abs(gotTP/c.tp-1) > 0.01 {
			t.Errorf("one MoE layer at %v tokens: EP %.1f µs, TP %.1f µs; measured %.1f and %.1f µs", c.tokens, gotEP*1e6, gotTP*1e6, c.ep*1e6, c.tp*1e6)
		}
	}
	prefill := StepShape{PrefillTokens: 8192, Prefills: 1, PrefillsDone: 1, AttnPairs: 8192 * 8193 / 2, KVTokens: 8192}
	if a, b := ep.StepTime(prefill), tp.StepTime(prefill); a <= b {
		t.Errorf("an 8,192-token prefill: %v with EP, %v without; want EP slower", a, b)
	}
	int4 := tabled(t, "Qwen3-30B-A3B", "H100", func(d *Deployment) {
		d.Model.Quantization = Quantization{Method: "gptq", Bits: 4, GroupSize: 128}
		d.TensorParallel, d.ExpertParallel = 2, true
	})
	if got := int4.KernelSource().MoE; !strings.HasSuffix(got, "int4 2048x768x8x128") {
		t.Errorf("4-bit MoE with EP: fused MoE source %q, want the int4 TP table", got)
	}
}

// TestFusedMoEDerived: a GPU without a fused-MoE table of its own or of
// its architecture derives it from H100-SXM; Hopper parts use H100's.
func TestFusedMoEDerived(t *testing.T) {
	for _, tt := range []struct{ gpu, want string }{
		{"A100-80GB", "H100-SXM bf16 4096x14336x2x8"},
		{"H20", "H100-SXM bf16 4096x14336x2x8"},
		{"L40S", "H100-SXM bf16 4096x14336x2x8"},
	} {
		r := tabled(t, "Mixtral-8x7B", tt.gpu, func(d *Deployment) { d.TensorParallel = 2 })
		if got := r.KernelSource(); got.MoE != tt.want || !strings.Contains(got.String(), "fused MoE: "+tt.want) {
			t.Errorf("%s: kernel source %q, want fused MoE %q", tt.gpu, got, tt.want)
		}
	}
	if got := tabled(t, "Llama-3-8B", "H100", nil).KernelSource().MoE; got != "" {
		t.Errorf("dense model: fused MoE source %q", got)
	}
}
