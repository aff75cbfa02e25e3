package engine

import (
	"time"

	"github.com/servebench/servebench/perf"
)

// Pipeline parallelism. vLLM keeps one batch per pipeline stage in flight
// so that every stage has work:
//
//   - V0 (LLMEngine with a list of Schedulers, AsyncLLMEngine's
//     run_engine_loop) runs pipeline_parallel_size virtual engines. Each
//     is a whole scheduler whose block manager holds num_gpu_blocks // P
//     (and num_cpu_blocks // P) blocks, and each steps on its own: schedule,
//     execute through every stage, process the output, schedule again. A
//     new request goes to the scheduler with the fewest unfinished
//     requests (the first on a tie). Here the virtual engines are Engines
//     with PipelineParallel 1 and e only dispatches to them.
//   - V1 (EngineCore.step_with_batch_queue) keeps one scheduler and a queue
//     of P batches: it schedules a new batch whenever the queue has room and
//     otherwise waits for the oldest batch. The scheduler advances
//     num_computed_tokens when it schedules, so a request whose remaining
//     tokens are all in a batch in flight has nothing to schedule until that
//     output returns; a long prompt's next chunk may go into the next batch.

// MaxBatches is how many steps can be pending at once: the pipeline depth.
func (e *Engine) MaxBatches() int { return max(e.cfg.PipelineParallel, 1) }

// freeBatch is a batch slot not in flight, or the empty step when the
// queue is full (scheduling then yields nothing).
func (e *Engine) freeBatch() *Step {
	for i := range e.batches {
		if !e.batches[i].inFlight {
			return &e.batches[i]
		}
	}
	e.step.Shape = perf.StepShape{}
	e.step.entries = e.step.entries[:0]
	e.step.Rejected = e.step.Rejected[:0]
	return &e.step
}

func (e *Engine) ownsBatch(st *Step) bool {
	for i := range e.batches {
		if st == &e.batches[i] {
			return st.inFlight
		}
	}
	return false
}

func newVirtualEngines(cfg Config) (*Engine, error) {
	p := cfg.PipelineParallel
	sub := cfg
	sub.PipelineParallel = 1
	sub.NumGPUBlocks /= p
	sub.NumCPUBlocks /= p
	e := &Engine{cfg: cfg, log: cfg.Logger, virt: make([]*Engine, p), lastVirt: p - 1}
	e.cur = &e.step
	for i := range e.virt {
		ve, err := New(sub)
		if err != nil {
			return nil, err
		}
		e.virt[i] = ve
	}
	return e, nil
}

// addVirtual is LLMEngine._add_processed_request: the request joins the
// virtual engine with the fewest unfinished requests.
func (e *Engine) addVirtual(r Request) error {
	for _, ve := range e.virt {
		if ve.byID.get(r.ID) != nil {
			return ve.Add(r) // its duplicate-ID error
		}
	}
	best := e.virt[0]
	for _, ve := range e.virt[1:] {
		if ve.byID.len() < best.byID.len() {
			best = ve
		}
	}
	return best.Add(r)
}

func (e *Engine) abortVirtual(id uint64) bool {
	for _, ve := range e.virt {
		if ve.Abort(id) {
			return true
		}
	}
	return false
}

func (e *Engine) idleVirtual() bool {
	for _, ve := range e.virt {
		if !ve.Idle() {
			return false
		}
	}
	return true
}

// kvUsageVirtual is V0's gpu_cache_usage with virtual engines: the free
// blocks of every scheduler over cache_config.num_gpu_blocks, so blocks
// the integer split left over count as used.
func (e *Engine) kvUsageVirtual() float64 {
	free := 0
	for _, ve := range e.virt {
		free += ve.kv.free
	}
	return 1 - float64(free)/float64(e.cfg.NumGPUBlocks)
}

// resetVirtual is LLMEngine.reset_prefix_cache: `success and
// scheduler.reset_prefix_cache()` stops resetting at the first refusal.
func (e *Engine) resetVirtual() bool {
	ok := true
	for _, ve := range e.virt {
		ok = ok && ve.ResetPrefixCache()
	}
	return ok
}

func (e *Engine) statsVirtual() Stats {
	var st Stats
	free := 0
	for _, ve := range e.virt {
		v := ve.Stats()
		st.Running += v.Running
		st.Waiting += v.Waiting
		st.Swapped += v.Swapped
		st.CPUBlocksUsed += v.CPUBlocksUsed
		st.PrefixQueries += v.PrefixQueries
		st.PrefixHits += v.PrefixHits
		st.Preemptions += v.Preemptions
		st.Steps += v.Steps
		st.PromptTokens += v.PromptTokens
		st.GenerationTokens += v.GenerationTokens
		free += ve.kv.free
	}
	st.GPUBlocksTotal = e.cfg.NumGPUBlocks
	st.GPUBlocksUsed = e.cfg.NumGPUBlocks - free
	st.CPUBlocksTotal = e.cfg.NumCPUBlocks
	return st
}

// scheduleVirtual asks each virtual engine without a batch in flight for
// its next step, in order, and returns the first that has work. Requests
// the others rejected ride along on the returned step's Rejected.
func (e *Engine) scheduleVirtual(now time.Duration) *Step {
	e.step.Rejected = e.step.Rejected[:0]
	if e.err != nil {
		return &e.step
	}
	for k := range e.virt {
		// Round robin from the engine after the last one scheduled, so
		// that a driver running one batch at a time still serves them all.
		i := (e.lastVirt + 1 + k) % len(e.virt)
		ve := e.virt[i]
		if ve.pending {
			continue
		}
		st := ve.Schedule(now)
		if ve.err != nil {
			e.dieVirtual(ve)
			return &e.step
		}
		if st.Empty() {
			e.step.Rejected = append(e.step.Rejected, st.Rejected...)
			continue
		}
		st.Rejected = append(st.Rejected, e.step.Rejected...)
		e.lastVirt = i
		return st
	}
	return &e.step
}

// dieVirtual fails every request of every virtual engine when one died:
// vLLM's whole engine dies.
func (e *Engine) dieVirtual(dead *Engine) {
	e.err = dead.err
	e.step.Rejected = append(e.step.Rejected, dead.step.Rejected...)
	for _, ve := range e.virt {
		if ve == dead {
			continue
		}
		ve.err = e.err
		ve.log = nil // the dead engine logged it once
		ve.step.Rejected = ve.step.Rejected[:0]
		ve.die()
		e.step.Rejected = append(e.step.Rejected, ve.step.Rejected...)
	}
}

func (e *Engine) completeVirtual(st *Step) []Output {
	for _, ve := range e.virt {
		if st == &ve.step {
			return ve.Complete(st)
		}
	}
	return nil
}
