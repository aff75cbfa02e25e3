package workload

import (
	"context"
	"errors"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/servebench/servebench/internal/fixture"

	"github.com/servebench/servebench/tokenizer"
)

const shareGPTFile = "testdata/sharegpt_small.json"

func shareGPTSpec(n int) Spec {
	s := DefaultSpec()
	s.Dataset = DatasetShareGPT
	s.Path = shareGPTFile
	s.NumPrompts = n
	return s
}

type lens struct{ prompt, output int }

func requestLens(reqs []Request) []lens {
	out := make([]lens, len(reqs))
	for i, r := range reqs {
		out[i] = lens{r.PromptLen, r.MaxTokens}
	}
	return out
}

// TestShareGPTFilters runs vLLM's is_valid_sequence rules over the synthetic
// file, whose prompts and replies are runs of "z" (one fake token each).
func TestShareGPTFilters(t *testing.T) {
	// In file order; the comments in the file's generator say which rule
	// each entry exercises.
	keptFromData := []lens{{10, 20}, {1000, 1048}, {4, 4}, {1024, 4}, {12, 6}, {7, 9}, {30, 40}}
	keptForced := []lens{{10, 100}, {10, 100}, {1000, 100}, {1000, 100}, {4, 100}, {1024, 100}, {12, 100}, {7, 100}, {30, 100}}
	// With a BOS token every count grows by one: the 3-token prompt and the
	// 3-token reply now pass, the 1024-token prompt and the 2048-token pair
	// no longer do.
	keptWithBOS := []lens{{11, 21}, {4, 21}, {11, 4}, {5, 5}, {13, 7}, {8, 10}, {31, 41}}

	tests := []struct {
		name       string
		outputLen  int
		numSpecial int
		want       []lens
	}{
		{"lengths from the data", 0, 0, keptFromData},
		{"forced output length skips the reply minimum", 100, 0, keptForced},
		{"special tokens are counted", 0, 1, keptWithBOS},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := shareGPTSpec(100)
			s.ShareGPT = ShareGPTOptions{OutputLen: tt.outputLen, NoOversample: true, DisableShuffle: true}
			greedy := newGreedyTokenizer()
			greedy.numSpecial = tt.numSpecial
			var tok tokenizer.Tokenizer = greedy
			if tt.numSpecial > 0 {
				tok = countingSpecialTokenizer{greedy}
			}
			reqs, err := Build(context.Background(), s, tok)
			if err != nil {
				t.Fatal(err)
			}
			if got := requestLens(reqs); !slices.Equal(got, tt.want) {
				t.Errorf("kept (prompt, output) lengths\n got %v\nwant %v", got, tt.want)
			}
			for _, r := range reqs {
				if r.PromptLenEstimated || strings.Trim(r.Prompt, "z") != "" {
					t.Errorf("request %d: estimated=%v prompt %.20q: want exact counts of a z-run", r.Index, r.PromptLenEstimated, r.Prompt)
				}
			}
		})
	}
}

