// Package engine models vLLM's scheduler and KV-cache manager: the V0
// (0.5/0.6) and V1 scheduler policies, paged KV blocks with watermark,
// prefix caching, and swap/recompute preemption. It knows no clock and does
// no I/O: the driver (sim on a virtual clock, serve on the wall clock) asks
// for a step, times it with a perf.StepModel, and reports it done.
//
// Driver loop:
//
//	st := e.Schedule(now)          // st.Rejected: requests given up on
//	if st.Empty() { wait for the next arrival; continue }
//	now += model.StepTime(st.Shape)
//	outs := e.Complete(st)         // tokens produced, requests finished
//
// With pipeline parallelism (Config.PipelineParallel) up to MaxBatches
// steps are in flight: schedule until Schedule returns an empty step or
// MaxBatches are pending, and complete them oldest first (pipeline.go).
//
// An Engine is not safe for concurrent use: one goroutine owns it.
//
// Conformance: TestOracleConformance replays scenarios through the engine
// and requires the per-step traces that vLLM's own scheduler produced for
// them (v0.5.4, v0.6.1.post2, and V1 from main one week after v0.8.5); see
// tools/vllm-oracle.
//
// Where the model knowingly differs from vLLM:
//   - A V1 request whose prompt plus max_tokens needs more KV blocks than
//     the GPU has is rejected (ErrIgnored) when it reaches the head of the
//     queue; vLLM V1 refuses to start in that configuration instead, and
//     admitting it would livelock.
//   - V0 answers a swap-in that only the watermark blocks while no block is
//     held with NEVER (the request fails) where vLLM waits forever.
//   - V0 swaps a swapped-out request back in unchunked (as vLLM does, even
//     with chunked prefill), so a partial prefill whose remainder exceeds
//     max_num_batched_tokens can never return: vLLM then waits forever;
//     the engine fails it once nothing else runs or waits.
//   - A scheduling pass that only preempts or rejects is followed at once by
//     another within the same Schedule, so a swap-out-only step costs no
//     time of its own.
//   - Prefix-cache queries and hits count each request's first admission
//     only (as vLLM does since PR #25787), not every lookup attempt.
//   - V0 prefix caching hits the leading full blocks with V1's cap (the last
//     token is recomputed), charges the whole prompt to the token budget as
//     vLLM does, evicts like block manager v1's LRUEvictor, but keeps no
//     CPU-side cache and does not re-hit on swap-in.
//   - V0 chunked prefill with prefix caching follows 0.6 (the budget pays
//     for cached tokens too; a chunk that does not fit is cut to whole
//     blocks); vLLM 0.5.4 cannot serve that combination at all.
//   - V1 keeps one block as vLLM's null block (PR #14097, since 0.8.3), so
//     requests hold at most NumGPUBlocks-1; usage and Stats leave it out,
//     as vLLM does since it subtracts the null block in get_usage (0.8.5
//     still counted it: an idle engine reported 1/NumGPUBlocks).
//   - Generated tokens get IDs unique to their request, so only the request
//     itself (after a preemption) can hit blocks holding its output.
//   - V1 with pipeline parallelism may preempt a request that a batch in
//     flight is computing; that batch's output for it is dropped when the
//     batch returns, and the request recomputes from scratch.
//   - Not modelled: n>1/beam search, LoRA, priority scheduling, speculative
//     decoding, long_prefill_token_threshold and partial-prefill limits,
//     V1's watermark, encoder inputs.
package engine

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/servebench/servebench/internal/option"
	"github.com/servebench/servebench/perf"
)

// Version selects the vLLM engine generation whose scheduler is modelled.
type Version string

const (
	// V0 is the 0.5/0.6 scheduler: waiting/running/swapped queues,
	// prefill-first unless chunked prefill is on, whole-prompt KV
	// reservation, watermark, swap or recompute preemption.
	V0 Version = "v0"
	// V1 is the unified scheduler: one token budget, chunked prefill always,
	// KV allocated only for what is computed, recompute-only preemption,
	// prefix caching with a free-block LRU queue.
	V1 Version = "v1"
)

