package workload

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"math"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/servebench/servebench/tokenizer"
)

const smallLengthsFile = "testdata/lengths_small.json"

// lengthsSmall is what testdata/lengths_small.json holds.
var lengthsSmall = []RequestLengths{{Input: 12, Output: 4}, {Input: 7, Output: 0}, {Input: 30, Output: 9}, {Input: 1, Output: 2}, {Input: 19, Output: 0}, {Input: 5, Output: 16}}

func TestParseLengths(t *testing.T) {
	good, err := os.ReadFile(smallLengthsFile)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		data string
		want []RequestLengths
		err  string // substring of the error; "" means no error
	}{
		{"vLLM detailed result", string(good), lengthsSmall, ""},
		{"only the arrays", `{"input_lens": [3], "output_lens": [0]}`, []RequestLengths{{Input: 3, Output: 0}}, ""},
		{"byte order mark and spaces", "\ufeff \n{\"output_lens\": [1, 2], \"input_lens\": [5, 6]}\n", []RequestLengths{{Input: 5, Output: 1}, {Input: 6, Output: 2}}, ""},
		{"zero input is parsed", `{"input_lens": [0], "output_lens": [1]}`, []RequestLengths{{Input: 0, Output: 1}}, ""},
		{"mismatched arrays", `{"input_lens": [1, 2, 3], "output_lens": [1, 2]}`, nil, "input_lens has 3 entries but output_lens has 2"},
		{"missing input_lens", `{"output_lens": [1]}`, nil, "no input_lens array"},
		{"missing output_lens", `{"input_lens": [1]}`, nil, "no output_lens array"},
		{"null array", `{"input_lens": null, "output_lens": [1]}`, nil, "no input_lens array"},
		{"array is a number", `{"input_lens": 5, "output_lens": [1]}`, nil, "input_lens is not an array"},
		{"negative input", `{"input_lens": [4, -1], "output_lens": [1, 1]}`, nil, "input_lens[1] = -1: a token count cannot be negative"},
		{"negative output", `{"input_lens": [4], "output_lens": [-3]}`, nil, "output_lens[0] = -3"},
		{"fraction", `{"input_lens": [4.5], "output_lens": [1]}`, nil, "input_lens[0] = 4.5: want a whole number of tokens"},
		{"exponent", `{"input_lens": [1e3], "output_lens": [1]}`, nil, "input_lens[0] = 1e3: want a whole number"},
		{"string element", `{"input_lens": ["4"], "output_lens": [1]}`, nil, `input_lens[0] = "4": want a whole number`},
		{"null element", `{"input_lens": [null], "output_lens": [1]}`, nil, "input_lens[0] = null"},
		{"too large", `{"input_lens": [99999999999], "output_lens": [1]}`, nil, "too large for a token count"},
		{"overflows int64", `{"input_lens": [1], "output_lens": [99999999999999999999]}`, nil, "output_lens[0] = 99999999999999999999: too large"},
		{"top-level array", `[{"input_lens": [1], "output_lens": [1]}]`, nil, "not a JSON object"},
		{"top-level null", `null`, nil, "not a JSON object"},
		{"empty file", "  \n", nil, "empty; want a result JSON"},
		{"empty arrays", `{"input_lens": [], "output_lens": []}`, nil, "input_lens and output_lens are empty"},
		{"broken JSON", `{"input_lens": [1, 2`, nil, "invalid JSON at byte 20: unexpected end of JSON input"},
		{"trailing garbage", `{"input_lens": [1], "output_lens": [1]} x`, nil, "invalid JSON at byte"},
		// vLLM's 2024 client left TTFT 0.0 for a reply with no text.
		{"no first token", `{"input_lens": [3, 4, 5], "output_lens": [0, 0, 2], "ttfts": [0.0, 0.25, 0.0]}`,
			[]RequestLengths{{Input: 3, Output: 0, NoFirstToken: true}, {Input: 4, Output: 0}, {Input: 5, Output: 2}}, ""},
		{"null ttfts", `{"input_lens": [3], "output_lens": [0], "ttfts": null}`, []RequestLengths{{Input: 3, Output: 0}}, ""},
		{"ttfts too short", `{"input_lens": [3, 4], "output_lens": [0, 1], "ttfts": [0.1]}`, nil, "ttfts has 1 entries but output_lens has 2"},
		{"negative ttft", `{"input_lens": [3], "output_lens": [0], "ttfts": [-0.5]}`, nil, "ttfts[0] = -0.5: a time to first token cannot be negative"},
		{"ttfts of strings", `{"input_lens": [3], "output_lens": [0], "ttfts": ["0"]}`, nil, "ttfts is not an array of numbers"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseLengths([]byte(tt.data), "run.json")
			if tt.err == "" {
				if err != nil {
					t.Fatalf("ParseLengths: %v", err)
				}
				if !reflect.DeepEqual(got, tt.want) {
					t.Fatalf("ParseLengths = %v, want %v", got, tt.want)
				}
				return
			}
			if err == nil {
				t.Fatalf("ParseLengths = %v, want an error containing %q", got, tt.err)
			}
			msg := err.Error()
			if !strings.Contains(msg, tt.err) || !strings.Contains(msg, `"run.json"`) || strings.Contains(msg, "\n") {
				t.Fatalf("error %q: want one line naming \"run.json\" and containing %q", msg, tt.err)
			}
		})
	}
}

