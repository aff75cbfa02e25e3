package tpe

import (
	"math"
	"math/rand/v2"
)

// categorical is the estimator of an unordered choice: each choice's
// probability is its observations' weight plus an equal share of the
// prior's weight, over the total. The prior keeps every choice
// reachable, and no choice borrows from its neighbours, since choices
// have no order.
type categorical struct {
	probs []float64
}

func newCategorical(choices int, values, weights []float64, prior float64) *categorical {
	if len(values) == 0 && prior <= 0 {
		prior = 1
	}
	c := &categorical{probs: make([]float64, choices)}
	total := prior
	for i := range c.probs {
		c.probs[i] = prior / float64(choices)
	}
	for i, v := range values {
		c.probs[int(v)] += weights[i]
		total += weights[i]
	}
	for i := range c.probs {
		c.probs[i] /= total
	}
	return c
}

func (c *categorical) logDensity(x float64) float64 { return math.Log(c.probs[int(x)]) }

func (c *categorical) draw(rng *rand.Rand) float64 { return float64(pick(rng, c.probs)) }
