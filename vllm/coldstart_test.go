package vllm

import (
	"testing"

	"github.com/servebench/servebench/perf"
)

// TestNearestConfigKey: the tuned entry try_get_optimal_moe_config takes,
// the smaller one on a tie, the largest past the end.
func TestNearestConfigKey(t *testing.T) {
	for _, c := range []struct{ tokens, want int }{
		{1, 1}, {3, 2}, {6, 4}, {14, 16}, {20, 16}, {28, 24}, {40, 32}, {56, 48},
		{192, 128}, {193, 256}, {1280, 1024}, {1585, 1536}, {1792, 1536}, {1793, 2048}, {100000, 4096},
	} {
		if got := nearestConfigKey(c.tokens); got != c.want {
			t.Errorf("nearestConfigKey(%d) = %d, want %d", c.tokens, got, c.want)
		}
	}
}

// TestFusedMoEVariant: Triton keys num_valid_tokens (M × top-k) and EM
// (M × top-k + E·(BLOCK_SIZE_M − 1)) by whether each is a multiple of 16.
func TestFusedMoEVariant(t *testing.T) {
	mixtral := &ColdStart{experts: 8, topk: 2}
	deepseek := &ColdStart{experts: 256, topk: 8}
	for _, c := range []struct {
		name   string
		c      *ColdStart
		tokens int
		want   fusedMoEVariant
	}{
		// 2·2048 = 4096 ≡ 0; 4096 − 8 ≢ 0.
		{"Mixtral profile run", mixtral, 2048, fusedMoEVariant{2048, true, false}},
		// 2·4 = 8 ≡ E (mod 16): EM is the multiple of 16.
		{"Mixtral graph of 4", mixtral, 4, fusedMoEVariant{4, false, true}},
		// Lambda's ten prompts: 1585 rows, 3170 ≡ 2.
		{"Mixtral odd burst", mixtral, 1585, fusedMoEVariant{1536, false, false}},
		{"Mixtral graph of 16", mixtral, 16, fusedMoEVariant{16, true, false}},
		{"Mixtral test prompt of 14", mixtral, 14, fusedMoEVariant{16, false, false}},
		// E a multiple of 16: both or neither.
		{"DeepSeek 3 rows", deepseek, 3, fusedMoEVariant{2, false, false}},
		{"DeepSeek 2", deepseek, 2, fusedMoEVariant{2, true, true}},
	} {
		if got := c.c.variant(c.tokens); got != c.want {
			t.Errorf("%s: variant(%d) = %+v, want %+v", c.name, c.tokens, got, c.want)
		}
	}
}

// TestColdStartSkipsMarlinMoE: 4-bit experts run Marlin's precompiled MoE
// kernel, which no cache holds.
func TestColdStartSkipsMarlinMoE(t *testing.T) {
	m, err := perf.LookupModel("Mixtral-8x7B")
	if err != nil {
		t.Fatal(err)
	}
	m.Quantization = perf.Quantization{Method: "gptq", Bits: 4}
	if c := coldStart(perf.Deployment{Model: m}, nil, HostOverhead{}); c != nil {
		t.Fatalf("GPTQ experts: coldStart = %+v, want nil", c)
	}
}

// OneVariantCompile is one variant's compiles on the default host, for
// the external tests.
var OneVariantCompile = fusedMoEKernelsPerVariant * tritonCompileTime