func FuzzParseLengths(f *testing.F) {
	if data, err := os.ReadFile(smallLengthsFile); err == nil {
		f.Add(data)
	}
	for _, seed := range []string{
		``, `{}`, `[]`, `null`, `{"input_lens": [1], "output_lens": [0]}`, `{"input_lens": [1, 2], "output_lens": [3]}`,
		`{"input_lens": [-1], "output_lens": [1]}`, `{"input_lens": [1.0], "output_lens": [1]}`, `{"input_lens": ["1"], "output_lens": [1]}`,
		`{"input_lens": [1], "output_lens": [1]} {}`, `{"INPUT_LENS": [2], "output_lens": [2], "input_lens": [3]}`,
		"\xef\xbb\xbf{\"input_lens\": [4], \"output_lens\": [4]}", `{"input_lens": [2147483648], "output_lens": [1]}`,
		`{"input_lens": [1, 2], "output_lens": [0, 1], "ttfts": [0, 0.5]}`, `{"input_lens": [1], "output_lens": [0], "ttfts": [1e400]}`,
	} {
		f.Add([]byte(seed))
	}
	const name = "fuzz.json"
	f.Fuzz(func(t *testing.T, data []byte) {
		lens, err := ParseLengths(data, name)
		if err != nil {
			msg := err.Error()
			if !strings.Contains(msg, `"`+name+`"`) || strings.Contains(msg, "\n") {
				t.Fatalf("error %q: want one line naming the file", msg)
			}
			if lens != nil {
				t.Fatalf("lengths %v along with error %q", lens, msg)
			}
			return
		}
		if !json.Valid(bytesWithoutBOM(data)) {
			t.Fatalf("accepted invalid JSON %q", data)
		}
		if len(lens) == 0 {
			t.Fatalf("no lengths and no error from %q", data)
		}
		for i, l := range lens {
			if l.Input < 0 || l.Output < 0 || l.Input > maxRequestLength || l.Output > maxRequestLength {
				t.Fatalf("request %d: accepted %+v from %q", i, l, data)
			}
		}
	})
}

func bytesWithoutBOM(data []byte) []byte {
	if strings.HasPrefix(string(data), "\ufeff") {
		return data[len("\ufeff"):]
	}
	return data
}

func lengthsSpec(n int, lens []RequestLengths, prefix int) Spec {
	s := DefaultSpec()
	s.NumPrompts = n
	s.Random.Lengths = lens
	s.Random.PrefixLen = prefix
	return s
}

func lengthsFromSpec(n int, path string) Spec {
	s := DefaultSpec()
	s.NumPrompts = n
	s.Random.LengthsFrom = path
	return s
}

// TestRandomLengths: with lengths, request i of Build and of the stream
// has a prompt of exactly Lengths[i].Input tokens after the shared prefix
// (less the tokenizer's special tokens) and max_tokens max(1, Output), in
// order, for the first NumPrompts entries.
func TestRandomLengths(t *testing.T) {
	bos := newGreedyTokenizer()
	bos.numSpecial = 1
	cases := []struct {
		name       string
		spec       Spec
		tok        tokenizer.Tokenizer
		numSpecial int
	}{
		{"all of a slice", lengthsSpec(6, lengthsSmall, 0), nil, 0},
		{"the first 4", lengthsSpec(4, lengthsSmall, 0), nil, 0},
		{"with a shared prefix", lengthsSpec(6, lengthsSmall, 8), nil, 0},
		{"read from a file", lengthsFromSpec(6, smallLengthsFile), nil, 0},
		{"through a tokenizer", lengthsSpec(6, lengthsSmall, 3), newGreedyTokenizer(), 0},
		{"less a BOS token", func() Spec { s := lengthsFromSpec(6, smallLengthsFile); s.Random.PrefixLen = 2; return s }(), countingSpecialTokenizer{bos}, 1},
	}
	arr := Arrivals{Rate: 4, Burstiness: 1, Seed: 2}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			check := func(how string, i int, r Request) {
				t.Helper()
				l := lengthsSmall[i]
				wantLen := tc.spec.Random.PrefixLen + l.Input - tc.numSpecial
				if r.Index != i || r.PromptLen != wantLen || r.MaxTokens != max(1, l.Output) {
					t.Fatalf("%s: request %d: index %d, PromptLen %d, MaxTokens %d; want PromptLen %d and MaxTokens %d from %+v",
						how, i, r.Index, r.PromptLen, r.MaxTokens, wantLen, max(1, l.Output), l)
				}
				if tc.tok == nil && len(r.PromptIDs) != r.PromptLen {
					t.Fatalf("%s: request %d: %d prompt IDs for PromptLen %d", how, i, len(r.PromptIDs), r.PromptLen)
				}
			}
			built, err := Build(ctx, tc.spec, tc.tok)
			if err != nil {
				t.Fatal(err)
			}
			if len(built) != tc.spec.NumPrompts {
				t.Fatalf("Build made %d requests, want %d", len(built), tc.spec.NumPrompts)
			}
			for i, r := range built {
				check("Build", i, r)
			}
			st, err := NewTokenizedStream(ctx, tc.spec, arr, tc.tok, true)
			if err != nil {
				t.Fatal(err)
			}
			seen := make([]bool, tc.spec.NumPrompts)
			for r := st.Next(); r != nil; r = st.Next() {
				check("stream", r.Index, *r)
				seen[r.Index] = true
			}
			if st.Err() != nil {
				t.Fatal(st.Err())
			}
			for i, ok := range seen {
				if !ok {
					t.Fatalf("stream: request %d never came", i)
				}
			}
		})
	}
}

