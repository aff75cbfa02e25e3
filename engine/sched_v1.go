package engine

import (
	"fmt"
	"slices"
)

// scheduleV1 is vllm/v1/core/sched/scheduler.py's schedule(): one token
// budget; running requests first in queue order, each taking what it still
// needs (a decode 1, a prefill its next chunk) and preempting from the tail
// when its slots do not fit; then, only if nothing was preempted, waiting
// requests FCFS with prefix-cache hits, stopping at the first that does not
// fit.
func (e *Engine) scheduleV1() {
	tokenBudget := e.cfg.MaxNumBatchedTokens
	preempted := false
	for i := 0; i < e.running.len() && tokenBudget > 0; {
		i, tokenBudget = e.addDecodes(i, tokenBudget)
		if i >= e.running.len() || tokenBudget <= 0 {
			break
		}
		r := e.running.at(i)
		// With PP, tokens already in an in-flight batch are not
		// rescheduled (num_computed_tokens advances when vLLM schedules);
		// addDecodes stopped at a request with tokens to schedule.
		n := min(r.len()-r.computed-r.inflight, tokenBudget)
		scheduled := true
		for !e.fitsHeld(r, n) && !e.allocateSlotsV1(r, n, nil) {
			victim := e.running.popBack()
			e.preemptV1(victim)
			preempted = true
			if victim == r {
				scheduled = false
				break
			}
		}
		if !scheduled {
			break
		}
		e.addEntry(r, n, n)
		tokenBudget -= n
		i++
	}
	if preempted {
		return
	}
	bs := e.cfg.BlockSize
	for e.waiting.len() > 0 && tokenBudget > 0 && e.running.len() < e.cfg.MaxNumSeqs {
		r := e.waiting.front()
		if need := ceilDiv(r.promptLen+r.maxTokens-1, bs); need > e.kv.usable() {
			// vLLM V1 refuses to start when max_model_len does not fit in
			// the KV cache, so it never meets such a request; admitting it
			// would livelock (it preempts itself forever), so it is failed.
			e.waiting.popFront()
			e.reject(r, fmt.Sprintf("Input prompt (%d tokens) plus max_tokens (%d) needs %d KV cache blocks, "+
				"more than the %d the KV cache holds (%d tokens). Increase gpu_memory_utilization or decrease max_model_len.",
				r.promptLen, r.maxTokens, need, e.kv.usable(), e.kv.usable()*bs))
			continue
		}
		hits := e.findHits(r)
		hitTokens := len(hits) * bs
		remote := 0
		if !r.admitted {
			remote = max(int(r.remote)-hitTokens, 0)
		}
		n := min(r.len()-hitTokens-remote, tokenBudget)
		if !e.allocateSlotsV1(r, remote+n, hits) {
			break
		}
		e.waiting.popFront()
		e.running.pushBack(r)
		r.state = stateRunning
		r.computed = hitTokens + remote
		if e.passHook != nil && !r.admitted && hitTokens > 0 {
			e.passHook.hit(r, hitTokens)
		}
		e.noteAdmission(r, hitTokens)
		e.addEntry(r, n, n)
		tokenBudget -= n
	}
}

// addDecodes schedules running requests from index i on while each is a
// decode that fits its blocks (most of every step), skipping those with
// nothing to schedule, and returns where it stopped and the budget left.
// It does what addEntry would, with the queue, the entries and the step
// shape's sums held in registers.
func (e *Engine) addDecodes(i, tokenBudget int) (int, int) {
	st := e.cur
	q := &e.running
	buf, head, mask, end := q.buf, q.head, len(q.buf)-1, q.n
	bs := e.cfg.BlockSize
	caching := e.kv.caching
	// Room for every running request up front, so the loop calls nothing
	// on its way and keeps its state in registers.
	entries := slices.Grow(st.entries, end-i)
	first := len(entries)
	var attn, hits int64
	var maxCtx int
	for ; i < end && tokenBudget > 0; i++ {
		r := buf[(head+i)&mask]
		ctx := r.computed + r.inflight
		n := min(r.promptLen+r.generated-ctx, tokenBudget)
		if n <= 0 {
			continue
		}
		if !r.decoding || ctx+n > r.gpuBlocks*bs || (caching && !r.promptCached && !e.fitsHeld(r, n)) {
			break
		}
		r.inflight += n
		entries = entries[:len(entries)+1]
		en := &entries[len(entries)-1]
		en.s, en.gen, en.tokens, en.ctx, en.charged, en.prefill = r, r.gen, int32(n), int32(ctx), int32(n), false
		attn += int64(ctx)
		hits += int64(r.cached)
		maxCtx = max(maxCtx, ctx)
		tokenBudget -= n
	}
	st.decodeHits += hits
	decodes := len(entries) - first
	st.entries = entries
	st.Shape.Decodes += decodes
	st.Shape.AttnPairs += attn
	st.Shape.DecodeContext += attn
	st.Shape.MaxDecodeContext = max(st.Shape.MaxDecodeContext, maxCtx)
	st.Shape.KVTokens += attn + int64(decodes) // each decode reads its context and writes one entry
	return i, tokenBudget
}

// allocateSlotsV1 is KVCacheManager.allocate_slots: blocks for the tokens
// computed so far, the prefix hits and n new tokens; fails when the new
// blocks exceed the free ones (less those the hits themselves take). Full
// blocks are cached at once, as vLLM does at scheduling time.
func (e *Engine) allocateSlotsV1(r *sequence, n int, hits []int32) bool {
	bs := e.cfg.BlockSize
	upTo := r.computed + r.inflight + len(hits)*bs + n
	newBlocks := ceilDiv(upTo, bs) - r.gpuBlocks - len(hits)
	free := e.kv.free
	if len(hits) > 0 {
		free -= e.evictableHits(hits)
	}
	if newBlocks > free {
		return false
	}
	if len(hits) > 0 {
		e.takeHits(r, hits)
	}
	e.allocBlocks(r, newBlocks)
	e.cacheFull(r, min(upTo, r.len()))
	return true
}

// fitsHeld reports that allocateSlotsV1(r, n, nil) has nothing to do: the
// n tokens fit in r's blocks and fill no block left to cache. Most running
// requests are decodes that fit, and this check, unlike the allocation,
// needs no division and no call.
func (e *Engine) fitsHeld(r *sequence, n int) bool {
	bs := e.cfg.BlockSize
	upTo := r.computed + r.inflight + n
	if upTo > r.gpuBlocks*bs {
		return false
	}
	return !e.kv.caching || r.promptCached || r.hashedBlocks >= len(r.blocks) || (r.hashedBlocks+1)*bs > min(upTo, r.promptLen)
}

// preemptV1 frees the request's blocks (tail first) and puts it at the
// front of waiting to recompute prompt and output from scratch.
func (e *Engine) preemptV1(s *sequence) {
	e.countPreemption(s, "recompute")
	if s.inflight > 0 {
		// A batch still in the pipeline computes it: its output is
		// dropped (Complete skips a changed gen), as the request restarts.
		s.gen++
		s.inflight = 0
	}
	e.cacheForResume(s)
	e.freeGPU(s)
	s.computed = 0
	s.decoding = false
	s.state = stateWaiting
	e.waiting.pushFront(s)
}
