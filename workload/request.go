// Package workload builds the list of requests a run sends: the prompts
// (random, sonnet, sharegpt, custom JSONL, prefix-repetition), their output
// lengths, and the open-loop arrival schedule, all from one seed.
//
// # Reproducibility
//
// Every random choice comes from a *rand.Rand (math/rand/v2, PCG) seeded with
// Spec.Seed or Arrivals.Seed, so the same seed, options, input file and
// tokenizer give the same []Request and the same schedule, byte for byte, on
// every platform. The streams are not numpy's or Python's: servebench follows
// vLLM's sampling rules exactly, but it cannot reproduce the very prompts a
// vLLM run with the same --seed would draw.
//
// # Token counts
//
// With a tokenizer, lengths are counted with it: Encode never adds special
// tokens, and when the tokenizer also implements SpecialTokenCounter the
// text datasets add NumSpecialTokensToAdd to each count and the random
// dataset subtracts it from the wanted length, as vLLM does. Without a
// tokenizer, random and prefix_repetition prompts are sent as token-ID arrays
// (Request.PromptIDs) over [0, Spec.VocabSize), so their lengths are exact;
// the text datasets (sonnet, sharegpt, custom) estimate each length as
// ceil(UTF-8 bytes / 4), the usual rule of thumb for English text, and set
// Request.PromptLenEstimated.
package workload

import "time"

// Request is one prompt of a workload with its scheduled arrival.
type Request struct {
	// Index is the request's position in the workload, from 0.
	Index int
	// Prompt is the text sent. When PromptIDs is set and Prompt is empty the
	// request is sent as a token-ID array (completions endpoint only), which
	// keeps input lengths exact when no tokenizer is available.
	Prompt    string
	PromptIDs []int32
	// PromptLen is the number of input tokens of the prompt as built: the
	// length after the decode/re-encode correction for random prompts, the
	// tokenizer's count for text datasets, or an estimate (see
	// PromptLenEstimated).
	PromptLen int
	// PromptLenEstimated reports that PromptLen (and, for sharegpt, MaxTokens)
	// was estimated from the text's size because no tokenizer was given.
	PromptLenEstimated bool
	// MaxTokens is max_tokens for the request.
	MaxTokens int
	// Arrival is the scheduled send time, as an offset from the run start.
	Arrival time.Duration
}
