package workload

import (
	"context"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"
)

func shareGPTDistSpec(n, in, out int, seed int64) Spec {
	s := DefaultSpec()
	s.NumPrompts, s.Seed = n, seed
	s.Random.InputLen, s.Random.OutputLen = in, out
	s.Random.LengthDist = LengthDistShareGPT
	return s
}

// TestShareGPTLengths: the drawn lengths keep the asked means exactly,
// follow vLLM's sample's prompts in order, and are the same for the same
// seed.
func TestShareGPTLengths(t *testing.T) {
	tests := []struct {
		name          string
		n, in, out    int
		wantIn, wantO int // totals
	}{
		{"vLLM's sample at its own mean", 1000, 215, 200, 215000, 200000},
		{"a Qwen3 chat run", 1000, 217, 202, 217000, 202000},
		{"fewer prompts than the sample", 100, 233, 221, 23300, 22100},
		{"more prompts than the sample", 2400, 224, 189, 2400 * 224, 2400 * 189},
		{"longer prompts", 300, 343, 202, 300 * 343, 300 * 202},
		{"one-token means", 50, 1, 1, 50, 50},
		{"two-token means", 50, 2, 2, 100, 100},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lens := shareGPTLengths(tt.n, tt.in, tt.out, 7)
			if len(lens) != tt.n {
				t.Fatalf("%d lengths, want %d", len(lens), tt.n)
			}
			in, out := 0, 0
			for i, l := range lens {
				if l.Input < 1 || l.Output < 1 {
					t.Fatalf("request %d: %+v, want at least one token each", i, l)
				}
				in += l.Input
				out += l.Output
			}
			if in != tt.wantIn || out != tt.wantO {
				t.Fatalf("totals %d in, %d out; want %d and %d", in, out, tt.wantIn, tt.wantO)
			}
			// Prompts keep the sample's order: request i's prompt is the
			// sample's i-th scaled, to within the one token rounding moves.
			scale := float64(tt.n*(tt.in-1)) / promptShapeSum(tt.n)
			for i, l := range lens[:min(tt.n, 40)] {
				want := 1 + float64(shareGPTPromptLens[i])*scale
				if math.Abs(float64(l.Input)-want) > 1 {
					t.Fatalf("request %d: prompt %d tokens, want %.1f (the sample's %d scaled by %.3f)", i, l.Input, want, shareGPTPromptLens[i], scale)
				}
			}
			if again := shareGPTLengths(tt.n, tt.in, tt.out, 7); !reflect.DeepEqual(again, lens) {
				t.Fatal("the same seed drew different lengths")
			}
		})
	}
	a, b := shareGPTLengths(1000, 215, 200, 1), shareGPTLengths(1000, 215, 200, 2)
	if reflect.DeepEqual(a, b) {
		t.Fatal("seeds 1 and 2 drew the same lengths")
	}
	for i := range a {
		if a[i].Input != b[i].Input {
			t.Fatalf("request %d: prompts %d and %d under two seeds; the prompts follow the sample, not the seed", i, a[i].Input, b[i].Input)
		}
	}
}

func promptShapeSum(n int) float64 {
	sum := 0.0
	for i := range n {
		sum += float64(shareGPTPromptLens[i%len(shareGPTPromptLens)])
	}
	return sum
}

// TestShareGPTOutputShape: replies have ShareGPT's median-to-mean ratio
// and stay where the samplers keep them.
func TestShareGPTOutputShape(t *testing.T) {
	if got := shareGPTMeanOutput; math.Abs(got-189.09) > 0.01 {
		t.Fatalf("mean reply %.3f tokens, want 226901/1200 = 189.09", got)
	}
	if got := shareGPTMedianOutput; math.Abs(got-119.01) > 0.01 {
		t.Fatalf("median reply %.3f tokens, want 119.01", got)
	}
	rng := newRand(3, shareGPTLengthStream)
	const n = 40000
	draws := make([]float64, n)
	sum := 0.0
	for i := range draws {
		prompt := float64(shareGPTPromptLens[i%len(shareGPTPromptLens)])
		o := shareGPTOutput(rng, prompt)
		if o < 4 || o > max(4, 2048-prompt) {
			t.Fatalf("draw %d: %.1f tokens for a %v-token prompt, outside [4, 2048 - prompt]", i, o, prompt)
		}
		draws[i] = o
		sum += o
	}
	slices.Sort(draws)
	ratio := draws[n/2] / (sum / n)
	// The bounds trim the log-normal's tail, which lowers the mean a
	// little: the ratio lands just above 0.63.
	if ratio < 0.62 || ratio > 0.66 {
		t.Fatalf("median/mean of %d replies %.3f, want ShareGPT's 0.63 (119.0 / 189.1)", n, ratio)
	}
}