func TestRandomLengthsErrors(t *testing.T) {
	bos := newGreedyTokenizer()
	bos.numSpecial = 1
	withRatio := lengthsFromSpec(3, smallLengthsFile)
	withRatio.Random.RangeRatio = 0.5
	sharegpt := lengthsFromSpec(3, smallLengthsFile)
	sharegpt.Dataset, sharegpt.Path = DatasetShareGPT, shareGPTFile
	tests := []struct {
		name    string
		spec    Spec
		tok     tokenizer.Tokenizer
		want    string
		wantErr error // reachable with errors.Is, when set
	}{
		{"more prompts than the file has", lengthsFromSpec(2000, smallLengthsFile), nil,
			`num_prompts 2000 but "testdata/lengths_small.json" has 6 requests; pass num_prompts 6 or less`, nil},
		{"more prompts than the slice has", lengthsSpec(7, lengthsSmall, 0), nil,
			"num_prompts 7 but RandomOptions.Lengths has 6 requests; pass num_prompts 6 or less", nil},
		{"range ratio", withRatio, nil, `random_range_ratio 0.5: the lengths from "testdata/lengths_small.json" are exact`, nil},
		{"another dataset", sharegpt, nil, "random_lengths_from is for the random dataset, not sharegpt", nil},
		{"no such file", lengthsFromSpec(3, "testdata/none.json"), nil,
			`lengths file "testdata/none.json": no such file (pass random_lengths_from)`, fs.ErrNotExist},
		{"a directory", lengthsFromSpec(3, "testdata"), nil, `lengths file "testdata": is a directory`, fs.ErrInvalid},
		{"not a result JSON", lengthsFromSpec(3, "testdata/sharegpt_small.json"), nil, "not a JSON object", nil},
		{"an empty prompt", lengthsSpec(2, []RequestLengths{{Input: 3, Output: 1}, {Input: 0, Output: 1}}, 0), nil,
			"request 1 of RandomOptions.Lengths has 0 input tokens: its prompt would have 0 tokens", nil},
		{"the BOS token empties a prompt", lengthsFromSpec(4, smallLengthsFile), countingSpecialTokenizer{bos},
			`request 3 of "testdata/lengths_small.json" has 1 input tokens: its prompt would have 0 tokens (1 special tokens`, nil},
		{"negative", lengthsSpec(1, []RequestLengths{{Input: 3, Output: -1}}, 0), nil, "neither may be negative", nil},
		{"too large", lengthsSpec(1, []RequestLengths{{Input: math.MaxInt32 + 1, Output: 1}}, 0), nil, "too large for a token count", nil},
	}
	arr := Arrivals{Rate: 4, Burstiness: 1}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			_, buildErr := Build(ctx, tt.spec, tt.tok)
			_, streamErr := NewTokenizedStream(ctx, tt.spec, arr, tt.tok, false)
			for how, err := range map[string]error{"Build": buildErr, "NewTokenizedStream": streamErr} {
				if err == nil || !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), "\n") {
					t.Fatalf("%s: error %v, want one line containing %q", how, err, tt.want)
				}
				if tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
					t.Fatalf("%s: error %v does not wrap %v", how, err, tt.wantErr)
				}
			}
		})
	}
}

// TestPrefixAloneMakesZeroInputValid: a shared prefix gives a prompt of
// input length 0 its tokens, as it does for --random-input-len 0.
func TestPrefixAloneMakesZeroInputValid(t *testing.T) {
	reqs, err := Build(context.Background(), lengthsSpec(1, []RequestLengths{{Input: 0, Output: 3}}, 4), nil)
	if err != nil {
		t.Fatal(err)
	}
	if reqs[0].PromptLen != 4 || reqs[0].MaxTokens != 3 {
		t.Fatalf("got PromptLen %d and MaxTokens %d, want 4 and 3", reqs[0].PromptLen, reqs[0].MaxTokens)
	}
}
