package main

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/servebench/servebench/calibrate"
	"github.com/servebench/servebench/runspec"
	"github.com/servebench/servebench/serve"
)

// TestCalibrateOverLoopback is the long recovery test: bench runs at three
// loads against serve emulating a profile with hidden parameters, real
// sockets adding real noise; calibrate fits them and predicts three other
// loads. It takes minutes, so it runs only with SERVEBENCH_LONG_TESTS=1,
// and it logs the figures docs/calibrate.md quotes.
func TestCalibrateOverLoopback(t *testing.T) {
	if os.Getenv("SERVEBENCH_LONG_TESTS") != "1" {
		t.Skip("set SERVEBENCH_LONG_TESTS=1 (runs ~3 minutes of loopback load)")
	}
	dir := t.TempDir()
	truth := filepath.Join(dir, "truth.yaml")
	if err := os.WriteFile(truth, []byte("kind: servebench-calibration\nmodel: Qwen2.5-7B-Instruct\ngpu: H100-SXM\nparameters: {compute_scale: 0.8, bandwidth_scale: 0.9, sequence_overhead_us: 40}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	spec, err := runspec.Parse(runspec.Serve, []string{"--model", "Qwen2.5-7B-Instruct", "--gpu", "H100", "--calibration", truth})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r, err := spec.Engine.Resolve(ctx, spec.ChangedFunc(), readEnv())
	if err != nil {
		t.Fatal(err)
	}
	running, err := serve.StartEmulated(ctx, r, "Qwen2.5-7B-Instruct")
	if err != nil {
		t.Fatal(err)
	}
	defer running.Close()
	bench := func(sub string, rate float64) string {
		name := fmt.Sprintf("%s-%g.json", sub, rate)
		_, stderr, err := runCLI(t, "bench", "--base-url", running.URL(), "--dataset-name", "random", "--num-prompts", "200",
			"--request-rate", fmt.Sprint(rate), "--random-input-len", "512", "--random-output-len", "128",
			// A seed per run: repeated prompts would hit the server's
			// prefix cache, which the replay does not know about.
			"--seed", fmt.Sprint(rate),
			"--metadata", "gpu=H100", "--save-result", "--result-dir", dir, "--result-filename", name)
		if err != nil {
			t.Fatalf("bench at %g req/s: %v\n%s", rate, err, stderr)
		}
		return filepath.Join(dir, name)
	}
	var fitFiles, otherFiles []string
	for _, r := range []float64{4, 10, 20} {
		fitFiles = append(fitFiles, bench("fit", r))
	}
	for _, r := range []float64{6, 14, 24} {
		otherFiles = append(otherFiles, bench("other", r))
	}
	fitRuns, err := calibrate.Load(fitFiles, calibrate.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	otherRuns, err := calibrate.Load(otherFiles, calibrate.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := calibrate.Fit(ctx, fitRuns, calibrate.Options{Bootstrap: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("fitted %+v (hidden: compute 0.8, bandwidth 0.9, 40 µs per sequence)", res.Params)
	for i, f := range res.Runs {
		t.Logf("fit %s: prompt %d tokens, observed %+v, error %+v", filepath.Base(f.Name), fitRuns[i].Requests[0].PromptLen, f.Observed, f.Error)
	}
	calibrated, err := calibrate.Predict(ctx, otherRuns, res.Params)
	if err != nil {
		t.Fatal(err)
	}
	uncalibrated, err := calibrate.Predict(ctx, otherRuns, calibrate.Params{})
	if err != nil {
		t.Fatal(err)
	}
	worse := 0.0
	for i, f := range calibrated {
		t.Logf("%s: median TTFT %+.1f%% (uncalibrated %+.1f%%), median TPOT %+.1f%% (uncalibrated %+.1f%%)", filepath.Base(f.Name),
			100*f.Error.MedianTTFT, 100*uncalibrated[i].Error.MedianTTFT, 100*f.Error.MedianTPOT, 100*uncalibrated[i].Error.MedianTPOT)
		worse += math.Abs(f.Error.MedianTPOT) - math.Abs(uncalibrated[i].Error.MedianTPOT)
	}
	if worse > 0 {
		t.Errorf("calibrated predictions of median TPOT are worse than uncalibrated ones by %.1f points in total", 100*worse)
	}
}
