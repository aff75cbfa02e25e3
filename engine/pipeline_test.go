package engine

import (
	"errors"
	"fmt"
	"math"
	"testing"
	"time"
)

type pipeBatch struct {
	st  *Step
	out time.Duration
}

// checkInFlight verifies a new batch against the batches still in the
// pipeline: a request may only be in two of them as consecutive chunks of
// its prompt (V1 schedules the next chunk while the previous one is in
// flight), never overlapping, and only the later chunk may sample.
func checkInFlight(inPipe []pipeBatch, st *Step, fail func(string, ...any)) {
	for _, b := range inPipe {
		if b.st == st {
			fail("Schedule returned a step that is still in flight")
		}
		for _, old := range b.st.entries {
			if old.s.gen != old.gen {
				continue
			}
			for _, en := range st.entries {
				if en.s != old.s || en.gen != old.gen {
					continue
				}
				if !old.prefill || !en.prefill || old.ctx+old.tokens > en.ctx || int(old.ctx+old.tokens) >= en.s.len() {
					fail("request %d is in two batches in flight: tokens [%d,%d) prefill=%t and [%d,%d) prefill=%t",
						en.s.id, old.ctx, old.ctx+old.tokens, old.prefill, en.ctx, en.ctx+en.tokens, en.prefill)
				}
			}
		}
	}
}

// TestPipelinePropertiesAllConfigs runs the random workloads of
// TestPropertiesAllConfigs with two and three pipeline stages: every
// engine invariant holds after every Schedule and Complete while several
// batches are in flight, requests are aborted and preempted under them,
// and every request ends with exactly its tokens.
func TestPipelinePropertiesAllConfigs(t *testing.T) {
	deepest := map[Version]int{}
	for _, stages := range []int{2, 3} {
		for _, cfg := range configMatrix() {
			cfg.PipelineParallel = stages
			t.Run(fmt.Sprintf("pp=%d/%s", stages, configName(cfg)), func(t *testing.T) {
				for seed := range uint64(2) {
					e, err := New(cfg)
					if err != nil {
						t.Fatal(err)
					}
					out := drive(t, e, randomPlan(seed, cfg, 60))
					deepest[cfg.Version] = max(deepest[cfg.Version], out.maxInFlight)
				}
			})
		}
	}
	if deepest[V0] < 3 || deepest[V1] < 3 {
		t.Fatalf("most batches in flight: %v; the workloads never filled the pipeline", deepest)
	}
}

// TestPipelineBatchesInFlight checks, for each engine, that a decode-heavy
// load with two stages keeps two batches in flight whose requests are
// disjoint, and that between them they run every request.
func TestPipelineBatchesInFlight(t *testing.T) {
	cases := []struct {
		name string
		cfg  Config
	}{
		{"v0 virtual engines", Config{Version: V0, BlockSize: 16, NumGPUBlocks: 400, MaxNumSeqs: 8, MaxNumBatchedTokens: 512, MaxModelLen: 512}},
		{"v0 chunked", Config{Version: V0, BlockSize: 16, NumGPUBlocks: 400, MaxNumSeqs: 8, MaxNumBatchedTokens: 64, MaxModelLen: 512, EnableChunkedPrefill: true}},
		// A budget of four prompts splits the first arrivals over two
		// batches, and the split persists: each returning batch is
		// rescheduled with its own requests.
		{"v1 batch queue", Config{Version: V1, BlockSize: 16, NumGPUBlocks: 400, MaxNumSeqs: 16, MaxNumBatchedTokens: 128, MaxModelLen: 512}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.cfg.PipelineParallel = 2
			e, err := New(c.cfg)
			if err != nil {
				t.Fatal(err)
			}
			for id := range uint64(16) {
				if err := e.Add(Request{ID: id, PromptLen: 32, MaxTokens: 100}); err != nil {
					t.Fatal(err)
				}
			}
			var inPipe []*Step
			both, produced := 0, 0
			for range 5000 {
				for len(inPipe) < 2 {
					st := e.Schedule(0)
					if st.Empty() {
						break
					}
					inPipe = append(inPipe, st)
				}
				if len(inPipe) == 0 {
					break
				}
				if len(inPipe) == 2 {
					both++
					// Only V1 may hold one prompt's consecutive chunks in
					// both; a decode is never in both.
					prefills := map[uint64]bool{}
					for _, en := range inPipe[0].entries {
						prefills[en.s.id] = en.prefill
					}
					for _, en := range inPipe[1].entries {
						if p, ok := prefills[en.s.id]; ok && (!p || !en.prefill || c.cfg.Version == V0) {
							t.Fatalf("request %d is in both batches in flight", en.s.id)
						}
					}
				}
				for _, o := range e.Complete(inPipe[0]) {
					produced += o.NewTokens
				}
				inPipe = inPipe[1:]
				if err := e.checkInvariants(); err != nil {
					t.Fatal(err)
				}
			}
			if !e.Idle() || produced != 16*100 {
				t.Fatalf("idle %t after %d of %d tokens", e.Idle(), produced, 16*100)
			}
			if steps := e.Stats().Steps; both < int(steps)*9/10 {
				t.Fatalf("two batches were in flight at %d of %d completions, want nearly all", both, steps)
			}
		})
	}
}

