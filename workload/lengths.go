package workload

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"

	"github.com/servebench/servebench/internal/option"
)

// RequestLengths is one request's prompt and output length in tokens.
type RequestLengths struct {
	Input, Output int
	// NoFirstToken: the file's client recorded no first token for this
	// request (its ttfts entry is 0 with 0 output tokens). vLLM's
	// benchmark_serving.py of 2024 took the first-token time from the
	// first chunk carrying text, so a reply of no text kept TTFT 0.0 and
	// counted 0 tokens, and both went into its means and percentiles.
	NoFirstToken bool
}

// maxRequestLength bounds a length read from a file: prompts are indexed
// with int32 (PromptRef), and no model has a context near it.
const maxRequestLength = math.MaxInt32

// lengthsFile is the part of a result JSON ParseLengths reads. The arrays'
// elements are kept raw so that a string, a null or a fraction is refused
// rather than converted; every other field (generated_texts, itls, ...) is
// skipped by the decoder without being kept.
type lengthsFile struct {
	InputLens  json.RawMessage `json:"input_lens"`
	OutputLens json.RawMessage `json:"output_lens"`
	TTFTs      json.RawMessage `json:"ttfts"`
}

// ParseLengths reads a result JSON's "input_lens" and "output_lens" arrays
// (vLLM's detailed result JSON, or servebench's); name appears in errors.
// The arrays must be of integers >= 0 and of the same length; request i
// gets input_lens[i] and output_lens[i]. An optional "ttfts" array of
// seconds, as long, marks the replies whose client recorded no first token
// (RequestLengths.NoFirstToken).
func ParseLengths(data []byte, name string) ([]RequestLengths, error) {
	data = bytes.TrimPrefix(data, []byte("\ufeff"))
	if first := firstByte(data); first != '{' {
		if first == 0 {
			return nil, fmt.Errorf("lengths file %q: empty; want a result JSON with input_lens and output_lens (vLLM's or servebench's --save-detailed)", name)
		}
		return nil, fmt.Errorf("lengths file %q: not a JSON object; want a result JSON with input_lens and output_lens (vLLM's or servebench's --save-detailed)", name)
	}
	var f lengthsFile
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("lengths file %q: %w", name, jsonProblem(err))
	}
	inputs, err := parseLengthArray(f.InputLens, "input_lens", name)
	if err != nil {
		return nil, err
	}
	outputs, err := parseLengthArray(f.OutputLens, "output_lens", name)
	if err != nil {
		return nil, err
	}
	if len(inputs) != len(outputs) {
		return nil, fmt.Errorf("lengths file %q: input_lens has %d entries but output_lens has %d; want one of each per request", name, len(inputs), len(outputs))
	}
	if len(inputs) == 0 {
		return nil, fmt.Errorf("lengths file %q: input_lens and output_lens are empty; want a run with at least one request", name)
	}
	noFirst, err := parseNoFirstToken(f.TTFTs, outputs, name)
	if err != nil {
		return nil, err
	}
	lens := make([]RequestLengths, len(inputs))
	for i := range lens {
		lens[i] = RequestLengths{Input: inputs[i], Output: outputs[i], NoFirstToken: noFirst != nil && noFirst[i]}
	}
	return lens, nil
}

// parseNoFirstToken reads the optional ttfts array: request i recorded no
// first token when ttfts[i] is 0 and it has no output tokens. nil when the
// file has no ttfts.
func parseNoFirstToken(raw json.RawMessage, outputs []int, name string) ([]bool, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var ttfts []float64
	if err := json.Unmarshal(raw, &ttfts); err != nil {
		return nil, fmt.Errorf("lengths file %q: ttfts is not an array of numbers; want each request's time to first token in seconds", name)
	}
	if len(ttfts) != len(outputs) {
		return nil, fmt.Errorf("lengths file %q: ttfts has %d entries but output_lens has %d; want one of each per request", name, len(ttfts), len(outputs))
	}
	out := make([]bool, len(ttfts))
	for i, t := range ttfts {
		if t < 0 || math.IsNaN(t) {
			return nil, fmt.Errorf("lengths file %q: ttfts[%d] = %v: a time to first token cannot be negative", name, i, t)
		}
		out[i] = t == 0 && outputs[i] == 0
	}
	return out, nil
}

// parseLengthArray reads one array of token counts.
func parseLengthArray(raw json.RawMessage, key, name string) ([]int, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, fmt.Errorf("lengths file %q: no %s array; want a detailed result JSON (vLLM's or servebench's --save-detailed)", name, key)
	}
	var elems []json.RawMessage
	if err := json.Unmarshal(raw, &elems); err != nil {
		return nil, fmt.Errorf("lengths file %q: %s is not an array; want one token count per request", name, key)
	}
	out := make([]int, len(elems))
	for i, e := range elems {
		n, err := strconv.ParseInt(string(e), 10, 64)
		switch {
		case err != nil && errors.Is(err, strconv.ErrRange), err == nil && n > maxRequestLength:
			return nil, fmt.Errorf("lengths file %q: %s[%d] = %s: too large for a token count", name, key, i, e)
		case err != nil:
			return nil, fmt.Errorf("lengths file %q: %s[%d] = %s: want a whole number of tokens", name, key, i, e)
		case n < 0:
			return nil, fmt.Errorf("lengths file %q: %s[%d] = %d: a token count cannot be negative", name, key, i, n)
		}
		out[i] = int(n)
	}
	return out, nil
}

