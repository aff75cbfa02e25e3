package calibrate

import (
	"context"
	"math"

	"gonum.org/v1/gonum/optimize"
)

// minimizeOptions bound a Nelder–Mead search.
type minimizeOptions struct {
	// Step is the initial simplex's offset along each axis.
	Step []float64
	// MaxEvals caps objective evaluations.
	MaxEvals int
	// XTolerance and Stall stop the search once the best point has moved
	// less than XTolerance[i] along every axis i over the last Stall
	// simplex iterations.
	XTolerance []float64
	Stall      int
}

// minimize finds a local minimum of f near x0, whose value v0 is known,
// with gonum's Nelder–Mead (its default, dimension-dependent
// coefficients). It searches on axes scaled by Step, so that gonum's
// initial simplex, one unit along each axis, spans Step. It returns the
// best point, its value and the evaluations used; an error from f or ctx
// ends the search.
//
// gonum's own convergence test (no improvement over N iterations) fits
// the simulator's piecewise-flat objective badly: it stops early on a
// flat step or spends the budget creeping along one. Watching the best
// point instead recovered TestRecoversHiddenParameters' parameters with
// as many evaluations as the hand-written simplex this replaced.
func minimize(ctx context.Context, f func([]float64) (float64, error), x0 []float64, v0 float64, o minimizeOptions) ([]float64, float64, int, error) {
	at := func(z []float64) []float64 {
		x := make([]float64, len(x0))
		for i := range x {
			x[i] = x0[i] + o.Step[i]*z[i]
		}
		return x
	}
	var failed error
	evals := 0
	problem := optimize.Problem{
		Func: func(z []float64) float64 {
			evals++
			v, err := f(at(z))
			if err != nil {
				failed = err
			}
			if err != nil || math.IsNaN(v) {
				return math.Inf(1)
			}
			return v
		},
		// Asked before every evaluation: stops the search on f's error
		// or a cancelled context.
		Status: func() (optimize.Status, error) {
			if failed == nil {
				failed = ctx.Err()
			}
			if failed != nil {
				return optimize.Failure, failed
			}
			return optimize.NotTerminated, nil
		},
	}
	still := &bestPointStill{window: o.Stall, tolerance: make([]float64, len(x0))}
	for i := range still.tolerance {
		still.tolerance[i] = o.XTolerance[i] / o.Step[i]
	}
	settings := &optimize.Settings{InitValues: &optimize.Location{F: v0}, FuncEvaluations: o.MaxEvals, Converger: still}
	res, err := optimize.Minimize(problem, make([]float64, len(x0)), settings, &optimize.NelderMead{SimplexSize: 1})
	if failed != nil {
		return nil, 0, evals, failed
	}
	if err != nil {
		return nil, 0, evals, err
	}
	return at(res.X), res.F, evals, nil
}

// bestPointStill is an optimize.Converger: converged once the best point
// has moved less than tolerance along every axis over the last window
// major iterations.
type bestPointStill struct {
	window    int
	tolerance []float64
	history   [][]float64
}

func (c *bestPointStill) Init(int) { c.history = c.history[:0] }

func (c *bestPointStill) Converged(l *optimize.Location) optimize.Status {
	c.history = append(c.history, append([]float64(nil), l.X...))
	if len(c.history) <= c.window {
		return optimize.NotTerminated
	}
	then := c.history[len(c.history)-1-c.window]
	for i := range then {
		if math.Abs(l.X[i]-then[i]) > c.tolerance[i] {
			return optimize.NotTerminated
		}
	}
	return optimize.FunctionConvergence
}
