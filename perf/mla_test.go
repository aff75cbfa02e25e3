package perf

import (
	"math"
	"testing"
)

// TestMLADecodeReadsTheModuleTable: DeepSeek-R1's attention block in a
// decode step takes what aiconfigurator measured for vLLM's MLA module
// (mla_generation_module, H200, 16 query heads per GPU, block-FP8
// projections, bf16 KV: 97.3 µs at 4 sequences of 512 tokens, 123.2 µs at
// 64), not the sum of the GEMM, attention and small-kernel tables' parts,
// which comes to about two thirds of it.
func TestMLADecodeReadsTheModuleTable(t *testing.T) {
	k := mlaKernels(t, "DeepSeek-R1", "H200", 8, "")
	if k.mlaDecode == nil {
		t.Fatal("DeepSeek-R1 at TP 8 on an H200: no MLA decode table")
	}
	if got, want := k.source.String(), "measured: H200; fused MoE: H200 fp8-block 7168x2048x8x256; MLA decode block: H200 fp8-block+bf16-kv, 16 heads"; got != want {
		t.Errorf("kernel source %q, want %q", got, want)
	}
	for _, c := range []struct{ ctx, batch, published float64 }{{512, 4, 97.3e-6}, {512, 64, 123.2e-6}} {
		parts := mlaParts(t, k, "DeepSeek-R1", "H200", 8, c.ctx, c.batch)
		block := parts + k.mlaDecode.at2(c.ctx, c.batch)
		if math.Abs(block/c.published-1) > 0.02 {
			t.Errorf("%v sequences of %v tokens: MLA block %.1f µs, published %.1f µs", c.batch, c.ctx, block*1e6, c.published*1e6)
		}
		if parts > 0.8*c.published {
			t.Errorf("%v sequences of %v tokens: the parts (%.1f µs) should fall well short of the measured block (%.1f µs)", c.batch, c.ctx, parts*1e6, c.published*1e6)
		}
	}
}

// TestMLADecodeOnlyWhereMeasured: the table stands in only for its shape
// on the GPUs it was measured on and for a measured weights and cache
// variant.
func TestMLADecodeOnlyWhereMeasured(t *testing.T) {
	for _, c := range []struct {
		model, gpu, kvCache string
		tp                  int
		want                bool
	}{
		{"DeepSeek-R1", "H200", "", 8, true},
		{"DeepSeek-R1", "H100", "fp8", 8, true},
		{"DeepSeek-V3", "H200", "", 16, true},
		{"DeepSeek-V2-Lite", "H100", "", 1, false},   // another shape
		{"DeepSeek-R1", "H20", "", 8, true},          // derived from H100-SXM's table
		{"DeepSeek-R1", "H100-PCIe", "fp8", 8, true}, // likewise
		{"DeepSeek-R1", "A100-80GB", "", 8, false},   // no FP8 units, no 16-bit MLA table of its family
		{"DeepSeek-R1", "B200", "", 8, false},        // no vLLM MLA module table
	} {
		k := mlaKernels(t, c.model, c.gpu, c.tp, c.kvCache)
		if got := k.mlaDecode != nil; got != c.want {
			t.Errorf("%s on %s (TP %d, KV %q): MLA decode table %v, want %v", c.model, c.gpu, c.tp, c.kvCache, got, c.want)
		}
	}
}

// TestMLADecodeNotForExpandedMLA: a release that runs the layer as
// ordinary attention (MLA.Expanded) has no MLA block to read.
func TestMLADecodeNotForExpandedMLA(t *testing.T) {
	d := mlaDeployment(t, "DeepSeek-R1", "H200", 8, "")
	d.Model.MLA.Expanded = true
	r, err := NewRoofline(d)
	if err != nil {
		t.Fatal(err)
	}
	if r.kern == nil || r.kern.mlaDecode != nil {
		t.Errorf("expanded MLA: kernel tables %v, MLA decode table %v; want tables without the MLA block", r.kern != nil, r.kern != nil && r.kern.mlaDecode != nil)
	}
}