// PreemptionMode is vLLM's --preemption-mode. "" is vLLM's default, which is
// recompute for single-sequence requests (the only kind modelled). "swap"
// forces swapping to CPU; any other value means recompute, as in vLLM.
type PreemptionMode string

const (
	PreemptRecompute PreemptionMode = "recompute"
	PreemptSwap      PreemptionMode = "swap"
)

// Config is the subset of vLLM's SchedulerConfig and CacheConfig the engine
// models. The caller resolves vLLM's defaults (they depend on the version
// and the GPU); the engine applies exactly what it is given.
type Config struct {
	Version              Version
	BlockSize            int // tokens per KV block (16)
	NumGPUBlocks         int
	NumCPUBlocks         int // swap space in blocks (V0 only)
	MaxNumSeqs           int // 256
	MaxNumBatchedTokens  int
	MaxModelLen          int
	EnableChunkedPrefill bool // V0 only; V1 always chunks
	EnablePrefixCaching  bool
	PreemptionMode       PreemptionMode
	SchedulerDelayFactor float64 // V0 only
	// Watermark is the fraction of GPU blocks V0 keeps free when admitting
	// or swapping in (vLLM default 0.01). V1 ignores it.
	Watermark float64
	// LegacyRequeueOrder selects vLLM ≤0.5.4's order for re-queueing the
	// running queue under V0 chunked prefill (new prefills first), from
	// before PR #7874. It changes which request preemption picks.
	LegacyRequeueOrder bool
	// PipelineParallel is pipeline_parallel_size; 0 and 1 mean one stage.
	// With P stages vLLM keeps up to P batches in flight, one per stage.
	// V0 runs P virtual engines: each is a whole scheduler with 1/P of the
	// GPU and CPU blocks and its own max_num_seqs, and a new request joins
	// the one with the fewest unfinished requests. V1 keeps one scheduler
	// and a queue of P batches (step_with_batch_queue): a request whose
	// remaining tokens are all in flight is skipped until its batch returns.
	PipelineParallel int
	// Logger, if set, receives vLLM's scheduler warnings (ignored prompts,
	// every 50th preemption). nil logs nothing.
	Logger *slog.Logger
	// PromptIDs, if set, gives the token IDs of a request added with
	// DeferredPrompt when prefix caching first needs them (at its first
	// admission), so a queue of waiting requests holds none. The IDs must
	// stay unchanged until the request finishes, is rejected or aborted.
	PromptIDs func(id uint64) []int32
	// OmitRunTokens makes Complete leave out the Output of a request whose
	// token only continues its run: it got a token in the previous Complete
	// too, is not finished, and has no cached tokens to report. Every
	// Output then gives TokenGap, so a driver that numbers its Completes
	// (as Stats.Steps does) knows where the run that a reported token ends
	// or breaks stopped. The simulator sets it: most of its outputs said
	// only "one more token".
	OmitRunTokens bool
}