func TestShareGPTShuffleAndOversample(t *testing.T) {
	ctx := context.Background()
	tok := newGreedyTokenizer()
	ordered, err := Build(ctx, func() Spec {
		s := shareGPTSpec(100)
		s.ShareGPT.NoOversample, s.ShareGPT.DisableShuffle = true, true
		return s
	}(), tok)
	if err != nil {
		t.Fatal(err)
	}
	kept := requestLens(ordered)

	t.Run("first N after the shuffle", func(t *testing.T) {
		reqs, err := Build(ctx, shareGPTSpec(3), tok)
		if err != nil {
			t.Fatal(err)
		}
		got := requestLens(reqs)
		if len(got) != 3 {
			t.Fatalf("got %d requests, want 3", len(got))
		}
		for _, l := range got {
			if !slices.Contains(kept, l) {
				t.Errorf("%v is not one of the kept conversations %v", l, kept)
			}
		}
	})
	t.Run("shuffled by default", func(t *testing.T) {
		s := shareGPTSpec(100)
		s.ShareGPT.NoOversample = true
		reqs, err := Build(ctx, s, tok)
		if err != nil {
			t.Fatal(err)
		}
		got := requestLens(reqs)
		if slices.Equal(got, kept) {
			t.Errorf("shuffled order equals file order %v", kept)
		}
		slices.SortFunc(got, cmpLens)
		want := slices.Clone(kept)
		slices.SortFunc(want, cmpLens)
		if !slices.Equal(got, want) {
			t.Errorf("shuffle changed the set: got %v want %v", got, want)
		}
	})
	t.Run("oversampled to N", func(t *testing.T) {
		reqs, err := Build(ctx, shareGPTSpec(50), tok)
		if err != nil {
			t.Fatal(err)
		}
		if len(reqs) != 50 {
			t.Fatalf("got %d requests, want 50", len(reqs))
		}
		counts := map[lens]int{}
		for i, r := range reqs {
			if r.Index != i {
				t.Errorf("request %d has Index %d", i, r.Index)
			}
			counts[lens{r.PromptLen, r.MaxTokens}]++
		}
		for l, n := range counts {
			if !slices.Contains(kept, l) || n < 1 {
				t.Errorf("oversampled %v (%d times) is not a kept conversation", l, n)
			}
		}
		if len(counts) != len(kept) {
			t.Errorf("oversampling kept %d of the %d conversations, want all (the originals come first)", len(counts), len(kept))
		}
	})
}

func cmpLens(a, b lens) int {
	if a.prompt != b.prompt {
		return a.prompt - b.prompt
	}
	return a.output - b.output
}

func TestShareGPTEstimatesWithoutTokenizer(t *testing.T) {
	s := shareGPTSpec(100)
	s.ShareGPT.NoOversample, s.ShareGPT.DisableShuffle = true, true
	reqs, err := Build(context.Background(), s, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(reqs) == 0 {
		t.Fatal("no requests")
	}
	for _, r := range reqs {
		if !r.PromptLenEstimated {
			t.Errorf("request %d: PromptLenEstimated false without a tokenizer", r.Index)
		}
		if want := (len(r.Prompt) + 3) / 4; r.PromptLen != want {
			t.Errorf("request %d: PromptLen %d for %d bytes, want ceil(bytes/4) = %d", r.Index, r.PromptLen, len(r.Prompt), want)
		}
	}
}

func writeTemp(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestShareGPTErrors(t *testing.T) {
	tests := []struct {
		name, content string
		want          string // substring; %s is the file's path
	}{
		{"not an array", `{"conversations": []}`, `byte 0: found an object, want a JSON array`},
		{"syntax error", `[{"conversations": [{"value": "a"}]}, {"conversations": [ {"value": "x" ]}]`, `invalid JSON near byte 71: invalid character ']' after object key:value pair`},
		{"wrong type", `[{"conversations": [{"value": 3}, {"value": "b"}]}]`, `byte 31: entry 1: conversations.value is a JSON number, want string`},
		{"entry not an object", `[{"conversations": []}, 5]`, `byte 24: entry 2 is a JSON number, want an object`},
		{"truncated", `[{"conversations": []}`, `JSON ends early after byte 22 (truncated file?)`},
		{"truncated mid entry", `[{"conversations": [`, `JSON ends early`},
		{"trailing data", `[] []`, `near byte 4: found "[" after the top-level array`},
		{"bad message content", `[{"messages": [{"role": "user", "content": 7}, {"role": "assistant", "content": "x"}]}]`, `entry 1: messages[0].content: want a string or an array`},
		{"empty file", ``, `JSON ends early after byte 0`},
		{"nesting too deep", "[" + strings.Repeat(`{"a":`, 20000), `exceeded max depth`},
		{"nothing usable", `[{"conversations": [{"value": "hi"}, {"value": "hello there"}]}, {"conversations": [{"value": "one turn"}]}]`,
			`0 of 2 entries passed vLLM's ShareGPT filters: 1 have fewer than 2 turns, 1 prompts < 4 tokens, 0 replies < 4 tokens`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeTemp(t, "data.json", tt.content)
			s := shareGPTSpec(10)
			s.Path = path
			_, err := Build(context.Background(), s, newGreedyTokenizer())
			if err == nil {
				t.Fatalf("Build = nil error, want %q", tt.want)
			}
			msg := err.Error()
			if !strings.Contains(msg, tt.want) || !strings.Contains(msg, `"`+path+`"`) || strings.Contains(msg, "\n") {
				t.Errorf("error %q: want one line naming %q and containing %q", msg, path, tt.want)
			}
		})
	}
}

func TestDatasetFileErrors(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "nope.json")
	for _, name := range []string{DatasetShareGPT, DatasetCustom, DatasetSonnet} {
		t.Run(name, func(t *testing.T) {
			s := DefaultSpec()
			s.Dataset, s.Path = name, missing
			_, err := Build(context.Background(), s, nil)
			want := `dataset file "` + missing + `": no such file (pass dataset_path)`
			if err == nil || err.Error() != want {
				t.Errorf("Build = %v, want %q", err, want)
			}
			if !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("error %v does not wrap fs.ErrNotExist", err)
			}
			s.Path = dir
			_, err = Build(context.Background(), s, nil)
			if err == nil || !strings.Contains(err.Error(), "is a directory (pass a file to dataset_path)") {
				t.Errorf("Build on a directory = %v", err)
			}
		})
	}
}

