//go:build caleval

package calibrate

import (
	"context"
	"testing"
	"time"
)

// The recovery fixture of TestRecoversHiddenParameters: fitted
// parameters, objective, evaluations and wall time, without bootstrap.
func TestEvalFit(t *testing.T) {
	d := testDeployment(t)
	var fitRuns []Observation
	for i, rate := range []float64{2, 10, 20} {
		fitRuns = append(fitRuns, groundTruthRun(t, d, rate, 400, 0.02, int64(10+i)))
	}
	for _, overhead := range []bool{false, true} {
		start := time.Now()
		res, err := Fit(context.Background(), fitRuns, Options{Bootstrap: -1, FitRequestOverhead: overhead})
		if err != nil {
			t.Fatal(err)
		}
		p := res.Params
		t.Logf("overhead=%v: %v, %d evaluations, objective %.6g: compute %.5f bandwidth %.5f seq %.3f µs req %.2f µs",
			overhead, time.Since(start).Round(time.Millisecond), res.Evaluations, res.Objective, p.ComputeScale, p.BandwidthScale, p.SequenceOverheadUs, p.RequestOverheadUs)
	}
}