// firstByte is data's first byte after JSON whitespace, 0 if none.
func firstByte(data []byte) byte {
	for _, c := range data {
		switch c {
		case ' ', '\t', '\r', '\n':
		default:
			return c
		}
	}
	return 0
}

// jsonProblem says where JSON decoding failed, in one line.
func jsonProblem(err error) error {
	var syn *json.SyntaxError
	if errors.As(err, &syn) {
		return fmt.Errorf("invalid JSON at byte %d: %w", syn.Offset, err)
	}
	return err
}

// readLengths reads the lengths file path, with openDataset's one-line
// errors about the file itself.
func readLengths(path string) ([]RequestLengths, error) {
	f, err := openFile(path, "lengths file", "random_lengths_from")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(f)
	if err != nil {
		return nil, &datasetError{fmt.Sprintf("lengths file %q: %v", path, err), err}
	}
	return ParseLengths(data, path)
}

// ReplayedLengths is the per-request lengths a random dataset replays
// (RandomOptions.Lengths, the file LengthsFrom names, or LengthDist
// sharegpt's draws), nil when it draws uniform lengths as it goes.
func (s Spec) ReplayedLengths() ([]RequestLengths, error) {
	if s.dataset() != DatasetRandom || !s.Random.useLengths() {
		return nil, nil
	}
	return s.Random.lengths(s.NumPrompts, s.Seed)
}

// lengths is Lengths, or else the lengths LengthsFrom names or
// LengthDist draws for n requests from seed.
func (o RandomOptions) lengths(n int, seed int64) ([]RequestLengths, error) {
	switch {
	case o.Lengths != nil:
		return o.Lengths, nil
	case o.LengthDist == LengthDistShareGPT:
		return shareGPTLengths(n, o.InputLen, o.OutputLen, seed), nil
	}
	return readLengths(o.LengthsFrom)
}

// lengthsSource names where lengths came from, for errors.
func (o RandomOptions) lengthsSource() string {
	switch {
	case o.LengthsFrom != "":
		return strconv.Quote(o.LengthsFrom)
	case o.LengthDist == LengthDistShareGPT:
		return "--random-length-dist sharegpt"
	}
	return "RandomOptions.Lengths"
}

// useLengths reports whether request lengths come from Lengths (or the
// file LengthsFrom, or LengthDist's draws) rather than straight from
// InputLen and OutputLen.
func (o RandomOptions) useLengths() bool {
	return o.Lengths != nil || o.LengthsFrom != "" || o.LengthDist == LengthDistShareGPT
}

// checkLengths checks the first n entries of Lengths: that there are n,
// and that every prompt keeps a token once the tokenizer's numSpecial
// special tokens are taken from it, as checkMinInput does for InputLen.
func (o RandomOptions) checkLengths(n, numSpecial int) error {
	if n > len(o.Lengths) {
		return option.Errorf("{num_prompts} %d but %s has %d requests; pass {num_prompts} %d or less",
			n, o.lengthsSource(), len(o.Lengths), len(o.Lengths))
	}
	for i, l := range o.Lengths[:n] {
		if l.Input < 0 || l.Output < 0 {
			return fmt.Errorf("random lengths: request %d of %s has input %d and output %d tokens: neither may be negative", i, o.lengthsSource(), l.Input, l.Output)
		}
		if l.Input > maxRequestLength || l.Output > maxRequestLength {
			return fmt.Errorf("random lengths: request %d of %s has input %d and output %d tokens: too large for a token count", i, o.lengthsSource(), l.Input, l.Output)
		}
		if total := o.PrefixLen + max(0, l.Input-numSpecial); total < 1 {
			return option.Errorf("random lengths: request %d of %s has %d input tokens: its prompt would have %d tokens "+
				"(%d special tokens, {random_prefix_len} %d); every prompt needs at least one", i, o.lengthsSource(), l.Input, total, numSpecial, o.PrefixLen)
		}
	}
	return nil
}

// requestLength is request i's body length (its tokens after the shared
// prefix, less the tokenizer's numSpecial special tokens, as for
// InputLen) and max_tokens, from Lengths.
func (o RandomOptions) requestLength(i, numSpecial int) (body, maxTokens int) {
	l := o.Lengths[i]
	// A result JSON counts 0 output tokens for a reply vLLM's client saw
	// as empty (it ended at once, e.g. on an immediate EOS); the server
	// still generated a token for it, so the replay asks for one.
	return max(0, l.Input-numSpecial), max(1, l.Output)
}

// withLengths returns s with Random.Lengths read from Random.LengthsFrom
// when only the file is named (or drawn as Random.LengthDist says), and
// checked against NumPrompts.
func (s Spec) withLengths(numSpecial int) (Spec, error) {
	if s.dataset() != DatasetRandom || !s.Random.useLengths() {
		return s, nil
	}
	if s.Random.Lengths == nil {
		lens, err := s.Random.lengths(s.NumPrompts, s.Seed)
		if err != nil {
			return s, err
		}
		s.Random.Lengths = lens
	}
	return s, s.Random.checkLengths(s.NumPrompts, numSpecial)
}
