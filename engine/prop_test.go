package engine

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/servebench/servebench/perf"
)

// linearModel is a stand-in step-time model: a fixed cost plus per-token
// and per-KV-entry costs.
type linearModel struct{ fixed, perToken, perKV time.Duration }

func (m linearModel) StepTime(s perf.StepShape) time.Duration {
	return m.fixed + time.Duration(s.Tokens())*m.perToken + time.Duration(s.KVTokens)*m.perKV +
		time.Duration(s.SwapInBlocks+s.SwapOutBlocks)*m.perToken
}

var testModel = linearModel{fixed: 5 * time.Millisecond, perToken: 100 * time.Microsecond, perKV: time.Microsecond}

type plannedRequest struct {
	Request
	abortAt time.Duration // 0: never aborted
}

type tracked struct {
	added, done bool
	generated   int
	cached      int
	maxTokens   int
	err         error
	aborted     bool
}

// runOutcome is what a property run observed.
type runOutcome struct {
	steps       int
	maxInFlight int // most steps pending at once
	requests    map[uint64]*tracked
	engine      *Engine
}

// drive runs the planned requests through e with the driver loop of the
// package doc, checking every invariant after every Schedule and Complete.
// With pipeline parallelism it keeps up to MaxBatches steps in flight,
// each holding the pipeline for an even share of its step time, and
// completes them oldest first.
func drive(t testing.TB, e *Engine, plan []plannedRequest) runOutcome {
	t.Helper()
	out := runOutcome{requests: make(map[uint64]*tracked, len(plan)), engine: e}
	now := time.Duration(0)
	next := 0
	depth := e.MaxBatches()
	var pipe perf.Pipeline
	var inPipe []pipeBatch
	const maxSteps = 200000
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("step %d at %v: %s", out.steps, now, fmt.Sprintf(format, args...))
	}
	finish := func(o Output) {
		tr := out.requests[o.ID]
		if tr == nil || !tr.added {
			fail("output for unknown request %d", o.ID)
		}
		if tr.done {
			fail("request %d finished twice", o.ID)
		}
		tr.done = true
		tr.err = o.Err
	}
	for out.steps < maxSteps {
		for next < len(plan) && plan[next].Arrival <= now {
			p := plan[next]
			tr := &tracked{maxTokens: p.MaxTokens}
			out.requests[p.ID] = tr
			if err := e.Add(p.Request); err != nil {
				if !errors.Is(err, ErrBadRequest) && !errors.Is(err, ErrNoSwapSpace) {
					fail("Add(%d): unexpected error %v", p.ID, err)
				}
				tr.done, tr.err = true, err
			} else {
				tr.added = true
			}
			next++
		}
		for _, p := range plan[:next] {
			tr := out.requests[p.ID]
			if p.abortAt > 0 && now >= p.abortAt && !tr.done && !tr.aborted {
				if !e.Abort(p.ID) {
					fail("Abort(%d) of a live request returned false", p.ID)
				}
				tr.aborted, tr.done = true, true
				if e.Abort(p.ID) {
					fail("second Abort(%d) returned true", p.ID)
				}
			}
		}
		for len(inPipe) < depth {
			st := e.Schedule(now)
			if err := e.checkInvariants(); err != nil {
				fail("after Schedule: %v", err)
			}
			for _, o := range st.Rejected {
				if o.Err == nil || !o.Finished {
					fail("rejected output without error: %+v", o)
				}
				finish(o)
			}
			checkStep(t, e, st, fail)
			if st.Empty() {
				break
			}
			checkInFlight(inPipe, st, fail)
			d := testModel.StepTime(st.Shape)
			at := now + d
			if depth > 1 {
				at = pipe.Enter(now, d, d/time.Duration(depth))
			}
			inPipe = append(inPipe, pipeBatch{st, at})
			out.maxInFlight = max(out.maxInFlight, len(inPipe))
		}
		if len(inPipe) == 0 {
			if next < len(plan) {
				now = max(now, plan[next].Arrival)
				continue
			}
			if e.Idle() {
				break
			}
			abortable := false
			for _, p := range plan {
				if tr := out.requests[p.ID]; p.abortAt > now && !tr.done {
					now = p.abortAt
					abortable = true
					break
				}
			}
			if !abortable {
				fail("engine stalled: %+v", e.Stats())
			}
			continue
		}
		st := inPipe[0].st
		now = inPipe[0].out
		inPipe = inPipe[1:]
		outs := e.Complete(st)
		out.steps++
		if err := e.checkInvariants(); err != nil {
			fail("after Complete: %v", err)
		}
		if again := e.Complete(st); again != nil {
			fail("a second Complete of the same step returned %d outputs", len(again))
		}
		for _, o := range outs {
			tr := out.requests[o.ID]
			if tr == nil || tr.done {
				fail("output for request %d that is unknown or done", o.ID)
			}
			if o.NewTokens < 0 || o.NewTokens > 1 {
				fail("request %d got %d tokens in one step", o.ID, o.NewTokens)
			}
			tr.generated += o.NewTokens
			if o.CachedTokens > 0 {
				tr.cached = o.CachedTokens
			}
			if o.NumGenerated != tr.generated {
				fail("request %d: NumGenerated %d, tokens seen %d", o.ID, o.NumGenerated, tr.generated)
			}
			if o.Finished {
				if o.Err == nil && tr.generated != tr.maxTokens {
					fail("request %d finished with %d of %d tokens", o.ID, tr.generated, tr.maxTokens)
				}
				finish(o)
			}
		}
	}
	if out.steps >= maxSteps {
		t.Fatalf("no end after %d steps (livelock?): %+v", maxSteps, e.Stats())
	}
	for id, tr := range out.requests {
		if !tr.done {
			t.Fatalf("request %d never finished: %+v", id, tr)
		}
		if e.Err() != nil && tr.added && tr.err != nil && !errors.Is(tr.err, ErrNoSwapSpace) && !errors.Is(tr.err, ErrIgnored) {
			t.Fatalf("request %d failed with %v", id, tr.err)
		}
		if tr.added && !tr.aborted && tr.err == nil && tr.generated != tr.maxTokens {
			t.Fatalf("request %d: %d of %d tokens", id, tr.generated, tr.maxTokens)
		}
	}
	s := e.Stats()
	// V0's virtual engines share out the blocks by integer division;
	// vLLM counts the remainder as used.
	leftover := 0
	if n := len(e.virt); n > 0 {
		leftover = e.cfg.NumGPUBlocks % n
	}
	if !e.Idle() || s.GPUBlocksUsed != leftover || s.CPUBlocksUsed != 0 || (leftover == 0 && e.KVUsage() != 0) {
		t.Fatalf("blocks leaked at the end: %+v usage %v", s, e.KVUsage())
	}
	if e.byID.len() != 0 {
		t.Fatalf("%d requests still indexed at the end", e.byID.len())
	}
	return out
}

