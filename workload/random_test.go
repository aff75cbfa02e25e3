package workload

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/servebench/servebench/tokenizer"
)

func randomSpec(n, in, out int, ratio float64, prefix int) Spec {
	s := DefaultSpec()
	s.NumPrompts = n
	s.Random = RandomOptions{InputLen: in, OutputLen: out, RangeRatio: ratio, PrefixLen: prefix}
	return s
}

func TestRandomTokenIDs(t *testing.T) {
	tests := []struct {
		name string
		spec Spec
	}{
		{"fixed lengths", randomSpec(40, 64, 16, 0, 0)},
		{"range ratio 0.5", randomSpec(400, 30, 10, 0.5, 0)},
		{"shared prefix", randomSpec(40, 20, 5, 0.25, 12)},
		{"tiny vocab wraps", func() Spec { s := randomSpec(20, 50, 3, 0, 3); s.VocabSize = 7; return s }()},
		{"output floor is 1", randomSpec(200, 20, 1, 0.9, 0)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := tt.spec
			reqs, err := Build(context.Background(), s, nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(reqs) != s.NumPrompts {
				t.Fatalf("got %d requests, want %d", len(reqs), s.NumPrompts)
			}
			o := s.Random
			inLow := int(math.Floor(float64(o.InputLen) * (1 - o.RangeRatio)))
			inHigh := int(math.Ceil(float64(o.InputLen) * (1 + o.RangeRatio)))
			outLow := max(1, int(math.Floor(float64(o.OutputLen)*(1-o.RangeRatio))))
			outHigh := max(1, int(math.Ceil(float64(o.OutputLen)*(1+o.RangeRatio))))
			seenIn := map[int]bool{}
			seenOut := map[int]bool{}
			for i, r := range reqs {
				if r.Index != i || r.Prompt != "" || r.PromptLenEstimated || r.Arrival != 0 {
					t.Fatalf("request %d: %+v: want Index %d, no text, exact length, no arrival", i, r, i)
				}
				if len(r.PromptIDs) != r.PromptLen {
					t.Fatalf("request %d: PromptLen %d but %d IDs", i, r.PromptLen, len(r.PromptIDs))
				}
				body := r.PromptLen - o.PrefixLen
				if body < inLow || body > inHigh {
					t.Errorf("request %d: body of %d tokens outside [%d, %d]", i, body, inLow, inHigh)
				}
				if r.MaxTokens < outLow || r.MaxTokens > outHigh {
					t.Errorf("request %d: output %d outside [%d, %d]", i, r.MaxTokens, outLow, outHigh)
				}
				seenIn[body], seenOut[r.MaxTokens] = true, true
				for _, id := range r.PromptIDs {
					if id < 0 || int(id) >= s.VocabSize {
						t.Fatalf("request %d: ID %d outside [0, %d)", i, id, s.VocabSize)
					}
				}
				if !slices.Equal(r.PromptIDs[:o.PrefixLen], reqs[0].PromptIDs[:o.PrefixLen]) {
					t.Errorf("request %d: prefix %v differs from request 0's %v", i, r.PromptIDs[:o.PrefixLen], reqs[0].PromptIDs[:o.PrefixLen])
				}
				// vLLM's body: consecutive IDs, wrapping at the vocabulary.
				for k := o.PrefixLen + 1; k < r.PromptLen; k++ {
					if int(r.PromptIDs[k]) != (int(r.PromptIDs[k-1])+1)%s.VocabSize {
						t.Fatalf("request %d: body not consecutive at %d: %v", i, k, r.PromptIDs[o.PrefixLen:])
					}
				}
			}
			// Both ends of the ranges are reachable (inclusive bounds).
			if s.NumPrompts >= 200 {
				for _, end := range []int{inLow, inHigh} {
					if !seenIn[end] {
						t.Errorf("input length %d never drawn in %d prompts", end, s.NumPrompts)
					}
				}
				for _, end := range []int{outLow, outHigh} {
					if !seenOut[end] {
						t.Errorf("output length %d never drawn", end)
					}
				}
			}
		})
	}
}

func TestRandomPromptsDiffer(t *testing.T) {
	reqs, err := Build(context.Background(), randomSpec(50, 16, 4, 0, 0), nil)
	if err != nil {
		t.Fatal(err)
	}
	distinct := map[int32]bool{}
	for _, r := range reqs {
		distinct[r.PromptIDs[0]] = true
	}
	if len(distinct) < 45 {
		t.Errorf("only %d distinct first tokens in 50 prompts: offsets are not random", len(distinct))
	}
}

