package engine

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/servebench/servebench/perf"
)

func validConfig(v Version) Config {
	return Config{Version: v, BlockSize: 16, NumGPUBlocks: 1000, NumCPUBlocks: 100, MaxNumSeqs: 256,
		MaxNumBatchedTokens: 2048, MaxModelLen: 2048, Watermark: 0.01}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name   string
		modify func(*Config)
		want   string // exact error text; "" means valid
	}{
		{"v0 defaults", func(c *Config) {}, ""},
		{"v1 defaults", func(c *Config) { c.Version = V1; c.Watermark = 0; c.EnablePrefixCaching = true }, ""},
		{"unknown version", func(c *Config) { c.Version = "v2" }, `engine version "v2" is not supported; use "v0" or "v1"`},
		{"v0 batched tokens below model len", func(c *Config) { c.MaxModelLen = 4096 },
			"max_num_batched_tokens (2048) is smaller than max_model_len (4096). This effectively limits the maximum sequence length to max_num_batched_tokens and makes vLLM reject longer sequences. Please increase max_num_batched_tokens or decrease max_model_len."},
		{"v0 chunked allows batched tokens below model len", func(c *Config) { c.MaxModelLen = 4096; c.EnableChunkedPrefill = true }, ""},
		{"v1 allows batched tokens below model len", func(c *Config) { c.Version = V1; c.MaxModelLen = 4096 }, ""},
		{"batched tokens below max seqs", func(c *Config) { c.MaxNumBatchedTokens = 128; c.EnableChunkedPrefill = true },
			"max_num_batched_tokens (128) must be greater than or equal to max_num_seqs (256)."},
		{"no GPU blocks", func(c *Config) { c.NumGPUBlocks = 0 },
			"No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when initializing the engine."},
		{"v1 swap", func(c *Config) { c.Version = V1; c.PreemptionMode = PreemptSwap },
			"preemption_mode=swap requires engine v0: vLLM's V1 engine only preempts by recompute and falls back to V0 when preemption_mode is set"},
		{"v1 recompute is fine", func(c *Config) { c.Version = V1; c.PreemptionMode = PreemptRecompute }, ""},
		{"v0 unknown mode means recompute", func(c *Config) { c.PreemptionMode = "recomputation" }, ""},
		{"v1 delay factor", func(c *Config) { c.Version = V1; c.SchedulerDelayFactor = 0.5 },
			"scheduler_delay_factor requires engine v0: vLLM's V1 scheduler has no delay factor and falls back to V0 when it is set"},
		{"negative delay factor", func(c *Config) { c.SchedulerDelayFactor = -1 }, "scheduler_delay_factor (-1) must not be negative"},
		{"watermark 1", func(c *Config) { c.Watermark = 1 }, "watermark (1) must be a fraction of GPU blocks in [0, 1); vLLM's default is 0.01"},
		{"zero block size", func(c *Config) { c.BlockSize = 0 }, "block_size (0) must be a positive number of tokens; vLLM uses 8, 16 or 32"},
		{"negative CPU blocks", func(c *Config) { c.NumCPUBlocks = -1 }, "num_cpu_blocks (-1) must not be negative; set swap_space to 0 or more GiB"},
		{"zero max seqs", func(c *Config) { c.MaxNumSeqs = 0 }, "max_num_seqs (0) must be a positive number of sequences"},
		{"zero batched tokens", func(c *Config) { c.MaxNumBatchedTokens = 0 }, "max_num_batched_tokens (0) must be a positive number of tokens"},
		{"zero model len", func(c *Config) { c.MaxModelLen = 0 }, "max_model_len (0) must be a positive number of tokens"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := validConfig(V0)
			tt.modify(&c)
			err := c.Validate()
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tt.want {
				t.Fatalf("Validate() = %q, want %q", got, tt.want)
			}
			if _, err := New(c); (err == nil) != (tt.want == "") {
				t.Fatalf("New() error %v disagrees with Validate", err)
			}
		})
	}
}

