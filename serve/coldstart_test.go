package serve

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/servebench/servebench/engine"
	"github.com/servebench/servebench/perf"
	"github.com/servebench/servebench/vllm"
)

// TestColdStartServe: with a cold Triton cache the emulator holds the
// first step that needs a new fused-MoE variant for its compile, and only
// the first: the same prompt again takes the warm server's time.
func TestColdStartServe(t *testing.T) {
	p, err := vllm.Lookup("0.6.0", engine.V0)
	if err != nil {
		t.Fatal(err)
	}
	m, err := perf.LookupModel("Mixtral-8x7B")
	if err != nil {
		t.Fatal(err)
	}
	g, err := perf.LookupGPU("H100-SXM")
	if err != nil {
		t.Fatal(err)
	}
	res, err := vllm.Resolve(context.Background(), p, m, g, vllm.Options{TensorParallel: 2, MaxModelLen: 2048, ColdStart: true})
	if err != nil {
		t.Fatal(err)
	}
	ttfts := func(cold bool) []time.Duration {
		cfg := testConfig(t)
		if cold {
			cfg.ColdStart = res.ColdStart
		}
		var out []time.Duration
		synctest.Test(t, func(t *testing.T) {
			s, stop := startLoop(t, cfg, nil)
			defer stop()
			prompt := make([]int32, 1585)
			for i := range prompt {
				prompt[i] = int32(500 + i%1000)
			}
			for id := range 2 {
				st := newStream(engine.Request{ID: uint64(id + 1), Prompt: prompt, PromptLen: len(prompt), MaxTokens: 4, Arrival: s.now()}, 4, true, 0)
				if err := s.submit(st); err != nil {
					t.Fatal(err)
				}
				out = append(out, consume(s, st, st.req.Arrival).ttft)
			}
		})
		return out
	}
	warm, cold := ttfts(false), ttfts(true)
	if extra := cold[0] - warm[0]; extra < time.Second || extra > 3*time.Second {
		t.Errorf("first request: TTFT %v cold, %v warm; want one variant's compile (~1.8 s) between them", cold[0], warm[0])
	}
	if cold[1] != warm[1] {
		t.Errorf("second request: TTFT %v cold, %v warm; want the same (compiled already)", cold[1], warm[1])
	}
}
