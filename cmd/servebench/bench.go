package main

import (
	"github.com/spf13/cobra"

	"github.com/servebench/servebench/bench"
	"github.com/servebench/servebench/runspec"
)

func newBenchCmd() *cobra.Command {
	var spec *runspec.Spec
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Load-test an OpenAI-compatible endpoint (vLLM benchmark_serving.py flags and output)",
		Long: `Load-test an OpenAI-compatible endpoint and report TTFT, TPOT, ITL, E2EL, throughput and
goodput exactly as vLLM's benchmark_serving.py does. Without --base-url, --host or --port it
benchmarks the server at 127.0.0.1:8000 when one answers there, as vLLM does; otherwise it
starts the built-in emulated vLLM server (emulating --model) on a free loopback port and
benchmarks that. Files are written only with --save-result, --records or --result-dir.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			s, err := given(cmd, spec)
			if err != nil {
				return err
			}
			io := runIO(cmd)
			io.Progress = newProgress(cmd.ErrOrStderr(), s.Client.DisableTqdm)
			io.Setup = newProgressOf(cmd.ErrOrStderr(), s.Client.DisableTqdm, "prompts/s")
			return bench.RunSpec(cmd.Context(), s, io)
		},
	}
	spec = specOf(cmd, runspec.Bench)
	return cmd
}
