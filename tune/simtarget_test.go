package tune

import (
	"context"
	"path/filepath"
	"sync"
	"testing"

	"github.com/servebench/servebench/metrics"
	"github.com/servebench/servebench/perf"
	"github.com/servebench/servebench/report"
	"github.com/servebench/servebench/vllm"
	"github.com/servebench/servebench/workload"
)

// newSimTarget is Qwen2.5-7B on an L40S under vLLM 0.6.3 (V0, where
// chunked prefill is a flag), with every request arriving at once.
func newSimTarget(t testing.TB, prompts int) *SimTarget {
	t.Helper()
	return newSimTargetSeed(t, prompts, 0)
}

// newSimTargetSeed is newSimTarget with the workload drawn from seed.
func newSimTargetSeed(t testing.TB, prompts int, seed int64) *SimTarget {
	t.Helper()
	ctx := context.Background()
	profile, err := vllm.Lookup("0.6.3", "")
	if err != nil {
		t.Fatal(err)
	}
	model, err := perf.LookupModel("Qwen2.5-7B-Instruct")
	if err != nil {
		t.Fatal(err)
	}
	gpu, err := perf.LookupGPU("L40S")
	if err != nil {
		t.Fatal(err)
	}
	spec := workload.DefaultSpec()
	spec.NumPrompts = prompts
	spec.Seed = seed
	spec.Random.InputLen, spec.Random.OutputLen = 1024, 256
	reqs, err := workload.Build(ctx, spec, nil)
	if err != nil {
		t.Fatal(err)
	}
	return &SimTarget{Profile: profile, Model: model, GPU: gpu,
		Base:     vllm.Options{MaxModelLen: 4096, GPUMemoryUtilization: 0.9},
		Requests: reqs, Info: report.RunInfo{NumPrompts: prompts, Percentiles: []float64{99}},
		Summary: metrics.Options{Percentiles: []float64{99}}}
}

// memo caches a deterministic target's results per point, so grids and
// many seeds cost one simulation per distinct point.
type memo struct {
	mu    sync.Mutex
	space *Space
	runs  map[string]*Outcome
	run   Runner
}

func (m *memo) Run(ctx context.Context, t Trial) (*Outcome, error) {
	key := t.Params.String(m.space)
	m.mu.Lock()
	out, ok := m.runs[key]
	m.mu.Unlock()
	if ok {
		return out, nil
	}
	out, err := m.run(ctx, t)
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	m.runs[key] = out
	m.mu.Unlock()
	return out, nil
}

func openTestStorage(t testing.TB) *Storage {
	t.Helper()
	s, err := OpenStorage(context.Background(), filepath.Join(t.TempDir(), "study.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}
