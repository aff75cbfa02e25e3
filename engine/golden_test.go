package engine

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/servebench/servebench/internal/golden"
)

type abortEvent struct {
	id uint64
	at time.Duration
}

// traceScenario is a small hand-worked case whose step-by-step trace is
// kept in testdata/<name>.golden.
type traceScenario struct {
	name   string
	cfg    Config
	reqs   []Request
	aborts []abortEvent
}

// stepTime is fixed in traces so the times are easy to follow by hand.
const traceStepTime = 10 * time.Millisecond

func seqTokens(from, n int) []int32 {
	p := make([]int32, n)
	for i := range p {
		p[i] = int32(from + i)
	}
	return p
}

func concat(parts ...[]int32) []int32 {
	var out []int32
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

func small(v Version) Config {
	return Config{Version: v, BlockSize: 4, NumGPUBlocks: 16, MaxNumSeqs: 4, MaxNumBatchedTokens: 32, MaxModelLen: 32}
}

func traceScenarios() []traceScenario {
	ms := time.Millisecond
	var out []traceScenario

	// Prefill-first: the two prompts are prefilled together, then decoded;
	// r3 arriving mid-run pauses the decodes for its own prefill step.
	out = append(out, traceScenario{name: "v0_default_alternating", cfg: small(V0), reqs: []Request{
		{ID: 1, PromptLen: 6, MaxTokens: 3},
		{ID: 2, PromptLen: 5, MaxTokens: 3},
		{ID: 3, PromptLen: 7, MaxTokens: 2, Arrival: 15 * ms},
	}})

	// 4 blocks of 4 tokens: once both requests fill 2 blocks each, the
	// head's can_append_slots fails (it needs one free block) and the
	// newest request, at the tail of running, is preempted and recomputed.
	tight := small(V0)
	tight.NumGPUBlocks = 4
	out = append(out, traceScenario{name: "v0_preempt_recompute_newest", cfg: tight, reqs: []Request{
		{ID: 1, PromptLen: 4, MaxTokens: 8},
		{ID: 2, PromptLen: 4, MaxTokens: 6, Arrival: 5 * ms},
	}})

	// The same squeeze with swap: r2 moves to CPU and comes back when r1
	// finishes; swapped requests block new prefills.
	swap := tight
	swap.PreemptionMode = PreemptSwap
	swap.NumCPUBlocks = 4
	out = append(out, traceScenario{name: "v0_swap_out_in", cfg: swap, reqs: []Request{
		{ID: 1, PromptLen: 4, MaxTokens: 8},
		{ID: 2, PromptLen: 4, MaxTokens: 6, Arrival: 5 * ms},
		{ID: 3, PromptLen: 3, MaxTokens: 2, Arrival: 50 * ms},
	}})

	// Only one CPU block: the swap-out fails and the engine dies, failing
	// every request.
	dead := swap
	dead.NumCPUBlocks = 1
	out = append(out, traceScenario{name: "v0_swap_space_exhausted", cfg: dead, reqs: []Request{
		{ID: 1, PromptLen: 4, MaxTokens: 8},
		{ID: 2, PromptLen: 4, MaxTokens: 6, Arrival: 5 * ms},
	}})

	// Chunked prefill, requeue order after PR #7874: running keeps the
	// oldest at the head, so the squeeze preempts the newest (r2).
	chunked := tight
	chunked.EnableChunkedPrefill = true
	chunked.MaxNumBatchedTokens = 8
	out = append(out, traceScenario{name: "v0_chunked_requeue_new_order", cfg: chunked, reqs: []Request{
		{ID: 1, PromptLen: 4, MaxTokens: 8},
		{ID: 2, PromptLen: 4, MaxTokens: 6, Arrival: 5 * ms},
	}})
	// vLLM ≤0.5.4 re-queued new prefills ahead of decodes: r2 sits at the
	// head and the older r1 is the one preempted.
	legacy := chunked
	legacy.LegacyRequeueOrder = true
	out = append(out, traceScenario{name: "v0_chunked_requeue_legacy_order", cfg: legacy, reqs: []Request{
		{ID: 1, PromptLen: 4, MaxTokens: 8},
		{ID: 2, PromptLen: 4, MaxTokens: 6, Arrival: 5 * ms},
	}})

	// Chunked prefill mixes r1's decodes with 7-token chunks of r2's long
	// prompt in one batch of 8 tokens; KV for r2's whole prompt is reserved
	// at admission.
	mix := small(V0)
	mix.EnableChunkedPrefill = true
	mix.MaxNumBatchedTokens = 8
	out = append(out, traceScenario{name: "v0_chunked_prefill_mixing", cfg: mix, reqs: []Request{
		{ID: 1, PromptLen: 3, MaxTokens: 6},
		{ID: 2, PromptLen: 20, MaxTokens: 2, Arrival: 5 * ms},
	}})
	// V1 mixes the same way but allocates only what each chunk computes.
	mix1 := small(V1)
	mix1.MaxNumBatchedTokens = 8
	out = append(out, traceScenario{name: "v1_chunked_prefill_mixing", cfg: mix1, reqs: []Request{
		{ID: 1, PromptLen: 3, MaxTokens: 6},
		{ID: 2, PromptLen: 20, MaxTokens: 2, Arrival: 5 * ms},
	}})

	// V1 prefix cache: r2 shares r1's first 8 tokens (2 full blocks) and
	// skips them; r3 repeats r1's 12-token prompt exactly but hits only 8,
	// because the last token is always recomputed.
	pc := small(V1)
	pc.EnablePrefixCaching = true
	shared := seqTokens(100, 8)
	out = append(out, traceScenario{name: "v1_prefix_cache_hit", cfg: pc, reqs: []Request{
		{ID: 1, Prompt: concat(shared, seqTokens(500, 4)), MaxTokens: 2},
		{ID: 2, Prompt: concat(shared, seqTokens(900, 3)), MaxTokens: 2, Arrival: 40 * ms},
		{ID: 3, Prompt: concat(shared, seqTokens(500, 4)), MaxTokens: 2, Arrival: 80 * ms},
	}})
	// V0 (block manager v1 CachedBlockAllocator) hits the same blocks; the
	// budget still pays for the whole prompt.
	pc0 := small(V0)
	pc0.EnablePrefixCaching = true
	out = append(out, traceScenario{name: "v0_prefix_cache_hit", cfg: pc0, reqs: []Request{
		{ID: 1, Prompt: concat(shared, seqTokens(500, 4)), MaxTokens: 2},
		{ID: 2, Prompt: concat(shared, seqTokens(900, 3)), MaxTokens: 2, Arrival: 40 * ms},
	}})

	// V1 recompute preemption: the newest running request loses its blocks,
	// waits at the front of the queue, and re-prefills prompt plus output.
	v1tight := small(V1)
	v1tight.NumGPUBlocks = 5 // 4 usable: V1 reserves a null block
	out = append(out, traceScenario{name: "v1_preempt_recompute_newest", cfg: v1tight, reqs: []Request{
		{ID: 1, PromptLen: 6, MaxTokens: 8},
		{ID: 2, PromptLen: 6, MaxTokens: 6, Arrival: 5 * ms},
	}})

	// With prefix caching the preempted request's blocks stay cached while
	// free: its recompute hits them (prompt and output alike) and only
	// computes the rest, as in vLLM.
	rehit := v1tight
	rehit.NumGPUBlocks = 7 // 6 usable
	rehit.EnablePrefixCaching = true
	out = append(out, traceScenario{name: "v1_preempt_rehits_own_blocks", cfg: rehit, reqs: []Request{
		{ID: 1, Prompt: seqTokens(1, 6), MaxTokens: 14},
		{ID: 2, Prompt: seqTokens(50, 6), MaxTokens: 10, Arrival: 5 * ms},
	}})

	// Requests that can never fit are rejected with vLLM's reasons instead
	// of blocking the queue forever.
	never0 := small(V0)
	never0.NumGPUBlocks = 4
	never0.Watermark = 0.25 // one block kept free
	out = append(out, traceScenario{name: "v0_never_fits_rejected", cfg: never0, reqs: []Request{
		{ID: 1, PromptLen: 14, MaxTokens: 2},
		{ID: 2, PromptLen: 6, MaxTokens: 2},
	}})
	never1 := small(V1)
	never1.NumGPUBlocks = 5 // 4 usable
	out = append(out, traceScenario{name: "v1_never_fits_rejected", cfg: never1, reqs: []Request{
		{ID: 1, PromptLen: 14, MaxTokens: 4},
		{ID: 2, PromptLen: 6, MaxTokens: 2},
	}})

	// scheduler_delay_factor 1: r2 waits until it has been queued longer
	// than the last prompt step took, so decodes of r1 run first.
	delay := small(V0)
	delay.SchedulerDelayFactor = 1
	out = append(out, traceScenario{name: "v0_scheduler_delay_factor", cfg: delay, reqs: []Request{
		{ID: 1, PromptLen: 4, MaxTokens: 5},
		{ID: 2, PromptLen: 4, MaxTokens: 2, Arrival: 12 * ms},
	}})

	// An aborted request leaves the batch and frees its blocks at once.
	out = append(out, traceScenario{name: "v1_abort_frees_blocks", cfg: small(V1), reqs: []Request{
		{ID: 1, PromptLen: 8, MaxTokens: 6},
		{ID: 2, PromptLen: 8, MaxTokens: 6},
	}, aborts: []abortEvent{{id: 2, at: 25 * ms}}})
	return out
}

func TestGoldenTraces(t *testing.T) {
	for _, sc := range traceScenarios() {
		t.Run(sc.name, func(t *testing.T) {
			got := traceRun(t, sc)
			golden.CheckFile(t, filepath.Join("testdata", sc.name+".golden"), []byte(got))
		})
	}
}

// traceRun drives a scenario with a fixed step time and writes one line per
// step: the time the step starts, each scheduled request (P<tokens>@<ctx>:
// a prefill chunk of that many tokens after ctx computed ones; D@<ctx>: a
// decode with ctx tokens of context), blocks swapped, free GPU and used CPU
// blocks, queue lengths and preemptions so far after scheduling; then the
// outputs of the step (r<ID>+<new>=<total>).
func traceRun(t *testing.T, sc traceScenario) string {
	t.Helper()
	e, err := New(sc.cfg)
	if err != nil {
		t.Fatal(err)
	}
	c := sc.cfg
	var b strings.Builder
	fmt.Fprintf(&b, "# %s\n", sc.name)
	fmt.Fprintf(&b, "# engine %s: block_size %d, GPU blocks %d, CPU blocks %d, max_num_seqs %d, max_num_batched_tokens %d, max_model_len %d,\n",
		c.Version, c.BlockSize, c.NumGPUBlocks, c.NumCPUBlocks, c.MaxNumSeqs, c.MaxNumBatchedTokens, c.MaxModelLen)
	fmt.Fprintf(&b, "#   chunked prefill %t, prefix caching %t, preemption %q, watermark %g, delay factor %g, legacy requeue %t; every step takes %v\n",
		c.EnableChunkedPrefill || c.Version == V1, c.EnablePrefixCaching, c.PreemptionMode, c.Watermark, c.SchedulerDelayFactor, c.LegacyRequeueOrder, traceStepTime)
	for _, r := range sc.reqs {
		n := r.PromptLen
		if r.Prompt != nil {
			n = len(r.Prompt)
		}
		fmt.Fprintf(&b, "# r%d: prompt %d tokens, max_tokens %d, arrives %v\n", r.ID, n, r.MaxTokens, r.Arrival)
	}
	for _, a := range sc.aborts {
		fmt.Fprintf(&b, "# r%d: aborted at %v\n", a.id, a.at)
	}
	now, next, step := time.Duration(0), 0, 0
	aborts := append([]abortEvent(nil), sc.aborts...)
	for step < 200 {
		for next < len(sc.reqs) && sc.reqs[next].Arrival <= now {
			if err := e.Add(sc.reqs[next]); err != nil {
				fmt.Fprintf(&b, "t=%v add r%d rejected: %v\n", now, sc.reqs[next].ID, err)
			}
			next++
		}
		for len(aborts) > 0 && aborts[0].at <= now {
			fmt.Fprintf(&b, "t=%v abort r%d: %t\n", now, aborts[0].id, e.Abort(aborts[0].id))
			aborts = aborts[1:]
		}
		st := e.Schedule(now)
		if err := e.checkInvariants(); err != nil {
			t.Fatal(err)
		}
		for _, o := range st.Rejected {
			fmt.Fprintf(&b, "t=%v rejected r%d after %d tokens: %v\n", now, o.ID, o.NumGenerated, o.Err)
		}
		if st.Empty() {
			switch {
			case next < len(sc.reqs):
				now = sc.reqs[next].Arrival
			case len(aborts) > 0:
				now = aborts[0].at
			default:
				s := e.Stats()
				fmt.Fprintf(&b, "end t=%v: %d steps, %d preemptions, prompt tokens %d, generation tokens %d, prefix hits %d of %d tokens, idle %t, engine error: %v\n",
					now, s.Steps, s.Preemptions, s.PromptTokens, s.GenerationTokens, s.PrefixHits, s.PrefixQueries, e.Idle(), e.Err())
				return b.String()
			}
			continue
		}
		step++
		var sched []string
		for _, en := range st.entries {
			if en.prefill {
				sched = append(sched, fmt.Sprintf("r%d P%d@%d", en.s.id, en.tokens, en.ctx))
			} else {
				sched = append(sched, fmt.Sprintf("r%d D@%d", en.s.id, en.ctx))
			}
		}
		s := e.Stats()
		// free/usable: V1's null block is neither.
		fmt.Fprintf(&b, "step %2d t=%-5v %-24s swap out %d in %d | free %2d/%d cpu %d/%d | run %d wait %d swap %d | preempted %d\n",
			step, now, strings.Join(sched, ", "), st.Shape.SwapOutBlocks, st.Shape.SwapInBlocks,
			e.kv.free, e.kv.usable(), s.CPUBlocksUsed, s.CPUBlocksTotal,
			s.Running, s.Waiting, s.Swapped, s.Preemptions)
		now += traceStepTime
		outs := e.Complete(st)
		if err := e.checkInvariants(); err != nil {
			t.Fatal(err)
		}
		var res []string
		for _, o := range outs {
			r := fmt.Sprintf("r%d+%d=%d", o.ID, o.NewTokens, o.NumGenerated)
			if o.CachedTokens > 0 {
				r += fmt.Sprintf(" cached=%d", o.CachedTokens)
			}
			if o.Finished {
				r += " done"
			}
			res = append(res, r)
		}
		fmt.Fprintf(&b, "        -> %s\n", strings.Join(res, ", "))
	}
	t.Fatalf("scenario %s did not end in 200 steps", sc.name)
	return ""
}
