package perf

import (
	"fmt"
	"math"
	"os"
	"strings"
	"time"
)

// CalibrationKind marks a calibration file.
const CalibrationKind = "servebench-calibration"

// Calibration is a fitted correction of the roofline for one model and GPU,
// written by `servebench calibrate` and read by `sim` and `serve`: scales
// on the efficiency tables' compute and bandwidth rates and a
// per-sequence step overhead added to the release's host model.
type Calibration struct {
	// Path is the file it was read from (recorded in result metadata).
	Path        string
	Model, GPU  string
	VLLMVersion string
	Parameters  CalibrationParameters
}

// CalibrationParameters are the fitted values.
type CalibrationParameters struct {
	// ComputeScale multiplies the attained FLOP/s (GEMMs and attention).
	ComputeScale float64 `yaml:"compute_scale" json:"compute_scale"`
	// BandwidthScale multiplies the attained memory bandwidth.
	BandwidthScale float64 `yaml:"bandwidth_scale" json:"bandwidth_scale"`
	// SequenceOverheadUs is added to a step for every sequence it
	// schedules, in microseconds (negative when the host model charges too
	// much; a step never goes below 1 µs). A constant per-step cost is
	// not fitted: TTFT and TPOT cannot tell it from weight streaming, so
	// BandwidthScale absorbs it.
	SequenceOverheadUs float64 `yaml:"sequence_overhead_us" json:"sequence_overhead_us"`
	// RequestOverheadUs is added to every request's TTFT (and so to its
	// latency), in microseconds: the time outside the engine (HTTP, API
	// server, client) a benchmark measures and the engine model does not.
	RequestOverheadUs float64 `yaml:"request_overhead_us" json:"request_overhead_us"`
}

// CalibrationFile is the YAML layout. Uncertainty and Fit are reports for
// people; loading reads only the header and Parameters.
type CalibrationFile struct {
	Kind        string                `yaml:"kind"`
	Model       string                `yaml:"model"`
	GPU         string                `yaml:"gpu"`
	VLLMVersion string                `yaml:"vllm_version,omitempty"`
	Parameters  CalibrationParameters `yaml:"parameters"`
	// Uncertainty holds one standard deviation of each parameter.
	Uncertainty *CalibrationParameters `yaml:"uncertainty,omitempty"`
	Fit         any                    `yaml:"fit,omitempty"`
}

// LoadCalibrationFile reads a calibration file.
func LoadCalibrationFile(path string) (*Calibration, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("perf: read calibration: %w", err)
	}
	return ParseCalibration(data, path)
}

// ParseCalibration parses the YAML LoadCalibrationFile reads; name appears
// in errors.
func ParseCalibration(data []byte, name string) (*Calibration, error) {
	fail := func(format string, args ...any) (*Calibration, error) {
		return nil, fmt.Errorf("perf: calibration %s: %s", name, fmt.Sprintf(format, args...))
	}
	var f CalibrationFile
	if err := decodeYAMLDocument(data, &f, "kind, model, gpu, parameters"); err != nil {
		return fail("%v", err)
	}
	if f.Kind != CalibrationKind {
		return fail("kind is %q; want %q (write one with `servebench calibrate`)", f.Kind, CalibrationKind)
	}
	if strings.TrimSpace(f.GPU) == "" || strings.TrimSpace(f.Model) == "" {
		return fail("model and gpu are required: a calibration holds for one model on one GPU")
	}
	p := f.Parameters
	for _, v := range []struct {
		v      float64
		field  string
		lo, hi float64
	}{
		{p.ComputeScale, "parameters.compute_scale", 0, 100},
		{p.BandwidthScale, "parameters.bandwidth_scale", 0, 100},
		{p.SequenceOverheadUs, "parameters.sequence_overhead_us", -1e6, 1e6},
		{p.RequestOverheadUs, "parameters.request_overhead_us", -1e7, 1e7},
	} {
		if math.IsNaN(v.v) || v.v <= v.lo || v.v > v.hi {
			return fail("%s is %v; it must be above %v and at most %v", v.field, v.v, v.lo, v.hi)
		}
	}
	return &Calibration{Path: name, Model: f.Model, GPU: f.GPU, VLLMVersion: f.VLLMVersion, Parameters: p}, nil
}

// MatchesGPU reports whether g is the GPU the calibration was fitted on.
func (c *Calibration) MatchesGPU(g GPU) bool {
	return normalizeGPUName(c.GPU) == normalizeGPUName(g.Name)
}

// ApplyGPU returns g with the calibration's efficiency scales.
func (p CalibrationParameters) ApplyGPU(g GPU) GPU {
	g.Scale.Compute = g.Scale.compute() * orOne(p.ComputeScale)
	g.Scale.Bandwidth = g.Scale.bandwidth() * orOne(p.BandwidthScale)
	return g
}

// RequestOverhead is the per-request TTFT overhead as a duration.
func (p CalibrationParameters) RequestOverhead() time.Duration {
	return time.Duration(math.Round(p.RequestOverheadUs * 1e3))
}

// SequenceOverhead is the per-sequence overhead as a duration.
func (p CalibrationParameters) SequenceOverhead() time.Duration {
	return time.Duration(math.Round(p.SequenceOverheadUs * 1e3))
}

// WrapStepModel adds the per-sequence overhead to m; it keeps m's host
// accounting (StepTimeHost) when m has one.
func (p CalibrationParameters) WrapStepModel(m StepModel) StepModel {
	if p.SequenceOverheadUs == 0 {
		return m
	}
	return &overheadStepModel{inner: m, perSequence: p.SequenceOverhead()}
}

type hostAccounting interface {
	StepTimeHost(s StepShape) (time.Duration, bool)
}

type overheadStepModel struct {
	inner       StepModel
	perSequence time.Duration
}

func (m *overheadStepModel) add(d time.Duration, s StepShape) time.Duration {
	if d == 0 {
		return 0 // an empty step stays empty
	}
	seqs := max(s.Prefills, 0) + max(s.Decodes, 0)
	return max(d+time.Duration(seqs)*m.perSequence, time.Microsecond)
}

// StepTime implements StepModel.
func (m *overheadStepModel) StepTime(s StepShape) time.Duration { return m.add(m.inner.StepTime(s), s) }

// OutputLoopTime forwards the inner model's API server work
// (OutputLoopModel); none when it has no such server.
func (m *overheadStepModel) OutputLoopTime(s StepShape) (all, firstTokens time.Duration) {
	return outputLoopTimeOf(m.inner, s)
}

// StepTimeHost forwards the inner model's host accounting.
func (m *overheadStepModel) StepTimeHost(s StepShape) (time.Duration, bool) {
	if h, ok := m.inner.(hostAccounting); ok {
		d, host := h.StepTimeHost(s)
		return m.add(d, s), host
	}
	return m.StepTime(s), false
}