// Validate checks the configuration the way vLLM's SchedulerConfig and
// CacheConfig do, with vLLM's messages where vLLM has one.
func (c Config) Validate() error {
	switch c.Version {
	case V0, V1:
	default:
		return fmt.Errorf("engine version %q is not supported; use %q or %q", c.Version, V0, V1)
	}
	if c.BlockSize <= 0 {
		return fmt.Errorf("block_size (%d) must be a positive number of tokens; vLLM uses 8, 16 or 32", c.BlockSize)
	}
	if c.NumGPUBlocks <= 0 {
		return errors.New("No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when initializing the engine.")
	}
	if c.NumCPUBlocks < 0 {
		return fmt.Errorf("num_cpu_blocks (%d) must not be negative; set swap_space to 0 or more GiB", c.NumCPUBlocks)
	}
	if c.MaxModelLen <= 0 {
		return fmt.Errorf("max_model_len (%d) must be a positive number of tokens", c.MaxModelLen)
	}
	if c.MaxNumSeqs <= 0 {
		return fmt.Errorf("max_num_seqs (%d) must be a positive number of sequences", c.MaxNumSeqs)
	}
	if c.MaxNumBatchedTokens <= 0 {
		return fmt.Errorf("max_num_batched_tokens (%d) must be a positive number of tokens", c.MaxNumBatchedTokens)
	}
	if c.Version == V0 && !c.EnableChunkedPrefill && c.MaxNumBatchedTokens < c.MaxModelLen {
		return fmt.Errorf("max_num_batched_tokens (%d) is smaller than max_model_len (%d). "+
			"This effectively limits the maximum sequence length to max_num_batched_tokens "+
			"and makes vLLM reject longer sequences. Please increase max_num_batched_tokens "+
			"or decrease max_model_len.", c.MaxNumBatchedTokens, c.MaxModelLen)
	}
	if c.MaxNumBatchedTokens < c.MaxNumSeqs {
		return fmt.Errorf("max_num_batched_tokens (%d) must be greater than or equal to max_num_seqs (%d).",
			c.MaxNumBatchedTokens, c.MaxNumSeqs)
	}
	if c.PipelineParallel < 0 {
		return fmt.Errorf("pipeline_parallel_size (%d) must be at least 1", c.PipelineParallel)
	}
	if c.OmitRunTokens && c.Version == V0 && c.PipelineParallel > 1 {
		// Each virtual engine counts its own Completes.
		return errors.New("OmitRunTokens does not work with V0 pipeline parallelism")
	}
	if c.Watermark < 0 || c.Watermark >= 1 {
		return fmt.Errorf("watermark (%g) must be a fraction of GPU blocks in [0, 1); vLLM's default is 0.01", c.Watermark)
	}
	if c.SchedulerDelayFactor < 0 {
		return fmt.Errorf("scheduler_delay_factor (%g) must not be negative", c.SchedulerDelayFactor)
	}
	if c.Version == V1 {
		if c.PreemptionMode == PreemptSwap {
			return option.New("preemption_mode=swap requires {engine} v0: vLLM's V1 engine only preempts by recompute " +
				"and falls back to V0 when {preemption_mode} is set")
		}
		if c.SchedulerDelayFactor > 0 {
			return option.New("scheduler_delay_factor requires {engine} v0: vLLM's V1 scheduler has no delay factor " +
				"and falls back to V0 when it is set")
		}
	}
	return nil
}

// Request is one request as the engine sees it.
type Request struct {
	ID uint64
	// Prompt holds token IDs; it is needed for prefix caching. nil means
	// PromptLen tokens that share no prefix with anything. The engine keeps
	// a reference and never modifies it.
	Prompt    []int32
	PromptLen int // used when Prompt is nil; otherwise len(Prompt)
	// DeferredPrompt says the request's PromptLen IDs exist but come from
	// Config.PromptIDs when needed (only with Prompt nil).
	DeferredPrompt bool
	// MaxTokens is the number of output tokens to generate; the engine
	// generates exactly this many (ignore_eos).
	MaxTokens int
	// RemotePromptTokens is how many leading prompt tokens arrive with
	// their KV already computed, moved in by a KV-transfer connector from a
	// prefill instance (vLLM V1's get_num_new_matched_tokens). At the
	// request's first admission the V1 scheduler allocates their blocks but
	// charges only the rest of the prompt to the token budget; the last
	// prompt token is always computed (at most PromptLen-1 count). A
	// preempted request recomputes everything, as vLLM does once the
	// connector has loaded. V0's scheduler charges the whole prompt, as
	// vLLM V0 does (its connector only bypasses the model's forward pass).
	RemotePromptTokens int
	// Arrival is on the driver's clock; it orders nothing (the waiting queue
	// is FIFO in Add order) but feeds V0's scheduler_delay_factor.
	Arrival time.Duration
}

// Output is what one step did for one request.
type Output struct {
	ID           uint64
	NewTokens    int // tokens produced by this step (0 for a partial prefill chunk)
	NumGenerated int // total output tokens so far
	// CachedTokens is the prefix-cache hit of the request's first
	// scheduling, set on its first output (vLLM's num_cached_tokens).
	CachedTokens int
	Finished     bool
	// TokenGap, with Config.OmitRunTokens, is how many Completes ago the
	// request got its previous token (1: the previous one), 0 if it has
	// none; set on outputs with a new token and on rejected ones (for
	// those, the latest token). Without OmitRunTokens it is 0.
	TokenGap int32
	// Err is non-nil when the engine gave up on the request (Finished is
	// then true): vLLM's FINISHED_IGNORED reasons (errors.Is ErrIgnored) or
	// the engine's death (errors.Is ErrNoSwapSpace).
	Err error
}

