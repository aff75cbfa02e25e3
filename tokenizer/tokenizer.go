// Package tokenizer turns text into token IDs and back without downloading
// anything: built-in BPE encodings embedded in the binary, a target server's
// /tokenize and /detokenize endpoints, or a user's HF tokenizer.json.
//
// IDs are []int here and []int32 in workload and engine, on purpose: this
// package's callers are JSON (a server's /tokenize), tiktoken-go's ranks
// and user code, all of which speak int; the simulator keeps millions of
// prompt IDs alive at once, where int32 halves the memory. workload.Build
// converts once per prompt, off the simulation loop.
package tokenizer

import "context"

// Tokenizer encodes and decodes text. Encode never adds special tokens
// (vLLM's benchmark counts with add_special_tokens=False).
// Implementations are safe for concurrent use.
type Tokenizer interface {
	Encode(ctx context.Context, text string) ([]int, error)
	Decode(ctx context.Context, ids []int) (string, error)
	// VocabSize is the number of token IDs the tokenizer can produce.
	VocabSize() int
	// SpecialIDs are IDs that random prompts must avoid (BOS, EOS, ...).
	SpecialIDs() []int
	// Name identifies the tokenizer in results (vLLM's tokenizer_id).
	Name() string
}