func TestAddRejects(t *testing.T) {
	tests := []struct {
		name string
		req  Request
		want string
	}{
		{"context length", Request{ID: 1, PromptLen: 2000, MaxTokens: 100},
			"This model's maximum context length is 2048 tokens. However, you requested 2100 tokens (2000 in the messages, 100 in the completion). Please reduce the length of the messages or completion."},
		{"context length counts prompt IDs", Request{ID: 1, Prompt: make([]int32, 2048), PromptLen: 5, MaxTokens: 1},
			"This model's maximum context length is 2048 tokens. However, you requested 2049 tokens (2048 in the messages, 1 in the completion). Please reduce the length of the messages or completion."},
		{"empty prompt", Request{ID: 1, MaxTokens: 10}, "The decoder prompt cannot be empty"},
		{"zero max tokens", Request{ID: 1, PromptLen: 10}, "max_tokens must be at least 1, got 0."},
		{"exactly max model len", Request{ID: 1, PromptLen: 2000, MaxTokens: 48}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, err := New(validConfig(V1))
			if err != nil {
				t.Fatal(err)
			}
			err = e.Add(tt.req)
			got := ""
			if err != nil {
				got = err.Error()
				if !errors.Is(err, ErrBadRequest) {
					t.Fatalf("error %v does not match ErrBadRequest", err)
				}
			}
			if got != tt.want {
				t.Fatalf("Add() = %q, want %q", got, tt.want)
			}
			if tt.want == "" && e.Stats().Waiting != 1 {
				t.Fatalf("accepted request is not waiting: %+v", e.Stats())
			}
		})
	}
	e, _ := New(validConfig(V1))
	if err := e.Add(Request{ID: 7, PromptLen: 5, MaxTokens: 5}); err != nil {
		t.Fatal(err)
	}
	if err := e.Add(Request{ID: 7, PromptLen: 5, MaxTokens: 5}); !errors.Is(err, ErrBadRequest) {
		t.Fatalf("duplicate ID: got %v, want ErrBadRequest", err)
	}
}

// A request whose KV must live through a whole step that is then aborted
// mid-step: Complete must skip it and its blocks must already be free.
func TestAbortDuringPendingStep(t *testing.T) {
	for _, v := range []Version{V0, V1} {
		t.Run(string(v), func(t *testing.T) {
			cfg := small(v)
			cfg.EnablePrefixCaching = true
			e, _ := New(cfg)
			for id := range uint64(3) {
				if err := e.Add(Request{ID: id, Prompt: seqTokens(int(id)*100, 10), MaxTokens: 3}); err != nil {
					t.Fatal(err)
				}
			}
			st := e.Schedule(0)
			if st.Seqs() != 3 {
				t.Fatalf("scheduled %d sequences, want 3", st.Seqs())
			}
			if !e.Abort(1) {
				t.Fatal("Abort(1) = false")
			}
			// The freed sequence is reused by a new request while the step runs.
			if err := e.Add(Request{ID: 9, PromptLen: 4, MaxTokens: 1}); err != nil {
				t.Fatal(err)
			}
			if again := e.Schedule(time.Millisecond); again != st || again.Seqs() != 3 {
				t.Fatal("Schedule before Complete did not return the pending step")
			}
			outs := e.Complete(st)
			for _, o := range outs {
				if o.ID == 1 || o.ID == 9 {
					t.Fatalf("Complete reported request %d: %+v", o.ID, o)
				}
			}
			if len(outs) != 2 {
				t.Fatalf("got %d outputs, want 2", len(outs))
			}
			if err := e.checkInvariants(); err != nil {
				t.Fatal(err)
			}
			if e.Abort(1) {
				t.Fatal("second Abort(1) = true")
			}
		})
	}
}