// TestMLADecodeStepTime: a decode step of DeepSeek-R1 grows by the block's
// excess in every layer; a prefill-only step does not change.
func TestMLADecodeStepTime(t *testing.T) {
	with := mlaRoofline(t, "DeepSeek-R1", "H200", 8, "")
	without := *with
	kern := *with.kern
	kern.mlaDecode = nil
	without.kern = &kern
	decode := StepShape{Decodes: 4, KVTokens: 4 * 512, AttnPairs: 4 * 512, DecodeContext: 4 * 512}
	layers := float64(with.d.Model.Layers)
	want := layers * with.kern.mlaDecode.at2(512, 4)
	if got := (with.StepTime(decode) - without.StepTime(decode)).Seconds(); math.Abs(got-want) > 1e-6 {
		t.Errorf("4 decodes: the MLA block adds %.3f ms, want %.3f ms (61 layers' excess)", got*1e3, want*1e3)
	}
	prefill := StepShape{PrefillTokens: 512, Prefills: 1, PrefillsDone: 1, AttnPairs: 512 * 513 / 2, KVTokens: 512}
	if a, b := with.StepTime(prefill), without.StepTime(prefill); a != b {
		t.Errorf("a 512-token prompt: %v with the MLA decode table, %v without: want no change", a, b)
	}
}

func mlaDeployment(t *testing.T, model, gpu string, tp int, kvCache string) Deployment {
	t.Helper()
	m, err := LookupModel(model)
	if err != nil {
		t.Fatal(err)
	}
	g, err := LookupGPU(gpu)
	if err != nil {
		t.Fatal(err)
	}
	d := DefaultDeployment(m, g)
	d.TensorParallel, d.KVCacheDType = tp, kvCache
	return d
}

func mlaRoofline(t *testing.T, model, gpu string, tp int, kvCache string) *Roofline {
	t.Helper()
	r, err := NewRoofline(mlaDeployment(t, model, gpu, tp, kvCache))
	if err != nil {
		t.Fatal(err)
	}
	if r.kern == nil {
		t.Fatalf("%s on %s: no kernel tables", model, gpu)
	}
	return r
}

func mlaKernels(t *testing.T, model, gpu string, tp int, kvCache string) *stepKernels {
	t.Helper()
	return mlaRoofline(t, model, gpu, tp, kvCache).kern
}

// mlaParts is what the GEMM, decode-attention and small-kernel tables
// give one layer's MLA block in decode.
func mlaParts(t *testing.T, k *stepKernels, model, gpu string, tp int, ctx, batch float64) float64 {
	t.Helper()
	r := mlaRoofline(t, model, gpu, tp, "")
	d := r.d
	cat := kernelTables()
	src, _ := measuredGPU(kernelOrigin[d.GPU.Name].gemm)
	gemm := newGEMMTimer(cat, src, d.GPU, d.Kernels.Kernel(d.Model, d.GPU), d.Model)
	parts := k.decode.at2(ctx, batch) + newElementwiseTimer(d, cat)(d.Model.mlaOps(tp, 1), batch)
	for _, s := range d.Model.attentionGEMMs(tp) {
		parts += gemm.at(batch, s.n, s.k)
	}
	return parts
}

// TestMLADecodeDerivedForHopperParts: a Hopper part without its own MLA
// table (H20) reads H100-SXM's, its launch floor kept and the time above
// it scaled by the block's roofline on the two parts: about H100's where
// the weights' read and the launches decide (one sequence), and longer
// than H100's where the attention's FLOPs weigh in (256 sequences of
// 4,096 tokens), though H20 reads memory 1.2× as fast: it has 15% of
// H100's BF16 rate. A bandwidth-only scaling would put both under 1.
func TestMLADecodeDerivedForHopperParts(t *testing.T) {
	h20 := mlaKernels(t, "DeepSeek-R1", "H20", 8, "")
	h100 := mlaKernels(t, "DeepSeek-R1", "H100", 8, "")
	if got, want := h20.source.MLA, "derived from H100-SXM fp8-block+bf16-kv, 16 heads"; got != want {
		t.Errorf("H20 MLA source %q, want %q", got, want)
	}
	for _, c := range []struct{ ctx, batch, lo, hi float64 }{{512, 1, 0.8, 1.05}, {4096, 256, 1.2, 2}} {
		block20 := mlaParts(t, h20, "DeepSeek-R1", "H20", 8, c.ctx, c.batch) + h20.mlaDecode.at2(c.ctx, c.batch)
		block100 := mlaParts(t, h100, "DeepSeek-R1", "H100", 8, c.ctx, c.batch) + h100.mlaDecode.at2(c.ctx, c.batch)
		if r := block20 / block100; r < c.lo || r > c.hi {
			t.Errorf("%v sequences of %v tokens: H20 block %.1f µs, H100 %.1f µs (%.2f×), want %.2f–%.2f×",
				c.batch, c.ctx, block20*1e6, block100*1e6, r, c.lo, c.hi)
		}
	}
}
