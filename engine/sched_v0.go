package engine

import (
	"fmt"
	"slices"
)

// budget is V0's SchedulingBudget.
type budget struct {
	tokens, seqs       int
	maxTokens, maxSeqs int
}

func (b *budget) canSchedule(tokens, seqs int) bool {
	return b.tokens+tokens <= b.maxTokens && b.seqs+seqs <= b.maxSeqs
}

func (b *budget) remaining() int { return b.maxTokens - b.tokens }

func (e *Engine) newBudget() budget {
	return budget{maxTokens: e.cfg.MaxNumBatchedTokens, maxSeqs: e.cfg.MaxNumSeqs}
}

func (e *Engine) resetScratch() {
	e.newPrefills = e.newPrefills[:0]
	e.runDecodes = e.runDecodes[:0]
	e.runPrefills = e.runPrefills[:0]
	e.swapDecodes = e.swapDecodes[:0]
	e.swapPrefills = e.swapPrefills[:0]
	e.preempted = e.preempted[:0]
	e.swappedOut = e.swappedOut[:0]
}

// scheduleV0Default is _schedule_default: a step is all prefills (admitted
// FCFS while they fit) or, failing that, all decodes plus swap-ins.
func (e *Engine) scheduleV0Default() {
	b := e.newBudget()
	b.seqs = e.running.len() // running groups count toward max_num_seqs first
	e.resetScratch()
	if e.swapped.len() == 0 && !e.holdAdmissions {
		e.schedulePrefillsV0(&b, false)
	}
	if len(e.newPrefills) == 0 {
		e.scheduleRunningV0(&b, false)
		if e.err != nil {
			return
		}
		if len(e.preempted)+len(e.swappedOut) == 0 && !e.holdAdmissions {
			e.scheduleSwappedV0(&b)
		}
	}
	e.waiting.prependAll(e.preempted)
	e.running.appendAll(e.newPrefills)
	e.running.appendAll(e.runDecodes)
	e.running.appendAll(e.runPrefills)
	e.running.appendAll(e.swapDecodes)
	e.running.appendAll(e.swapPrefills)
	e.swapped.appendAll(e.swappedOut)
}

// scheduleV0Chunked is _schedule_chunked_prefill: running decodes and
// partial prefills first, then swap-ins, then new prefills chunked to what
// is left of the budget, all in one batch.
func (e *Engine) scheduleV0Chunked() {
	b := e.newBudget()
	e.resetScratch()
	e.scheduleRunningV0(&b, true)
	if e.err != nil {
		return
	}
	if !e.holdAdmissions {
		if len(e.preempted)+len(e.swappedOut) == 0 {
			e.scheduleSwappedV0(&b)
		}
		e.schedulePrefillsV0(&b, true)
	}
	e.waiting.prependAll(e.preempted)
	if e.cfg.LegacyRequeueOrder {
		// vLLM ≤0.5.4: new prefills land ahead of the older decodes, so
		// they are served first and preemption takes an older request.
		e.running.appendAll(e.newPrefills)
		e.running.appendAll(e.runDecodes)
		e.running.appendAll(e.runPrefills)
		e.running.appendAll(e.swapDecodes)
		e.running.appendAll(e.swapPrefills)
	} else {
		// After PR #7874: oldest at the head, newest at the tail, prefills
		// finishing this step ahead of those that do not.
		e.running.appendAll(e.swapDecodes)
		e.running.appendAll(e.swapPrefills)
		e.running.appendAll(e.runDecodes)
		slices.SortStableFunc(e.runPrefills, func(a, b *sequence) int {
			return boolRank(a.computed+int(a.chunk) < a.len()) - boolRank(b.computed+int(b.chunk) < b.len())
		})
		e.running.appendAll(e.runPrefills)
		e.running.appendAll(e.newPrefills)
	}
	e.swapped.appendAll(e.swappedOut)
}

func boolRank(b bool) int {
	if b {
		return 1
	}
	return 0
}

