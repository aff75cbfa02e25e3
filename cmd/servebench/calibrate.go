package main

import (
	"strings"

	"github.com/spf13/cobra"

	"github.com/servebench/servebench/calibrate"
)

func init() { extraCommands = append(extraCommands, newCalibrateCmd) }

func newCalibrateCmd() *cobra.Command {
	j := &calibrate.Job{}
	var serverArgs string
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
			j.Files, j.Env = args, readEnv()
			j.ServerArgs = strings.Fields(serverArgs)
			return j.Run(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&j.Given.Model, "model", "", "model the runs served, when their files do not record it (vLLM's model_id is a served name): a catalog name, HF id in the local cache or config.json path")
	fs.StringVar(&j.Given.GPU, "gpu", "", "GPU the runs ran on, when their files do not record it (servebench records --metadata gpu=NAME): a catalog name or GPU YAML")
	fs.StringVar(&j.Given.VLLMVersion, "vllm-version", "", "vLLM release the server ran (default: the file's, else 0.8.5)")
	fs.IntVar(&j.TensorParallel, "tensor-parallel-size", 0, "tensor parallel size the server ran with (default 1)")
	fs.IntVar(&j.MaxNumSeqs, "max-num-seqs", 0, "the server's --max-num-seqs (default: the file's, else vLLM's)")
	fs.IntVar(&j.MaxNumBatchedTokens, "max-num-batched-tokens", 0, "the server's --max-num-batched-tokens (default: the file's, else vLLM's)")
	fs.StringVar(&serverArgs, "server-args", "", "the vllm serve flags the server ran with, in one quoted string split on white space (e.g. '--num-scheduler-steps 10 --max-model-len 2048 --enable-prefix-caching'): the engine settings the flags above do not cover; a flag sim does not model is refused")
	fs.StringVarP(&j.Output, "output", "o", "calibration.yaml", "calibration YAML to write")
	fs.StringArrayVar(&j.Holdout, "holdout", nil, "result file to predict but not fit, reporting its error (repeatable)")
	fs.IntVar(&j.Bootstrap, "bootstrap", 200, "bootstrap resamples for the uncertainty (0 skips it)")
	fs.Int64Var(&j.Seed, "seed", 0, "seed for rebuilt arrivals and the bootstrap")
	fs.BoolVar(&j.FitRequestOverhead, "fit-request-overhead", false, "also fit a per-request TTFT overhead (HTTP, API server) outside the engine; needs runs whose prompt lengths differ, else it trades off against the compute scale")
	return cmd
}
