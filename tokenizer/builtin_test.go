package tokenizer

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	tiktoken "github.com/pkoukk/tiktoken-go"
	tiktoken_loader "github.com/pkoukk/tiktoken-go-loader"
)

func mustBuiltin(tb testing.TB, name string) Tokenizer {
	tb.Helper()
	tk, err := Builtin(name)
	if err != nil {
		tb.Fatalf("Builtin(%q): %v", name, err)
	}
	return tk
}

func mustEncode(tb testing.TB, tk Tokenizer, text string) []int {
	tb.Helper()
	ids, err := tk.Encode(context.Background(), text)
	if err != nil {
		tb.Fatalf("%s: Encode(%q): %v", tk.Name(), text, err)
	}
	return ids
}

func mustDecode(tb testing.TB, tk Tokenizer, ids []int) string {
	tb.Helper()
	text, err := tk.Decode(context.Background(), ids)
	if err != nil {
		tb.Fatalf("%s: Decode(%v): %v", tk.Name(), ids, err)
	}
	return text
}

func TestBuiltinKnownIDs(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, text string
		want       []int
	}{
		{"gpt2", "Hello", []int{15496}},
		{"r50k_base", "Hello world", []int{15496, 995}},
		{"p50k_base", "Hello world", []int{15496, 995}},
		{"cl100k_base", "Hello world", []int{9906, 1917}},
		{"o200k_base", "Hello world", []int{13225, 2375}},
		{"gpt2", "<|endoftext|>", []int{50256}},
		{"cl100k_base", "a<|endoftext|><|fim_prefix|>", []int{64, 100257, 100258}},
		{"cl100k_base", "<|endofprompt|>", []int{100276}},
		{"o200k_base", "<|endoftext|><|endofprompt|>", []int{199999, 200018}},
		{"gpt2", "", []int{}},
	}
	for _, tt := range tests {
		got := mustEncode(t, mustBuiltin(t, tt.name), tt.text)
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("%s Encode(%q) (-want +got):\n%s", tt.name, tt.text, diff)
		}
	}
}

func TestBuiltinVocabulary(t *testing.T) {
	t.Parallel()
	span := func(lo, hi int) []int {
		var ids []int
		for id := lo; id <= hi; id++ {
			ids = append(ids, id)
		}
		return ids
	}
	tests := []struct {
		name      string
		vocabSize int
		special   []int
	}{
		{"r50k_base", 50257, []int{50256}},
		{"gpt2", 50257, []int{50256}},
		{"p50k_base", 50281, []int{50256}},
		// 100256 and 100261..100275 are unassigned; 100257..100260 and 100276 are special.
		{"cl100k_base", 100277, span(100256, 100276)},
		// 199998 and 200000..200017 are unassigned; 199999 and 200018 are special.
		{"o200k_base", 200019, span(199998, 200018)},
	}
	for _, tt := range tests {
		tk := mustBuiltin(t, tt.name)
		if got := tk.VocabSize(); got != tt.vocabSize {
			t.Errorf("%s VocabSize() = %d, want %d", tt.name, got, tt.vocabSize)
		}
		if diff := cmp.Diff(tt.special, tk.SpecialIDs()); diff != "" {
			t.Errorf("%s SpecialIDs() (-want +got):\n%s", tt.name, diff)
		}
		// Every ID a random prompt may draw decodes.
		var ordinary []int
		special := tk.SpecialIDs()
		for id := range tk.VocabSize() {
			if _, found := slices.BinarySearch(special, id); !found {
				ordinary = append(ordinary, id)
			}
		}
		if _, err := tk.Decode(context.Background(), ordinary); err != nil {
			t.Errorf("%s: decoding all %d ordinary IDs: %v", tt.name, len(ordinary), err)
		}
		// SpecialIDs hands out a copy.
		tk.SpecialIDs()[0] = -5
		if tk.SpecialIDs()[0] == -5 {
			t.Errorf("%s: SpecialIDs() exposes internal state", tt.name)
		}
	}
}

func TestBuiltinNames(t *testing.T) {
	t.Parallel()
	want := []string{"cl100k_base", "o200k_base", "p50k_base", "r50k_base", "gpt2"}
	if diff := cmp.Diff(want, Builtins()); diff != "" {
		t.Errorf("Builtins() (-want +got):\n%s", diff)
	}
	Builtins()[0] = "changed"
	if Builtins()[0] != "cl100k_base" {
		t.Error("Builtins() exposes internal state")
	}
	for _, name := range want {
		if got := mustBuiltin(t, name).Name(); got != name {
			t.Errorf("Builtin(%q).Name() = %q", name, got)
		}
	}
	_, err := Builtin("cl200k")
	if err == nil || !strings.Contains(err.Error(), `"cl200k"`) || !strings.Contains(err.Error(), "o200k_base") {
		t.Errorf("Builtin(cl200k) error = %v, want one naming the input and the choices", err)
	}
}

