package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"
	"time"

	"github.com/servebench/servebench/runspec"
	"github.com/servebench/servebench/sweep"
	"github.com/spf13/cobra"
)

type sweepFlags struct {
	target      string
	dir         string
	repeat      int
	resume      bool
	label       string
	literal     []string
	stopOnError bool

	sla          string
	slaVariable  string
	slaMin       float64
	slaMax       float64
	slaTolerance float64
	slaMaxRuns   int

	table tableFlags
}

// runnerFactory makes the Runner for a target; tests swap in fakes.
type runnerFactory func(target sweepTarget) sweep.Runner

// sweepTarget is what each point runs: bench (at a URL, or against the
// embedded server) or sim.
type sweepTarget struct {
	kind runspec.Kind
	url  string // bench's --base-url, "" for the embedded server
	name string // as given with --target
}

func newSweepCmd() *cobra.Command {
	return newSweepCmdWith(func(sweepTarget) sweep.Runner { return sweep.RunSpec })
}

func newSweepCmdWith(makeRunner runnerFactory) *cobra.Command {
	f := &sweepFlags{}
	cmd := &cobra.Command{
		Use:   "sweep [flags] -- BENCH-OR-SIM-FLAGS",
		Short: "Run bench or sim over a grid of flag values, or search the highest rate that meets an SLA",
		Long: `Run bench (against a URL or the embedded server) or sim once per point of a grid and
collect one result per point in a run directory with a manifest.json. The benchmark's own
flags go after "--"; a comma list makes an axis, and several axes form their Cartesian
product (first axis outermost):

  servebench sweep --dir runs/prompts -- --num-prompts 1,2,4,8,16,32 --random-input-len 512
  servebench sweep --target sim --format md -- --request-rate 2,4,6,8 --max-num-seqs 64,256

--resume continues an interrupted sweep, skipping the points already done. Progress (which
point, how many left, ETA) goes to stderr; the table of results goes to stdout at the end.

With --sla, sweep instead searches for the highest --request-rate (or --max-concurrency)
whose run meets every term, e.g. --sla 'p99_ttft_ms<=500,p99_tpot_ms<=50' (any numeric key
of the result JSON; operators <=, <, >=, >). Without --sla-max it first runs at
--request-rate inf and takes the achieved throughput as the upper bound, then brackets the
boundary and narrows it by interpolation, in far fewer runs than a 1 req/s step-down. With
axes, one search runs per grid point.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if dash := cmd.ArgsLenAtDash(); dash > 0 || dash < 0 && len(args) > 0 {
				return fmt.Errorf("unexpected argument %q: benchmark flags go after --, e.g. servebench sweep -- --num-prompts 1,2,4", args[0])
			}
			err := runSweep(cmd.Context(), cmd, f, args, makeRunner)
			if err != nil && cmd.Context().Err() != nil {
				// Ctrl-C: the shell convention (128+SIGINT) tells scripts the
				// sweep did not finish, whatever the point's own error was.
				return exitCodeError{code: 130, err: err}
			}
			return err
		},
	}
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error {
		return fmt.Errorf("%w (bench and sim flags go after --, e.g. servebench sweep -- --num-prompts 1,2,4)", err)
	})
	fs := cmd.Flags()
	fs.StringVar(&f.target, "target", "embedded", `what each point runs: a server URL (bench --base-url URL), "embedded" (bench against its built-in server) or "sim"`)
	fs.StringVar(&f.dir, "dir", "", "run directory for results and manifest.json (default sweep-YYYYmmdd-HHMMSS)")
	fs.IntVar(&f.repeat, "repeat", 1, "runs per grid point")
	fs.BoolVar(&f.resume, "resume", false, "continue the sweep in --dir, skipping points whose result is already there")
	fs.StringVar(&f.label, "label", "", "name of this sweep in reports (e.g. the server setup)")
	fs.StringSliceVar(&f.literal, "no-axis", nil, "flags whose comma-separated values are one value, not an axis (added to percentile-metrics, metric-percentiles, extra-body, header, metadata, goodput)")
	fs.BoolVar(&f.stopOnError, "stop-on-error", false, "stop at the first failed point instead of running the rest")
	fs.StringVar(&f.sla, "sla", "", "search for the highest load meeting these terms, e.g. 'p99_ttft_ms<=500,p99_tpot_ms<=50'")
	fs.StringVar(&f.slaVariable, "sla-variable", sweep.VariableRequestRate, "what the SLA search varies: request-rate or max-concurrency")
	fs.Float64Var(&f.slaMin, "sla-min", 0, "lowest value the SLA search tries (default: open)")
	fs.Float64Var(&f.slaMax, "sla-max", 0, "highest value the SLA search tries (default: the --request-rate inf throughput, or doubling for concurrency)")
	fs.Float64Var(&f.slaTolerance, "sla-tolerance", 0.05, "stop when the boundary is bracketed within this fraction (or 0.25 req/s, 1 for concurrency)")
	fs.IntVar(&f.slaMaxRuns, "sla-max-runs", 20, "most benchmark runs one SLA search may take")
	f.table.register(cmd, false)
	return cmd
}

// parseSweepTarget turns --target into what each point runs.
func parseSweepTarget(target string) (sweepTarget, error) {
	switch target {
	case "embedded", "":
		return sweepTarget{kind: runspec.Bench, name: "embedded"}, nil
	case "sim":
		return sweepTarget{kind: runspec.Sim, name: "sim"}, nil
	}
	u, err := url.Parse(target)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return sweepTarget{}, fmt.Errorf(`--target %q: use a server URL such as http://127.0.0.1:8000, "embedded" or "sim"`, target)
	}
	return sweepTarget{kind: runspec.Bench, url: target, name: target}, nil
}

