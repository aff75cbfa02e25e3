package serve

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/servebench/servebench/tokenizer"
)

// TestGeneratedTextTokenizesBack: for every built-in encoding, generated
// text of n tokens encodes back to exactly n tokens, for many lengths,
// seeds and offsets (a stream's chunks concatenate to the same text).
func TestGeneratedTextTokenizesBack(t *testing.T) {
	ctx := context.Background()
	for _, name := range []string{"cl100k_base", "o200k_base", "r50k_base", "p50k_base"} {
		t.Run(name, func(t *testing.T) {
			tok := cl100k(t)
			if name != "cl100k_base" {
				var err error
				if tok, err = tokenizer.New(ctx, name, tokenizer.Options{}); err != nil {
					t.Fatal(err)
				}
			}
			g, err := newTextGen(ctx, tok)
			if err != nil {
				t.Fatal(err)
			}
			if len(g.words) < len(candidateWords)*3/4 {
				t.Errorf("only %d of %d words are single tokens", len(g.words), len(candidateWords))
			}
			rng := rand.New(rand.NewPCG(1, 2))
			for range 50 {
				seed, n := rng.Uint64(), 1+rng.IntN(400)
				whole := g.appendText(nil, seed, 0, n)
				split := 1 + rng.IntN(n)
				parts := g.appendText(g.appendText(nil, seed, 0, split), seed, split, n-split)
				if string(whole) != string(parts) {
					t.Fatalf("chunked text differs from the whole")
				}
				ids, err := tok.Encode(ctx, string(whole))
				if err != nil {
					t.Fatal(err)
				}
				if len(ids) != n {
					t.Fatalf("seed %d: %d tokens of text encode to %d tokens: %q", seed, n, len(ids), whole)
				}
			}
		})
	}
}

func TestGeneratedTextDeterministic(t *testing.T) {
	g, err := newTextGen(context.Background(), cl100k(t))
	if err != nil {
		t.Fatal(err)
	}
	text := func(seed uint64) string { return string(g.appendText(nil, seed, 0, 20)) }
	a, b := text(42), text(42)
	if a != b {
		t.Fatalf("same seed gave %q and %q", a, b)
	}
	if c := text(43); c == a {
		t.Fatalf("different seeds gave the same text %q", a)
	}
}

// wordTokenizer splits on nothing: every byte is a token, so no word is a
// single token and newTextGen must refuse it.
type byteTokenizer struct{}

func (byteTokenizer) Encode(_ context.Context, s string) ([]int, error) {
	ids := make([]int, len(s))
	for i := range s {
		ids[i] = int(s[i])
	}
	return ids, nil
}
func (byteTokenizer) Decode(_ context.Context, ids []int) (string, error) {
	b := make([]byte, len(ids))
	for i, id := range ids {
		b[i] = byte(id)
	}
	return string(b), nil
}
func (byteTokenizer) VocabSize() int    { return 256 }
func (byteTokenizer) SpecialIDs() []int { return nil }
func (byteTokenizer) Name() string      { return "bytes" }

func TestTextGenRejectsUnsuitableTokenizer(t *testing.T) {
	_, err := newTextGen(context.Background(), byteTokenizer{})
	if err == nil {
		t.Fatal("a byte tokenizer was accepted")
	}
	want := "tokenizer bytes holds only 0 of 150 common words as single tokens (need 16) so generated text could not tokenize back to its reported length; use a byte-level BPE tokenizer such as cl100k_base"
	if err.Error() != want {
		t.Errorf("error\n got %q\nwant %q", err, want)
	}
}