// TestVirtualEngines checks V0's split into virtual engines: each holds
// num_gpu_blocks // P blocks and its own max_num_seqs, a request joins the
// one with the fewest unfinished requests, and the engine's gauges add
// them up.
func TestVirtualEngines(t *testing.T) {
	cfg := Config{Version: V0, BlockSize: 4, NumGPUBlocks: 21, NumCPUBlocks: 9, MaxNumSeqs: 2, MaxNumBatchedTokens: 64, MaxModelLen: 32, PipelineParallel: 2}
	e, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for i, ve := range e.virt {
		if got := ve.cfg.NumGPUBlocks; got != 10 {
			t.Fatalf("virtual engine %d holds %d GPU blocks, want 21/2 = 10", i, got)
		}
		if got := ve.cfg.NumCPUBlocks; got != 4 {
			t.Fatalf("virtual engine %d holds %d CPU blocks, want 9/2 = 4", i, got)
		}
	}
	// One block is left over by the split: vLLM counts it as used.
	if got, want := e.KVUsage(), 1/21.0; math.Abs(got-want) > 1e-12 {
		t.Fatalf("idle KV usage %v, want %v", got, want)
	}
	for id := range uint64(5) {
		if err := e.Add(Request{ID: id, PromptLen: 8, MaxTokens: 4}); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.Add(Request{ID: 3, PromptLen: 8, MaxTokens: 4}); !errors.Is(err, ErrBadRequest) {
		t.Fatalf("duplicate ID across virtual engines: err %v, want ErrBadRequest", err)
	}
	if a, b := e.virt[0].byID.len(), e.virt[1].byID.len(); a != 3 || b != 2 {
		t.Fatalf("requests per virtual engine %d and %d, want 3 and 2 (fewest unfinished, first on a tie)", a, b)
	}
	first, second := e.Schedule(0), e.Schedule(0)
	if first.Seqs() != 2 || second.Seqs() != 2 {
		t.Fatalf("batches of %d and %d sequences, want max_num_seqs 2 each", first.Seqs(), second.Seqs())
	}
	if third := e.Schedule(0); !third.Empty() {
		t.Fatal("a third batch was scheduled while both virtual engines have one in flight")
	}
	st := e.Stats()
	if st.Running != 4 || st.Waiting != 1 || st.GPUBlocksTotal != 21 || st.GPUBlocksUsed != 21-(10-4)-(10-4) {
		t.Fatalf("stats %+v", st)
	}
	if !e.Abort(4) || e.Abort(4) {
		t.Fatal("Abort of a waiting request in a virtual engine")
	}
	if outs := e.Complete(second); len(outs) != 2 {
		t.Fatalf("completing the second batch first gave %d outputs", len(outs))
	}
	if outs := e.Complete(second); outs != nil {
		t.Fatal("a batch completed twice")
	}
	if outs := e.Complete(first); len(outs) != 2 {
		t.Fatalf("completing the first batch gave %d outputs", len(outs))
	}
	if got := e.Stats().Steps; got != 2 {
		t.Fatalf("Steps %d, want 2", got)
	}
}

// TestPipelineVirtualEngineDeath checks that when one virtual engine runs
// out of swap space, vLLM's whole engine dies: every request of every
// virtual engine fails with ErrNoSwapSpace.
func TestPipelineVirtualEngineDeath(t *testing.T) {
	cfg := Config{Version: V0, BlockSize: 4, NumGPUBlocks: 12, NumCPUBlocks: 2, MaxNumSeqs: 8, MaxNumBatchedTokens: 64,
		MaxModelLen: 24, PipelineParallel: 2, PreemptionMode: PreemptSwap}
	e, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for id := range uint64(6) {
		if err := e.Add(Request{ID: id, PromptLen: 4, MaxTokens: 16}); err != nil {
			t.Fatal(err)
		}
	}
	failed := map[uint64]bool{}
	var inPipe []*Step
	for range 1000 {
		for len(inPipe) < 2 {
			st := e.Schedule(0)
			for _, o := range st.Rejected {
				if !errors.Is(o.Err, ErrNoSwapSpace) {
					t.Fatalf("request %d failed with %v", o.ID, o.Err)
				}
				failed[o.ID] = true
			}
			if st.Empty() {
				break
			}
			inPipe = append(inPipe, st)
		}
		if len(inPipe) == 0 {
			break
		}
		e.Complete(inPipe[0])
		inPipe = inPipe[1:]
	}
	if !errors.Is(e.Err(), ErrNoSwapSpace) || len(failed) != 6 || !e.Idle() {
		t.Fatalf("err %v, %d of 6 requests failed, idle %t", e.Err(), len(failed), e.Idle())
	}
	if err := e.Add(Request{ID: 9, PromptLen: 4, MaxTokens: 1}); !errors.Is(err, ErrNoSwapSpace) {
		t.Fatalf("Add after death: %v", err)
	}
}

// TestBatchQueue checks V1's queue of PipelineParallel batches: a full
// queue schedules nothing, a request with a decode in flight is not
// scheduled again, and batches complete only once.
func TestBatchQueue(t *testing.T) {
	cfg := Config{Version: V1, BlockSize: 4, NumGPUBlocks: 64, MaxNumSeqs: 8, MaxNumBatchedTokens: 8, MaxModelLen: 32,
		PipelineParallel: 2, EnablePrefixCaching: true}
	e, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for id := range uint64(3) {
		if err := e.Add(Request{ID: id, Prompt: seqTokens(int(id)*100, 8), MaxTokens: 3}); err != nil {
			t.Fatal(err)
		}
	}
	first := e.Schedule(0)
	second := e.Schedule(0)
	if first.Seqs() != 1 || second.Seqs() != 1 || first == second {
		t.Fatalf("batches of %d and %d requests, want one 8-token prompt each", first.Seqs(), second.Seqs())
	}
	if full := e.Schedule(0); !full.Empty() || full == first || full == second {
		t.Fatal("a full batch queue scheduled a third batch")
	}
	if e.ResetPrefixCache() {
		t.Fatal("ResetPrefixCache succeeded while batches in flight hold blocks")
	}
	e.Complete(first)
	if e.Complete(first) != nil {
		t.Fatal("a batch completed twice")
	}
	// Request 0 decodes and request 2 takes the rest of the budget; request
	// 1's prompt is still in flight, so it is not scheduled.
	third := e.Schedule(0)
	if third.Seqs() != 2 || third.entries[0].s.id != 0 || third.entries[0].prefill ||
		third.entries[1].s.id != 2 || third.entries[1].tokens != 7 {
		t.Fatalf("third batch %+v, want request 0's decode and 7 tokens of request 2", third.entries)
	}
}

// TestVirtualEnginesResetPrefixCache checks vLLM's `success and
// scheduler.reset_prefix_cache()`: it refuses while any virtual engine
// holds blocks and resets every one once they are free.
func TestVirtualEnginesResetPrefixCache(t *testing.T) {
	cfg := Config{Version: V0, BlockSize: 4, NumGPUBlocks: 40, MaxNumSeqs: 4, MaxNumBatchedTokens: 64, MaxModelLen: 32,
		PipelineParallel: 2, EnablePrefixCaching: true}
	e, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	prompt := seqTokens(7, 12)
	if err := e.Add(Request{ID: 1, Prompt: prompt, MaxTokens: 1}); err != nil {
		t.Fatal(err)
	}
	st := e.Schedule(0)
	if e.ResetPrefixCache() {
		t.Fatal("ResetPrefixCache succeeded while a virtual engine holds blocks")
	}
	e.Complete(st)
	if !e.ResetPrefixCache() {
		t.Fatal("ResetPrefixCache refused with every block free")
	}
	// The request lands on virtual engine 0 again (both empty): its blocks
	// were dropped from the cache, so nothing hits.
	if err := e.Add(Request{ID: 2, Prompt: prompt, MaxTokens: 1}); err != nil {
		t.Fatal(err)
	}
	if outs := e.Complete(e.Schedule(0)); len(outs) != 1 || outs[0].CachedTokens != 0 {
		t.Fatalf("after the reset: %+v, want no cached tokens", outs)
	}
}
