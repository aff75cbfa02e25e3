package tpe

import (
	"math"
	"slices"
	"testing"
)

func TestDefaultGamma(t *testing.T) {
	for _, tc := range []struct{ n, want int }{
		{0, 0}, {1, 1}, {9, 1}, {10, 1}, {11, 2}, {30, 3}, {31, 4}, {249, 25}, {250, 25}, {10000, 25},
	} {
		if got := DefaultGamma(tc.n); got != tc.want {
			t.Errorf("DefaultGamma(%d) = %d, want %d", tc.n, got, tc.want)
		}
	}
}

func TestDefaultWeights(t *testing.T) {
	ones := func(n int) []float64 {
		w := make([]float64, n)
		for i := range w {
			w[i] = 1
		}
		return w
	}
	for _, tc := range []struct {
		n    int
		want []float64
	}{
		{0, []float64{}},
		{1, ones(1)},
		{24, ones(24)},
		{25, ones(25)},
		// One observation older than the newest 25: the ramp is its lowest point.
		{26, append([]float64{1.0 / 26}, ones(25)...)},
		// Five older ones ramp from 1/30 to 1 in equal steps.
		{30, append([]float64{1.0 / 30, 1.0/30 + 0.25*29/30, 1.0/30 + 0.5*29/30, 1.0/30 + 0.75*29/30, 1}, ones(25)...)},
	} {
		got := DefaultWeights(tc.n)
		if len(got) != len(tc.want) {
			t.Fatalf("DefaultWeights(%d) has %d weights", tc.n, len(got))
		}
		for i := range got {
			if math.Abs(got[i]-tc.want[i]) > 1e-12 {
				t.Errorf("DefaultWeights(%d)[%d] = %g, want %g", tc.n, i, got[i], tc.want[i])
			}
		}
	}
	w := DefaultWeights(200)
	if !slices.IsSorted(w) || w[0] != 1.0/200 || w[174] != 1 {
		t.Errorf("DefaultWeights(200) should rise from 1/200 to 1 at the 175th: %v ... %v", w[:3], w[172:176])
	}
}

func TestSplitTakesTheBestInTrialOrder(t *testing.T) {
	history := []Observation{
		{Value: 0, Score: 1}, {Value: 1, Score: 5}, {Value: 2, Score: math.NaN()}, {Value: 3, Score: 5},
		{Value: 4, Score: 9}, {Value: 5, Score: 5}, {Value: 6, Score: -1},
	}
	for _, tc := range []struct {
		nGood       int
		good, bad   []float64
		goodW, badW int
		comment     string
	}{
		{0, nil, []float64{0, 1, 2, 3, 4, 5, 6}, 0, 7, "no good group"},
		{1, []float64{4}, []float64{0, 1, 2, 3, 5, 6}, 1, 6, "the best alone"},
		// Three tie at 5: the older trials (values 1 and 3) win.
		{3, []float64{1, 3, 4}, []float64{0, 2, 5, 6}, 3, 4, "ties go to the older trial"},
		// NaN ranks below every number.
		{6, []float64{0, 1, 3, 4, 5, 6}, []float64{2}, 6, 1, "NaN is worst"},
		{99, []float64{0, 1, 2, 3, 4, 5, 6}, nil, 7, 0, "more than there are"},
	} {
		good, bad := split(history, tc.nGood, DefaultWeights)
		if !slices.Equal(good.values, tc.good) || !slices.Equal(bad.values, tc.bad) {
			t.Errorf("%s: split %d = good %v bad %v, want %v and %v", tc.comment, tc.nGood, good.values, bad.values, tc.good, tc.bad)
		}
		if len(good.weights) != tc.goodW || len(bad.weights) != tc.badW {
			t.Errorf("%s: %d and %d weights, want %d and %d", tc.comment, len(good.weights), len(bad.weights), tc.goodW, tc.badW)
		}
	}
}
