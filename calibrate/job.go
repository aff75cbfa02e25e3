package calibrate

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/servebench/servebench/report"
	"github.com/servebench/servebench/runspec"
	"github.com/servebench/servebench/vllm"
)

// Job is one calibration as `servebench calibrate` runs it: the result
// files to fit and to hold out, what they ran when the files do not say,
// and where the calibration goes.
type Job struct {
	Files, Holdout []string
	// Given fills the tags a file lacks and overrides what it records.
	Given Tags
	// TensorParallel, MaxNumSeqs and MaxNumBatchedTokens are the server's
	// flags when the files do not record them (0: the file's, else vLLM's).
	TensorParallel, MaxNumSeqs, MaxNumBatchedTokens int
	// ServerArgs are the `vllm serve` flags the server ran with, as given
	// to it (--num-scheduler-steps 10 --max-model-len 2048 ...), for the
	// engine settings the three fields above do not cover.
	ServerArgs []string
	// Output is the calibration YAML to write.
	Output string
	// Bootstrap is the resamples for the uncertainty (0 skips it).
	Bootstrap          int
	Seed               int64
	FitRequestOverhead bool
	// Env is where models and GPU files are looked up.
	Env runspec.Env
}

// Run fits the job's runs, writes the calibration and prints its summary
// to out (progress to errw). Everything it can check (the inputs, that
// Output can be written) fails before the fit starts.
func (j *Job) Run(ctx context.Context, out, errw io.Writer) error {
	if len(j.Files) == 0 {
		return fmt.Errorf("no result files: pass servebench or vLLM --save-result JSON files, e.g. servebench calibrate runs/*.json")
	}
	if j.Bootstrap < 0 {
		return fmt.Errorf("--bootstrap %d: give a number of resamples, or 0 to skip", j.Bootstrap)
	}
	if j.TensorParallel < 0 || j.MaxNumSeqs < 0 || j.MaxNumBatchedTokens < 0 {
		return fmt.Errorf("--tensor-parallel-size, --max-num-seqs and --max-num-batched-tokens must not be negative")
	}
	// The fit takes minutes: a place it cannot write to fails first.
	if err := report.CheckWritableDir("output", filepath.Dir(j.Output)); err != nil {
		return fmt.Errorf("%w; nothing was fitted: pass -o a path you can write", err)
	}
	obs, held, err := j.load()
	if err != nil {
		return err
	}
	start := time.Now()
	progress := func(msg string) { fmt.Fprintln(errw, msg) }
	progress(fmt.Sprintf("calibrate: %d runs of %s on %s (vLLM %s)", len(obs), obs[0].Deployment.Model.Name, obs[0].Tags.GPU, obs[0].Tags.VLLMVersion))
	bootstrap := j.Bootstrap
	if bootstrap == 0 {
		bootstrap = -1
	}
	res, err := Fit(ctx, obs, Options{Progress: progress, Bootstrap: bootstrap, Seed: j.Seed, FitRequestOverhead: j.FitRequestOverhead})
	if err != nil {
		return err
	}
	var heldFits []RunFit
	if len(held) > 0 {
		if heldFits, err = Predict(ctx, held, res.Params); err != nil {
			return fmt.Errorf("--holdout: %w", err)
		}
	}
	data, err := Marshal(obs[0], res, heldFits)
	if err != nil {
		return err
	}
	if err := report.WriteAtomic(j.Output, data, true); err != nil {
		return fmt.Errorf("--output: %w", err)
	}
	progress(fmt.Sprintf("calibrate: done in %v, %d simulations", time.Since(start).Round(time.Millisecond), res.Evaluations))
	if err := WriteSummary(out, res, heldFits); err != nil {
		return err
	}
	fmt.Fprintf(out, "Wrote %s\n", j.Output)
	return nil
}

// load reads the files to fit and the held-out ones, which must have run
// the same model on the same GPU.
func (j *Job) load() (obs, held []Observation, err error) {
	options, err := j.engineOptions()
	if err != nil {
		return nil, nil, err
	}
	load := LoadOptions{Given: j.Given, Options: options, Resolve: EnvResolver(j.Env), Seed: j.Seed}
	if obs, err = Load(j.Files, load); err != nil {
		return nil, nil, err
	}
	if len(j.Holdout) == 0 {
		return obs, nil, nil
	}
	if held, err = Load(j.Holdout, load); err != nil {
		return nil, nil, fmt.Errorf("--holdout: %w", err)
	}
	if held[0].Tags.GPU != obs[0].Tags.GPU || held[0].Deployment.Model.Name != obs[0].Deployment.Model.Name {
		return nil, nil, fmt.Errorf("--holdout %s: ran %s on %s, but the fitted runs ran %s on %s", held[0].Name(),
			held[0].Deployment.Model.Name, held[0].Tags.GPU, obs[0].Deployment.Model.Name, obs[0].Tags.GPU)
	}
	return obs, held, nil
}

// engineOptions are the server's engine flags: ServerArgs, and the three
// flags of their own, which must agree with them where both are given.
func (j *Job) engineOptions() (vllm.Options, error) {
	var o vllm.Options
	if len(j.ServerArgs) > 0 {
		args, err := runspec.ParseServerArgs(j.ServerArgs)
		if err != nil {
			return o, fmt.Errorf("--server-args: %w; give the engine flags vllm serve ran with", err)
		}
		if args.Changed("dtype") && !strings.EqualFold(args.DType, "auto") {
			return o, fmt.Errorf("--server-args: --dtype %s is not modelled by calibrate; the model's config.json sets its dtype (pass --model a config of that dtype)", args.DType)
		}
		args.Apply(&o)
		// Apply leaves the parallel sizes and precision to its caller
		// (validate checks them against a run's own fields).
		e := args.Engine
		if args.Changed("tensor-parallel-size") {
			o.TensorParallel = e.TensorParallel
		}
		if args.Changed("pipeline-parallel-size") {
			o.PipelineParallel = e.PipelineParallel
		}
		if args.Changed("kv-cache-dtype") {
			o.KVCacheDType = e.KVCacheDType
		}
		if args.Changed("quantization") {
			o.Quantization = e.Quantization
		}
	}
	for _, f := range []struct {
		name string
		dst  *int
		v    int
	}{{"tensor-parallel-size", &o.TensorParallel, j.TensorParallel}, {"max-num-seqs", &o.MaxNumSeqs, j.MaxNumSeqs},
		{"max-num-batched-tokens", &o.MaxNumBatchedTokens, j.MaxNumBatchedTokens}} {
		switch {
		case f.v == 0:
		case *f.dst != 0 && *f.dst != f.v:
			return o, fmt.Errorf("--%s %d disagrees with --server-args' --%s %d; give it once", f.name, f.v, f.name, *f.dst)
		default:
			*f.dst = f.v
		}
	}
	return o, nil
}