// FinishedDecodes is the step V0's async output processing runs when no
// other step follows a step whose outputs are outs: one more decode of
// every sequence that finished there without an error, over its prompt and
// generated tokens (vLLM 0.6's scheduler: "With async postprocessor, an
// extra decode run is done to process the final tokens"). promptLen gives
// a request's prompt length, or false for one no longer tracked.
func FinishedDecodes(outs []Output, promptLen func(id uint64) (int, bool)) perf.StepShape {
	var s perf.StepShape
	for i := range outs {
		o := &outs[i]
		if !o.Finished || o.Err != nil {
			continue
		}
		if p, ok := promptLen(o.ID); ok {
			s.AddDecode(p + o.NumGenerated)
		}
	}
	return s
}

// Stats is a snapshot of the engine's gauges and cumulative counters.
type Stats struct {
	Running, Waiting, Swapped                                    int
	GPUBlocksUsed, GPUBlocksTotal, CPUBlocksUsed, CPUBlocksTotal int
	// PrefixQueries and PrefixHits count tokens looked up in and found in
	// the prefix cache at each request's first admission (vLLM's
	// prefix_cache_queries/hits; re-admissions after preemption excluded).
	PrefixQueries, PrefixHits int64
	Preemptions               int64
	Steps                     int64
	// PromptTokens follows vLLM's prompt_tokens counter: V0 counts the
	// prefill tokens each step scheduled (re-prefills after recompute
	// included); V1 counts a request's prompt length when its first token
	// is produced. GenerationTokens counts sampled tokens.
	PromptTokens, GenerationTokens int64
}

// ErrIgnored is matched (errors.Is) by every Output.Err for a request the
// scheduler gave up on (vLLM's FINISHED_IGNORED).
var ErrIgnored = errors.New("request ignored by the scheduler")

// ErrNoSwapSpace is vLLM's fatal error when a swap preemption finds no free
// CPU blocks: the engine dies and every request fails with it.
var ErrNoSwapSpace = errors.New("Aborted due to the lack of CPU swap space. Please increase the swap space to avoid this error.")

// ErrBadRequest is matched (errors.Is) by the errors Add returns for a
// request vLLM's API would reject with HTTP 400.
var ErrBadRequest = errors.New("bad request")

type ignoredError struct{ msg string }

func (e *ignoredError) Error() string        { return e.msg }
func (e *ignoredError) Is(target error) bool { return target == ErrIgnored }

type badRequestError struct{ msg string }

func (e *badRequestError) Error() string        { return e.msg }
func (e *badRequestError) Is(target error) bool { return target == ErrBadRequest }

// Step is one scheduling decision. It belongs to the engine and is valid
// until the next Schedule; pass it to Complete once the driver's clock has
// advanced by the step's duration.
type Step struct {
	// Shape is what the step computes; Shape.Tokens()==0 means nothing to run.
	Shape perf.StepShape
	// Rejected lists requests the scheduler gave up on while scheduling
	// (FINISHED_IGNORED, or all requests when the engine died), each with
	// Err set and Finished true.
	Rejected []Output

	entries  []entry
	inFlight bool // a pipeline batch between Schedule and Complete
	// decodeHits sums the decodes' prefix-cache hit tokens: their reads
	// of blocks another request computed (Shape.SharedDecodeContext).
	decodeHits int64
}

// Empty reports that the step has nothing to run: wait for an arrival.
func (s *Step) Empty() bool { return s.Shape.Tokens() == 0 }

// Seqs is the number of sequences the step computes.
func (s *Step) Seqs() int { return len(s.entries) }

// entry is one sequence's part of a step. Its counts are int32 (a
// sequence holds at most max_model_len tokens) so an entry takes half a
// cache line: a step's entries, its sequences and its outputs are walked
// on every step and together outgrow the L1 cache.
type entry struct {
	s       *sequence
	gen     uint32
	tokens  int32 // tokens computed this step
	ctx     int32 // tokens already computed before the step
	charged int32 // tokens charged to the token budget (V0 counts prefix hits)
	prefill bool
}