func TestResetPrefixCache(t *testing.T) {
	for _, v := range []Version{V0, V1} {
		t.Run(string(v), func(t *testing.T) {
			cfg := small(v)
			cfg.EnablePrefixCaching = true
			e, _ := New(cfg)
			prompt := seqTokens(1, 13)
			run := func(id uint64) (cached int) {
				if err := e.Add(Request{ID: id, Prompt: prompt, MaxTokens: 2}); err != nil {
					t.Fatal(err)
				}
				for !e.Idle() {
					st := e.Schedule(0)
					if e.ResetPrefixCache() {
						t.Fatal("ResetPrefixCache succeeded while a request holds blocks")
					}
					for _, o := range e.Complete(st) {
						if o.CachedTokens > 0 {
							cached = o.CachedTokens
						}
					}
				}
				return cached
			}
			if got := run(1); got != 0 {
				t.Fatalf("first request hit %d tokens in an empty cache", got)
			}
			if got := run(2); got != 12 {
				t.Fatalf("repeat hit %d tokens, want 12", got)
			}
			if !e.ResetPrefixCache() {
				t.Fatal("ResetPrefixCache failed on an idle engine")
			}
			if got := run(3); got != 0 {
				t.Fatalf("after reset the repeat hit %d tokens", got)
			}
			if err := e.checkInvariants(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestBlockPoolV1EvictsFreedTailFirst(t *testing.T) {
	p := newBlockPool(7, true, false)             // block 0 is V1's null block
	a := []int32{p.alloc(), p.alloc(), p.alloc()} // 1,2,3
	for i, b := range a {
		p.setHash(b, uint64(100+i))
	}
	for i := len(a) - 1; i >= 0; i-- { // free tail first, as Engine.freeGPU does
		p.release(a[i], 0, 0)
	}
	// Never-used blocks 4,5,6 go first, then the freed request's tail block.
	var got []int32
	for range 5 {
		got = append(got, p.alloc())
	}
	want := []int32{4, 5, 6, 3, 2}
	if !slicesEqual(got, want) {
		t.Fatalf("allocation order %v, want %v", got, want)
	}
	if p.lookup(100) != 1 || p.lookup(101) != noBlock || p.lookup(102) != noBlock {
		t.Fatalf("evicted blocks still cached, or the survivor is not: %v %v %v", p.lookup(100), p.lookup(101), p.lookup(102))
	}
}

func TestBlockPoolV0EvictsLeastRecentlyUsedLongestPrefixFirst(t *testing.T) {
	p := newBlockPool(4, true, true)
	var bs []int32
	for i := range 4 {
		b := p.alloc()
		p.setHash(b, uint64(10+i))
		bs = append(bs, b)
	}
	// Blocks 0 and 1 were last used at 5ms (block 1 hashes more tokens);
	// blocks 2 and 3 at 9ms.
	p.release(bs[0], 5*time.Millisecond, 16)
	p.release(bs[1], 5*time.Millisecond, 32)
	p.release(bs[2], 9*time.Millisecond, 16)
	p.release(bs[3], 9*time.Millisecond, 32)
	// A hit on block 1 takes it out of the evictor; returned at 12ms it is
	// now the most recently used.
	p.touch(bs[1], 12*time.Millisecond)
	p.release(bs[1], 12*time.Millisecond, 32)
	var got []int32
	for range 4 {
		got = append(got, p.alloc())
	}
	want := []int32{0, 3, 2, 1}
	if !slicesEqual(got, want) {
		t.Fatalf("eviction order %v, want %v", got, want)
	}
}

func slicesEqual(a, b []int32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// The shape's attention pairs and KV entries follow perf.StepShape's
// formulas for a prefill chunk after cached context and for decodes.
func TestStepShape(t *testing.T) {
	cfg := small(V1)
	cfg.EnablePrefixCaching = true
	cfg.MaxNumBatchedTokens = 32
	e, _ := New(cfg)
	prompt := seqTokens(1, 10)
	mustAdd(t, e, Request{ID: 1, Prompt: prompt, MaxTokens: 3})
	st := e.Schedule(0)
	want := perf.StepShape{PrefillTokens: 10, Prefills: 1, PrefillsDone: 1, AttnPairs: 55, KVTokens: 10}
	if st.Shape != want {
		t.Fatalf("first step %+v, want %+v", st.Shape, want)
	}
	e.Complete(st)
	// r2 repeats the prompt: 8 tokens hit (2 blocks), 2 computed after them.
	mustAdd(t, e, Request{ID: 2, Prompt: prompt, MaxTokens: 3})
	st = e.Schedule(0)
	want = perf.StepShape{PrefillTokens: 2, Prefills: 1, PrefillsDone: 1, Decodes: 1,
		AttnPairs: 2*8 + 3 + 10, DecodeContext: 10, MaxDecodeContext: 10, KVTokens: 10 + 11}
	if st.Shape != want {
		t.Fatalf("second step %+v, want %+v", st.Shape, want)
	}
}

func mustAdd(t *testing.T, e *Engine, r Request) {
	t.Helper()
	if err := e.Add(r); err != nil {
		t.Fatal(err)
	}
}

// vLLM warns on the first preemption and every 50th after it, never on
// each one (BLIS's log storms).
func TestPreemptionWarningsAreRateLimited(t *testing.T) {
	var buf bytes.Buffer
	cfg := small(V0)
	cfg.NumGPUBlocks = 4
	cfg.Logger = slog.New(slog.NewTextHandler(&buf, nil))
	e, _ := New(cfg)
	for id := range uint64(40) {
		mustAdd(t, e, Request{ID: id, PromptLen: 4, MaxTokens: 9})
	}
	for n := 0; !e.Idle() && n < 10000; n++ {
		e.Complete(e.Schedule(0))
	}
	preemptions := e.Stats().Preemptions
	if preemptions < 60 {
		t.Fatalf("only %d preemptions; the test needs more than 50", preemptions)
	}
	warnings := strings.Count(buf.String(), "is preempted by PreemptionMode.RECOMPUTE mode because there is not enough KV cache space")
	if want := int((preemptions + 49) / 50); warnings != want {
		t.Fatalf("%d warnings for %d preemptions, want %d", warnings, preemptions, want)
	}
	if !strings.Contains(buf.String(), "total_num_cumulative_preemption=51") {
		t.Fatalf("second warning missing or miscounted:\n%s", buf.String())
	}
}

// Steady-state decoding must not allocate: Schedule and Complete reuse
// their slices, and prefix-cache hashes are computed once per block.
func TestSteadyStateDoesNotAllocate(t *testing.T) {
	for _, caching := range []bool{false, true} {
		for _, v := range []Version{V0, V1} {
			cfg := validConfig(v)
			cfg.EnablePrefixCaching = caching
			e, _ := New(cfg)
			for id := range uint64(64) {
				mustAdd(t, e, Request{ID: id, Prompt: seqTokens(int(id)*1000, 200), MaxTokens: 1800})
			}
			for range 50 { // admit and warm up
				e.Complete(e.Schedule(0))
			}
			allocs := testing.AllocsPerRun(200, func() {
				e.Complete(e.Schedule(0))
			})
			if allocs != 0 {
				t.Errorf("%s caching=%t: %v allocations per step, want 0", v, caching, allocs)
			}
		}
	}
}

// The open-addressing table must agree with a Go map under heavy
// insert/delete churn (backward-shift deletion is easy to get wrong).
func TestHashTableMatchesMap(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	const capacity = 50
	const ops = 200000
	tab := newHashTable(4)         // grows under the test
	meta := make([]blockMeta, ops) // block op holds the key put at op
	ref := map[uint64]int32{}
	keys := make([]uint64, 0, capacity)
	for op := range ops {
		// Few distinct keys with clustered home slots stress the probing.
		k := uint64(rng.IntN(80)+1) << (rng.IntN(3) * 20)
		if rng.IntN(2) == 0 && len(ref) < capacity {
			_, had := ref[k]
			if tab.put(k, int32(op), meta) == had {
				t.Fatalf("put(%x) inserted=%t, map had it=%t", k, !had, had)
			}
			if !had {
				meta[op].hash = k
				ref[k] = int32(op)
				keys = append(keys, k)
			}
		} else if len(keys) > 0 {
			i := rng.IntN(len(keys))
			k = keys[i]
			keys[i] = keys[len(keys)-1]
			keys = keys[:len(keys)-1]
			tab.del(k, ref[k])
			delete(ref, k)
		}
		if op%97 == 0 {
			for k, v := range ref {
				if got, ok := tab.get(k, meta); !ok || got != v {
					t.Fatalf("op %d: get(%x) = %d,%t want %d", op, k, got, ok, v)
				}
			}
			if tab.n != len(ref) {
				t.Fatalf("op %d: table holds %d, map %d", op, tab.n, len(ref))
			}
		}
	}
	if _, ok := tab.get(0xdeadbeef, meta); ok {
		t.Fatal("absent key found")
	}
}

// The delay factor compares against the earliest arrival still waiting,
// re-evaluated before each admission as in vLLM. With requests added in
// arrival order that is the front of the queue; otherwise the whole queue
// must be scanned.
func TestDelayFactorEarliestArrival(t *testing.T) {
	tests := []struct {
		name     string
		order    []Request
		prefills int
	}{
		// At 12ms: r2 (1ms) has waited 11ms > 10ms and is admitted; then
		// r3 (6ms) has waited only 6ms and is held back.
		{"in arrival order", []Request{
			{ID: 2, PromptLen: 4, MaxTokens: 2, Arrival: time.Millisecond},
			{ID: 3, PromptLen: 4, MaxTokens: 2, Arrival: 6 * time.Millisecond},
		}, 1},
		// r3 is at the front but r2 (1ms) is still the earliest waiting, so
		// r3 passes; then r2 passes on its own.
		{"out of order", []Request{
			{ID: 3, PromptLen: 4, MaxTokens: 2, Arrival: 6 * time.Millisecond},
			{ID: 2, PromptLen: 4, MaxTokens: 2, Arrival: time.Millisecond},
		}, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := small(V0)
			cfg.SchedulerDelayFactor = 1
			e, _ := New(cfg)
			mustAdd(t, e, Request{ID: 1, PromptLen: 4, MaxTokens: 20})
			e.Complete(e.Schedule(0))                     // prompt step at 0
			e.Complete(e.Schedule(10 * time.Millisecond)) // last prompt latency: 10ms
			for _, r := range tt.order {
				mustAdd(t, e, r)
			}
			if st := e.Schedule(12 * time.Millisecond); st.Shape.Prefills != tt.prefills {
				t.Fatalf("%d prefills at 12ms, want %d (%+v)", st.Shape.Prefills, tt.prefills, st.Shape)
			}
		})
	}
}

// HoldAdmissions continues the running batch and admits nothing until it
// is lifted, with and without chunked prefill (vLLM's multi-step groups).
func TestHoldAdmissions(t *testing.T) {
	for _, chunked := range []bool{false, true} {
		t.Run(map[bool]string{false: "default", true: "chunked"}[chunked], func(t *testing.T) {
			cfg := validConfig(V0)
			cfg.EnableChunkedPrefill = chunked
			e, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			mustAdd(t, e, Request{ID: 1, PromptLen: 20, MaxTokens: 5})
			e.Complete(e.Schedule(0)) // 1's prefill
			mustAdd(t, e, Request{ID: 2, PromptLen: 30, MaxTokens: 5})
			e.HoldAdmissions(true)
			st := e.Schedule(time.Millisecond)
			if want := (perf.StepShape{Decodes: 1, AttnPairs: 20, DecodeContext: 20, MaxDecodeContext: 20, KVTokens: 21}); st.Shape != want {
				t.Fatalf("held step %+v, want 1's decode alone %+v", st.Shape, want)
			}
			e.Complete(st)
			if s := e.Stats(); s.Running != 1 || s.Waiting != 1 {
				t.Fatalf("held: %d running, %d waiting; want 1 and 1", s.Running, s.Waiting)
			}
			e.HoldAdmissions(false)
			st = e.Schedule(2 * time.Millisecond)
			if st.Shape.Prefills != 1 || st.Shape.PrefillTokens != 30 {
				t.Fatalf("after the hold %+v, want 2's 30-token prefill", st.Shape)
			}
		})
	}
}

// MaxDecodeContext is the longest decode's cached context, which V0's
// CUDA-graph rule (max_seq_len_to_capture) reads; both engines report it.
func TestMaxDecodeContext(t *testing.T) {
	for _, v := range []Version{V0, V1} {
		t.Run(string(v), func(t *testing.T) {
			e, err := New(validConfig(v))
			if err != nil {
				t.Fatal(err)
			}
			mustAdd(t, e, Request{ID: 1, PromptLen: 30, MaxTokens: 5})
			mustAdd(t, e, Request{ID: 2, PromptLen: 70, MaxTokens: 5})
			for step := 0; step < 10; step++ {
				st := e.Schedule(time.Duration(step) * time.Millisecond)
				if st.Shape.PrefillTokens == 0 && st.Shape.Decodes == 2 {
					// Both have decoded k tokens: contexts 30+k and 70+k.
					k := (int(st.Shape.DecodeContext) - 100) / 2
					if want := 70 + k; st.Shape.MaxDecodeContext != want {
						t.Fatalf("decode step %+v: MaxDecodeContext %d, want the 70-token prompt's context %d", st.Shape, st.Shape.MaxDecodeContext, want)
					}
					return
				}
				e.Complete(st)
			}
			t.Fatal("no step decoded both requests")
		})
	}
}

// FinishedDecodes: V0's extra decode with no step following covers the
// requests that finished without an error and are still tracked, each over
// its prompt and generated tokens.
func TestFinishedDecodes(t *testing.T) {
	outs := []Output{
		{ID: 1, NumGenerated: 5, Finished: true},
		{ID: 2, NumGenerated: 3},                                  // still running
		{ID: 3, NumGenerated: 2, Finished: true, Err: ErrIgnored}, // rejected
		{ID: 4, NumGenerated: 9, Finished: true},                  // no longer tracked
		{ID: 5, NumGenerated: 1, Finished: true},
	}
	prompts := map[uint64]int{1: 100, 2: 50, 3: 40, 5: 20}
	got := FinishedDecodes(outs, func(id uint64) (int, bool) { p, ok := prompts[id]; return p, ok })
	want := perf.StepShape{Decodes: 2, AttnPairs: 105 + 21, DecodeContext: 105 + 21, MaxDecodeContext: 105, KVTokens: 106 + 22}
	if got != want {
		t.Errorf("FinishedDecodes = %+v, want %+v", got, want)
	}
}

// SharedDecodeContext counts the decodes' reads of cached prefix blocks
// that another running request also holds, beyond the first reader, and
// SharedPrefixTokens those blocks once: two requests that hit the 8 cached
// tokens of a third's prompt read them after it, 16 tokens from L2 when
// all three decode. Without prefix caching nothing is shared.
func TestSharedDecodeContext(t *testing.T) {
	for _, tc := range []struct {
		v       Version
		caching bool
		shared  int64 // SharedDecodeContext once all three decode
		prefix  int64
	}{
		{V1, true, 16, 8},
		{V0, true, 16, 8},
		{V1, false, 0, 0},
		{V0, false, 0, 0},
	} {
		t.Run(fmt.Sprintf("%s caching=%v", tc.v, tc.caching), func(t *testing.T) {
			cfg := small(tc.v)
			cfg.EnablePrefixCaching = tc.caching
			e, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			prompt := seqTokens(1, 10)
			mustAdd(t, e, Request{ID: 1, Prompt: prompt, MaxTokens: 6})
			st := e.Schedule(0)
			e.Complete(st) // r1 prefilled: its two full blocks are cached
			mustAdd(t, e, Request{ID: 2, Prompt: prompt, MaxTokens: 6})
			mustAdd(t, e, Request{ID: 3, Prompt: prompt, MaxTokens: 6})
			sawAll := false
			for step := 1; !e.Idle(); step++ {
				if step > 50 {
					t.Fatal("requests did not finish in 50 steps")
				}
				st := e.Schedule(time.Duration(step) * time.Millisecond)
				sh := st.Shape
				if sh.SharedDecodeContext > sh.DecodeContext || sh.SharedDecodeContext < 0 {
					t.Fatalf("step %d: shared context %d outside [0, decode context %d]", step, sh.SharedDecodeContext, sh.DecodeContext)
				}
				if sh.Decodes == 3 && sh.PrefillTokens == 0 && !sawAll {
					sawAll = true
					if sh.SharedDecodeContext != tc.shared || sh.SharedPrefixTokens != tc.prefix {
						t.Fatalf("step %d, three decodes: shared context %d over %d prefix tokens, want %d over %d",
							step, sh.SharedDecodeContext, sh.SharedPrefixTokens, tc.shared, tc.prefix)
					}
				}
				e.Complete(st)
				if err := e.checkInvariants(); err != nil {
					t.Fatalf("step %d: %v", step, err)
				}
			}
			if !sawAll {
				t.Fatal("no step decoded all three requests")
			}
			if e.kv.sharedBlocks != 0 || e.kv.extraRefs != 0 {
				t.Fatalf("idle engine counts %d shared blocks, %d extra holders", e.kv.sharedBlocks, e.kv.extraRefs)
			}
		})
	}
}
