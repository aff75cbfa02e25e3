package vllm_test

import (
	"context"
	"math"
	"strings"
	"testing"

	"github.com/servebench/servebench/perf"
	"github.com/servebench/servebench/vllm"
)

// TestPublishedBlockCounts reproduces KV cache sizes vLLM printed in public
// threads (doc.go, "Memory profile") within 2%.
func TestPublishedBlockCounts(t *testing.T) {
	const tolerance = 0.02
	cases := []struct {
		source, version, model, gpu string
		memoryGiB                   float64 // the total vLLM reported, when it did
		published                   int
	}{
		// PR #2031: "Llama2-7B with TP=1 and 1xA100-80GB … This PR: # GPU blocks: 7351".
		{"vllm PR #2031", "0.5.4", "testdata/Llama-2-7b-hf", "A100-80GB", 0, 7351},
		// PR #10511: Meta-Llama-3-8B on an H100 (79.22 GiB), 0.90:
		// available_kv_cache_memory 53.29 GiB = 27,284 blocks of 2 MiB.
		{"vllm PR #10511", "0.6.5", "Llama-3-8B", "H100", 79.22, 27284},
		// gateway-api-inference-extension PR #550: 79.19 GiB × 0.90, model
		// weights 12.55 GiB (Llama-2-7B), "# cuda blocks: 7191" (V0, 0.8).
		{"gateway-api-inference-extension PR #550", "0.8.1", "testdata/Llama-2-7b-hf", "H100", 79.19, 7191},
	}
	for _, c := range cases {
		t.Run(c.source, func(t *testing.T) {
			p, err := vllm.Lookup(c.version, "v0")
			if err != nil {
				t.Fatal(err)
			}
			m, err := perf.LookupModel(c.model)
			if err != nil {
				t.Fatal(err)
			}
			g, err := perf.LookupGPU(c.gpu)
			if err != nil {
				t.Fatal(err)
			}
			if c.memoryGiB > 0 {
				g.MemoryBytes = int64(c.memoryGiB * (1 << 30))
			}
			r, err := vllm.Resolve(context.Background(), p, m, g, vllm.Options{})
			if err != nil {
				t.Fatal(err)
			}
			got := r.Capacity.GPUBlocks
			t.Logf("%s: %d blocks, published %d (%+.1f%%)\n%s", c.source, got, c.published,
				100*(float64(got)/float64(c.published)-1), strings.Join(vllm.MemoryLines(r), "\n"))
			if math.Abs(float64(got)/float64(c.published)-1) > tolerance {
				t.Errorf("%d GPU blocks, published %d: off by more than %.0f%%", got, c.published, 100*tolerance)
			}
		})
	}
}
