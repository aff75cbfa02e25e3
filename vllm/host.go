package vllm

import (
	"math/bits"
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
	// HostOverhead replaces; launchBound says the GPU waited on kernel
	// launches (perf.StepBreakdown.LaunchGaps), CPU work too.
	gpuOnly func(perf.StepShape) (d time.Duration, launchBound bool)
	// schedule, output and frontend are Host.Measured's curves on this
	// host (Host.Speed applied).
	schedule, output, frontend hostCurve
}

// NewHostStepModel wraps gpu. A *perf.Roofline's built-in CPU overhead is
// taken out so that it is not counted twice, and its kernel launches run
// at the host's speed (GPU is then that roofline).
func NewHostStepModel(gpu perf.StepModel, host HostOverhead, schedulerSteps int) *HostStepModel {
	m := &HostStepModel{GPU: gpu, Host: host, SchedulerSteps: max(schedulerSteps, 1)}
	if r, ok := gpu.(*perf.Roofline); ok {
		// Eager kernel launches are CPU work: this host's speed sets how
		// long the GPU, every pipeline stage of it, waits for them.
		r = r.WithLaunchSpeed(host.speed())
		m.GPU = r
		m.gpuOnly = func(s perf.StepShape) (time.Duration, bool) {
			b := r.Breakdown(s)
			return b.Total - b.Overhead, b.LaunchGaps > 0
		}
	} else {
		m.gpuOnly = func(s perf.StepShape) (time.Duration, bool) { return gpu.StepTime(s), false }
	}
	if host.Measured != nil {
		// The tables were measured on the default host's class of CPU
		// (measuredCPU, an H100 server's Xeon): only --host-speed scales them.
		f := 1 / host.speed()
		mh := host.Measured
		m.schedule, m.output, m.frontend = newHostCurve(mh.Seqs, mh.Schedule, f), newHostCurve(mh.Seqs, mh.Output, f), newHostCurve(mh.Seqs, mh.Frontend, f)
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
	// Schedule is the engine's own work besides the forward pass:
	// scheduling, input preparation and, on V1, the engine core's
	// per-request outputs (update_from_output).
	Schedule time.Duration
	// Output is output processing: V0's sampler results, output
	// processor and RequestOutputs in the engine process; V1's front-end
	// OutputProcessor (detokenization, RequestOutputs) in the API server.
	Output time.Duration
	// API is the OpenAI server's work: per streamed chunk and per request.
	API time.Duration
}

// Parts is the host work of a step of shape s.
func (m *HostStepModel) Parts(s perf.StepShape) HostParts {
	h := m.Host
	speed := h.speed()
	seqs := s.Prefills + s.Decodes
	tokens := s.Decodes + s.PrefillsDone // one sampled token, one streamed chunk each
	scale := func(d time.Duration) time.Duration {
		if speed == 1 {
			return d
		}
		return time.Duration(float64(d) / speed)
	}
	p := HostParts{
		Schedule: scale(h.SchedFixed+time.Duration(seqs)*h.SchedPerSeq) + m.schedule.at(seqs),
		Output:   scale(time.Duration(tokens)*h.OutputPerToken) + m.frontend.at(tokens),
		API:      scale(h.APIPerStep + time.Duration(tokens)*h.APIPerChunk + time.Duration(s.PrefillsDone)*h.APIPerRequest),
	}
	if h.Overlap == OverlapEngineCore || h.Overlap == OverlapAsyncScheduling {
		p.Schedule += m.output.at(tokens) // update_from_output runs in the engine core
	} else {
		p.Output += m.output.at(tokens)
	}
	p.Schedule /= time.Duration(max(m.SchedulerSteps, 1))
	return p
}

// OutputLoopTime is the API server's event-loop work on the outputs of a
// step of shape s, in the releases where that server is its own process
// (V1's OutputProcessor and HTTP work; V0's HTTP work from 0.5.4, its
// output processing running in the engine), and the part of it on the
// requests whose first token the step sampled: their chunks' and their
// per-request HTTP work, and on V1 their share of the output processing.
// Zero where the engine and the server share one loop (0.4–0.5.3, and V0
// under --disable-frontend-multiprocessing): the step time counts that
// work.
func (m *HostStepModel) OutputLoopTime(s perf.StepShape) (all, firstTokens time.Duration) {
	h := m.Host
	if h.Overlap.sharesEngineProcess() {
		return 0, 0
	}
	p := m.Parts(s)
	all = p.API
	firstTokens = h.scaled(time.Duration(s.PrefillsDone) * (h.APIPerChunk + h.APIPerRequest))
	if h.Overlap == OverlapEngineCore || h.Overlap == OverlapAsyncScheduling {
		all += p.Output
		if tokens := s.Decodes + s.PrefillsDone; tokens > 0 {
			firstTokens += p.Output * time.Duration(s.PrefillsDone) / time.Duration(tokens)
		}
	}
	return all, min(firstTokens, all)
}

// LaunchTime is the host's work on a step before the engine loop gets
// control back when the step does not wait for the GPU (a multi-step
// group's intermediate steps; perf.LaunchTimer): its scheduling and input
// preparation, amortised over the group as in Parts, and the previous
// step's output processing, which the model runner's callback does after
// launching the forward.
func (m *HostStepModel) LaunchTime(s perf.StepShape) time.Duration {
	p := m.Parts(s)
	return p.Schedule + p.Output
}

// StepTimeHost is the step's duration and whether host work, not the GPU,
// decided it (the GPU would have finished sooner on its own).
func (m *HostStepModel) StepTimeHost(s perf.StepShape) (time.Duration, bool) {
	if s.Tokens() == 0 && s.SwapInBlocks == 0 && s.SwapOutBlocks == 0 {
		return 0, false
	}
	gpu, launchBound := m.gpuOnly(s)
	d, hostBound := m.combine(gpu, m.Parts(s))
	return d, hostBound || launchBound
}

// combine puts a step's GPU time and host parts together as the release's
// processes overlap them, and says whether the host decided the step.
func (m *HostStepModel) combine(gpu time.Duration, p HostParts) (time.Duration, bool) {
	switch m.Host.Overlap {
	case OverlapNone:
		host := p.Schedule + p.Output + p.API
		return gpu + host, host > gpu
	case OverlapSeparateAPI:
		engine := gpu + p.Schedule + p.Output
		d := max(engine, p.API)
		return d, d > engine || p.Schedule+p.Output > gpu
	case OverlapAsyncOutput:
		// One engine thread schedules step i+1, launches it, then processes
		// step i's outputs while the GPU runs (PR #7049); the API server is
		// its own process (PR #6883).
		engine := p.Schedule + max(gpu, p.Output)
		d := max(engine, p.API)
		return d, d > gpu+p.Schedule || p.Schedule > gpu
	case OverlapAsyncOutputSharedAPI:
		// The same engine thread, with the server's coroutines on the
		// engine's own event loop between steps.
		d := p.Schedule + max(gpu, p.Output) + p.API
		return d, p.Schedule+p.Output+p.API > gpu
	case OverlapAsyncScheduling:
		// The engine core prepares step i+1 and applies step i's outputs
		// while the GPU runs step i (PR #19970).
		core := max(gpu, p.Schedule)
		d := max(core, p.Output+p.API)
		return d, d > gpu
	default: // OverlapEngineCore
		core := gpu + p.Schedule
		d := max(core, p.Output+p.API)
		return d, d > core || p.Schedule > gpu
	}
}

// MeasuredHost is one release's host work as tools/vllm-hosttime timed
// vLLM's own code on one CPU (hosttime_measured.go), per step by the
// number of running sequences. doc.go says what each curve covers.
type MeasuredHost struct {
	Release, Commit string
	Seqs            []int
	// Schedule, Output and Frontend are microseconds per step on
	// measuredCPU (Frontend: V1 only).
	Schedule, Output, Frontend []float64
}

// hostCurve is host time per step by running sequences: linear between
// measured points, extended past the last by its last slope; no work at 0.
type hostCurve struct {
	seqs []int
	d    []time.Duration
	// pow2: seqs are 1, 2, 4, …, so a size's segment follows from its bit
	// length (a step model is asked once per simulated step).
	pow2 bool
}

func newHostCurve(seqs []int, us []float64, factor float64) hostCurve {
	if len(us) == 0 {
		return hostCurve{}
	}
	c := hostCurve{seqs: seqs, d: make([]time.Duration, len(us)), pow2: true}
	for i, v := range us {
		c.d[i] = time.Duration(v * factor * float64(time.Microsecond))
		c.pow2 = c.pow2 && seqs[i] == 1<<i
	}
	return c
}

func (c hostCurve) at(n int) time.Duration {
	if n <= 0 || len(c.d) == 0 {
		return 0
	}
	s := c.seqs
	if n <= s[0] {
		return c.d[0] * time.Duration(n) / time.Duration(s[0])
	}
	var i int
	if c.pow2 {
		i = min(bits.Len(uint(n-1)), len(s)-1) // s[i-1] < n <= s[i] = 2^i
	} else {
		i = 1
		for i < len(s)-1 && s[i] < n {
			i++
		}
	}
	// Between (or, past the end, beyond) points i-1 and i.
	return c.d[i-1] + (c.d[i]-c.d[i-1])*time.Duration(n-s[i-1])/time.Duration(s[i]-s[i-1])
}

// samplerPeak is the profile run's sampler at its peak for one release,
// as tools/vllm-oracle/sampler_peak.py measured it (hosttime_measured.go).
type samplerPeak struct {
	Release, Engine, Commit string
	// GPU is the card the peak was measured on.
	GPU string
	// Peak is the CUDA caching allocator's peak of allocated bytes per
	// logits cell (max_num_seqs × vocab) by rows, the model-dtype logits
	// included.
	Peak perf.SamplerPeak
}

// samplerKernel is one release's sampler time per step on a GPU, as
// tools/vllm-oracle/sampler_time.py measured it (hosttime_measured.go).
type samplerKernel struct {
	Release, Engine, Commit string
	// Kernels is the sum of the sampler's CUDA kernels by vocabulary and
	// rows at temperature 0, the sampling parameters the published
	// benchmarks send.
	Kernels perf.SamplerKernels
}
