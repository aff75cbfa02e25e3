package workload

import (
	"context"
	"fmt"
	"slices"
)

// greedyTokenizer is a deterministic byte-level tokenizer with a few
// multi-byte pieces, encoded by greedy longest match. Like real BPE
// tokenizers it does not round-trip arbitrary ID sequences: decoding 't','h'
// and re-encoding gives the single piece "th", which is what vLLM's
// decode/re-encode correction exists for.
type greedyTokenizer struct {
	pieces  []string
	index   map[string]int
	special []int
	maxLen  int
	// byteID and startsPiece make single bytes a table lookup; only bytes
	// that begin a multi-byte piece go through the map.
	byteID      [256]int
	startsPiece [256]bool
	// numSpecial, when > 0, is reported through SpecialTokenCounter.
	numSpecial int
}

var _ SpecialTokenCounter = (*countingSpecialTokenizer)(nil)

// countingSpecialTokenizer is a greedyTokenizer that reports a BOS token.
type countingSpecialTokenizer struct{ *greedyTokenizer }

func (t countingSpecialTokenizer) NumSpecialTokensToAdd() int { return t.numSpecial }

func newGreedyTokenizer() *greedyTokenizer {
	t := &greedyTokenizer{index: map[string]int{}}
	add := func(p string) {
		if _, ok := t.index[p]; ok {
			return
		}
		t.index[p] = len(t.pieces)
		t.pieces = append(t.pieces, p)
		t.maxLen = max(t.maxLen, len(p))
	}
	// Specials first, as in most vocabularies; they are never produced by
	// Encode because their text is not matched.
	t.pieces = append(t.pieces, "<s>", "</s>")
	t.special = []int{0, 1}
	for c := range 256 {
		t.byteID[c] = len(t.pieces)
		add(string([]byte{byte(c)}))
	}
	for _, p := range []string{"th", "he", "in", "er", "an", "re", "on", "at", "en", "nd",
		"the", "and", "ing", " t", " a", " th", "ou", "es", "st", "ea"} {
		t.startsPiece[p[0]] = true
		add(p)
	}
	return t
}

func (t *greedyTokenizer) Encode(ctx context.Context, text string) ([]int, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	ids := make([]int, 0, len(text)/2+1)
	for i := 0; i < len(text); {
		if !t.startsPiece[text[i]] {
			ids = append(ids, t.byteID[text[i]])
			i++
			continue
		}
		for l := min(t.maxLen, len(text)-i); l >= 1; l-- {
			if id, ok := t.index[text[i:i+l]]; ok {
				ids = append(ids, id)
				i += l
				break
			}
		}
	}
	return ids, nil
}

func (t *greedyTokenizer) Decode(ctx context.Context, ids []int) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	n := 0
	for _, id := range ids {
		if id < 0 || id >= len(t.pieces) {
			return "", fmt.Errorf("token ID %d outside the vocabulary of %d", id, len(t.pieces))
		}
		n += len(t.pieces[id])
	}
	buf := make([]byte, 0, n)
	for _, id := range ids {
		buf = append(buf, t.pieces[id]...)
	}
	return string(buf), nil
}

func (t *greedyTokenizer) VocabSize() int    { return len(t.pieces) }
func (t *greedyTokenizer) SpecialIDs() []int { return slices.Clone(t.special) }
func (t *greedyTokenizer) Name() string      { return "fake-greedy" }

// failingTokenizer fails every call, to check that errors surface.
type failingTokenizer struct{ *greedyTokenizer }

func (failingTokenizer) Encode(context.Context, string) ([]int, error) {
	return nil, fmt.Errorf("tokenizer backend down")
}
