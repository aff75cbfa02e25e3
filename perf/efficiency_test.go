package perf

import (
	"math"
	"testing"
)

func TestInterpolateLog2(t *testing.T) {
	tests := []struct {
		x, want float64
	}{
		{1, 0.526}, {256, 0.526}, {512, (0.526 + 0.943) / 2}, {1024, 0.943}, {2048, (0.943 + 1) / 2}, {4096, 1}, {1 << 20, 1},
	}
	for _, tt := range tests {
		if got := interpolateLog2(gemmTokenCurve, tt.x); math.Abs(got-tt.want) > 1e-9 {
			t.Errorf("gemm curve at %v = %v, want %v", tt.x, got, tt.want)
		}
	}
}

func TestQuantKernelFor(t *testing.T) {
	gptq := Model{Quantization: Quantization{Method: "gptq", Bits: 4, GroupSize: 128}}
	fp8 := Model{Quantization: Quantization{Method: "fp8"}}
	tests := []struct {
		model Model
		gpu   string
		want  QuantKernel
	}{
		{Model{}, "H100", KernelDense},
		{gptq, "H100", KernelMarlin},
		{gptq, "A10", KernelMarlin},
		{gptq, "MI300X", KernelExLlama},
		{gptq, "MI325X", KernelExLlama},
		{gptq, "A10G", KernelMarlin},
		{fp8, "H100", KernelFP8},
		{fp8, "L4", KernelFP8},
		{fp8, "A100-80GB", KernelMarlin},
	}
	for _, tt := range tests {
		g, err := LookupGPU(tt.gpu)
		if err != nil {
			t.Fatal(err)
		}
		if got := QuantKernelFor(tt.model, g); got != tt.want {
			t.Errorf("%s on %s: %s, want %s", tt.model.Quantization.Method, tt.gpu, got, tt.want)
		}
	}
}

// Every catalog GPU has a row in the efficiency tables, and a GPU described
// by a file keeps its flat mfu.
func TestEfficiencyTableCoversCatalog(t *testing.T) {
	for _, name := range GPUs() {
		g, _ := LookupGPU(name)
		e := efficiencyFor(g, Model{}, KernelDense)
		if !e.tokenCurve || e.prefill <= 0 || e.prefill > 1 || e.attention <= 0 || e.attention > 1 {
			t.Errorf("%s: efficiency %+v, want a table row with fractions in (0, 1]", name, e)
		}
	}
	custom, err := LoadGPUFile("testdata/gpu-minimal.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if e := efficiencyFor(custom, Model{}, KernelDense); e.tokenCurve || e.prefill != custom.MFUPrefill {
		t.Errorf("GPU file: %+v, want its flat mfu %v", e, custom.MFUPrefill)
	}
}

// Attention per pair gets cheaper as the context grows (FlashAttention
// saturates), so a long prompt's prefill grows a little less than
// quadratically, up to 128k tokens.
func TestLongPromptAttention(t *testing.T) {
	r := roofline(t, "Llama-3.1-8B", "H100", nil)
	prev := 0.0
	for _, n := range []int{1024, 4096, 16384, 65536, 131072} {
		s := prefillStep(n)
		b := r.Breakdown(s)
		if prev > 0 && b.Compute.Seconds() <= prev {
			t.Errorf("%d-token prefill compute %v not above the shorter prompt's", n, b.Compute)
		}
		prev = b.Compute.Seconds()
	}
	short, long := r.eff.attentionShape(512), r.eff.attentionShape(65536)
	if short >= long || long != 1 {
		t.Errorf("attention efficiency at 512 keys %v, at 64k %v: want rising to 1", short, long)
	}
}

// ExLlama's decode falls behind an ideal kernel as the batch grows; Marlin's
// does not.
func TestExLlamaDecodeDegradesWithBatch(t *testing.T) {
	ex := tableEfficiency{kernel: KernelExLlama}
	marlin := tableEfficiency{kernel: KernelMarlin}
	if ex.weightStreamFactor(1) != 1 || math.Abs(ex.weightStreamFactor(16)-38.57/79.7) > 1e-9 || ex.weightStreamFactor(64) != ex.weightStreamFactor(16) {
		t.Errorf("exllama decode factors %v %v %v", ex.weightStreamFactor(1), ex.weightStreamFactor(16), ex.weightStreamFactor(64))
	}
	if marlin.weightStreamFactor(64) != 1 {
		t.Errorf("marlin decode factor at 64 = %v, want 1", marlin.weightStreamFactor(64))
	}
}

func TestEfficiencyScale(t *testing.T) {
	base := roofline(t, "Qwen2-7B", "H100", nil)
	scaled := roofline(t, "Qwen2-7B", "H100", func(d *Deployment) { d.GPU.Scale = EfficiencyScale{Compute: 0.5, Bandwidth: 0.5} })
	for _, s := range []StepShape{prefillStep(2048), decodeStep(1, 512)} {
		b, sc := base.Breakdown(s), scaled.Breakdown(s)
		if r := sc.GPU.Seconds() / b.GPU.Seconds(); math.Abs(r-2) > 0.01 {
			t.Errorf("%+v: halving both efficiencies scales GPU time by %.3f, want 2", s, r)
		}
	}
}
