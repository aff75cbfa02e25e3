package perf

import (
	"strings"
	"testing"
	"time"
)

const validCalibration = `kind: servebench-calibration
model: Qwen2.5-7B-Instruct
gpu: H100-SXM
vllm_version: 0.8.5
parameters: {compute_scale: 0.8, bandwidth_scale: 0.9, sequence_overhead_us: 40}
uncertainty: {compute_scale: 0.01, bandwidth_scale: 0.01, sequence_overhead_us: 1}
fit: {runs: [{name: a.json, error: 0.01}]}
`

func TestParseCalibration(t *testing.T) {
	c, err := ParseCalibration([]byte(validCalibration), "c.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if c.Parameters.ComputeScale != 0.8 || c.Parameters.SequenceOverhead() != 40*time.Microsecond || !c.MatchesGPU(mustGPU(t, "H100")) {
		t.Errorf("parsed %+v", c)
	}
	tests := []struct{ name, yaml, want string }{
		{"empty", "", "empty; expected kind"},
		{"wrong kind", strings.Replace(validCalibration, "servebench-calibration", "gpu", 1), `kind is "gpu"`},
		{"no gpu", strings.Replace(validCalibration, "gpu: H100-SXM\n", "", 1), "model and gpu are required"},
		{"zero scale", strings.Replace(validCalibration, "compute_scale: 0.8", "compute_scale: 0", 1), "parameters.compute_scale is 0"},
		{"unknown key", validCalibration + "extra: 1\n", "field extra not found"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseCalibration([]byte(tt.yaml), "c.yaml")
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "c.yaml") {
				t.Errorf("err = %v, want one naming c.yaml containing %q", err, tt.want)
			}
		})
	}
}

// A per-sequence overhead adds to every sequence of a step and keeps the
// inner model's host accounting.
func TestCalibrationWrapStepModel(t *testing.T) {
	inner := Calibrated{Base: 0.001}
	m := CalibrationParameters{SequenceOverheadUs: 10}.WrapStepModel(inner)
	s := StepShape{Decodes: 4, KVTokens: 4}
	if got, want := m.StepTime(s), inner.StepTime(s)+40*time.Microsecond; got != want {
		t.Errorf("step = %v, want %v", got, want)
	}
	if got := m.StepTime(StepShape{}); got != 0 {
		t.Errorf("empty step = %v, want 0", got)
	}
	if d, host := m.(interface {
		StepTimeHost(StepShape) (time.Duration, bool)
	}).StepTimeHost(s); d != m.StepTime(s) || host {
		t.Errorf("StepTimeHost = %v, %v", d, host)
	}
}

func FuzzParseCalibration(f *testing.F) {
	f.Add([]byte(validCalibration))
	f.Add([]byte("kind: servebench-calibration\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := ParseCalibration(data, "fuzz")
		if err == nil && (c.Parameters.ComputeScale <= 0 || c.Parameters.BandwidthScale <= 0) {
			t.Errorf("accepted non-positive scales: %+v", c.Parameters)
		}
	})
}