func customSpec(path string, n int) Spec {
	s := DefaultSpec()
	s.Dataset = DatasetCustom
	s.Path = path
	s.NumPrompts = n
	return s
}

func TestCustom(t *testing.T) {
	wantOrdered := []struct {
		prompt string
		output int
	}{
		{"What is the capital of India?", 256},
		{"Name three prime numbers.", 16},
		{"Write a haiku about the sea.", 40},
		{"Both keys: output_tokens wins.", 7},
		{"Unicode: naïve café – 東京", 256},
	}
	ctx := context.Background()
	tok := newGreedyTokenizer()
	t.Run("file order", func(t *testing.T) {
		s := customSpec("testdata/custom_small.jsonl", 5)
		s.Custom.DisableShuffle = true
		reqs, err := Build(ctx, s, tok)
		if err != nil {
			t.Fatal(err)
		}
		if len(reqs) != len(wantOrdered) {
			t.Fatalf("got %d requests, want %d", len(reqs), len(wantOrdered))
		}
		for i, w := range wantOrdered {
			r := reqs[i]
			ids, _ := tok.Encode(ctx, w.prompt)
			if r.Prompt != w.prompt || r.MaxTokens != w.output || r.PromptLen != len(ids) || r.PromptLenEstimated {
				t.Errorf("request %d = %+v, want prompt %q output %d length %d", i, r, w.prompt, w.output, len(ids))
			}
		}
	})
	t.Run("custom output length", func(t *testing.T) {
		s := customSpec("testdata/custom_small.jsonl", 1)
		s.Custom = CustomOptions{OutputLen: 3, DisableShuffle: true}
		reqs, err := Build(ctx, s, tok)
		if err != nil || len(reqs) != 1 || reqs[0].MaxTokens != 3 {
			t.Fatalf("Build = %+v, %v; want one request with OutputLen 3", reqs, err)
		}
	})
	t.Run("no oversample", func(t *testing.T) {
		s := customSpec("testdata/custom_small.jsonl", 50)
		s.Custom.NoOversample = true
		reqs, err := Build(ctx, s, nil)
		if err != nil || len(reqs) != 5 {
			t.Fatalf("Build = %d requests, %v; want the file's 5", len(reqs), err)
		}
		for _, r := range reqs {
			if !r.PromptLenEstimated || r.PromptLen != (len(r.Prompt)+3)/4 {
				t.Errorf("request %d: PromptLen %d estimated=%v, want ceil(%d/4), estimated", r.Index, r.PromptLen, r.PromptLenEstimated, len(r.Prompt))
			}
		}
	})
	t.Run("oversample", func(t *testing.T) {
		reqs, err := Build(ctx, customSpec("testdata/custom_small.jsonl", 12), nil)
		if err != nil || len(reqs) != 12 {
			t.Fatalf("Build = %d requests, %v; want 12", len(reqs), err)
		}
		seen := map[string]bool{}
		for _, r := range reqs {
			seen[r.Prompt] = true
		}
		if len(seen) != 5 {
			t.Errorf("oversampled workload has %d distinct prompts, want the file's 5", len(seen))
		}
	})
}

