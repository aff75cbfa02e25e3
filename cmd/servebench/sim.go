package main

import (
	"github.com/spf13/cobra"

	"github.com/servebench/servebench/runspec"
	"github.com/servebench/servebench/sim"
	"github.com/servebench/servebench/validate"
)

func init() { extraCommands = append(extraCommands, newSimCmd) }

func newSimCmd() *cobra.Command {
	var spec *runspec.Spec
	cmd := &cobra.Command{
		Use:   "sim",
		Short: "Predict how vLLM serves a workload on a given model and GPU, without a GPU",
		Long: `Simulate vLLM's engine (V0 or V1 scheduler, paged KV cache, chunked prefill, prefix caching,
swap/recompute preemption) on a virtual clock, with step times from a roofline model of the
model and GPU. Takes bench's workload flags and vllm serve's engine flags, and prints the same
result block and JSON as bench, so predicted and measured runs compare line by line.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			s, err := given(cmd, spec)
			if err != nil {
				return err
			}
			return sim.RunSpecWith(cmd.Context(), s, runIO(cmd), sim.Options{Trust: validate.TrustRows})
		},
	}
	spec = specOf(cmd, runspec.Sim)
	return cmd
}
