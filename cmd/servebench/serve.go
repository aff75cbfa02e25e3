package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/servebench/servebench/runspec"
	"github.com/servebench/servebench/serve"
)

func init() { extraCommands = append(extraCommands, newServeCmd) }

func newServeCmd() *cobra.Command {
	var spec *runspec.Spec
	cmd := &cobra.Command{
		Use:   "serve [MODEL]",
		Short: "Run a vLLM-compatible OpenAI server whose tokens are timed by the engine model (no GPU)",
		Long: `serve emulates a vLLM server: /v1/completions, /v1/chat/completions, /v1/models,
/tokenize, /detokenize, /metrics (vLLM's metric names and buckets), /health, /version and
/reset_prefix_cache. Requests go through the same scheduler and KV-cache model as "sim", and each
engine step lasts what the step-time model says, so tokens stream out when a GPU running vLLM with
these flags would produce them. It takes vllm serve's engine flags; invalid combinations fail
with vLLM's own error text before listening.

Test a router against several emulated replicas:

  servebench serve --port 8001 --seed 1 &
  servebench serve --port 8002 --seed 2 &
  servebench serve --port 8003 --seed 3 --failure-rate 0.05 --failure-types 503,drop &
  # point the router at 127.0.0.1:8001-8003, then load it:
  servebench bench --base-url http://127.0.0.1:9000 --num-prompts 500 --request-rate 20`,
		Args:               cobra.ArbitraryArgs,
		DisableFlagParsing: true, // vLLM's -tp/-pp need rewriting first
		RunE: func(cmd *cobra.Command, args []string) error {
			cmd.DisableFlagParsing = false
			if err := cmd.ParseFlags(runspec.VLLMArgs(args)); err != nil {
				return runspec.ParseError(runspec.Serve, cmd.Flags(), err)
			}
			if help, _ := cmd.Flags().GetBool("help"); help {
				return cmd.Help()
			}
			s, err := given(cmd, spec)
			if err != nil {
				return err
			}
			switch args := cmd.Flags().Args(); {
			case len(args) > 1:
				return fmt.Errorf("serve takes at most one positional argument (the model), got %d: %s", len(args), strings.Join(args, " "))
			case len(args) == 1 && s.Changed("model"):
				return fmt.Errorf("model given twice (positional %q and --model %q); pass one", args[0], s.Engine.Model)
			case len(args) == 1:
				if err := s.Set("model", args[0]); err != nil {
					return err
				}
			}
			return serve.RunSpec(cmd.Context(), s, cmd.ErrOrStderr())
		},
	}
	spec = specOf(cmd, runspec.Serve)
	return cmd
}
