package calibrate

import (
	"cmp"
	"context"
	"math"
	"slices"
)

// minimizeOptions bound a Nelder–Mead search.
type minimizeOptions struct {
	// Step is the initial simplex's offset along each axis.
	Step []float64
	// MaxEvals caps objective evaluations.
	MaxEvals int
	// Tolerance stops the search when the simplex's function values span
	// less than it.
	Tolerance float64
	// XTolerance, when set, stops the search when every vertex is within
	// XTolerance[i] of the best along each axis i.
	XTolerance []float64
}

func (o minimizeOptions) collapsed(best []float64, xs func(yield func([]float64) bool)) bool {
	if o.XTolerance == nil {
		return false
	}
	for x := range xs {
		for i := range x {
			if math.Abs(x[i]-best[i]) > o.XTolerance[i] {
				return false
			}
		}
	}
	return true
}

// minimize finds a local minimum of f near x0 with the Nelder–Mead simplex
// method (standard coefficients: reflection 1, expansion 2, contraction ½,
// shrink ½). It returns the best point, its value and the evaluations
// used; an error from f or ctx ends the search.
func minimize(ctx context.Context, f func([]float64) (float64, error), x0 []float64, o minimizeOptions) ([]float64, float64, int, error) {
	n := len(x0)
	type vertex struct {
		x []float64
		v float64
	}
	evals := 0
	eval := func(x []float64) (float64, error) {
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		evals++
		v, err := f(x)
		if math.IsNaN(v) {
			v = math.Inf(1)
		}
		return v, err
	}
	simplex := make([]vertex, n+1)
	for i := range simplex {
		x := slices.Clone(x0)
		if i > 0 {
			x[i-1] += o.Step[i-1]
		}
		v, err := eval(x)
		if err != nil {
			return nil, 0, evals, err
		}
		simplex[i] = vertex{x, v}
	}
	point := func(from []float64, toward []float64, t float64) []float64 {
		out := make([]float64, n)
		for j := range out {
			out[j] = from[j] + t*(toward[j]-from[j])
		}
		return out
	}
	for evals < o.MaxEvals {
		slices.SortStableFunc(simplex, func(a, b vertex) int { return cmp.Compare(a.v, b.v) })
		best, worst := simplex[0], simplex[n]
		if worst.v-best.v <= o.Tolerance || o.collapsed(best.x, func(yield func([]float64) bool) {
			for _, s := range simplex[1:] {
				if !yield(s.x) {
					return
				}
			}
		}) {
			break
		}
		centroid := make([]float64, n)
		for _, s := range simplex[:n] {
			for j := range centroid {
				centroid[j] += s.x[j] / float64(n)
			}
		}
		reflected := point(centroid, worst.x, -1)
		rv, err := eval(reflected)
		if err != nil {
			return nil, 0, evals, err
		}
		switch {
		case rv < best.v:
			expanded := point(centroid, worst.x, -2)
			ev, err := eval(expanded)
			if err != nil {
				return nil, 0, evals, err
			}
			if ev < rv {
				simplex[n] = vertex{expanded, ev}
			} else {
				simplex[n] = vertex{reflected, rv}
			}
		case rv < simplex[n-1].v:
			simplex[n] = vertex{reflected, rv}
		default:
			// Contract toward the better of the worst and its reflection.
			target, tv := worst.x, worst.v
			if rv < worst.v {
				target, tv = reflected, rv
			}
			contracted := point(centroid, target, 0.5)
			cv, err := eval(contracted)
			if err != nil {
				return nil, 0, evals, err
			}
			if cv < tv {
				simplex[n] = vertex{contracted, cv}
				continue
			}
			for i := 1; i <= n; i++ {
				x := point(best.x, simplex[i].x, 0.5)
				v, err := eval(x)
				if err != nil {
					return nil, 0, evals, err
				}
				simplex[i] = vertex{x, v}
			}
		}
	}
	slices.SortStableFunc(simplex, func(a, b vertex) int { return cmp.Compare(a.v, b.v) })
	return simplex[0].x, simplex[0].v, evals, nil
}
