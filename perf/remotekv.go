package perf

import "time"

// RemoteKV times the steps of a decode instance under vLLM V0's connectors:
// V0's scheduler schedules a request whose KV came from a prefill instance
// as a whole-prompt prefill, but the connector bypasses the forward pass
// for the transferred tokens (bypass_model_exec), so each prefill chunk
// costs what one token attending over its whole context costs. (V1 needs no
// wrapper: its scheduler counts transferred tokens as computed, see
// engine.Request.RemotePromptTokens.)
type RemoteKV struct {
	Inner  StepModel
	Stages int // pipeline stages, for StageTime
}

// StepTime times the step as RemoteKVShape reshapes it.
func (m RemoteKV) StepTime(s StepShape) time.Duration { return m.Inner.StepTime(RemoteKVShape(s)) }

// RemoteKVShape turns every prefill chunk of s into one decode over its
// context: AttnPairs becomes Σ(c_i+p_i) + Σℓ_j = KVTokens − Decodes.
func RemoteKVShape(s StepShape) StepShape {
	if s.Prefills == 0 {
		return s
	}
	decodes := s.Decodes
	s.AttnPairs = s.KVTokens - int64(decodes)
	s.Decodes = decodes + s.Prefills
	s.PrefillTokens, s.Prefills, s.PrefillsDone = 0, 0, 0
	return s
}

// OutputLoopTime forwards the inner model's API server work on the step's
// outputs (OutputLoopModel) as the engine gives them: the shape is not
// reshaped, as a transferred request's first token is a new request's.
func (m RemoteKV) OutputLoopTime(s StepShape) (all, firstTokens time.Duration) {
	return outputLoopTimeOf(m.Inner, s)
}

// StageTime implements StageModel for pipeline-parallel decode instances.
func (m RemoteKV) StageTime(s StepShape) time.Duration {
	return StageTime(m.Inner, RemoteKVShape(s), m.Stages)
}
