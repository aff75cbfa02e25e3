package calibrate

import (
	"context"
	"errors"
	"math"
	"testing"
)

func TestMinimize(t *testing.T) {
	tests := []struct {
		name string
		f    func(x []float64) float64
		x0   []float64
		want []float64
	}{
		{"shifted bowl", func(x []float64) float64 {
			return (x[0]-1)*(x[0]-1) + 10*(x[1]+2)*(x[1]+2) + 0.5*(x[2]-0.3)*(x[2]-0.3)
		}, []float64{0, 0, 0}, []float64{1, -2, 0.3}},
		{"rosenbrock", func(x []float64) float64 {
			return 100*math.Pow(x[1]-x[0]*x[0], 2) + math.Pow(1-x[0], 2)
		}, []float64{-1.2, 1}, []float64{1, 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			step := make([]float64, len(tt.x0))
			for i := range step {
				step[i] = 0.5
			}
			x, _, evals, err := minimize(context.Background(), func(x []float64) (float64, error) { return tt.f(x), nil },
				tt.x0, minimizeOptions{Step: step, MaxEvals: 5000, Tolerance: 1e-14})
			if err != nil {
				t.Fatal(err)
			}
			for i := range x {
				if math.Abs(x[i]-tt.want[i]) > 1e-3 {
					t.Errorf("x = %v after %d evaluations, want %v", x, evals, tt.want)
					break
				}
			}
		})
	}
}

func TestMinimizeStopsOnError(t *testing.T) {
	boom := errors.New("boom")
	calls := 0
	_, _, _, err := minimize(context.Background(), func(x []float64) (float64, error) {
		calls++
		if calls == 3 {
			return 0, boom
		}
		return x[0] * x[0], nil
	}, []float64{1, 1}, minimizeOptions{Step: []float64{1, 1}, MaxEvals: 100})
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v, want boom", err)
	}
}
