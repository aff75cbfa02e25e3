package perf

import (
	"math"
	"testing"
	"time"
)

// testSampler is a small grid shaped like the measured ones: a launch
// floor at few rows, then time in proportion to rows × vocab.
var testSampler = SamplerKernels{
	MeasuredOn: "H100",
	Rows:       []int{1, 64, 1024},
	Vocabs:     []int{32000, 128000},
	Micros:     [][]float64{{40, 60, 720}, {100, 240, 2880}},
}

func TestSamplerKernelsAt(t *testing.T) {
	for _, tc := range []struct {
		name  string
		rows  float64
		vocab int
		want  float64
	}{
		{"measured point", 64, 32000, 60},
		{"measured point, other vocabulary", 1024, 128000, 2880},
		{"fewer rows than measured hold the floor", 0.5, 32000, 40},
		{"between rows, linear", 544, 32000, 390},
		{"past the last row, in proportion", 2048, 128000, 5760},
		{"between vocabularies, linear", 64, 80000, 150},
		{"below the first vocabulary, in proportion", 64, 16000, 30},
		{"past the last vocabulary, in proportion", 1024, 256000, 5760},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := testSampler.At(tc.rows, tc.vocab); math.Abs(got-tc.want) > 1e-9 {
				t.Errorf("At(%v, %d) = %v µs, want %v", tc.rows, tc.vocab, got, tc.want)
			}
		})
	}
}

func TestSamplerKernelsRejectsIncompleteGrids(t *testing.T) {
	for _, tc := range []struct {
		name string
		k    SamplerKernels
	}{
		{"zero value", SamplerKernels{}},
		{"a vocabulary without its row", SamplerKernels{Rows: []int{1, 8}, Vocabs: []int{32000, 64000}, Micros: [][]float64{{1, 2}}}},
		{"a row short", SamplerKernels{Rows: []int{1, 8}, Vocabs: []int{32000}, Micros: [][]float64{{1}}}},
		{"rows out of order", SamplerKernels{Rows: []int{8, 1}, Vocabs: []int{32000}, Micros: [][]float64{{1, 2}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.k.valid() {
				t.Fatalf("%+v counted as a complete grid", tc.k)
			}
			if got := tc.k.At(64, 32000); got != 0 {
				t.Errorf("At on an incomplete grid = %v µs, want 0", got)
			}
			d := deployment(t, "Llama-3.1-8B", "H100", func(d *Deployment) { d.SamplerKernels = tc.k })
			if c := newSamplerCurve(d); c != nil {
				t.Errorf("an incomplete grid gave a sampler curve")
			}
		})
	}
}

// A step that samples pays the sampler's kernels on top of what it paid
// before; one that samples nothing (a prompt chunk that does not finish
// its prompt) pays none.
func TestStepTimeCountsTheSampler(t *testing.T) {
	for _, tables := range []bool{false, true} {
		with := func(k SamplerKernels) *Roofline {
			d := deployment(t, "Llama-3.1-8B", "H100", func(d *Deployment) {
				d.SamplerKernels = k
				d.NoKernelTables = !tables
			})
			r, err := NewRoofline(d)
			if err != nil {
				t.Fatal(err)
			}
			return r
		}
		bare, counted := with(SamplerKernels{}), with(testSampler)
		decode := decodeStep(64, 1000)
		want := time.Duration(testSampler.At(64, 128256) * float64(time.Microsecond))
		if got := counted.StepTime(decode) - bare.StepTime(decode); absDuration(got-want) > time.Microsecond {
			t.Errorf("tables %v: 64 decodes gained %v from the sampler, want %v", tables, got, want)
		}
		if got := counted.Breakdown(decode).GPU - bare.Breakdown(decode).GPU; absDuration(got-want) > time.Microsecond {
			t.Errorf("tables %v: the breakdown's GPU time gained %v, want %v", tables, got, want)
		}
		if got := counted.StageSplit(decode).Stage - bare.StageSplit(decode).Stage; absDuration(got-want) > time.Microsecond {
			t.Errorf("tables %v: the last stage gained %v, want %v", tables, got, want)
		}
		chunk := StepShape{PrefillTokens: 512, Prefills: 1, AttnPairs: 512 * 513 / 2, KVTokens: 512}
		if a, b := counted.StepTime(chunk), bare.StepTime(chunk); a != b {
			t.Errorf("tables %v: a prompt chunk that samples nothing took %v with the sampler, %v without", tables, a, b)
		}
	}
}

// On a GPU with less bandwidth than the measuring one the sampler stays
// near its launch floor at one row and slows by the bandwidth ratio once
// the logits sweep decides.
func TestSamplerCurveScalesWithBandwidth(t *testing.T) {
	curveOn := func(gpu string) *curve {
		d := deployment(t, "Llama-3.1-8B", gpu, func(d *Deployment) { d.SamplerKernels = testSampler })
		d, err := d.Resolve()
		if err != nil {
			t.Fatal(err)
		}
		c := newSamplerCurve(d)
		if c == nil {
			t.Fatalf("no sampler curve on %s", gpu)
		}
		return c
	}
	h100, a10g := curveOn("H100"), curveOn("A10G")
	if a, b := a10g.at(1), h100.at(1); a < b || a > 1.2*b {
		t.Errorf("one row: %v s on A10G, %v s on H100; want within 20%% of the launch floor", a, b)
	}
	ratio := mustGPU(t, "H100").MemoryBandwidth / mustGPU(t, "A10G").MemoryBandwidth
	if got := a10g.at(1024) / h100.at(1024); math.Abs(got/ratio-1) > 0.01 {
		t.Errorf("1024 rows: A10G/H100 = %.2f, want the bandwidth ratio %.2f", got, ratio)
	}
	prev := 0.0
	for rows := 1.0; rows <= 1024; rows *= 2 {
		if v := a10g.at(rows); v < prev {
			t.Errorf("A10G sampler time falls from %v to %v s at %v rows", prev, v, rows)
		} else {
			prev = v
		}
	}
}
