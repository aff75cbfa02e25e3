package tokenizer

import (
	"context"
	"errors"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// allocatedBy returns the bytes fn allocates (runtime.MemStats.TotalAlloc).
func allocatedBy(fn func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

func hfTokenizer(t *testing.T, spec hfSpec) Tokenizer {
	t.Helper()
	m, err := parseTokenizerJSON("generated.json", spec.render())
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestEncodeLimitBoundIsSafe checks, for every limit around a text's true
// token count, that EncodeLimit returns Encode's IDs when they fit and
// otherwise a LimitError whose AtLeast lies between the limit and the true
// count: the early refusal never rejects a text that fits. The tokenizers
// include the cases where no bound on the raw text holds (a normalizer, an
// added token that strips whitespace), and the texts the cases where one
// token covers many bytes (long whitespace runs, added tokens).
func TestEncodeLimitBoundIsSafe(t *testing.T) {
	corpus := readSonnet(t)[:20000]
	stripping := tinyLlama3Spec(corpus)
	stripping.added[3].Rstrip, stripping.added[3].Lstrip = true, true
	normalized := tinyGPT2Spec(corpus)
	normalized.normalizer = `{"type":"NFC"}`
	tokenizers := []struct {
		name      string
		tok       Tokenizer
		textBound bool
	}{
		{"cl100k_base", mustBuiltin(t, "cl100k_base"), true},
		{"o200k_base", mustBuiltin(t, "o200k_base"), true},
		{"tiny-gpt2", hfTokenizer(t, tinyGPT2Spec(corpus)), true},
		{"tiny-llama3-stripping", hfTokenizer(t, stripping), false},
		{"tiny-gpt2-nfc", hfTokenizer(t, normalized), false},
	}
	texts := map[string]string{
		"sonnet":          corpus[:3000],
		"spaces":          strings.Repeat(" ", 5000) + "x",
		"added-and-space": "<tool>" + strings.Repeat(" ", 3000) + "<|endoftext|><|end_of_text|>" + strings.Repeat("\n", 700),
		"composed":        strings.Repeat("e\u0301", 900),
		"one-word":        strings.Repeat("ab", 5000),
	}
	ctx := context.Background()
	for _, tk := range tokenizers {
		m := asModel(tk.tok)
		if m.textBound != tk.textBound {
			t.Errorf("%s: textBound %v, want %v", tk.name, m.textBound, tk.textBound)
		}
		for name, text := range texts {
			want, err := tk.tok.Encode(ctx, text)
			if err != nil {
				t.Fatal(err)
			}
			n := len(want)
			for _, limit := range []int{0, 1, n / 100, n / 2, n - 1, n, n + 1} {
				got, err := EncodeLimit(ctx, tk.tok, text, limit)
				var le *LimitError
				switch {
				case limit >= n && (err != nil || !slices.Equal(got, want)):
					t.Errorf("%s/%s limit %d (count %d): got %d IDs, err %v; want Encode's", tk.name, name, limit, n, len(got), err)
				case limit < n && !errors.As(err, &le):
					t.Errorf("%s/%s limit %d (count %d): err %v, want a LimitError", tk.name, name, limit, n, err)
				case limit < n && (le.AtLeast <= limit || le.AtLeast > n || !errors.Is(err, ErrTokenLimit)):
					t.Errorf("%s/%s limit %d (count %d): AtLeast %d, want in (%d, %d]", tk.name, name, limit, n, le.AtLeast, limit, n)
				}
			}
		}
	}
}

func asModel(tk Tokenizer) *bpeModel {
	if a, ok := tk.(aliasTokenizer); ok {
		return a.bpeModel
	}
	return tk.(*bpeModel)
}

// TestEncodeLimitCostIsBoundedByTheLimit is the 8 MB one-word prompt of
// issue 9: refused before encoding when its length alone proves it too
// long, and otherwise encoded only until the limit is passed, at a cost
// far below the text's size.
func TestEncodeLimitCostIsBoundedByTheLimit(t *testing.T) {
	tk := mustBuiltin(t, "cl100k_base")
	word := strings.Repeat("a", 8<<20)
	ctx := context.Background()
	for _, tc := range []struct {
		name     string
		limit    int
		maxAlloc uint64
	}{
		{"refused-before-encoding", 4096, 64 << 10},
		{"stopped-past-limit", 131072, 4 << 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var err error
			alloc := allocatedBy(func() { _, err = EncodeLimit(ctx, tk, word, tc.limit) })
			var le *LimitError
			if !errors.As(err, &le) || le.Limit != tc.limit || le.AtLeast <= tc.limit {
				t.Fatalf("err %v, want a LimitError over %d", err, tc.limit)
			}
			t.Logf("8 MiB word, limit %d: allocated %d KiB", tc.limit, alloc>>10)
			if alloc > tc.maxAlloc {
				t.Errorf("allocated %d bytes, want at most %d", alloc, tc.maxAlloc)
			}
		})
	}
}

// TestLongPieceIsLinear encodes one-piece texts of a MiB (a word, a run of
// spaces) in full: the per-piece cap keeps memory within a few times the
// text plus the IDs returned (a MiB word took 220 MB before the cap), and
// the IDs still decode to the text.
// Pieces up to the cap are encoded exactly as tiktoken does.
func TestLongPieceIsLinear(t *testing.T) {
	tk := mustBuiltin(t, "cl100k_base")
	ctx := context.Background()
	for _, text := range []string{strings.Repeat("a", 1<<20), strings.Repeat(" ", 1<<20), strings.Repeat("é", 1<<19)} {
		var ids []int
		var err error
		alloc := allocatedBy(func() { ids, err = tk.Encode(ctx, text) })
		if err != nil {
			t.Fatal(err)
		}
		if budget := 4 * uint64(len(text)+8*len(ids)); alloc > budget {
			t.Errorf("%q…: allocated %d bytes for %d bytes of text and %d IDs, want at most %d", text[:4], alloc, len(text), len(ids), budget)
		}
		back, err := tk.Decode(ctx, ids)
		if err != nil || back != text {
			t.Errorf("%q…: round trip failed (%v)", text[:4], err)
		}
	}
	exact := strings.Repeat("a", maxPieceBytes)
	got, err := tk.Encode(ctx, exact)
	if err != nil {
		t.Fatal(err)
	}
	if want := tiktokenGo()["cl100k_base"].EncodeOrdinary(exact); !slices.Equal(got, want) {
		t.Errorf("a piece of exactly maxPieceBytes: %d IDs, tiktoken %d", len(got), len(want))
	}
}