func TestCustomErrors(t *testing.T) {
	tests := []struct{ name, content, want string }{
		{"bad JSON", "{\"prompt\": \"a\"}\n{\"prompt\": \"b\"\n", `line 2: invalid JSON`},
		{"no prompt", "{\"prompt\": \"a\"}\n\n{\"text\": \"b\"}\n", `line 3: no "prompt"`},
		{"prompt not a string", `{"prompt": ["a"]}`, `line 1: "prompt" is a JSON array, want string`},
		{"empty prompt", "{\"prompt\": \"a\"}\r\n{\"prompt\": \"\"}\r\n", `line 2: "prompt" is empty`},
		{"line not an object", `["prompt"]`, `line 1: found a JSON array, want an object`},
		{"negative output", `{"prompt": "a", "output_tokens": -4}`, `line 1: "output_tokens" is -4, want a whole number of tokens`},
		{"fractional output", `{"prompt": "a", "max_tokens": 2.5}`, `line 1: "max_tokens" is 2.5`},
		{"output as string", `{"prompt": "a", "max_tokens": "12"}`, `line 1: "max_tokens" is "12"`},
		{"empty file", "\n\n", `no prompts (want one JSON object per line`},
		{"a JSON array file", "[{\"prompt\": \"a\"},\n{\"prompt\": \"b\"}]", `line 1: invalid JSON`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeTemp(t, "data.jsonl", tt.content)
			_, err := Build(context.Background(), customSpec(path, 3), nil)
			if err == nil {
				t.Fatalf("Build = nil error, want %q", tt.want)
			}
			msg := err.Error()
			if !strings.Contains(msg, tt.want) || !strings.Contains(msg, `"`+path+`"`) || strings.Contains(msg, "\n") {
				t.Errorf("error %q: want one line naming %q and containing %q", msg, path, tt.want)
			}
		})
	}
}

func sonnetSpec(path string, n, in, out, prefix int) Spec {
	s := DefaultSpec()
	s.Dataset = DatasetSonnet
	s.Path = path
	s.NumPrompts = n
	s.Sonnet = SonnetOptions{InputLen: in, OutputLen: out, PrefixLen: prefix}
	return s
}

