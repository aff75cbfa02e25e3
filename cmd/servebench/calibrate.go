package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/servebench/servebench/calibrate"
	"github.com/servebench/servebench/metrics"
	"github.com/servebench/servebench/perf"
	"github.com/servebench/servebench/report"
	"github.com/servebench/servebench/vllm"
)

func init() { extraCommands = append(extraCommands, newCalibrateCmd) }

type calibrateFlags struct {
	model, gpu, vllmVersion string
	tensorParallel          int
	maxNumSeqs              int
	maxNumBatchedTokens     int
	output                  string
	holdout                 []string
	bootstrap               int
	seed                    int64
	fitRequestOverhead      bool
}

func newCalibrateCmd() *cobra.Command {
	f := &calibrateFlags{}
	cmd := &cobra.Command{
		Use:   "calibrate FILE...",
		Short: "Fit the step-time model to measured runs (servebench or vLLM result JSON)",
		Long: `Replay each measured run on the simulator and fit three parameters so that the simulated
mean and median TTFT and TPOT match the measured ones: a scale on the compute efficiency
(prefill), a scale on the memory-bandwidth efficiency (decode) and a per-sequence step
overhead (with --fit-request-overhead also a per-request TTFT overhead). Inputs are servebench result JSON (per-request records beside them are used when
present) or vLLM --save-result JSON. Writes a calibration YAML for sim --calibration and
serve --calibration, with the fitted values, their bootstrap uncertainty and the error per
file; --holdout files are predicted, not fitted, and their error is reported.`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runCalibrate(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), f, args)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&f.model, "model", "", "model the runs served, when their files do not record it (vLLM's model_id is a served name): a catalog name, HF id in the local cache or config.json path")
	fs.StringVar(&f.gpu, "gpu", "", "GPU the runs ran on, when their files do not record it (servebench records --metadata gpu=NAME): a catalog name or GPU YAML")
	fs.StringVar(&f.vllmVersion, "vllm-version", "", "vLLM release the server ran (default: the file's, else 0.8.5)")
	fs.IntVar(&f.tensorParallel, "tensor-parallel-size", 0, "tensor parallel size the server ran with (default 1)")
	fs.IntVar(&f.maxNumSeqs, "max-num-seqs", 0, "the server's --max-num-seqs (default: the file's, else vLLM's)")
	fs.IntVar(&f.maxNumBatchedTokens, "max-num-batched-tokens", 0, "the server's --max-num-batched-tokens (default: the file's, else vLLM's)")
	fs.StringVarP(&f.output, "output", "o", "calibration.yaml", "calibration YAML to write")
	fs.StringArrayVar(&f.holdout, "holdout", nil, "result file to predict but not fit, reporting its error (repeatable)")
	fs.IntVar(&f.bootstrap, "bootstrap", 200, "bootstrap resamples for the uncertainty (0 skips it)")
	fs.Int64Var(&f.seed, "seed", 0, "seed for rebuilt arrivals and the bootstrap")
	fs.BoolVar(&f.fitRequestOverhead, "fit-request-overhead", false, "also fit a per-request TTFT overhead (HTTP, API server) outside the engine; needs runs whose prompt lengths differ, else it trades off against the compute scale")
	return cmd
}