// scheduleRunningV0 is _schedule_running: walk running from the head; a
// sequence that cannot get a slot (block manager v1: at least one free
// block) preempts from the tail, newest first, or itself when alone.
func (e *Engine) scheduleRunningV0(b *budget, chunking bool) {
	for e.running.len() > 0 {
		g := e.running.front()
		n := e.chunkV0(g.len()-g.computed, b, chunking)
		if n == 0 {
			break
		}
		e.running.popFront()
		scheduled := true
		for e.kv.free < 1 {
			victim := g
			if e.running.len() > 0 {
				victim = e.running.popBack()
			} else {
				scheduled = false
			}
			e.preemptV0(victim)
			if e.err != nil || !scheduled {
				break
			}
		}
		if e.err != nil {
			return
		}
		if !scheduled {
			continue
		}
		e.appendSlotV0(g)
		e.addEntry(g, uncachedTokens(g.computed, n, int(g.hit)), n)
		if g.decoding {
			e.runDecodes = append(e.runDecodes, g)
		} else {
			e.runPrefills = append(e.runPrefills, g)
		}
		b.tokens += n
		if chunking {
			b.seqs++
		}
	}
}

// preemptV0 is _preempt: recompute (free the blocks, back to the front of
// waiting to re-prefill prompt+output) unless swap is forced, in which case
// the blocks move to CPU or, with no CPU blocks left, the engine dies.
func (e *Engine) preemptV0(s *sequence) {
	e.cacheForResume(s)
	if e.cfg.PreemptionMode == PreemptSwap {
		e.countPreemption(s, "PreemptionMode.SWAP")
		if e.cfg.NumCPUBlocks-e.cpuUsed < s.gpuBlocks {
			e.err = ErrNoSwapSpace
			return
		}
		s.cpuBlocks = int32(s.gpuBlocks)
		e.cpuUsed += int(s.cpuBlocks)
		e.cur.Shape.SwapOutBlocks += s.gpuBlocks
		e.freeGPU(s)
		s.state = stateSwapped
		e.swappedOut = append(e.swappedOut, s)
		return
	}
	e.countPreemption(s, "PreemptionMode.RECOMPUTE")
	e.freeGPU(s)
	s.computed = 0
	s.hit = 0
	s.decoding = false
	s.state = stateWaiting
	e.preempted = append(e.preempted, s)
}

// appendSlotV0 is block manager v1's append_slots: make room for every
// token the sequence holds.
func (e *Engine) appendSlotV0(s *sequence) {
	e.allocBlocks(s, ceilDiv(s.len(), e.cfg.BlockSize)-s.gpuBlocks)
	e.cacheFull(s, s.len())
}

// scheduleSwappedV0 is _schedule_swapped.
func (e *Engine) scheduleSwappedV0(b *budget) {
	for e.swapped.len() > 0 {
		g := e.swapped.front()
		required := int(g.cpuBlocks) + 1 // plus one slot per sequence to append
		fits := e.kv.free-required >= e.wmBlocks
		// vLLM answers LATER forever when only the watermark is in the way
		// while nothing holds blocks; that can never change, so it is NEVER
		// here instead of a hang.
		never := e.kv.total < required || (!fits && e.kv.free == e.kv.total)
		if never {
			e.swapped.popFront()
			e.reject(g, fmt.Sprintf("Failing the request %d because there's not enough kv cache blocks to run the entire sequence.", g.id))
			continue
		}
		if !fits {
			return // LATER: wait for blocks to free up
		}
		// vLLM calls _schedule_swapped without enable_chunking, even with
		// chunked prefill on: a swapped-out partial prefill comes back only
		// once its whole remainder fits the token budget, and holds up the
		// swapped queue until then.
		n := g.len() - g.computed
		if n > e.cfg.MaxNumBatchedTokens && e.stuckBehindSwapped() {
			// vLLM waits forever here: the remainder never fits the budget
			// unchunked. Once nothing else can run, fail it instead.
			e.swapped.popFront()
			e.reject(g, fmt.Sprintf("Failing the request %d because its remaining %d prompt tokens exceed "+
				"max_num_batched_tokens (%d) and a swapped-out prefill is swapped in unchunked.",
				g.id, n, e.cfg.MaxNumBatchedTokens))
			continue
		}
		if n == 0 || !b.canSchedule(n, 1) {
			return
		}
		e.swapped.popFront()
		if e.passHook != nil {
			e.passHook.swappedIn(g)
		}
		e.allocBlocks(g, int(g.cpuBlocks))
		e.cur.Shape.SwapInBlocks += int(g.cpuBlocks)
		e.freeCPU(g)
		g.state = stateRunning
		e.appendSlotV0(g)
		e.addEntry(g, n, n)
		if g.decoding {
			e.swapDecodes = append(e.swapDecodes, g)
		} else {
			e.swapPrefills = append(e.swapPrefills, g)
		}
		b.tokens += n
		b.seqs++
	}
}