// baseSpec is the run every point starts from: the fixed flags after --
// (axes taken out) with the target's.
func baseSpec(target sweepTarget, base []string) (*runspec.Spec, error) {
	s, err := runspec.Parse(target.kind, base)
	if err != nil {
		return nil, err
	}
	if target.url != "" {
		if s.Changed("base-url") {
			return nil, fmt.Errorf("--base-url is given twice: by --target %s and after --; keep one", target.name)
		}
		if err := s.Set("base-url", target.url); err != nil {
			return nil, err
		}
	}
	s.Env = readEnv()
	return s, nil
}

func runSweep(ctx context.Context, cmd *cobra.Command, f *sweepFlags, args []string, makeRunner runnerFactory) error {
	out, errw := cmd.OutOrStdout(), cmd.ErrOrStderr()
	if err := f.table.validate(); err != nil {
		return err
	}
	target, err := parseSweepTarget(f.target)
	if err != nil {
		return err
	}
	if f.repeat < 1 {
		return fmt.Errorf("--repeat %d: need at least 1", f.repeat)
	}
	baseArgs, axes, err := sweep.ParseArgs(runspec.CLIArgs(args), append(sweep.ListValuedFlags(), f.literal...))
	if err != nil {
		return err
	}
	base, err := baseSpec(target, baseArgs)
	if err != nil {
		return err
	}
	if f.dir == "" {
		f.dir = "sweep-" + time.Now().Format("20060102-150405")
	}
	progress := func(p sweep.Progress) { fmt.Fprintln(errw, p.String()) }
	runner := makeRunner(target)

	if f.sla != "" {
		return runSLASweep(ctx, f, target, base, axes, runner, progress, out, errw)
	}
	if len(axes) == 0 && f.repeat == 1 {
		return errors.New("nothing to sweep: give a comma list after --, e.g. -- --num-prompts 1,2,4, or --repeat N, or --sla")
	}
	_, runErr := sweep.Run(ctx, sweep.Config{
		Dir: f.dir, Base: base, Axes: axes, Repeat: f.repeat, Resume: f.resume,
		Label: f.label, Target: target.name, Run: runner, Progress: progress, StopOnError: f.stopOnError,
	})
	if f.table.groupBy == "" && len(axes) > 0 {
		f.table.groupBy = axes[0].Flag
	}
	if err := printSweepTable(f, out, errw); err != nil {
		return errors.Join(runErr, err)
	}
	return runErr
}

// printSweepTable prints whatever points finished, even after a failure,
// so a long sweep is never all-or-nothing.
func printSweepTable(f *sweepFlags, out, errw io.Writer) error {
	results, err := f.table.loadResults(errw, f.dir)
	if err != nil {
		return err
	}
	if len(results) == 0 {
		return nil
	}
	fmt.Fprintf(errw, "results in %s\n", f.dir)
	return f.table.writeTables(results, out, errw, time.Now())
}

func runSLASweep(ctx context.Context, f *sweepFlags, target sweepTarget, base *runspec.Spec, axes []sweep.Axis,
	runner sweep.Runner, progress func(sweep.Progress), out, errw io.Writer) error {
	sla, err := sweep.ParseSLA(f.sla)
	if err != nil {
		return err
	}
	if f.repeat != 1 {
		return errors.New("--repeat does not combine with --sla: each search step is one run")
	}
	cfg := sweep.SearchConfig{
		Dir: f.dir, Base: base, Variable: f.slaVariable, SLA: sla,
		Min: f.slaMin, Max: f.slaMax, Tolerance: f.slaTolerance, MaxRuns: f.slaMaxRuns,
		Resume: f.resume, Label: f.label, Target: target.name, Run: runner, Progress: progress,
	}
	if f.table.groupBy == "" {
		f.table.groupBy = strings.ReplaceAll(f.slaVariable, "-", "_")
	}
	if len(axes) > 0 {
		return sweep.SearchGrid(ctx, cfg, axes, out)
	}
	res, _, err := sweep.Search(ctx, cfg)
	if res != nil {
		res.WriteSummary(out, "")
		if perr := printSweepTable(f, out, errw); perr != nil {
			err = errors.Join(err, perr)
		}
	}
	if err == nil && res.Best == nil {
		err = fmt.Errorf("no %s met the SLA %s", f.slaVariable, sla)
	}
	return err
}