func runCalibrate(ctx context.Context, out, errw io.Writer, f *calibrateFlags, files []string) error {
	if len(files) == 0 {
		return fmt.Errorf("no result files: pass servebench or vLLM --save-result JSON files, e.g. servebench calibrate runs/*.json")
	}
	if f.bootstrap < 0 {
		return fmt.Errorf("--bootstrap %d: give a number of resamples, or 0 to skip", f.bootstrap)
	}
	if f.tensorParallel < 0 || f.maxNumSeqs < 0 || f.maxNumBatchedTokens < 0 {
		return fmt.Errorf("--tensor-parallel-size, --max-num-seqs and --max-num-batched-tokens must not be negative")
	}
	load := calibrate.LoadOptions{
		Given:   calibrate.Tags{Model: f.model, GPU: f.gpu, VLLMVersion: f.vllmVersion},
		Options: vllm.Options{TensorParallel: f.tensorParallel, MaxNumSeqs: f.maxNumSeqs, MaxNumBatchedTokens: f.maxNumBatchedTokens},
		Resolve: resolveCalibrationTags,
		Seed:    f.seed,
	}
	obs, err := calibrate.Load(files, load)
	if err != nil {
		return err
	}
	var held []calibrate.Observation
	if len(f.holdout) > 0 {
		if held, err = calibrate.Load(f.holdout, load); err != nil {
			return fmt.Errorf("--holdout: %w", err)
		}
		if held[0].Tags.GPU != obs[0].Tags.GPU || held[0].Deployment.Model.Name != obs[0].Deployment.Model.Name {
			return fmt.Errorf("--holdout %s: ran %s on %s, but the fitted runs ran %s on %s", held[0].Name(),
				held[0].Deployment.Model.Name, held[0].Tags.GPU, obs[0].Deployment.Model.Name, obs[0].Tags.GPU)
		}
	}
	start := time.Now()
	progress := func(msg string) { fmt.Fprintln(errw, msg) }
	progress(fmt.Sprintf("calibrate: %d runs of %s on %s (vLLM %s)", len(obs), obs[0].Deployment.Model.Name, obs[0].Tags.GPU, obs[0].Tags.VLLMVersion))
	bootstrap := f.bootstrap
	if bootstrap == 0 {
		bootstrap = -1
	}
	res, err := calibrate.Fit(ctx, obs, calibrate.Options{Progress: progress, Bootstrap: bootstrap, Seed: f.seed, FitRequestOverhead: f.fitRequestOverhead})
	if err != nil {
		return err
	}
	var heldFits []calibrate.RunFit
	if len(held) > 0 {
		if heldFits, err = calibrate.Predict(ctx, held, res.Params); err != nil {
			return fmt.Errorf("--holdout: %w", err)
		}
	}
	data, err := calibrate.Marshal(obs[0], res, heldFits)
	if err != nil {
		return err
	}
	if err := os.WriteFile(f.output, data, 0o644); err != nil {
		return fmt.Errorf("--output: %w", err)
	}
	progress(fmt.Sprintf("calibrate: done in %v, %d simulations", time.Since(start).Round(time.Millisecond), res.Evaluations))
	if err := calibrate.WriteSummary(out, res, heldFits); err != nil {
		return err
	}
	fmt.Fprintf(out, "Wrote %s\n", f.output)
	return nil
}

// resolveCalibrationTags looks tags up as sim's --model and --gpu do.
func resolveCalibrationTags(t calibrate.Tags) (perf.Model, perf.GPU, vllm.Profile, error) {
	m, err := perf.LookupModelInCache(t.Model, hfEnv().CacheDirs())
	if err != nil {
		return perf.Model{}, perf.GPU{}, vllm.Profile{}, fmt.Errorf("model %q: %w (pass --model)", t.Model, err)
	}
	g, err := lookupGPU(t.GPU)
	if err != nil {
		return perf.Model{}, perf.GPU{}, vllm.Profile{}, fmt.Errorf("%w (pass --gpu)", err)
	}
	p, err := vllm.Lookup(t.VLLMVersion, "")
	if err != nil {
		return perf.Model{}, perf.GPU{}, vllm.Profile{}, fmt.Errorf("vLLM version %q: %w (pass --vllm-version)", t.VLLMVersion, err)
	}
	return m, g, p, nil
}

// applyCalibration loads --calibration and applies its efficiency scales
// to the GPU; build adds its per-sequence overhead to the step model.
func (f *engineFlags) applyCalibration(gpu perf.GPU) (perf.GPU, error) {
	if f.calibrationPath == "" {
		return gpu, nil
	}
	c, err := perf.LoadCalibrationFile(f.calibrationPath)
	if err != nil {
		return gpu, fmt.Errorf("--calibration: %w", err)
	}
	if !c.MatchesGPU(gpu) {
		return gpu, fmt.Errorf("--calibration %s was fitted on %s, not %s; calibrate runs from this GPU or pass --gpu %s", f.calibrationPath, c.GPU, gpu.Name, c.GPU)
	}
	f.calibration = c
	return c.Parameters.ApplyGPU(gpu), nil
}

// addRequestOverhead adds the calibration's per-request overhead to a
// simulated request's first token (and so to its latency).
func addRequestOverhead(r *metrics.Record, c *perf.Calibration) {
	if c == nil || !r.Success {
		return
	}
	d := c.Parameters.RequestOverhead()
	r.TTFT += d
	r.Latency += d
}

// calibrationSections records the calibration a prediction used.
func calibrationSections(c *perf.Calibration) []report.Section {
	if c == nil {
		return nil
	}
	return []report.Section{{Key: "calibration", Value: map[string]any{
		"file": c.Path, "model": c.Model, "gpu": c.GPU, "vllm_version": c.VLLMVersion,
		"compute_scale": c.Parameters.ComputeScale, "bandwidth_scale": c.Parameters.BandwidthScale,
		"sequence_overhead_us": c.Parameters.SequenceOverheadUs, "request_overhead_us": c.Parameters.RequestOverheadUs,
	}}}
}