func TestApportion(t *testing.T) {
	tests := []struct {
		weights []float64
		total   int
		want    []int
	}{
		{[]float64{1, 1, 1, 1}, 8, []int{2, 2, 2, 2}},
		{[]float64{1, 1, 1}, 10, []int{4, 3, 3}}, // a tie goes to the earlier
		{[]float64{1, 2, 7}, 10, []int{1, 2, 7}},
		{[]float64{0.5, 0.25, 0.25}, 3, []int{1, 1, 1}}, // 1.5, 0.75, 0.75: the remainder to the largest fractions
		{[]float64{3, 1}, 0, []int{0, 0}},
		{[]float64{5}, 17, []int{17}},
	}
	for _, tt := range tests {
		got := apportion(tt.weights, tt.total)
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("apportion(%v, %d) = %v, want %v", tt.weights, tt.total, got, tt.want)
		}
	}
}

// TestShareGPTLengthDistBuilds: with --random-length-dist sharegpt, Build,
// the stream and ReplayedLengths all send the drawn lengths, in order.
func TestShareGPTLengthDistBuilds(t *testing.T) {
	ctx := context.Background()
	spec := shareGPTDistSpec(300, 217, 202, 5)
	want := shareGPTLengths(300, 217, 202, 5)
	built, err := Build(ctx, spec, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range built {
		if r.PromptLen != want[i].Input || r.MaxTokens != want[i].Output {
			t.Fatalf("Build: request %d has %d prompt tokens and max_tokens %d, want %+v", i, r.PromptLen, r.MaxTokens, want[i])
		}
	}
	st, err := NewTokenizedStream(ctx, spec, Arrivals{Rate: 10, Burstiness: 1, Seed: 5}, nil, true)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for r := st.Next(); r != nil; r = st.Next() {
		if r.PromptLen != want[r.Index].Input || r.MaxTokens != want[r.Index].Output {
			t.Fatalf("stream: request %d has %d prompt tokens and max_tokens %d, want %+v", r.Index, r.PromptLen, r.MaxTokens, want[r.Index])
		}
		n++
	}
	if st.Err() != nil || n != 300 {
		t.Fatalf("stream sent %d requests, err %v; want 300", n, st.Err())
	}
	replayed, err := spec.ReplayedLengths()
	if err != nil || !reflect.DeepEqual(replayed, want) {
		t.Fatalf("ReplayedLengths: %v, err %v; want the drawn lengths", len(replayed), err)
	}
	uniform := DefaultSpec()
	if lens, err := uniform.ReplayedLengths(); lens != nil || err != nil {
		t.Fatalf("uniform lengths replayed %d lengths, err %v; want none", len(lens), err)
	}
}

func TestShareGPTLengthDistErrors(t *testing.T) {
	tests := []struct {
		name   string
		modify func(*Spec)
		want   string
	}{
		{"unknown shape", func(s *Spec) { s.Random.LengthDist = "lognormal" }, `random_length_dist "lognormal": unknown (want one of uniform, sharegpt)`},
		{"with a range ratio", func(s *Spec) { s.Random.RangeRatio = 0.5 }, "random_range_ratio 0.5: random_length_dist sharegpt sets the spread"},
		{"with a lengths file", func(s *Spec) { s.Random.LengthsFrom = "run.json" }, `random_length_dist sharegpt draws the lengths random_lengths_from "run.json" gives`},
		{"no prompt", func(s *Spec) { s.Random.InputLen = 0 }, "random_input_len 0: the mean prompt length must be at least 1"},
		{"no output", func(s *Spec) { s.Random.OutputLen = 0 }, "random_output_len 0: must be at least 1"},
		{"another dataset", func(s *Spec) { s.Dataset, s.Path = DatasetShareGPT, shareGPTFile }, "random_length_dist is for the random dataset, not sharegpt"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := shareGPTDistSpec(10, 200, 200, 0)
			tt.modify(&s)
			err := s.Validate()
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Validate: %v, want %q", err, tt.want)
			}
			if _, err := Build(context.Background(), s, nil); err == nil {
				t.Fatal("Build accepted the spec Validate refused")
			}
		})
	}
	if err := shareGPTDistSpec(10, 200, 200, 0).Validate(); err != nil {
		t.Fatalf("a valid spec: %v", err)
	}
	uniform := DefaultSpec()
	uniform.Random.LengthDist = LengthDistUniform
	if err := uniform.Validate(); err != nil {
		t.Fatalf("--random-length-dist uniform: %v", err)
	}
}
