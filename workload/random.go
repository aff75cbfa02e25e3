package workload

import (
	"fmt"
	"math"
)

// random is vLLM's RandomDataset: lengths uniform around the wanted ones, one
// shared random prefix, and a body of consecutive allowed IDs starting at a
// random offset, so prompts differ without costing a draw per token.
func (b *builder) random() ([]Request, error) {
	o := b.spec.Random
	if !o.useLengths() {
		if err := o.checkMinInput(b.numSpecial); err != nil {
			return nil, err
		}
	}
	vocab, allowed, err := b.vocabulary()
	if err != nil {
		return nil, err
	}
	n := b.spec.NumPrompts
	inputLens := make([]int, n)
	outputLens := make([]int, n)
	if o.useLengths() {
		// Lengths from a file draw nothing: the offsets and the prefix
		// come from the stream's start.
		for i := range n {
			inputLens[i], outputLens[i] = o.requestLength(i, b.numSpecial)
		}
	} else {
		// Drawn in vLLM's order: all input lengths, all output lengths,
		// all offsets, then the prefix.
		inLow, inHigh, outLow, outHigh := o.lengthRanges(b.numSpecial)
		for i := range inputLens {
			inputLens[i] = inLow + b.rng.IntN(inHigh-inLow+1)
		}
		for i := range outputLens {
			outputLens[i] = outLow + b.rng.IntN(outHigh-outLow+1)
		}
	}
	offsets := make([]int, n)
	for i := range offsets {
		offsets[i] = b.rng.IntN(vocab)
	}
	prefix := make([]int, o.PrefixLen)
	b.randomIDs(prefix, allowed)

	reqs := make([]Request, n)
	if b.tok == nil {
		// One backing array for every prompt: one allocation instead of n.
		total := 0
		for _, l := range inputLens {
			total += o.PrefixLen + l
		}
		slab := make([]int32, total)
		for i := range reqs {
			if err := b.canceled(); err != nil {
				return nil, err
			}
			size := o.PrefixLen + inputLens[i]
			ids := slab[:size:size]
			slab = slab[size:]
			narrowIDs(ids[:o.PrefixLen], prefix)
			fillSequential(ids[o.PrefixLen:], allowed, offsets[i]+i)
			reqs[i] = Request{PromptIDs: ids, PromptLen: size, MaxTokens: outputLens[i]}
		}
		return reqs, nil
	}

	// Each prompt is a few tokenizer round trips in a row (decode, encode,
	// and again after padding or truncating): made several at once, with
	// padding from the prompt's own random stream.
	err = b.eachPrompt(n, func(i int) error {
		target := o.PrefixLen + inputLens[i]
		seq := make([]int, target)
		copy(seq, prefix)
		fillSequential(seq[o.PrefixLen:], allowed, offsets[i]+i)
		text, ids, err := b.converge(paddingRand(b.spec.Seed, i), seq, target, allowed)
		if err != nil {
			return fmt.Errorf("workload: random prompt %d: %w", i, err)
		}
		reqs[i] = Request{Prompt: text, PromptLen: len(ids), MaxTokens: outputLens[i]}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return reqs, nil
}

// fillSequential sets dst[k] = allowed[(start+k) % len(allowed)], copying
// whole runs of allowed rather than indexing token by token.
func fillSequential[T tokenID](dst []T, allowed []int, start int) {
	from := start % len(allowed)
	for i := range dst {
		dst[i] = T(allowed[from])
		if from++; from == len(allowed) {
			from = 0
		}
	}
}

// randomPrompts holds what random token-ID prompts without a tokenizer are
// made of, so that a workload of millions of requests need not hold their
// IDs all at once. Without a tokenizer no ID is special, so the allowed IDs
// are 0..vocab-1 and a body is counted out rather than read from a table
// (one too large to stay in cache: reading it was a sixth of a simulation).
type randomPrompts struct {
	prefix []int32
	vocab  int
}

func newRandomPrompts(prefix []int, vocab int) *randomPrompts {
	p := &randomPrompts{prefix: make([]int32, len(prefix)), vocab: vocab}
	narrowIDs(p.prefix, prefix)
	return p
}

// fill writes into ids the prompt of len(ids) tokens whose body starts at
// start.
func (p *randomPrompts) fill(ids []int32, start int) []int32 {
	n := len(ids)
	copy(ids, p.prefix)
	id := int32(start)
	for i := len(p.prefix); i < n; i++ {
		ids[i] = id
		if id++; int(id) == p.vocab {
			id = 0
		}
	}
	return ids
}

// buildIn is the IDs of a prompt of n tokens whose body starts at start,
// in a buffer from free.
func (p *randomPrompts) buildIn(free *promptBuffers, n, start int) []int32 {
	if n < len(p.prefix) {
		return nil
	}
	return p.fill(free.get(n), start)
}

// lengthRanges are vLLM's bounds on input and output lengths: the wanted
// ones ± RangeRatio, the input's less the special tokens the tokenizer
// adds, and at least one output token.
func (o RandomOptions) lengthRanges(numSpecial int) (inLow, inHigh, outLow, outHigh int) {
	r := o.RangeRatio
	real := max(0, o.InputLen-numSpecial)
	inLow = int(math.Floor(float64(real) * (1 - r)))
	inHigh = int(math.Ceil(float64(real) * (1 + r)))
	outLow = max(1, int(math.Floor(float64(o.OutputLen)*(1-r))))
	outHigh = max(1, int(math.Ceil(float64(o.OutputLen)*(1+r))))
	return inLow, inHigh, outLow, outHigh
}
