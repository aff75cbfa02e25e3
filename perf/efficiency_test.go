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

// TestHipBLASLtWeightRateMatchesAMDTimings: the MI300X's weight-read curve
// gives back every one-row hipBLASLt time AMD published within 2% (two
// pairs of shapes weigh the same; the curve takes their mean, 1.9% and
// 0.5% from either).
func TestHipBLASLtWeightRateMatchesAMDTimings(t *testing.T) {
	rows := figureRows(t, "amd-hipblaslt-m1.tsv")
	if len(rows) != 14 {
		t.Fatalf("%d rows, want AMD's 14 shapes", len(rows))
	}
	mi := mustGPU(t, "MI300X")
	for _, r := range rows {
		n, k, us := figure(t, r, "n"), figure(t, r, "k"), figure(t, r, "hipblaslt_us")
		bytes := n * k * 2
		got := bytes / (mi.MemoryBandwidth * interpolateLog2(hipBLASLtWeightRate, bytes)) * 1e6
		if !within(got, us, 0.02) {
			t.Errorf("%v × %v: %.2f µs from the curve, AMD measured %.2f", n, k, got, us)
		}
		// vLLM's skinny GEMMs stand in for hipBLASLt at few rows only where
		// they read the weights at least as fast.
		if skinny := figure(t, r, "wvspltk_us"); skinny > us {
			t.Errorf("%v × %v: wvSpltK %.2f µs, slower than hipBLASLt's %.2f", n, k, skinny, us)
		}
	}
}

// TestROCmWeightReads: on the MI300X and MI325X, a step of more rows than
// the release's skinny GEMMs take reads its dense weights at hipBLASLt's
// rate for each GEMM's size; fewer rows keep the roofline's MBU (vLLM's
// own wvSplitK reads 405B's TP 8 MLP weights at 0.74–0.75 of peak, PR
// #29937). NVIDIA parts and quantized ROCm kernels are untouched.
func TestROCmWeightReads(t *testing.T) {
	skinny := KernelPolicy{ROCmSkinnyRows: 2}
	gptq := func(d *Deployment) {
		d.Model.Quantization = Quantization{Method: "gptq", Bits: 4, GroupSize: 128}
	}
	fp8 := func(d *Deployment) { d.Model.Quantization = Quantization{Method: "fp8"} }
	cases := []struct {
		name, gpu  string
		policy     KernelPolicy
		edit       func(*Deployment)
		rows       int
		wantSlowed bool
	}{
		{"before skinny GEMMs, one row", "MI300X", KernelPolicy{}, nil, 1, true},
		{"skinny GEMMs, one row", "MI300X", skinny, nil, 1, false},
		{"skinny GEMMs, two rows", "MI300X", skinny, nil, 2, false},
		{"skinny GEMMs, three rows", "MI300X", skinny, nil, 3, true},
		{"FP8 weights, one row (the skinny GEMMs take bf16/fp16)", "MI300X", skinny, fp8, 1, true},
		{"MI325X, 32 rows", "MI325X", skinny, nil, 32, true},
		{"H100, 32 rows", "H100", skinny, nil, 32, false},
		{"GPTQ through ExLlama on the MI300X", "MI300X", KernelPolicy{}, gptq, 32, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := tabled(t, "Qwen3-8B", c.gpu, func(d *Deployment) {
				d.Kernels = c.policy
				if c.edit != nil {
					c.edit(d)
				}
			})
			atMBU := *r
			atMBU.layerWeightSlowdown, atMBU.headWeightSlowdown = 1, 1
			s := decodeStep(c.rows, 128)
			got, base := r.Breakdown(s).Memory, atMBU.Breakdown(s).Memory
			switch {
			case c.wantSlowed && float64(got) < 1.2*float64(base):
				t.Errorf("memory time %v, want hipBLASLt's, well above %v at MBU", got, base)
			case !c.wantSlowed && got != base:
				t.Errorf("memory time %v, want the roofline's %v", got, base)
			}
		})
	}
	// Qwen3-8B on one MI300X: qkv 50.3 MB and o_proj 33.6 MB read at 0.519
	// (the smallest measured shape's rate, held below it), gate_up 201.3 MB
	// at 0.617, down 100.7 MB at 0.536 (between 90.2 MB's 0.519 and 132.9
	// MB's 0.579 in log size): 675.7 MB-at-full-rate against 385.9 MB at
	// MBU 0.75 is 1.313×; the 1,244.7 MB lm_head at 0.744, 1.008×.
	layer, head := hipBLASLtWeightSlowdown(mustModel(t, "Qwen3-8B"), 1, 2, 0.75)
	if !within(layer, 1.313, 0.003) || !within(head, 1.008, 0.003) {
		t.Errorf("Qwen3-8B slowdowns: layer %.4f, lm_head %.4f; want 1.313 and 1.008", layer, head)
	}
	// FP8 halves the layers' weights, not the lm_head's: its rate is the
	// 16-bit lm_head's.
	if _, fp8Head := hipBLASLtWeightSlowdown(mustModel(t, "Qwen3-8B"), 1, 1, 0.75); fp8Head != head {
		t.Errorf("Qwen3-8B FP8 lm_head slowdown %.4f, want the 16-bit %.4f", fp8Head, head)
	}
}
