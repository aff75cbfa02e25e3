package tpe

import (
	"cmp"
	"slices"
)

// DefaultGamma is how many of n finished trials form the good group:
// a tenth, rounded up, and never more than 25. It is computed on whole
// numbers, so 30 trials give 3 (the same formula in floating point gives
// 4, because 0.1×30 rounds above 3).
func DefaultGamma(n int) int {
	return min((n+9)/10, 25)
}

// recentTrials is how many of the newest observations keep full weight
// under DefaultWeights.
const recentTrials = 25

// DefaultWeights are the weights of a group's n observations, oldest
// first: all 1 up to 25 observations; beyond that the newest 25 keep 1
// and the older ones ramp linearly from 1/n (the oldest) towards 1, so a
// long study's early exploration counts for less.
func DefaultWeights(n int) []float64 {
	w := make([]float64, n)
	old := n - recentTrials
	for i := range w {
		switch {
		case i >= old:
			w[i] = 1
		case old == 1:
			w[i] = 1 / float64(n)
		default:
			lowest := 1 / float64(n)
			w[i] = lowest + (1-lowest)*float64(i)/float64(old-1)
		}
	}
	return w
}

// group is one side of the split: values and their weights, oldest
// first.
type group struct {
	values, weights []float64
}

// split ranks history by score, best first (ties keep the older trial
// first), and returns the good group (the best nGood) and the bad group,
// each in trial order and weighted by weights.
func split(history []Observation, nGood int, weights func(int) []float64) (good, bad group) {
	ranked := make([]int, len(history))
	for i := range ranked {
		ranked[i] = i
	}
	slices.SortStableFunc(ranked, func(a, b int) int { return cmp.Compare(history[b].Score, history[a].Score) })
	nGood = min(max(nGood, 0), len(history))
	isGood := make([]bool, len(history))
	for _, i := range ranked[:nGood] {
		isGood[i] = true
	}
	for i, o := range history {
		if isGood[i] {
			good.values = append(good.values, o.Value)
		} else {
			bad.values = append(bad.values, o.Value)
		}
	}
	good.weights, bad.weights = weights(len(good.values)), weights(len(bad.values))
	return good, bad
}
