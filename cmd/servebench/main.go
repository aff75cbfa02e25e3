// Command servebench benchmarks, simulates and emulates LLM inference
// servers. See README.md.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/servebench/servebench/internal/textline"
	"github.com/servebench/servebench/report"
	"github.com/servebench/servebench/runspec"
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
		os.Exit(exitCode(err))
	}
}

// cliArgs rewrites vLLM's argument forms that cobra cannot parse as they
// are: multi-value flags and the single-dash -tp/-pp.
func cliArgs(args []string) []string { return runspec.CLIArgs(args) }

// exitCodeError carries a specific exit code.
type exitCodeError struct {
	code int
	err  error
}

func (e exitCodeError) Error() string { return e.err.Error() }
func (e exitCodeError) Unwrap() error { return e.err }

// exitCode is the shell's status for err: 130 (128+SIGINT) for a run
// interrupted after saving what it measured, so scripts know it did not
// finish.
func exitCode(err error) int {
	var exit exitCodeError
	switch {
	case errors.As(err, &exit):
		return exit.code
	case errors.Is(err, report.ErrInterrupted):
		return 130
	}
	return 1
}

// speakFlags makes every command in the tree return errors with flag
// names, and refuse an unknown flag naming the nearest one.
func speakFlags(cmd *cobra.Command) {
	if run := cmd.RunE; run != nil {
		cmd.RunE = func(c *cobra.Command, args []string) error { return runspec.FlagNames(run(c, args)) }
	}
	prev := cmd.FlagErrorFunc()
	cmd.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return prev(c, runspec.ParseError(runspec.Kind(c.Name()), c.Flags(), err))
	})
	for _, sub := range cmd.Commands() {
		speakFlags(sub)
	}
}

// interruptKey carries the channel a second interrupt closes.
type interruptKey struct{}

// withInterrupts returns a context canceled by the first call of interrupt
// (Ctrl-C) that carries an abort channel closed by the second: the first
// lets in-flight requests finish, the second cuts them off at once.
func withInterrupts(parent context.Context) (ctx context.Context, interrupt func(), stop context.CancelFunc) {
	abort := make(chan struct{})
	ctx, cancel := context.WithCancel(context.WithValue(parent, interruptKey{}, (<-chan struct{})(abort)))
	var count atomic.Int32
	interrupt = func() {
		switch count.Add(1) {
		case 1:
			cancel()
		case 2:
			close(abort)
		}
	}
	return ctx, interrupt, cancel
}

// abortChannel is the channel a second interrupt closes; nil (never
// closed) when ctx has none.
func abortChannel(ctx context.Context) <-chan struct{} {
	ch, _ := ctx.Value(interruptKey{}).(<-chan struct{})
	return ch
}

// defaultTargetAddr is where bench looks for a server when no --base-url,
// --host or --port is given: vLLM's default. Tests point it elsewhere so
// they never depend on what listens on the machine's port 8000.
var defaultTargetAddr = runspec.DefaultTargetAddr

// readEnv is what a run takes from this process's environment.
func readEnv() runspec.Env {
	home, _ := os.UserHomeDir()
	env := runspec.ReadEnv(os.LookupEnv, home)
	env.DefaultTarget = defaultTargetAddr
	return env
}

// runIO is where a command's run writes, and its interrupt.
func runIO(cmd *cobra.Command) runspec.IO {
	return runspec.IO{Out: cmd.OutOrStdout(), Err: cmd.ErrOrStderr(), In: cmd.InOrStdin(), Abort: abortChannel(cmd.Context())}
}

// specOf binds a spec of kind to cmd's flags: the command's flags are
// the spec's sections, plus --spec to start from a spec file.
func specOf(cmd *cobra.Command, kind runspec.Kind) *runspec.Spec {
	s := &runspec.Spec{Kind: kind}
	s.Register(cmd.Flags())
	if kind != runspec.Merge {
		cmd.Flags().String("spec", "", "run spec `FILE` (YAML, as sweep and tune write beside each run) to start from; flags given here change it")
	}
	return s
}

// given completes a spec bound by specOf once cobra parsed the command
// line: the flags given (over --spec's file, when given), and the
// environment.
func given(cmd *cobra.Command, s *runspec.Spec) (*runspec.Spec, error) {
	if path, _ := cmd.Flags().GetString("spec"); path != "" {
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("--spec: %w", err)
		}
		file, err := runspec.ParseYAML(data)
		if err != nil {
			return nil, fmt.Errorf("--spec %s: %w", path, err)
		}
		if file.Kind != s.Kind {
			return nil, fmt.Errorf("--spec %s is a %s run; use servebench %s --spec %s", path, file.Kind, file.Kind, path)
		}
		if err := file.Overlay(cmd.Flags(), "spec"); err != nil {
			return nil, err
		}
		s = file
	} else {
		s.MarkChanged(cmd.Flags())
	}
	s.Env = readEnv()
	// A spec file's masked secrets (a Kubernetes pod's) come from the
	// environment the pod's Secret fills.
	s.FillSecrets(os.LookupEnv)
	return s, nil
}