func TestBuiltinLoadsOnce(t *testing.T) {
	t.Parallel()
	var wg sync.WaitGroup
	models := make([]*bpeModel, 8)
	for i := range models {
		wg.Go(func() {
			tk, err := Builtin("p50k_base")
			if err != nil {
				t.Error(err)
				return
			}
			models[i] = tk.(*bpeModel)
		})
	}
	wg.Wait()
	for _, m := range models {
		if m != models[0] {
			t.Fatal("concurrent Builtin calls parsed the encoding more than once")
		}
	}
	if alias := mustBuiltin(t, "gpt2").(aliasTokenizer); alias.bpeModel != mustBuiltin(t, "r50k_base") {
		t.Error("gpt2 does not share r50k_base's tables")
	}
}

func TestBuiltinDecodeErrors(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tests := []struct {
		name string
		ids  []int
		want string
	}{
		{"cl100k_base", []int{9906, -1}, "-1"},
		{"cl100k_base", []int{100256}, "100256"},
		{"cl100k_base", []int{100277}, "100277"},
		{"gpt2", []int{1 << 40}, fmt.Sprint(1 << 40)},
	}
	for _, tt := range tests {
		_, err := mustBuiltin(t, tt.name).Decode(ctx, tt.ids)
		if !errors.Is(err, ErrUnknownTokenID) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s Decode(%v) error = %v, want ErrUnknownTokenID naming %s", tt.name, tt.ids, err, tt.want)
		}
	}
}

func TestBuiltinInvalidUTF8(t *testing.T) {
	t.Parallel()
	tk := mustBuiltin(t, "cl100k_base")
	// Invalid input is read as Python would decode it with errors="replace".
	if got, want := mustEncode(t, tk, "a\xffb\xe2\x82"), mustEncode(t, tk, "a\ufffdb\ufffd"); !slices.Equal(got, want) {
		t.Errorf("Encode(invalid) = %v, want %v", got, want)
	}
	// A token holding part of a character decodes to U+FFFD.
	euro := mustEncode(t, tk, "€")
	if got := mustDecode(t, tk, euro); got != "€" {
		t.Fatalf("Decode(Encode(€)) = %q", got)
	}
	if len(euro) > 1 {
		if got := mustDecode(t, tk, euro[:1]); !utf8.ValidString(got) || !strings.Contains(got, "\ufffd") {
			t.Errorf("Decode(first token of €) = %q, want a U+FFFD", got)
		}
	}
}

func TestToValidUTF8(t *testing.T) {
	t.Parallel()
	// Expected values are Python's bytes.decode("utf-8", errors="replace").
	tests := []struct{ in, want string }{
		{"plain", "plain"},
		{"\xff", "\ufffd"},
		{"\xff\xff", "\ufffd\ufffd"},
		{"\xe2\x82", "\ufffd"},
		{"\xe2\x82x", "\ufffdx"},
		{"\xf0\x9f\x98", "\ufffd"},
		{"\xed\xa0\x80", "\ufffd\ufffd\ufffd"},
		{"\xe0\x80", "\ufffd\ufffd"},
		{"\xf4\x90\x80\x80", "\ufffd\ufffd\ufffd\ufffd"},
		{"\xc0\xaf", "\ufffd\ufffd"},
		{"ok\ufffd", "ok\ufffd"},
	}
	for _, tt := range tests {
		if got := toValidUTF8(tt.in); got != tt.want {
			t.Errorf("toValidUTF8(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestBuiltinContextCanceled(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	tk := mustBuiltin(t, "r50k_base")
	if _, err := tk.Encode(ctx, "hello"); !errors.Is(err, context.Canceled) {
		t.Errorf("Encode with canceled context: %v", err)
	}
	if _, err := tk.Decode(ctx, []int{1}); !errors.Is(err, context.Canceled) {
		t.Errorf("Decode with canceled context: %v", err)
	}
}

// cancelAfter is a context whose Err turns non-nil after a number of checks,
// to exercise the check inside Encode's loop without timing.
type cancelAfter struct {
	context.Context
	mu    sync.Mutex
	left  int
	calls int
}

func (c *cancelAfter) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls++
	if c.calls > c.left {
		return context.Canceled
	}
	return nil
}

func TestBuiltinContextCanceledMidway(t *testing.T) {
	t.Parallel()
	tk := mustBuiltin(t, "r50k_base")
	ctx := &cancelAfter{Context: context.Background(), left: 1}
	long := strings.Repeat("word ", 10*ctxCheckEvery)
	if _, err := tk.Encode(ctx, long); !errors.Is(err, context.Canceled) {
		t.Errorf("Encode canceled midway: err = %v, want context.Canceled", err)
	}
}

func TestBuiltinConcurrentUse(t *testing.T) {
	t.Parallel()
	tk := mustBuiltin(t, "cl100k_base")
	text := "The quick brown fox jumps over the lazy dog. 12345 <|endoftext|> naïve café"
	want := mustEncode(t, tk, text)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 50 {
				ids, err := tk.Encode(context.Background(), text)
				if err != nil || !slices.Equal(ids, want) {
					t.Errorf("concurrent Encode = %v, %v", ids, err)
					return
				}
			}
		})
	}
	wg.Wait()
}