// chunkV0 is _get_num_new_tokens for a request with remaining tokens left:
// with chunking, what the budget has left; with prefix caching too, a chunk
// that does not fit is cut to whole blocks (vLLM 0.6, so that no block is
// half computed).
func (e *Engine) chunkV0(remaining int, b *budget, chunking bool) int {
	if !chunking || remaining <= b.remaining() {
		return remaining
	}
	if e.cfg.EnablePrefixCaching {
		return b.remaining() / e.cfg.BlockSize * e.cfg.BlockSize
	}
	return b.remaining()
}

// uncachedTokens is how many tokens of a chunk [ctx, ctx+n) the model
// computes when the first hit tokens are prefix-cache hits: vLLM's model
// runner skips the cached part but always computes at least one token.
func uncachedTokens(ctx, n, hit int) int {
	switch {
	case hit <= ctx:
		return n
	case hit < ctx+n:
		return ctx + n - hit
	}
	return 1
}

// stuckBehindSwapped reports that, in the current pass, nothing runs and
// nothing waits: only the swapped queue is left.
func (e *Engine) stuckBehindSwapped() bool {
	return e.running.len() == 0 && len(e.runDecodes)+len(e.runPrefills) == 0 && e.waiting.len() == 0
}

// schedulePrefillsV0 is _schedule_prefills: admit from the head of waiting
// while the delay has passed, the whole prompt's blocks fit above the
// watermark and the budget allows; the first that does not fit blocks the
// rest (FCFS head-of-line blocking).
func (e *Engine) schedulePrefillsV0(b *budget, chunking bool) {
	bs := e.cfg.BlockSize
	limit := e.cfg.MaxModelLen
	if !chunking {
		limit = min(limit, e.cfg.MaxNumBatchedTokens)
	}
	for e.passedDelay() && e.waiting.len() > 0 {
		g := e.waiting.front()
		hits := e.findHits(g)
		hitTokens := len(hits) * bs
		// The budget pays for the whole prompt, cached blocks included;
		// prefix hits only shorten the computation.
		n := e.chunkV0(g.len(), b, chunking)
		if n > limit {
			e.waiting.popFront()
			e.reject(g, fmt.Sprintf("Input prompt (%d tokens) is too long and exceeds limit of %d", n, limit))
			continue
		}
		required := ceilDiv(g.len(), bs)
		if e.kv.total-required < e.wmBlocks {
			e.waiting.popFront()
			e.reject(g, fmt.Sprintf("Input prompt (%d tokens) is too long and exceeds the capacity of block_manager", n))
			continue
		}
		if e.kv.free-required < e.wmBlocks {
			break
		}
		if n == 0 || !b.canSchedule(n, 1) {
			break
		}
		e.waiting.popFront()
		e.takeHits(g, hits)
		e.allocBlocks(g, required-len(hits))
		e.cacheFull(g, g.len())
		g.computed = 0
		g.hit = int32(hitTokens)
		g.state = stateRunning
		e.noteAdmission(g, hitTokens)
		e.addEntry(g, uncachedTokens(0, n, hitTokens), n)
		e.newPrefills = append(e.newPrefills, g)
		b.tokens += n
		b.seqs++
	}
	if len(e.newPrefills) > 0 {
		e.prevPrompt = true
	}
}

// passedDelay is _passed_delay, evaluated (with its side effects) on every
// admission attempt as in vLLM.
func (e *Engine) passedDelay() bool {
	now := e.now
	if e.prevPrompt {
		e.lastPromptLatency = now - e.prevTime
	}
	e.prevTime, e.prevPrompt = now, false
	if e.cfg.SchedulerDelayFactor <= 0 || e.waiting.len() == 0 {
		return true
	}
	earliest := e.waiting.front().arrival
	if !e.arrivalsInOrder {
		for i := 1; i < e.waiting.len(); i++ {
			earliest = min(earliest, e.waiting.at(i).arrival)
		}
	}
	return float64(now-earliest) > e.cfg.SchedulerDelayFactor*float64(e.lastPromptLatency) ||
		e.running.len() == 0
}