func TestSonnet(t *testing.T) {
	sonnets := fixture.SonnetFile(t, 1)
	tests := []struct {
		name          string
		path          string
		in, prefix    int
		withTokenizer bool
	}{
		{"poem, tokenizer", "testdata/poem.txt", 200, 80, true},
		{"poem, estimated", "testdata/poem.txt", 120, 40, false},
		{"poem, no prefix", "testdata/poem.txt", 150, 0, true},
		{"vLLM defaults on the sonnets", sonnets, 550, 200, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data, err := os.ReadFile(tt.path)
			if err != nil {
				t.Fatal(err)
			}
			lines := strings.SplitAfter(string(data), "\n")
			lines = lines[:len(lines)-1]
			ctx := context.Background()
			tok := newGreedyTokenizer()
			count := func(s string) int {
				if !tt.withTokenizer {
					return (len(s) + 3) / 4
				}
				ids, _ := tok.Encode(ctx, s)
				return len(ids)
			}
			var reqs []Request
			s := sonnetSpec(tt.path, 30, tt.in, 17, tt.prefix)
			if tt.withTokenizer {
				reqs, err = Build(ctx, s, tok)
			} else {
				reqs, err = Build(ctx, s, nil)
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(reqs) != 30 {
				t.Fatalf("got %d requests, want 30", len(reqs))
			}
			// Expected shape, recomputed from vLLM's formulas.
			total := 0
			for _, l := range lines {
				total += count(l)
			}
			avg := float64(total) / float64(len(lines))
			base := count(sonnetBasePrompt)
			numIn := int(math.RoundToEven(float64(tt.in-base) / avg))
			numPre := max(int(math.RoundToEven(float64(tt.prefix-base)/avg)), 0)
			prefix := sonnetBasePrompt + strings.Join(lines[:numPre], "")
			distinct := map[string]bool{}
			for i, r := range reqs {
				if r.MaxTokens != 17 || r.PromptLenEstimated == tt.withTokenizer {
					t.Errorf("request %d: OutputLen %d estimated %v", i, r.MaxTokens, r.PromptLenEstimated)
				}
				if !strings.HasPrefix(r.Prompt, prefix) {
					t.Fatalf("request %d does not start with the base prompt and %d prefix lines", i, numPre)
				}
				drawn := strings.SplitAfter(strings.TrimPrefix(r.Prompt, prefix), "\n")
				drawn = drawn[:len(drawn)-1]
				if len(drawn) != numIn-numPre {
					t.Errorf("request %d: %d drawn lines, want %d", i, len(drawn), numIn-numPre)
				}
				for _, d := range drawn {
					if !slices.Contains(lines, d) {
						t.Errorf("request %d: drawn line %q is not in the file", i, d)
					}
				}
				if got := count(r.Prompt); r.PromptLen != got || got > tt.in {
					t.Errorf("request %d: PromptLen %d, counted %d, limit %d", i, r.PromptLen, got, tt.in)
				}
				distinct[r.Prompt] = true
			}
			if len(distinct) < 25 {
				t.Errorf("only %d distinct prompts out of 30", len(distinct))
			}
		})
	}
}

func TestSonnetErrors(t *testing.T) {
	// Four identical 40-byte lines: 10 estimated tokens each.
	even := writeTemp(t, "even.txt", strings.Repeat("abcdefghijklmnopqrstuvwxyz0123456789abc\n", 4))
	tests := []struct {
		name string
		spec Spec
		want string
	}{
		{"input not above the base prompt", sonnetSpec(even, 5, 14, 10, 0), "sonnet_input_len 14: must be greater than the base prompt's 14 tokens"},
		// 14 base + round(15/10)=2 lines of 10 = 34 tokens > 29: never fits.
		{"never fits", sonnetSpec(even, 5, 29, 10, 0), "only 0 of 5 sonnet prompts fit sonnet_input_len 29 in 1250 draws"},
		{"empty file", sonnetSpec(writeTemp(t, "empty.txt", ""), 5, 100, 10, 0), "empty; the sonnet dataset needs lines of text"},
		// vLLM's defaults on a 2 MB file without newlines used to give
		// base-prompt-only prompts (14 tokens instead of up to 550).
		{"one 2 MB line", sonnetSpec(writeTemp(t, "oneline.txt", strings.Repeat("word ", 400_000)), 5, 550, 150, 200),
			`its 1 line(s) average 500000 tokens, more than twice the 536 tokens sonnet_input_len 550 leaves after the 14-token base prompt, so every prompt would be the base prompt alone`},
		// Lines of 100 tokens: 3 drawn lines fit 550, but a 20-token prefix
		// rounds to no line at all.
		{"prefix shorter than a line", sonnetSpec(writeTemp(t, "long.txt", strings.Repeat(strings.Repeat("x", 399)+"\n", 20)), 5, 550, 150, 40),
			"its lines average 100 tokens, more than twice the 26 tokens sonnet_prefix_len 40 leaves after the 14-token base prompt, so prompts would share no prefix lines"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Build(context.Background(), tt.spec, nil)
			if err == nil || !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), "\n") {
				t.Errorf("Build = %v, want one line containing %q", err, tt.want)
			}
		})
	}
}
