package vllm_test

import (
	"strings"
	"testing"
	"time"

	"github.com/servebench/servebench/engine"
	"github.com/servebench/servebench/perf"
	"github.com/servebench/servebench/vllm"
)

func mustResolve(t *testing.T, version string, eng engine.Version, model, gpu string, o vllm.Options) *vllm.Resolved {
	t.Helper()
	r, err := resolve(t, version, eng, model, gpu, o)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func prefill(tokens ...int) perf.StepShape {
	var s perf.StepShape
	for _, n := range tokens {
		s.PrefillTokens += n
		s.Prefills++
		s.PrefillsDone++
		s.AttnPairs += int64(n * (n + 1) / 2)
		s.KVTokens += int64(n)
	}
	return s
}

// TestColdStartCompiles: a cold server compiles a variant once, the first
// step that needs it; startup's profile run and graph captures, and graph
// replays, compile nothing; a new cache starts over.
func TestColdStartCompiles(t *testing.T) {
	r := mustResolve(t, "0.6.0", engine.V0, "Mixtral-8x7B", "H100-SXM",
		vllm.Options{TensorParallel: 2, MaxModelLen: 2048, MaxNumSeqs: 1024, ColdStart: true})
	if r.ColdStart == nil {
		t.Fatal("Mixtral on a cold cache: no ColdStart")
	}
	one := vllm.OneVariantCompile
	j := r.ColdStart.NewCache()
	steps := []struct {
		name  string
		shape perf.StepShape
		want  time.Duration
	}{
		{"the profile run's size", prefill(1024, 1024), 0},
		{"a graph-captured size run eagerly as a prefill", prefill(16), 0},
		{"a new variant", prefill(14, 30, 28, 12, 375, 29, 487, 369, 5, 236), one},
		{"the same variant again", prefill(1585), 0},
		{"the same tile, other divisibility", prefill(1584), one},
		{"a decode step replays a graph", perf.StepShape{Decodes: 9, KVTokens: 1600, AttnPairs: 1600, DecodeContext: 1600, MaxDecodeContext: 400}, 0},
		{"nothing to run", perf.StepShape{}, 0},
	}
	for _, s := range steps {
		if got := j.Compile(s.shape); got != s.want {
			t.Errorf("%s: Compile = %v, want %v", s.name, got, s.want)
		}
	}
	if got := r.ColdStart.NewCache().Compile(prefill(1585)); got != one {
		t.Errorf("a second server process: Compile = %v, want %v (its own cache)", got, one)
	}
	w := r.ColdStart.NewCache()
	w.Warm(1585)
	if got := w.Compile(prefill(1585)); got != 0 {
		t.Errorf("after Warm(1585): Compile = %v, want 0", got)
	}
	var none *vllm.JITCache
	none.Warm(3)
	if got := none.Compile(prefill(1585)); got != 0 {
		t.Errorf("nil cache: Compile = %v, want 0", got)
	}
}

// TestColdStartScope: only steps on Triton's fused-MoE kernel compile, at
// the host's speed; a warm cache (the default) compiles nothing.
func TestColdStartScope(t *testing.T) {
	one := vllm.OneVariantCompile
	cases := []struct {
		name, version string
		eng           engine.Version
		model, gpu    string
		o             vllm.Options
		want          time.Duration // one variant's compile; 0: no ColdStart
	}{
		{"warm by default", "0.6.0", engine.V0, "Mixtral-8x7B", "H100-SXM", vllm.Options{TensorParallel: 2}, 0},
		{"dense model", "0.6.0", engine.V0, "Llama-3-8B", "H100-SXM", vllm.Options{ColdStart: true}, 0},
		{"V1 MoE", "0.11.0", engine.V1, "Qwen3-30B-A3B", "H100-SXM", vllm.Options{ColdStart: true}, one},
		{"twice as fast a host", "0.6.0", engine.V0, "Mixtral-8x7B", "H100-SXM", vllm.Options{TensorParallel: 2, ColdStart: true, HostSpeed: 2}, one / 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := mustResolve(t, c.version, c.eng, c.model, c.gpu, c.o)
			if c.want == 0 {
				if r.ColdStart != nil {
					t.Fatalf("ColdStart = %+v, want nil", r.ColdStart)
				}
				return
			}
			if r.ColdStart == nil {
				t.Fatal("ColdStart = nil")
			}
			// 8,191 rows: past every captured graph and the profile run.
			if got := r.ColdStart.NewCache().Compile(prefill(8191)); got != c.want {
				t.Errorf("Compile = %v, want %v", got, c.want)
			}
		})
	}
}

// TestColdStartLine: sim and serve say at startup what a cold cache costs,
// only when it costs something.
func TestColdStartLine(t *testing.T) {
	cold := mustResolve(t, "0.6.0", engine.V0, "Mixtral-8x7B", "H100-SXM", vllm.Options{TensorParallel: 2, ColdStart: true})
	lines := vllm.StartupLines(cold)
	if len(lines) == 0 || !strings.Contains(lines[len(lines)-1].Text, "1.76 s a variant") {
		t.Errorf("cold Mixtral: startup lines %+v, want the cold-start line last, at 1.76 s a variant", lines)
	}
	for _, r := range []*vllm.Resolved{
		mustResolve(t, "0.6.0", engine.V0, "Mixtral-8x7B", "H100-SXM", vllm.Options{TensorParallel: 2}),
		mustResolve(t, "0.6.0", engine.V0, "Llama-3-8B", "H100-SXM", vllm.Options{ColdStart: true}),
	} {
		if got := vllm.ColdStartLines(r); got != nil {
			t.Errorf("%s, cold start %v: %+v, want no line", r.Deployment.Model.Name, r.ColdStart != nil, got)
		}
	}
}