// checkStep verifies what one step may contain.
func checkStep(t testing.TB, e *Engine, st *Step, fail func(string, ...any)) {
	t.Helper()
	cfg := e.cfg
	if u := e.KVUsage(); u < 0 || u > 1 {
		fail("KV usage %v outside [0,1]", u)
	}
	if st.Seqs() > cfg.MaxNumSeqs {
		fail("%d sequences in a step > max_num_seqs %d", st.Seqs(), cfg.MaxNumSeqs)
	}
	charged, prefills, decodes := 0, 0, 0
	seen := make(map[*sequence]bool, len(st.entries))
	for _, en := range st.entries {
		if seen[en.s] {
			fail("request %d scheduled twice in one step", en.s.id)
		}
		seen[en.s] = true
		if en.tokens <= 0 {
			fail("request %d scheduled with %d tokens", en.s.id, en.tokens)
		}
		charged += int(en.charged)
		if en.prefill {
			prefills++
		} else {
			decodes++
		}
	}
	if charged > cfg.MaxNumBatchedTokens {
		fail("%d tokens charged > max_num_batched_tokens %d", charged, cfg.MaxNumBatchedTokens)
	}
	if st.Shape.Tokens() > cfg.MaxNumBatchedTokens {
		fail("%d tokens computed > max_num_batched_tokens %d", st.Shape.Tokens(), cfg.MaxNumBatchedTokens)
	}
	if cfg.Version == V0 && !cfg.EnableChunkedPrefill && prefills > 0 && decodes > 0 {
		fail("V0 without chunked prefill mixed %d prefills with %d decodes", prefills, decodes)
	}
	if st.Shape.Prefills != prefills || st.Shape.Decodes != decodes {
		fail("shape says %d prefills %d decodes, entries %d/%d", st.Shape.Prefills, st.Shape.Decodes, prefills, decodes)
	}
}

