package sim

import (
	"context"
	"testing"
	"time"

	"github.com/servebench/servebench/engine"
	"github.com/servebench/servebench/metrics"
	"github.com/servebench/servebench/perf"
	"github.com/servebench/servebench/workload"
)

// stagedModel is a pipeline of identical stages, each taking fixed plus
// perToken per token of the step (fixed alone: weight-bound decode;
// perToken alone: compute-bound).
type stagedModel struct {
	stages          int
	fixed, perToken time.Duration
}

func (m stagedModel) StageTime(s perf.StepShape) time.Duration {
	return m.fixed + time.Duration(s.Tokens())*m.perToken
}

func (m stagedModel) StepTime(s perf.StepShape) time.Duration {
	return time.Duration(m.stages) * m.StageTime(s)
}

// TestPipelineOverlap compares PP=2 with batches in flight against the
// same two-stage pipeline run one batch at a time (the model before
// virtual engines and batch queues). Throughput doubles where each batch
// in flight is as large as the single batch was (V0: every virtual engine
// has its own max_num_seqs) or where a step costs per token; it does not
// where halving a weight-bound batch halves its tokens but not its time.
// Either way a token takes one pipeline traversal.
func TestPipelineOverlap(t *testing.T) {
	cases := []struct {
		name      string
		cfg       engine.Config
		model     stagedModel
		wantRatio float64 // output throughput, pipelined / one batch at a time
		wantTPOT  time.Duration
	}{
		{"v0 virtual engines, weight-bound decode",
			engine.Config{Version: engine.V0, BlockSize: 16, NumGPUBlocks: 2000, MaxNumSeqs: 8, MaxNumBatchedTokens: 512, MaxModelLen: 512},
			stagedModel{stages: 2, fixed: 10 * time.Millisecond}, 2, 20 * time.Millisecond},
		{"v1 batch queue, compute-bound decode",
			engine.Config{Version: engine.V1, BlockSize: 16, NumGPUBlocks: 2000, MaxNumSeqs: 16, MaxNumBatchedTokens: 128, MaxModelLen: 512},
			stagedModel{stages: 2, perToken: time.Millisecond}, 2, 16 * time.Millisecond},
		{"v1 batch queue, weight-bound decode",
			engine.Config{Version: engine.V1, BlockSize: 16, NumGPUBlocks: 2000, MaxNumSeqs: 16, MaxNumBatchedTokens: 128, MaxModelLen: 512},
			stagedModel{stages: 2, fixed: 10 * time.Millisecond}, 1, 20 * time.Millisecond},
	}
	reqs := make([]workload.Request, 16)
	for i := range reqs {
		reqs[i] = workload.Request{Index: i, PromptLen: 16, MaxTokens: 400}
	}
	run := func(t *testing.T, cfg engine.Config, model stagedModel) (tokPerSec float64, tpot time.Duration) {
		t.Helper()
		var tokens int
		var tpotSum time.Duration
		res, err := Run(context.Background(), Config{Engine: cfg, Model: model}, reqs, func(r *metrics.Record) error {
			if !r.Success {
				t.Fatalf("request %d failed: %s", r.Index, r.Error)
			}
			tokens += r.OutputLen
			tpotSum += (r.Latency - r.TTFT) / time.Duration(r.OutputLen-1)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return float64(tokens) / res.Duration.Seconds(), tpotSum / time.Duration(len(reqs))
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			single, _ := run(t, c.cfg, c.model)
			c.cfg.PipelineParallel = 2
			piped, tpot := run(t, c.cfg, c.model)
			ratio := piped / single
			t.Logf("output tok/s one batch at a time %.0f, pipelined %.0f (×%.2f); mean TPOT %v", single, piped, ratio, tpot)
			if ratio < 0.95*c.wantRatio || ratio > 1.05*c.wantRatio {
				t.Errorf("pipelined/single throughput ×%.3f, want ×%g within 5%%", ratio, c.wantRatio)
			}
			if d := tpot - c.wantTPOT; d < -c.wantTPOT/20 || d > c.wantTPOT/20 {
				t.Errorf("mean TPOT %v, want one pipeline traversal %v within 5%%", tpot, c.wantTPOT)
			}
		})
	}
}
