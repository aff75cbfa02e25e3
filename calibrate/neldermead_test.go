package calibrate

import (
	"context"
	"errors"
	"math"
	"testing"

	"gonum.org/v1/gonum/optimize"
)

func TestMinimize(t *testing.T) {
	tests := []struct {
		name string
		f    func(x []float64) float64
		x0   []float64
		step []float64
		want []float64
	}{
		{"shifted bowl", func(x []float64) float64 {
			return (x[0]-1)*(x[0]-1) + 10*(x[1]+2)*(x[1]+2) + 0.5*(x[2]-0.3)*(x[2]-0.3)
		}, []float64{0, 0, 0}, []float64{0.5, 0.5, 0.5}, []float64{1, -2, 0.3}},
		{"rosenbrock", func(x []float64) float64 {
			return 100*math.Pow(x[1]-x[0]*x[0], 2) + math.Pow(1-x[0], 2)
		}, []float64{-1.2, 1}, []float64{0.5, 0.5}, []float64{1, 1}},
		// Axes a thousand times apart in scale: the step scales them.
		{"unequal axes", func(x []float64) float64 {
			return math.Pow(x[0]-0.02, 2)*1e6 + math.Pow((x[1]-300)/100, 2)
		}, []float64{0, 0}, []float64{0.01, 50}, []float64{0.02, 300}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tol := make([]float64, len(tt.x0))
			for i := range tol {
				tol[i] = 1e-6 * tt.step[i]
			}
			f := func(x []float64) (float64, error) { return tt.f(x), nil }
			x, v, evals, err := minimize(context.Background(), f, tt.x0, tt.f(tt.x0),
				minimizeOptions{Step: tt.step, MaxEvals: 5000, XTolerance: tol, Stall: 8 * len(tt.x0)})
			if err != nil {
				t.Fatal(err)
			}
			if v != tt.f(x) {
				t.Errorf("value %g is not f(%v) = %g", v, x, tt.f(x))
			}
			for i := range x {
				if math.Abs(x[i]-tt.want[i]) > 1e-3*tt.step[i]/0.5 {
					t.Errorf("x = %v after %d evaluations, want %v", x, evals, tt.want)
					break
				}
			}
		})
	}
}

func TestMinimizeStopsOnErrorOrCancel(t *testing.T) {
	boom := errors.New("boom")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for _, tc := range []struct {
		name string
		ctx  context.Context
		f    func(calls int, x []float64) (float64, error)
		want error
	}{
		{"objective error", context.Background(), func(calls int, x []float64) (float64, error) {
			if calls == 3 {
				return 0, boom
			}
			return x[0] * x[0], nil
		}, boom},
		{"cancelled", ctx, func(calls int, x []float64) (float64, error) {
			if calls == 3 {
				cancel()
			}
			return x[0] * x[0], nil
		}, context.Canceled},
	} {
		t.Run(tc.name, func(t *testing.T) {
			calls := 0
			_, _, evals, err := minimize(tc.ctx, func(x []float64) (float64, error) {
				calls++
				return tc.f(calls, x)
			}, []float64{1, 1}, 2, minimizeOptions{Step: []float64{1, 1}, MaxEvals: 100, XTolerance: []float64{1e-9, 1e-9}, Stall: 16})
			if !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
			if evals > 4 {
				t.Errorf("%d evaluations after the objective stopped at the third", evals)
			}
		})
	}
}

// The search stops when its budget runs out, with the best point so far.
func TestMinimizeKeepsToItsBudget(t *testing.T) {
	calls := 0
	f := func(x []float64) (float64, error) { calls++; return x[0]*x[0] + x[1]*x[1], nil }
	x, v, evals, err := minimize(context.Background(), f, []float64{3, 4}, 25,
		minimizeOptions{Step: []float64{1, 1}, MaxEvals: 20, XTolerance: []float64{1e-12, 1e-12}, Stall: 100})
	if err != nil {
		t.Fatal(err)
	}
	if calls != evals || evals > 20 {
		t.Errorf("%d evaluations (%d counted), budget 20", calls, evals)
	}
	if !(v < 25) || v != x[0]*x[0]+x[1]*x[1] {
		t.Errorf("best %g at %v, want below the start's 25", v, x)
	}
}

func TestBestPointStill(t *testing.T) {
	c := &bestPointStill{window: 2, tolerance: []float64{0.1, 1}}
	c.Init(2)
	for i, tc := range []struct {
		x    []float64
		want optimize.Status
	}{
		{[]float64{0, 0}, optimize.NotTerminated},
		{[]float64{0.05, 0}, optimize.NotTerminated},
		{[]float64{0.2, 0}, optimize.NotTerminated},    // moved 0.2 since two iterations ago
		{[]float64{0.25, 0.5}, optimize.NotTerminated}, // 0.2 since {0.05, 0}
		{[]float64{0.25, 0.5}, optimize.FunctionConvergence},
	} {
		if got := c.Converged(&optimize.Location{X: tc.x}); got != tc.want {
			t.Errorf("iteration %d at %v: %v, want %v", i, tc.x, got, tc.want)
		}
	}
}