// randomPlan makes a seeded workload that stresses the engine: shared
// prefixes, ID-less prompts, bursts, requests too long for the API or the
// cache, and aborts.
func randomPlan(seed uint64, cfg Config, n int) []plannedRequest {
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	bases := make([][]int32, 3)
	for i := range bases {
		bases[i] = make([]int32, cfg.MaxModelLen)
		for j := range bases[i] {
			bases[i][j] = rng.Int32N(50000)
		}
	}
	plan := make([]plannedRequest, 0, n)
	now := time.Duration(0)
	for i := range n {
		if rng.IntN(3) > 0 {
			now += time.Duration(rng.IntN(40)) * time.Millisecond
		}
		promptLen := 1 + rng.IntN(cfg.MaxModelLen*2/3)
		maxTokens := 1 + rng.IntN(max(1, cfg.MaxModelLen-promptLen))
		if rng.IntN(4) == 0 {
			maxTokens = 1 + rng.IntN(4)
		}
		if rng.IntN(25) == 0 {
			maxTokens = cfg.MaxModelLen // rejected by Add
		}
		r := Request{ID: uint64(1000 + i), MaxTokens: maxTokens, Arrival: now}
		switch rng.IntN(4) {
		case 0:
			r.PromptLen = promptLen
		default:
			base := bases[rng.IntN(len(bases))]
			shared := rng.IntN(promptLen + 1)
			p := make([]int32, promptLen)
			copy(p, base[:shared])
			for j := shared; j < promptLen; j++ {
				p[j] = rng.Int32N(50000)
			}
			r.Prompt = p
		}
		pr := plannedRequest{Request: r}
		if rng.IntN(12) == 0 {
			pr.abortAt = now + time.Duration(1+rng.IntN(200))*time.Millisecond
		}
		plan = append(plan, pr)
	}
	return plan
}

// configMatrix is every flag combination, on a roomy and on a cramped GPU.
func configMatrix() []Config {
	var out []Config
	for _, blocks := range []int{48, 20} {
		base := Config{BlockSize: 4, NumGPUBlocks: blocks, NumCPUBlocks: 64, MaxNumSeqs: 6, MaxNumBatchedTokens: 96, MaxModelLen: 96}
		for _, caching := range []bool{false, true} {
			c := base
			c.Version, c.EnablePrefixCaching = V1, caching
			out = append(out, c)
			for _, chunked := range []bool{false, true} {
				for _, mode := range []PreemptionMode{"", PreemptSwap} {
					for _, legacy := range []bool{false, true} {
						if legacy && !chunked {
							continue
						}
						for _, tune := range []int{0, 1, 2} {
							c := base
							c.Version, c.EnablePrefixCaching, c.EnableChunkedPrefill = V0, caching, chunked
							c.PreemptionMode, c.LegacyRequeueOrder = mode, legacy
							switch tune {
							case 1:
								c.Watermark = 0.05
							case 2:
								c.SchedulerDelayFactor = 0.5
								c.NumCPUBlocks = 8 // swap space runs out
							}
							out = append(out, c)
						}
					}
				}
			}
		}
	}
	return out
}

func configName(c Config) string {
	return fmt.Sprintf("%s/blocks=%d/chunked=%t/caching=%t/preempt=%q/legacy=%t/wm=%g/delay=%g/cpu=%d",
		c.Version, c.NumGPUBlocks, c.EnableChunkedPrefill || c.Version == V1, c.EnablePrefixCaching,
		c.PreemptionMode, c.LegacyRequeueOrder, c.Watermark, c.SchedulerDelayFactor, c.NumCPUBlocks)
}

// TestPropertiesAllConfigs runs seeded random workloads through every
// flag combination. It also guards itself: across the matrix the workloads
// must actually preempt, swap, hit the prefix cache, reject, abort and kill
// the engine, or the properties would prove little.
func TestPropertiesAllConfigs(t *testing.T) {
	var preempted, swapped, hits, rejected, died, aborted int
	for _, cfg := range configMatrix() {
		t.Run(configName(cfg), func(t *testing.T) {
			for seed := range uint64(4) {
				e, err := New(cfg)
				if err != nil {
					t.Fatal(err)
				}
				out := drive(t, e, randomPlan(seed, cfg, 60))
				s := e.Stats()
				if s.Preemptions > 0 {
					preempted++
					if cfg.PreemptionMode == PreemptSwap {
						swapped++
					}
				}
				if s.PrefixHits > 0 {
					hits++
				}
				if e.Err() != nil {
					died++
				}
				for _, tr := range out.requests {
					if errors.Is(tr.err, ErrIgnored) {
						rejected++
					}
					if tr.aborted {
						aborted++
					}
				}
			}
		})
	}
	t.Logf("runs that preempted %d, swapped %d, hit the prefix cache %d, died %d; requests rejected %d, aborted %d",
		preempted, swapped, hits, died, rejected, aborted)
	if preempted == 0 || swapped == 0 || hits == 0 || rejected == 0 || died == 0 || aborted == 0 {
		t.Fatal("the random workloads miss a feature the properties must cover")
	}
}

// FuzzEngine drives a random workload chosen by the fuzzer through a
// configuration chosen by the fuzzer.
func FuzzEngine(f *testing.F) {
	f.Add(uint64(1), uint16(0), uint8(30))
	f.Add(uint64(7), uint16(77), uint8(60))
	f.Add(uint64(42), uint16(190), uint8(90))
	matrix := configMatrix()
	f.Fuzz(func(t *testing.T, seed uint64, pick uint16, n uint8) {
		cfg := matrix[int(pick)%len(matrix)]
		e, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		drive(t, e, randomPlan(seed, cfg, int(n)%120))
	})
}
