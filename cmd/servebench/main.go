// Command servebench benchmarks, simulates and emulates LLM inference
// servers. See README.md.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/servebench/servebench/internal/textline"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "servebench",
		Short: "Benchmark, simulate and emulate LLM inference servers (vLLM-compatible metrics)",
		Long: `servebench load-tests OpenAI-compatible LLM servers and reports TTFT, TPOT, ITL,
E2E latency, throughput and goodput exactly as vLLM's benchmark_serving.py defines them.
It also predicts vLLM's behaviour without a GPU (sim) and emulates a vLLM server (serve).`,
		Version:       version,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(newBenchCmd(), newSweepCmd(), newCompareCmd(), newReportCmd())
	for _, extra := range extraCommands {
		root.AddCommand(extra())
	}
	speakFlags(root)
	return root
}

// extraCommands are the subcommands defined in other files of this package;
// each file registers its constructor in an init function so the command
// tree is built fresh (no shared state) by every newRootCmd call.
var extraCommands []func() *cobra.Command

func main() {
	ctx, interrupt, stop := withInterrupts(context.Background())
	defer stop()
	signals := make(chan os.Signal, 2)
	signal.Notify(signals, os.Interrupt, syscall.SIGTERM)
	go func() {
		<-signals
		interrupt() // stop sending; in-flight requests get --interrupt-grace
		<-signals
		interrupt() // cut them off now; results are still printed and saved
		// A third one kills the process the default way.
		signal.Reset(os.Interrupt, syscall.SIGTERM)
	}()
	root := newRootCmd()
	root.SetArgs(cliArgs(os.Args[1:]))
	err := root.ExecuteContext(ctx)
	if err != nil {
		fmt.Fprintln(os.Stderr, "servebench: "+textline.OneLine(err.Error(), 0))
		var exit exitCodeError
		if errors.As(err, &exit) {
			os.Exit(exit.code)
		}
		os.Exit(1)
	}
}

// exitCodeError carries a specific exit code (e.g. 130 for an interrupted
// run that still saved its results).
type exitCodeError struct {
	code int
	err  error
}

func (e exitCodeError) Error() string { return e.err.Error() }
func (e exitCodeError) Unwrap() error { return e.err }

// multiValueFlags take several values after one flag, as vLLM's argparse
// nargs="+" options do: "--goodput ttft:500 tpot:50".
var multiValueFlags = map[string]bool{"--goodput": true, "--metadata": true, "--header": true, "--served-model-name": true}

// cliArgs rewrites vLLM's argument forms that cobra cannot parse as they
// are: multi-value flags and the single-dash -tp/-pp.
func cliArgs(args []string) []string { return vllmArgs(expandMultiValueFlags(args)) }

// expandMultiValueFlags rewrites "--goodput a b" into "--goodput a --goodput
// b" so commands copied from vLLM's documentation run unchanged.
func expandMultiValueFlags(args []string) []string {
	out := make([]string, 0, len(args))
	current := ""
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			out = append(out, args[i:]...)
			break
		}
		if strings.HasPrefix(a, "-") {
			current = ""
			if multiValueFlags[a] {
				current = a
				out = append(out, a)
				if i+1 < len(args) {
					out = append(out, args[i+1])
					i++
				}
				continue
			}
			out = append(out, a)
			continue
		}
		if current != "" {
			out = append(out, current, a)
			continue
		}
		out = append(out, a)
	}
	return out
}