// TestRandomExactLengthsWithTokenizer checks complaint 5 of the reference:
// decoded random IDs re-encode to a different count, and the correction
// loop must still deliver exactly the sampled length.
func TestRandomExactLengthsWithTokenizer(t *testing.T) {
	tests := []struct {
		name       string
		spec       Spec
		numSpecial int
	}{
		{"fixed", randomSpec(60, 128, 8, 0, 0), 0},
		{"ratio and prefix", randomSpec(60, 100, 8, 0.3, 10), 0},
		{"one special token", randomSpec(30, 64, 8, 0, 0), 1},
		{"short prompts", randomSpec(60, 2, 8, 0.5, 1), 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			greedy := newGreedyTokenizer()
			greedy.numSpecial = tt.numSpecial
			var tok tokenizer.Tokenizer = greedy
			if tt.numSpecial > 0 {
				tok = countingSpecialTokenizer{greedy}
			}
			ctx := context.Background()
			reqs, err := Build(ctx, tt.spec, tok)
			if err != nil {
				t.Fatal(err)
			}
			o := tt.spec.Random
			real := o.InputLen - tt.numSpecial
			low := o.PrefixLen + int(math.Floor(float64(real)*(1-o.RangeRatio)))
			high := o.PrefixLen + int(math.Ceil(float64(real)*(1+o.RangeRatio)))
			for i, r := range reqs {
				if r.PromptIDs != nil || r.Prompt == "" {
					t.Fatalf("request %d: want a text prompt and no IDs, got %d IDs", i, len(r.PromptIDs))
				}
				ids, _ := greedy.Encode(ctx, r.Prompt)
				if len(ids) != r.PromptLen {
					t.Errorf("request %d: prompt encodes to %d tokens, PromptLen says %d", i, len(ids), r.PromptLen)
				}
				if r.PromptLen < low || r.PromptLen > high {
					t.Errorf("request %d: %d tokens outside [%d, %d]", i, r.PromptLen, low, high)
				}
				for _, id := range ids {
					if slices.Contains(greedy.special, id) {
						t.Errorf("request %d: special ID %d in the prompt", i, id)
					}
				}
			}
			if o.RangeRatio == 0 {
				for i, r := range reqs {
					if r.PromptLen != o.PrefixLen+real {
						t.Errorf("request %d: %d tokens, want exactly %d", i, r.PromptLen, o.PrefixLen+real)
					}
				}
			}
		})
	}
}

// TestFakeTokenizerDrifts makes sure the exact-length test above is not
// vacuous: without the correction, decoded random IDs change length.
func TestFakeTokenizerDrifts(t *testing.T) {
	tok := newGreedyTokenizer()
	ctx := context.Background()
	_, allowed, err := (&builder{ctx: ctx, tok: tok}).vocabulary()
	if err != nil {
		t.Fatal(err)
	}
	drifted := 0
	for offset := range len(allowed) {
		seq := make([]int, 64)
		fillSequential(seq, allowed, offset)
		text, _ := tok.Decode(ctx, seq)
		ids, _ := tok.Encode(ctx, text)
		if len(ids) != len(seq) {
			drifted++
		}
	}
	if drifted == 0 {
		t.Fatal("no random sequence changes length on decode/re-encode; the fake tokenizer cannot test the correction")
	}
}

func TestRandomMinimumInputWithSpecialTokens(t *testing.T) {
	greedy := newGreedyTokenizer()
	greedy.numSpecial = 1
	_, err := Build(context.Background(), randomSpec(5, 1, 4, 0, 0), countingSpecialTokenizer{greedy})
	if err == nil || !strings.Contains(err.Error(), "random_input_len 1: too small") {
		t.Fatalf("Build = %v, want the too-small error once the BOS token is subtracted", err)
	}
}

func TestTokenizerErrorsSurface(t *testing.T) {
	tok := failingTokenizer{newGreedyTokenizer()}
	_, err := Build(context.Background(), randomSpec(3, 8, 4, 0, 0), tok)
	if err == nil || !strings.Contains(err.Error(), "tokenizer fake-greedy: encode: tokenizer backend down") {
		t.Fatalf("Build = %v, want the tokenizer's error named", err)
	}
}

func TestAllSpecialVocabulary(t *testing.T) {
	tok := newGreedyTokenizer()
	tok.special = make([]int, tok.VocabSize())
	for i := range tok.special {
		tok.special[i] = i
	}
	_, err := Build(context.Background(), randomSpec(3, 8, 4, 0, 0), tok)
	if err == nil || !strings.Contains(err.Error(), "are special") {
		t.Fatalf("Build = %v, want an error about an all-special vocabulary", err)
	}
}

