package workload

import (
	"context"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/servebench/servebench/internal/llamacppfake"
	"github.com/servebench/servebench/tokenizer"
)

// TestBuildIsTheSameAtAnyConcurrency: random prompts converge through the
// tokenizer several at once, each padded from its own random stream, so
// how many are made at once never changes what is made.
func TestBuildIsTheSameAtAnyConcurrency(t *testing.T) {
	tok := newGreedyTokenizer()
	for _, spec := range []Spec{randomSpec(60, 40, 8, 0.5, 7), randomSpec(30, 25, 4, 0, 0)} {
		want, err := BuildWith(context.Background(), spec, tok, BuildOptions{Workers: 1})
		if err != nil {
			t.Fatal(err)
		}
		padded := 0
		for _, r := range want {
			ids, _ := tok.Encode(context.Background(), r.Prompt)
			if len(ids) != r.PromptLen {
				t.Fatalf("request %d: PromptLen %d, its text encodes to %d", r.Index, r.PromptLen, len(ids))
			}
			if r.Prompt != "" && !isSequentialBody(tok, ids, spec.Random.PrefixLen) {
				padded++
			}
		}
		if padded == 0 {
			t.Fatal("no prompt needed converging: the test would not see padding draws")
		}
		for _, workers := range []int{2, 7, DefaultBuildWorkers} {
			got, err := BuildWith(context.Background(), spec, tok, BuildOptions{Workers: workers})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("%d workers differ from one (-one +%d):\n%s", workers, workers, diff)
			}
		}
	}
}

// isSequentialBody reports whether the body after the prefix is a run of
// consecutive IDs, as drawn before any converging.
func isSequentialBody(tok *greedyTokenizer, ids []int, prefix int) bool {
	body := ids[min(prefix, len(ids)):]
	for k := 1; k < len(body); k++ {
		if body[k] != body[k-1]+1 && !slices.Contains(tok.special, body[k-1]+1) {
			return false
		}
	}
	return true
}

// slowTokenizer answers every call after a fixed round trip on the clock
// that runs (synctest's fake one here), like a server tokenizer.
type slowTokenizer struct {
	*greedyTokenizer
	roundTrip time.Duration
	mu        sync.Mutex
	calls     int
}

func (t *slowTokenizer) wait() {
	t.mu.Lock()
	t.calls++
	t.mu.Unlock()
	time.Sleep(t.roundTrip)
}

func (t *slowTokenizer) Encode(ctx context.Context, text string) ([]int, error) {
	t.wait()
	return t.greedyTokenizer.Encode(ctx, text)
}

func (t *slowTokenizer) Decode(ctx context.Context, ids []int) (string, error) {
	t.wait()
	return t.greedyTokenizer.Decode(ctx, ids)
}

// TestBuildOverlapsTokenizerRoundTrips: a server tokenizer's calls are
// round trips, and a random prompt needs a few in a row; Build keeps
// DefaultBuildWorkers prompts in flight, so setup takes about 1/16 of the
// calls' time (on synctest's clock: the time here is the model's, not the
// machine's), and reports its progress in order.
func TestBuildOverlapsTokenizerRoundTrips(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tok := &slowTokenizer{greedyTokenizer: newGreedyTokenizer(), roundTrip: 40 * time.Millisecond}
		spec := randomSpec(200, 64, 8, 0, 0)
		var progress []int
		start := time.Now()
		reqs, err := BuildWith(t.Context(), spec, tok, BuildOptions{Progress: func(done, total int) {
			if total != 200 {
				t.Errorf("progress total %d, want 200", total)
			}
			progress = append(progress, done)
		}})
		if err != nil {
			t.Fatal(err)
		}
		took := time.Since(start)
		if len(reqs) != 200 {
			t.Fatalf("%d requests, want 200", len(reqs))
		}
		sequential := time.Duration(tok.calls) * tok.roundTrip
		if took > sequential/(DefaultBuildWorkers/2) {
			t.Errorf("%d calls of %v took %v: one after another would be %v; want at most a %dth of that", tok.calls, tok.roundTrip, took, sequential, DefaultBuildWorkers/2)
		}
		if want := seq(1, 200); !slices.Equal(progress, want) {
			t.Errorf("progress %v, want 1..200 in order", progress)
		}
	})
}

