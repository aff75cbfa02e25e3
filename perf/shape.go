package perf

import "time"

// StepShape is everything a step-time model needs to know about one engine
// step. The engine fills it; it knows nothing about time.
type StepShape struct {
	// PrefillTokens is the number of new prompt tokens computed this step
	// (Σ p_i over prefill chunks).
	PrefillTokens int
	// Prefills is the number of prefill chunks; PrefillsDone of them finish
	// their prompt this step (and so sample a token).
	Prefills     int
	PrefillsDone int
	// Decodes is the number of sequences decoding one token this step.
	Decodes int
	// AttnPairs is the number of causal (query, key) pairs attention
	// computes: Σ_i (p_i·c_i + p_i(p_i+1)/2) + Σ_j ℓ_j, where c_i is the
	// context already cached before chunk i and ℓ_j a decode's context.
	AttnPairs int64
	// DecodeContext is Σ_j ℓ_j, the decodes' share of AttnPairs: the
	// cached tokens decode attention reads.
	DecodeContext int64
	// MaxDecodeContext is the longest ℓ_j: V0 replays a decode step from
	// a CUDA graph only while every sequence's length (ℓ_j+1) is at most
	// max_seq_len_to_capture.
	MaxDecodeContext int
	// SharedDecodeContext is the part of DecodeContext read from KV
	// blocks that more than one running request holds (a cached prefix),
	// counting each block's readers beyond the first: reads a decode
	// kernel can take from L2 rather than HBM while the shared blocks fit
	// in it (Roofline; doc.go, "Shared prefix blocks").
	SharedDecodeContext int64
	// SharedPrefixTokens is the tokens of those shared blocks, each
	// counted once: their footprint in L2, per layer.
	SharedPrefixTokens int64
	// KVTokens is the number of KV entries read or written:
	// Σ_i (c_i+p_i) + Σ_j (ℓ_j+1).
	KVTokens int64
	// SwapInBlocks and SwapOutBlocks are KV blocks copied between GPU and
	// CPU this step (V0 swap preemption).
	SwapInBlocks  int
	SwapOutBlocks int
}

// Tokens is the number of tokens the forward pass processes.
func (s StepShape) Tokens() int { return s.PrefillTokens + s.Decodes }

// AddDecode adds one sequence decoding a token over context cached
// tokens, as the engine counts it.
func (s *StepShape) AddDecode(context int) {
	s.Decodes++
	s.AttnPairs += int64(context)
	s.DecodeContext += int64(context)
	s.MaxDecodeContext = max(s.MaxDecodeContext, context)
	s.KVTokens += int64(context) + 1
}

// StepModel predicts the duration of one engine step.
type StepModel interface {
	StepTime(s StepShape) time.Duration
}

// HostAwareModel is a step model that also says whether host (CPU) work,
// not the GPU, set a step's duration (vllm.HostStepModel).
type HostAwareModel interface {
	StepModel
	StepTimeHost(s StepShape) (time.Duration, bool)
}

// OutputLoopModel is a step model whose release streams a step's outputs
// from an API server apart from the engine: the server's one event loop
// works through each step's outputs (detokenization, response objects,
// SSE) after the step ends, and a chunk reaches the client only when the
// loop gets to it. OutputLoopTime is that work for a step of shape s, and
// the part of it spent on the requests whose first token the step
// sampled (vllm.HostStepModel.OutputLoopTime).
type OutputLoopModel interface {
	OutputLoopTime(s StepShape) (all, firstTokens time.Duration)
}

// outputLoopTimeOf is m's OutputLoopTime when m is an OutputLoopModel, and
// no work otherwise: what a step model that wraps m forwards.
func outputLoopTimeOf(m StepModel, s StepShape) (all, firstTokens time.Duration) {
	if l, ok := m.(OutputLoopModel); ok {
		return l.OutputLoopTime(s)
	}
	return 0, 0
}

// OutputLoop is the event loop of such an API server: it takes each
// step's outputs once it is through the earlier ones. The zero value, or
// one over a model that is no OutputLoopModel, is no such server: outputs
// go out as their step ends. sim and serve time chunks through it alike.
type OutputLoop struct {
	model OutputLoopModel
	free  time.Duration // when the loop is through the outputs handed to it
}

// NewOutputLoop is m's API server loop (none unless m is an
// OutputLoopModel).
func NewOutputLoop(m StepModel) OutputLoop {
	l, _ := m.(OutputLoopModel)
	return OutputLoop{model: l}
}

// OutputWork is the loop's work on a step's outputs, and the part of it
// on the requests whose first token the step sampled.
type OutputWork struct{ All, FirstTokens time.Duration }

// Finished is the part of w on k of the step's n outputs, when only the
// requests an open multi-step group finished go out (none of them a first
// token); all of w when k ≥ n.
func (w OutputWork) Finished(k, n int) OutputWork {
	if k >= n {
		return w
	}
	return OutputWork{All: w.All * time.Duration(k) / time.Duration(n)}
}

// Work is the loop's work on the outputs of a step of shape s.
func (l *OutputLoop) Work(s StepShape) OutputWork {
	if l.model == nil {
		return OutputWork{}
	}
	all, first := l.model.OutputLoopTime(s)
	return OutputWork{all, first}
}

// Through hands the loop a step's outputs at now and returns when their
// chunks go out: the running requests' and the new requests' first
// tokens. The engine lists the new requests last (V1's scheduler
// schedules the running requests first, and its outputs keep that order;
// a V0 step that prefills holds only new requests), so a running
// request's chunk goes out, on average, halfway through the running
// requests' work, and a first token once the loop is through that and
// half of the new ones' [approximation: positions within each group are
// taken at their mean].
func (l *OutputLoop) Through(now time.Duration, w OutputWork) (chunks, firstTokens time.Duration) {
	if l.model == nil {
		return now, now
	}
	start := max(now, l.free)
	l.free = start + w.All
	return start + (w.All-w.FirstTokens)/2, l.free - w.FirstTokens/2
}

// LaunchTimer is a step model that also says how long the host works on
// a step before the engine loop gets control back when the step does not
// wait for the GPU, as a multi-step group's intermediate steps do not:
// its scheduling and input preparation and the previous step's output
// processing (vllm.HostStepModel.LaunchTime).
type LaunchTimer interface {
	LaunchTime(s StepShape) time.Duration
}

// LaunchTime is m's launch time for s when m is a LaunchTimer, else zero
// (the engine loop gets control back as soon as the step is launched).
func LaunchTime(m StepModel, s StepShape) time.Duration {
	if l, ok := m.(LaunchTimer); ok {
		return l.LaunchTime(s)
	}
	return 0
}
