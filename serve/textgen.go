package serve

import (
	"context"
	"fmt"

	"github.com/servebench/servebench/internal/mix"
	"github.com/servebench/servebench/tokenizer"
)

// candidateWords are common English words, each written with its leading
// space. BPE tokenizers of the GPT-2 / tiktoken / Llama-3 / Qwen family split
// text into pre-tokens at exactly these boundaries and hold every one of
// these as a single token, so a concatenation of n of them encodes back to
// exactly n tokens. newTextGen keeps only the words that hold for the
// configured tokenizer.
var candidateWords = []string{
	" the", " of", " and", " to", " in", " is", " that", " for", " it", " as",
	" was", " with", " be", " by", " on", " not", " he", " this", " are", " or",
	" his", " from", " at", " which", " but", " have", " an", " they", " you", " were",
	" her", " she", " there", " been", " one", " all", " we", " their", " has", " would",
	" when", " if", " so", " no", " will", " can", " more", " out", " who", " what",
	" up", " time", " into", " some", " only", " its", " them", " other", " new", " than",
	" then", " now", " my", " made", " like", " over", " such", " our", " man", " me",
	" even", " most", " also", " after", " did", " many", " before", " must", " through", " back",
	" years", " where", " much", " your", " way", " well", " down", " should", " because", " each",
	" just", " those", " people", " how", " too", " little", " state", " good", " very", " make",
	" world", " still", " own", " see", " men", " work", " long", " get", " here", " between",
	" both", " life", " being", " under", " never", " day", " same", " another", " know", " while",
	" last", " might", " us", " great", " old", " year", " off", " come", " since", " against",
	" go", " came", " right", " used", " take", " three", " small", " house", " light", " water",
	" place", " found", " again", " name", " part", " hand", " high", " home", " head", " left",
}

// minWords is the smallest usable vocabulary: fewer distinct words would
// still tokenize correctly, but the text would look degenerate.
const minWords = 16

// textGen produces deterministic generated text: token i of a request with
// seed s is word(mix(s, i)), so any prefix of the output is reproducible and
// the whole output tokenizes back to exactly the number of tokens reported.
type textGen struct {
	words []string
}

func newTextGen(ctx context.Context, tok tokenizer.Tokenizer) (*textGen, error) {
	g := &textGen{}
	for _, w := range candidateWords {
		ids, err := tok.Encode(ctx, w)
		if err != nil {
			return nil, fmt.Errorf("tokenizer %s: encoding the generated-text vocabulary: %w", tok.Name(), err)
		}
		if len(ids) == 1 {
			g.words = append(g.words, w)
		}
	}
	if len(g.words) < minWords {
		return nil, fmt.Errorf("tokenizer %s holds only %d of %d common words as single tokens (need %d) so generated text could not tokenize back to its reported length; use a byte-level BPE tokenizer such as cl100k_base", tok.Name(), len(g.words), len(candidateWords), minWords)
	}
	// Pre-tokenizers may still merge across word boundaries; check one
	// sample so a surprising tokenizer fails at startup, not in a client.
	sample := g.appendText(nil, 1, 0, 4*len(g.words))
	ids, err := tok.Encode(ctx, string(sample))
	if err != nil {
		return nil, fmt.Errorf("tokenizer %s: encoding generated text: %w", tok.Name(), err)
	}
	if len(ids) != 4*len(g.words) {
		return nil, fmt.Errorf("tokenizer %s encodes %d generated words as %d tokens, so reported token counts would not match the text; use a byte-level BPE tokenizer such as cl100k_base", tok.Name(), 4*len(g.words), len(ids))
	}
	return g, nil
}

// appendText appends the text of tokens [from, from+n) of the sequence
// identified by seed.
func (g *textGen) appendText(b []byte, seed uint64, from, n int) []byte {
	for i := from; i < from+n; i++ {
		b = append(b, g.words[mix.SplitMix64(seed+uint64(i))%uint64(len(g.words))]...)
	}
	return b
}

// hashIDs is FNV-1a over token IDs: the seed of a request's output when the
// client gives none, so the same prompt yields the same output whatever the
// arrival order.
func hashIDs(ids []int) uint64 {
	h := uint64(14695981039346656037)
	for _, id := range ids {
		v := uint64(id)
		for k := 0; k < 4; k++ {
			h ^= v & 0xff
			h *= 1099511628211
			v >>= 8
		}
	}
	return h
}
