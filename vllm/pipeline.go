package vllm

import (
	"time"

	"github.com/servebench/servebench/perf"
)

// StageTime implements perf.StageModel for pipeline parallelism: the
// next batch can start once the busiest stage has finished this one and
// each host process has done this batch's share of its work (a process
// serves one batch at a time even where it overlaps the GPU).
func (m *HostStepModel) StageTime(s perf.StepShape) time.Duration {
	if s.Tokens() == 0 && s.SwapInBlocks == 0 && s.SwapOutBlocks == 0 {
		return 0
	}
	var gpu time.Duration
	if r, ok := m.GPU.(*perf.Roofline); ok {
		sp := r.StageSplit(s)
		gpu = sp.Stage + sp.Send
	} else {
		gpu, _ = m.gpuOnly(s) // cannot split: no overlap between batches
	}
	p := m.Parts(s)
	var host time.Duration
	switch o := m.Host.Overlap; {
	case o.sharesEngineProcess():
		host = p.Schedule + p.Output + p.API
	case o == OverlapSeparateAPI || o == OverlapAsyncOutput:
		host = max(p.Schedule+p.Output, p.API)
	default: // OverlapEngineCore
		host = max(p.Schedule, p.Output+p.API)
	}
	return max(gpu, host)
}
