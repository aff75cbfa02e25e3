package vllm

import (
	"time"

	"github.com/servebench/servebench/perf"
)

// HostStepModel adds a release's host (CPU) work to a GPU step model, in
// the release's overlap arrangement. It implements perf.StepModel, so serve
// and sim use it like any step model; sim also asks StepTimeHost to count
// the steps the host, not the GPU, decided.
type HostStepModel struct {
	GPU  perf.StepModel
	Host HostOverhead
	// SchedulerSteps is --num-scheduler-steps (multi-step, 0.6+ V0):
	// scheduling and input preparation are paid once per that many steps.
	SchedulerSteps int

	// gpuOnly removes the roofline's own per-step CPU overhead, which
	// HostOverhead replaces.
	gpuOnly func(perf.StepShape) time.Duration
}

// NewHostStepModel wraps gpu. A *perf.Roofline's built-in CPU overhead is
// taken out so that it is not counted twice.
func NewHostStepModel(gpu perf.StepModel, host HostOverhead, schedulerSteps int) *HostStepModel {
	m := &HostStepModel{GPU: gpu, Host: host, SchedulerSteps: max(schedulerSteps, 1)}
	if r, ok := gpu.(*perf.Roofline); ok {
		m.gpuOnly = func(s perf.StepShape) time.Duration {
			b := r.Breakdown(s)
			return b.Total - b.Overhead
		}
	} else {
		m.gpuOnly = gpu.StepTime
	}
	return m
}

// StepTime implements perf.StepModel.
func (m *HostStepModel) StepTime(s perf.StepShape) time.Duration {
	d, _ := m.StepTimeHost(s)
	return d
}

// HostParts is one step's host work, split as vLLM's processes do it.
type HostParts struct {
	Schedule, Output, API time.Duration
}

// Parts is the host work of a step of shape s.
func (m *HostStepModel) Parts(s perf.StepShape) HostParts {
	h := m.Host
	seqs := s.Prefills + s.Decodes
	tokens := s.Decodes + s.PrefillsDone // one sampled token, one streamed chunk each
	return HostParts{
		Schedule: (h.SchedFixed + time.Duration(seqs)*h.SchedPerSeq) / time.Duration(max(m.SchedulerSteps, 1)),
		Output:   time.Duration(tokens) * h.OutputPerToken,
		API:      time.Duration(tokens)*h.APIPerChunk + time.Duration(s.PrefillsDone)*h.APIPerRequest,
	}
}

// StepTimeHost is the step's duration and whether host work, not the GPU,
// decided it (the GPU would have finished sooner on its own).
func (m *HostStepModel) StepTimeHost(s perf.StepShape) (time.Duration, bool) {
	if s.Tokens() == 0 && s.SwapInBlocks == 0 && s.SwapOutBlocks == 0 {
		return 0, false
	}
	gpu := m.gpuOnly(s)
	p := m.Parts(s)
	switch m.Host.Overlap {
	case OverlapNone:
		host := p.Schedule + p.Output + p.API
		return gpu + host, host > gpu
	case OverlapSeparateAPI:
		engine := gpu + p.Schedule + p.Output
		d := max(engine, p.API)
		return d, d > engine || p.Schedule+p.Output > gpu
	case OverlapAsyncOutput:
		engine := gpu + p.Schedule
		d := max(engine, p.Output, p.API)
		return d, d > engine || p.Schedule > gpu
	default: // OverlapEngineCore
		core := gpu + p.Schedule
		d := max(core, p.Output+p.API)
		return d, d > core || p.Schedule > gpu
	}
}
