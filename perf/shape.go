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
