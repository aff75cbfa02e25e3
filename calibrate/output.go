package calibrate

import (
	"fmt"
	"io"
	"math"
	"text/tabwriter"

	"go.yaml.in/yaml/v3"

	"github.com/servebench/servebench/perf"
)

type runReport struct {
	Name          string  `yaml:"name"`
	ObservedMs    figMap  `yaml:"observed_ms"`
	PredictedMs   figMap  `yaml:"predicted_ms"`
	ErrorPercent  figMap  `yaml:"error_percent"`
	MaxAbsPercent float64 `yaml:"max_abs_error_percent"`
}

type figMap struct {
	MeanTTFT   float64 `yaml:"mean_ttft"`
	MedianTTFT float64 `yaml:"median_ttft"`
	MeanTPOT   float64 `yaml:"mean_tpot"`
	MedianTPOT float64 `yaml:"median_tpot"`
}

func toMap(f Figures, scale float64) figMap {
	r := func(v float64) float64 { return math.Round(v*scale*1e4) / 1e4 }
	return figMap{r(f.MeanTTFT), r(f.MedianTTFT), r(f.MeanTPOT), r(f.MedianTPOT)}
}

type fitReport struct {
	Method      string      `yaml:"method"`
	Objective   float64     `yaml:"objective"`
	Simulations int         `yaml:"simulations"`
	Uncertainty string      `yaml:"uncertainty,omitempty"`
	Runs        []runReport `yaml:"runs"`
	Holdout     []runReport `yaml:"holdout,omitempty"`
}

func reports(fits []RunFit) []runReport {
	out := make([]runReport, len(fits))
	for i, f := range fits {
		out[i] = runReport{Name: f.Name, ObservedMs: toMap(f.Observed, 1), PredictedMs: toMap(f.Predicted, 1),
			ErrorPercent: toMap(f.Error, 100), MaxAbsPercent: toMap(Figures{MeanTTFT: f.MaxAbsError()}, 100).MeanTTFT}
	}
	return out
}

// Marshal writes the calibration YAML that perf.LoadCalibrationFile reads.
func Marshal(first Observation, res *Result, holdout []RunFit) ([]byte, error) {
	file := perf.CalibrationFile{
		Kind: perf.CalibrationKind, Model: first.Deployment.Model.Name, GPU: first.Tags.GPU, VLLMVersion: first.Tags.VLLMVersion,
		Parameters: res.Params,
		Fit: fitReport{
			Method:    "sim in the loop; Nelder–Mead (gonum) on ln(predicted/observed)² of mean and median TTFT and TPOT",
			Objective: res.Objective, Simulations: res.Evaluations, Runs: reports(res.Runs), Holdout: reports(holdout),
		},
	}
	if res.Resampled != "" {
		sd := res.StdDev
		file.Uncertainty = &sd
		fr := file.Fit.(fitReport)
		fr.Uncertainty = "one standard deviation over bootstrap resamples of " + res.Resampled + " (linearised refit)"
		file.Fit = fr
	}
	data, err := yaml.Marshal(file)
	if err != nil {
		return nil, fmt.Errorf("calibrate: encoding the calibration: %w", err)
	}
	return append([]byte("# servebench calibration: sim --calibration FILE\n"), data...), nil
}

// WriteSummary prints the fitted values and the error per run.
func WriteSummary(w io.Writer, res *Result, holdout []RunFit) error {
	p, sd := res.Params, res.StdDev
	fmt.Fprintf(w, "compute_scale:        %.4f ± %.4f\n", p.ComputeScale, sd.ComputeScale)
	fmt.Fprintf(w, "bandwidth_scale:      %.4f ± %.4f\n", p.BandwidthScale, sd.BandwidthScale)
	fmt.Fprintf(w, "sequence_overhead_us: %.2f ± %.2f\n", p.SequenceOverheadUs, sd.SequenceOverheadUs)
	fmt.Fprintf(w, "request_overhead_us:  %.0f ± %.0f\n", p.RequestOverheadUs, sd.RequestOverheadUs)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "run\tmedian TTFT ms (obs/pred/err)\tmedian TPOT ms (obs/pred/err)\tmax |err|")
	row := func(kind string, f RunFit) {
		fmt.Fprintf(tw, "%s%s\t%.2f / %.2f / %+.1f%%\t%.3f / %.3f / %+.1f%%\t%.1f%%\n", kind, f.Name,
			f.Observed.MedianTTFT, f.Predicted.MedianTTFT, 100*f.Error.MedianTTFT,
			f.Observed.MedianTPOT, f.Predicted.MedianTPOT, 100*f.Error.MedianTPOT, 100*f.MaxAbsError())
	}
	for _, f := range res.Runs {
		row("", f)
	}
	for _, f := range holdout {
		row("holdout ", f)
	}
	return tw.Flush()
}