func TestCount(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	n, err := Count(ctx, mustBuiltin(t, "gpt2"), "Hello world")
	if err != nil || n != 2 {
		t.Errorf("Count = %d, %v; want 2", n, err)
	}
	if _, err := Count(ctx, nil, "x"); !errors.Is(err, ErrNoTokenizer) {
		t.Errorf("Count(nil tokenizer) error = %v, want ErrNoTokenizer", err)
	}
}

// tiktokenGo is the reference implementation, used only by tests: it
// keeps its loader in a package variable, which this package avoids.
var tiktokenGo = sync.OnceValue(func() map[string]*tiktoken.Tiktoken {
	tiktoken.SetBpeLoader(tiktoken_loader.NewOfflineLoader())
	out := map[string]*tiktoken.Tiktoken{}
	for _, name := range []string{"r50k_base", "p50k_base", "cl100k_base", "o200k_base"} {
		enc, err := tiktoken.GetEncoding(name)
		if err != nil {
			panic(err)
		}
		out[name] = enc
	}
	return out
})

func checkMatchesTiktokenGo(t *testing.T, text string) {
	t.Helper()
	for name, ref := range tiktokenGo() {
		want := ref.Encode(text, []string{"all"}, nil)
		got := mustEncode(t, mustBuiltin(t, name), text)
		if !slices.Equal(got, want) {
			t.Fatalf("%s Encode(%q):\n got %v\nwant %v (tiktoken-go)", name, text, got, want)
		}
	}
}

func TestBuiltinMatchesTiktokenGo(t *testing.T) {
	t.Parallel()
	checkMatchesTiktokenGo(t, readSonnet(t))
	rng := rand.New(rand.NewPCG(3, 4))
	for range 300 {
		checkMatchesTiktokenGo(t, randomTricky(rng, 20)+"<|endoftext|>"+randomTricky(rng, 5))
	}
}

func FuzzBuiltinRoundTrip(f *testing.F) {
	f.Add("Hello, world! It's 2024.\n\n  Done")
	f.Add("ǅemal ʰʰa e\u0301\u0301x 中文 😀 \u00a0\u3000\r\n<|endoftext|>")
	f.Add("\xff\xfe invalid \xe2\x82")
	f.Add(strings.Repeat("a", 300))
	f.Fuzz(func(t *testing.T, text string) {
		want := toValidUTF8(text)
		for _, name := range []string{"r50k_base", "p50k_base", "cl100k_base", "o200k_base"} {
			tk := mustBuiltin(t, name)
			ids := mustEncode(t, tk, text)
			for _, id := range ids {
				if id < 0 || id >= tk.VocabSize() {
					t.Fatalf("%s Encode(%q) produced ID %d outside the vocabulary", name, text, id)
				}
			}
			if got := mustDecode(t, tk, ids); got != want {
				t.Fatalf("%s round trip of %q gave %q", name, text, got)
			}
		}
	})
}

func FuzzBuiltinMatchesTiktokenGo(f *testing.F) {
	f.Add("Hello, world! It's 2024.\n\n  Done")
	f.Add("ǅemal ʰʰa e\u0301\u0301x 中文 😀 \u00a0\u3000\r\n<|endoftext|>")
	f.Fuzz(func(t *testing.T, text string) {
		checkMatchesTiktokenGo(t, toValidUTF8(text))
	})
}