func seq(from, to int) []int {
	out := make([]int, 0, to-from+1)
	for i := from; i <= to; i++ {
		out = append(out, i)
	}
	return out
}

// TestBuildStopsAtTheFirstFailure: a tokenizer failure ends the build with
// the failed prompt's error, the same whichever worker met it first.
func TestBuildStopsAtTheFirstFailure(t *testing.T) {
	_, err := BuildWith(context.Background(), randomSpec(50, 20, 4, 0, 0), failingTokenizer{newGreedyTokenizer()}, BuildOptions{Workers: 8})
	if err == nil || err.Error() != "workload: random prompt 0: tokenizer fake-greedy: encode: tokenizer backend down" {
		t.Fatalf("err = %v; want prompt 0's encode error", err)
	}
	if _, err := BuildWith(context.Background(), randomSpec(5, 20, 4, 0, 0), newGreedyTokenizer(), BuildOptions{Workers: -1}); err == nil {
		t.Fatal("Workers -1 accepted")
	}
}

// TestRandomPromptsAreExactAtTheServer: llama.cpp puts BOS before every
// text prompt but its /tokenize counts without it unless asked, so a
// prompt built to 128 tokens reached the model as 129. Built through the
// server's tokenizer, the model must see exactly the asked length.
func TestRandomPromptsAreExactAtTheServer(t *testing.T) {
	srv, err := llamacppfake.Start(llamacppfake.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	tok, err := tokenizer.NewServer(srv.URL, tokenizer.Options{VocabSize: llamacppfake.VocabSize})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name             string
		spec             Spec
		minLen, maxLen   int
		wantSomeDistinct bool
	}{
		{"128 tokens", randomSpec(30, 128, 4, 0, 0), 128, 128, false},
		{"128 with a shared prefix of 16", randomSpec(30, 128, 4, 0, 16), 144, 144, false},
		// vLLM's range is around the length less the special tokens:
		// [floor(127*0.5), ceil(127*1.5)] + BOS.
		{"range ratio 0.5", randomSpec(60, 128, 4, 0.5, 0), 64, 192, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reqs, err := Build(context.Background(), tc.spec, tok)
			if err != nil {
				t.Fatal(err)
			}
			seen := map[int]bool{}
			for _, r := range reqs {
				atServer := len(llamacppfake.Encode(r.Prompt, true))
				if atServer < tc.minLen || atServer > tc.maxLen {
					t.Fatalf("request %d reaches the model as %d tokens, want %d..%d", r.Index, atServer, tc.minLen, tc.maxLen)
				}
				if atServer != r.PromptLen+1 {
					t.Fatalf("request %d: PromptLen %d, the model sees %d (BOS + %d)", r.Index, r.PromptLen, atServer, r.PromptLen)
				}
				seen[atServer] = true
			}
			if tc.wantSomeDistinct && len(seen) < 2 {
				t.Errorf("every prompt has the same length %v with a range ratio", seen)
			}
		})
	}
}

// TestBuildReportsProgressForEveryDataset: the text datasets count each
// prompt through the tokenizer one after another, so they report progress
// too, in order, up to what they make.
func TestBuildReportsProgressForEveryDataset(t *testing.T) {
	tok := newGreedyTokenizer()
	for _, tc := range []struct {
		name string
		spec Spec
		want int
	}{
		{"random", randomSpec(30, 20, 4, 0.2, 0), 30},
		{"sonnet", sonnetSpec("testdata/poem.txt", 25, 200, 9, 80), 25},
		{"sharegpt", noOversample(shareGPTSpec(4)), 4},
		{"custom", customSpec("testdata/custom_small.jsonl", 3), 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []int
			reqs, err := BuildWith(context.Background(), tc.spec, tok, BuildOptions{Progress: func(done, total int) {
				if total != tc.want {
					t.Errorf("progress total %d, want %d", total, tc.want)
				}
				got = append(got, done)
			}})
			if err != nil {
				t.Fatal(err)
			}
			if len(reqs) != tc.want || !slices.Equal(got, seq(1, tc.want)) {
				t.Errorf("%d requests, progress %v; want %d and 1..%d in order", len(reqs), got, tc.want, tc.want)
			}
		})
	}
}