func TestPrefixRepetition(t *testing.T) {
	tests := []struct {
		name                                  string
		numPrompts, prefix, suffix, numPrefix int
		withTokenizer                         bool
	}{
		{"ids, even split", 20, 16, 8, 4, false},
		{"ids, remainder dropped like vLLM", 25, 16, 8, 10, false},
		{"ids, no prefix", 6, 0, 8, 2, false},
		{"text", 24, 32, 16, 6, true},
		{"text, no suffix", 6, 32, 0, 3, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := DefaultSpec()
			s.Dataset = DatasetPrefixRepetition
			s.NumPrompts = tt.numPrompts
			s.PrefixRepetition = PrefixRepetitionOptions{PrefixLen: tt.prefix, SuffixLen: tt.suffix, NumPrefixes: tt.numPrefix, OutputLen: 9}
			var tok *greedyTokenizer
			var reqs []Request
			var err error
			if tt.withTokenizer {
				tok = newGreedyTokenizer()
				reqs, err = Build(context.Background(), s, tok)
			} else {
				reqs, err = Build(context.Background(), s, nil)
			}
			if err != nil {
				t.Fatal(err)
			}
			perPrefix := tt.numPrompts / tt.numPrefix
			if len(reqs) != perPrefix*tt.numPrefix {
				t.Fatalf("got %d requests, want %d (%d per prefix)", len(reqs), perPrefix*tt.numPrefix, perPrefix)
			}
			groups := map[string]int{}
			firstGroupAt := map[string]int{}
			for i, r := range reqs {
				if r.MaxTokens != 9 || r.PromptLen != tt.prefix+tt.suffix {
					t.Errorf("request %d: PromptLen %d OutputLen %d, want %d and 9", i, r.PromptLen, r.MaxTokens, tt.prefix+tt.suffix)
				}
				var key string
				if tok != nil {
					ids, _ := tok.Encode(context.Background(), r.Prompt)
					if len(ids) != r.PromptLen {
						t.Errorf("request %d: prompt encodes to %d tokens, PromptLen says %d", i, len(ids), r.PromptLen)
					}
					key = r.Prompt[:min(20, len(r.Prompt))]
				} else {
					if len(r.PromptIDs) != r.PromptLen {
						t.Fatalf("request %d: %d IDs, PromptLen %d", i, len(r.PromptIDs), r.PromptLen)
					}
					key = fmt.Sprint(r.PromptIDs[:tt.prefix])
				}
				if _, ok := firstGroupAt[key]; !ok {
					firstGroupAt[key] = i
				}
				groups[key]++
			}
			if tt.prefix == 0 {
				return
			}
			if len(groups) != tt.numPrefix {
				t.Fatalf("found %d distinct prefixes, want %d", len(groups), tt.numPrefix)
			}
			for key, n := range groups {
				if n != perPrefix {
					t.Errorf("prefix first seen at request %d shared by %d prompts, want %d", firstGroupAt[key], n, perPrefix)
				}
			}
			// Unshuffled, (perPrefix-1)·numPrefixes neighbours share a prefix;
			// shuffled, about 1/numPrefixes of them do.
			adjacent := 0
			for i := 1; i < len(reqs); i++ {
				if samePrefix(reqs[i-1], reqs[i], tt.prefix) {
					adjacent++
				}
			}
			if unshuffled := (perPrefix - 1) * tt.numPrefix; adjacent >= unshuffled {
				t.Errorf("%d neighbouring prompts share a prefix, as many as unshuffled (%d)", adjacent, unshuffled)
			}
		})
	}
}

func samePrefix(a, b Request, prefix int) bool {
	if a.PromptIDs != nil {
		return slices.Equal(a.PromptIDs[:prefix], b.PromptIDs[:prefix])
	}
	n := min(20, len(a.Prompt), len(b.Prompt))
	return a.Prompt[:n] == b.Prompt[:n]
}

func TestBuildDeterministic(t *testing.T) {
	ctx := context.Background()
	prefixRep := DefaultSpec()
	prefixRep.Dataset = DatasetPrefixRepetition
	prefixRep.NumPrompts = 20
	prefixRep.PrefixRepetition.PrefixLen, prefixRep.PrefixRepetition.SuffixLen = 8, 8
	specs := map[string]Spec{
		"random":            randomSpec(30, 40, 8, 0.4, 4),
		"prefix repetition": prefixRep,
		"sharegpt":          shareGPTSpec(20),
		"custom":            customSpec("testdata/custom_small.jsonl", 20),
		"sonnet":            sonnetSpec("testdata/poem.txt", 20, 200, 10, 80),
	}
	for name, s := range specs {
		for _, tok := range []*greedyTokenizer{nil, newGreedyTokenizer()} {
			t.Run(name, func(t *testing.T) {
				build := func(seed int64) []Request {
					t.Helper()
					s := s
					s.Seed = seed
					var reqs []Request
					var err error
					if tok == nil {
						reqs, err = Build(ctx, s, nil)
					} else {
						reqs, err = Build(ctx, s, tok)
					}
					if err != nil {
						t.Fatal(err)
					}
					return reqs
				}
				a, b := build(7), build(7)
				if diff := cmp.Diff(a, b); diff != "" {
					t.Fatalf("same seed, different workloads (-first +second):\n%s", diff)
				}
				if cmp.Equal(a, build(8)) {
					t.Errorf("seeds 7 and 8 give identical workloads")
				}
			})
		}
	}
}

func TestBuildCanceled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, s := range []Spec{randomSpec(5, 8, 4, 0, 0), sonnetSpec("testdata/poem.txt", 5, 200, 10, 80)} {
		_, err := Build(ctx, s, nil)
		if !errors.Is(err, context.Canceled) {
			t.Errorf("%s: Build with a canceled context = %v, want context.Canceled", s.Dataset, err)
		}
	}
}
