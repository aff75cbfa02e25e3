package workload

// prefixRepetition is vLLM's PrefixRepetitionRandomDataset: NumPrefixes
// random prefixes, NumPrompts/NumPrefixes prompts each (a random suffix after
// the prefix), shuffled so that prompts sharing a prefix are not adjacent.
//
// Unlike vLLM, IDs are drawn from the non-special IDs (vLLM draws from the
// whole vocabulary and so can put EOS inside a prompt), and with a tokenizer
// the whole prompt, not only each part, is corrected to exactly
// PrefixLen+SuffixLen tokens.
func (b *builder) prefixRepetition() ([]Request, error) {
	o := b.spec.PrefixRepetition
	_, allowed, err := b.vocabulary()
	if err != nil {
		return nil, err
	}
	perPrefix := b.spec.NumPrompts / o.NumPrefixes
	size := o.PrefixLen + o.SuffixLen
	reqs := make([]Request, 0, perPrefix*o.NumPrefixes)
	var slab []int32
	var seq []int
	if b.tok == nil {
		slab = make([]int32, perPrefix*o.NumPrefixes*size)
	}
	for range o.NumPrefixes {
		prefix := make([]int, o.PrefixLen)
		b.randomIDs(prefix, allowed)
		if b.tok != nil && o.PrefixLen > 0 {
			// A prefix that already round-trips keeps the shared text stable
			// across all its prompts.
			if _, prefix, err = b.converge(b.rng, prefix, o.PrefixLen, allowed); err != nil {
				return nil, err
			}
		}
		for range perPrefix {
			if err := b.canceled(); err != nil {
				return nil, err
			}
			if b.tok == nil {
				ids := slab[:size:size]
				slab = slab[size:]
				narrowIDs(ids[:o.PrefixLen], prefix)
				fillRandom(b.rng, ids[o.PrefixLen:], allowed)
				reqs = append(reqs, Request{PromptIDs: ids, PromptLen: size, MaxTokens: o.OutputLen})
				continue
			}
			seq = append(seq[:0], prefix...)
			seq = append(seq, make([]int, o.SuffixLen)...)
			b.randomIDs(seq[len(prefix):], allowed)
			text, ids, err := b.converge(b.rng, seq, size, allowed)
			if err != nil {
				return nil, err
			}
			reqs = append(reqs, Request{Prompt: text, PromptLen: len(ids), MaxTokens: o.OutputLen})
		}
	}
	b.rng.Shuffle(len(reqs), func(i, j int) { reqs[i], reqs[j] = reqs[j], reqs[i] })
	return reqs, nil
}
