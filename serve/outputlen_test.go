package serve

import (
	"math"
	"math/rand/v2"
	"testing"
)

func TestParseOutputLenDist(t *testing.T) {
	tests := []struct {
		in   string
		want OutputLenDist
		err  string
	}{
		{in: "max", want: OutputLenDist{Kind: OutputLenMax}},
		{in: "", want: OutputLenDist{Kind: OutputLenMax}},
		{in: "fixed:128", want: OutputLenDist{Kind: OutputLenFixed, A: 128}},
		{in: "uniform:10:20", want: OutputLenDist{Kind: OutputLenUniform, A: 10, B: 20}},
		{in: "lognormal:200:0.8", want: OutputLenDist{Kind: OutputLenLognormal, A: 200, B: 0.8}},
		{in: "fixed:0", err: `output length distribution "fixed:0": N must be a whole number ≥ 1`},
		{in: "fixed:1.5", err: `output length distribution "fixed:1.5": N must be a whole number ≥ 1`},
		{in: "uniform:20:10", err: `output length distribution "uniform:20:10": need whole numbers 1 ≤ MIN ≤ MAX`},
		{in: "lognormal:0:1", err: `output length distribution "lognormal:0:1": need MEAN ≥ 1 and 0 ≤ SIGMA ≤ 5`},
		{in: "fixed:abc", err: `output length distribution "fixed:abc": "abc" is not a number; use "max", "fixed:N", "uniform:MIN:MAX" or "lognormal:MEAN:SIGMA"`},
		{in: "normal:1:2", err: `output length distribution "normal:1:2": use "max", "fixed:N", "uniform:MIN:MAX" or "lognormal:MEAN:SIGMA"`},
		{in: "max:3", err: `output length distribution "max:3": use "max", "fixed:N", "uniform:MIN:MAX" or "lognormal:MEAN:SIGMA"`},
	}
	for _, tc := range tests {
		got, err := ParseOutputLenDist(tc.in)
		if tc.err != "" {
			if err == nil || err.Error() != tc.err {
				t.Errorf("%q: error %v, want %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%q: got %+v, %v; want %+v", tc.in, got, err, tc.want)
		}
		if back, err := ParseOutputLenDist(got.String()); err != nil || back != got {
			t.Errorf("%q: String() %q does not parse back", tc.in, got.String())
		}
	}
}

func TestOutputLen(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	uniform := OutputLenDist{Kind: OutputLenUniform, A: 10, B: 20}
	lognormal := OutputLenDist{Kind: OutputLenLognormal, A: 100, B: 0.5}
	tests := []struct {
		name                 string
		d                    OutputLenDist
		limit, min           int
		ignoreEOS, unlimited bool
		wantN                int // -1: check range instead
		wantHit              bool
	}{
		{"max runs to the limit", OutputLenDist{}, 50, 0, false, false, 50, true},
		{"ignore_eos wins", OutputLenDist{Kind: OutputLenFixed, A: 3}, 50, 0, true, false, 50, true},
		{"fixed below limit stops", OutputLenDist{Kind: OutputLenFixed, A: 3}, 50, 0, false, false, 3, false},
		{"fixed capped", OutputLenDist{Kind: OutputLenFixed, A: 300}, 50, 0, false, false, 50, true},
		{"min_tokens raises", OutputLenDist{Kind: OutputLenFixed, A: 3}, 50, 7, false, false, 7, false},
		{"unlimited chat", OutputLenDist{}, 100000, 0, false, true, DefaultUnlimitedOutput, false},
		{"unlimited small window", OutputLenDist{}, 100, 0, false, true, 100, true},
	}
	for _, tc := range tests {
		n, hit := tc.d.outputLen(rng, tc.limit, tc.min, tc.ignoreEOS, tc.unlimited)
		if n != tc.wantN || hit != tc.wantHit {
			t.Errorf("%s: got (%d, %v), want (%d, %v)", tc.name, n, hit, tc.wantN, tc.wantHit)
		}
	}
	var sum float64
	const draws = 20000
	for range draws {
		n, _ := uniform.outputLen(rng, 1000, 0, false, false)
		if n < 10 || n > 20 {
			t.Fatalf("uniform drew %d", n)
		}
		m, _ := lognormal.outputLen(rng, 1<<20, 0, false, false)
		if m < 1 {
			t.Fatalf("lognormal drew %d", m)
		}
		sum += float64(m)
	}
	if mean := sum / draws; math.Abs(mean-100)/100 > 0.03 {
		t.Errorf("lognormal mean %.1f, want 100 ± 3%%", mean)
	}
}

func FuzzParseOutputLenDist(f *testing.F) {
	for _, s := range []string{"max", "fixed:5", "uniform:1:9", "lognormal:10:1", "uniform:", "::", "fixed:1e308", "lognormal:NaN:1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ParseOutputLenDist(s)
		if err != nil {
			return
		}
		rng := rand.New(rand.NewPCG(3, 4))
		for range 10 {
			n, _ := d.outputLen(rng, 500, 2, false, false)
			if n < 2 || n > 500 {
				t.Fatalf("%q drew %d outside [2, 500]", s, n)
			}
		}
	})
}
