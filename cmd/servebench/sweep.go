package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/servebench/servebench/internal/redact"
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

// sweepTarget is what each point runs: a subcommand plus fixed flags.
type sweepTarget struct {
	subcommand string   // "bench" or "sim"
	args       []string // e.g. --base-url URL
	name       string   // as given with --target
}

func newSweepCmd() *cobra.Command {
	return newSweepCmdWith(func(target sweepTarget) sweep.Runner {
		return inProcessRunner(newRootCmd, target)
	})
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

// parseSweepTarget turns --target into the subcommand and flags each point runs.
func parseSweepTarget(target string) (sweepTarget, error) {
	switch target {
	case "embedded", "":
		return sweepTarget{subcommand: "bench", name: "embedded"}, nil
	case "sim":
		return sweepTarget{subcommand: "sim", name: "sim"}, nil
	}
	u, err := url.Parse(target)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return sweepTarget{}, fmt.Errorf(`--target %q: use a server URL such as http://127.0.0.1:8000, "embedded" or "sim"`, target)
	}
	return sweepTarget{subcommand: "bench", args: []string{"--base-url", target}, name: target}, nil
}

// sweepOwnedFlags are set by sweep for every point.
var sweepOwnedFlags = []string{"result-dir", "result-filename", "append-result", "save-result", "disable-tqdm"}

func checkPassthrough(args []string, target sweepTarget) error {
	for _, a := range args {
		name, _, _ := strings.Cut(a, "=")
		if !strings.HasPrefix(name, "--") {
			continue
		}
		flag := strings.TrimPrefix(name, "--")
		if slices.Contains(sweepOwnedFlags, flag) {
			return fmt.Errorf("--%s is set by sweep for every point; remove it (results go to --dir)", flag)
		}
		if flag == "base-url" && len(target.args) > 0 {
			return fmt.Errorf("--base-url is given twice: by --target %s and after --; keep one", target.name)
		}
	}
	return nil
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
	if err := checkPassthrough(args, target); err != nil {
		return err
	}
	if f.repeat < 1 {
		return fmt.Errorf("--repeat %d: need at least 1", f.repeat)
	}
	base, axes, err := sweep.ParseArgs(args, append(sweep.ListValuedFlags(), f.literal...))
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
		Dir: f.dir, BaseArgs: base, Axes: axes, Repeat: f.repeat, Resume: f.resume,
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

func runSLASweep(ctx context.Context, f *sweepFlags, target sweepTarget, base []string, axes []sweep.Axis,
	runner sweep.Runner, progress func(sweep.Progress), out, errw io.Writer) error {
	sla, err := sweep.ParseSLA(f.sla)
	if err != nil {
		return err
	}
	if f.repeat != 1 {
		return errors.New("--repeat does not combine with --sla: each search step is one run")
	}
	for _, a := range axes {
		if a.Flag == f.slaVariable {
			return fmt.Errorf("--%s is what --sla searches; do not list values for it", a.Flag)
		}
	}
	searchIn := func(dir, label string, args []string) (*sweep.SearchResult, error) {
		res, _, err := sweep.Search(ctx, sweep.SearchConfig{
			Dir: dir, BaseArgs: args, Variable: f.slaVariable, SLA: sla,
			Min: f.slaMin, Max: f.slaMax, Tolerance: f.slaTolerance, MaxRuns: f.slaMaxRuns,
			Resume: f.resume, Label: label, Target: target.name, Run: runner, Progress: progress,
		})
		return res, err
	}
	if f.table.groupBy == "" {
		f.table.groupBy = strings.ReplaceAll(f.slaVariable, "-", "_")
	}
	if len(axes) == 0 {
		res, err := searchIn(f.dir, f.label, base)
		if res != nil {
			writeSearchSummary(out, res, "")
			if perr := printSweepTable(f, out, errw); perr != nil {
				err = errors.Join(err, perr)
			}
		}
		if err == nil && res.Best == nil {
			err = fmt.Errorf("no %s met the SLA %s", f.slaVariable, sla)
		}
		return err
	}
	// One search per grid point, as vLLM's serve_sla does per server setup.
	var failures []error
	for _, p := range sweep.Grid(base, axes, 1) {
		label := strings.TrimSpace(f.label + " " + p.Describe())
		res, err := searchIn(filepath.Join(f.dir, p.Name), label, p.Args)
		if res != nil {
			writeSearchSummary(out, res, p.Describe())
		}
		if err != nil {
			failures = append(failures, fmt.Errorf("%s: %w", p.Describe(), err))
		}
	}
	return errors.Join(failures...)
}

// writeSearchSummary prints the boundary, its margins and the run count.
func writeSearchSummary(w io.Writer, res *sweep.SearchResult, point string) {
	title := fmt.Sprintf("SLA %s over %s", res.SLA, res.Variable)
	if point != "" {
		title += " at " + point
	}
	fmt.Fprintln(w, title+":")
	if res.Best == nil {
		fmt.Fprintf(w, "  no %s met the SLA\n", res.Variable)
	} else {
		fmt.Fprintf(w, "  highest %s meeting it: %s (run %s)\n", res.Variable, res.Best.Text, res.Best.Point)
		for _, m := range res.Best.Margins {
			fmt.Fprintf(w, "    %-22s %10.2f  (limit %s%s, margin %+.1f%%)\n", m.Term.Key, m.Value, m.Term.Op, formatSLANumber(m.Term.Limit), 100*m.Margin)
		}
	}
	if res.Upper > 0 {
		fmt.Fprintf(w, "  lowest %s failing it: %s\n", res.Variable, formatSLANumber(res.Upper))
	}
	runs := fmt.Sprintf("  runs: %d", res.Runs)
	if res.StepDownRuns > 0 {
		runs += fmt.Sprintf(" (a 1 req/s step-down from the inf probe's %.2f req/s needs at least %d)", res.ProbeThroughput, res.StepDownRuns)
	}
	fmt.Fprintln(w, runs)
	fmt.Fprintf(w, "  stopped: %s\n", res.Stopped)
}

func formatSLANumber(v float64) string {
	if math.IsInf(v, 1) {
		return "inf"
	}
	return fmt.Sprintf("%g", v)
}

// inProcessRunner runs each point as `servebench <bench|sim> ARGS
// --save-result ...` in this process, with the point's stdout and stderr
// (the result block, warnings) kept in output.log beside its result,
// under the command line that produced them. Credentials in the flags
// (header values, URL passwords, $OPENAI_API_KEY) are masked in the log,
// which only its owner may read, and in the returned error.
func inProcessRunner(newRoot func() *cobra.Command, target sweepTarget) sweep.Runner {
	return func(ctx context.Context, args []string, resultPath string) (map[string]any, error) {
		dir := filepath.Dir(resultPath)
		logPath := filepath.Join(dir, "output.log")
		logFile, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
		if err != nil {
			return nil, fmt.Errorf("creating the point's log: %w", err)
		}
		root := newRoot()
		full := append([]string{target.subcommand}, cliArgs(normalizeHeaderArgs(redact.MetadataArgs(args)))...)
		full = append(full, target.args...)
		full = append(full, "--save-result", "--result-dir", dir, "--result-filename", filepath.Base(resultPath))
		// Only bench draws a progress bar; sim has no flag to turn one off.
		if sub, _, err := root.Find([]string{target.subcommand}); err == nil && sub.Flags().Lookup("disable-tqdm") != nil {
			full = append(full, "--disable-tqdm")
		}
		secrets := redact.Secrets(full)
		if key := os.Getenv("OPENAI_API_KEY"); len(key) >= 4 {
			secrets = append(secrets, key)
		}
		log := redact.NewWriter(logFile, secrets)
		fmt.Fprintf(log, "$ servebench %s\n", strings.Join(redact.Args(full), " "))
		root.SetArgs(full)
		root.SetOut(log)
		root.SetErr(log)
		runErr := root.ExecuteContext(ctx)
		if err := errors.Join(log.Close(), logFile.Close()); err != nil && runErr == nil {
			runErr = fmt.Errorf("writing %s: %w", logPath, err)
		}
		if runErr != nil {
			return nil, redact.Error(fmt.Errorf("%s: %w (command and output in %s)", target.subcommand, runErr, logPath), secrets)
		}
		return nil, nil
	}
}

// normalizeHeaderArgs rewrites curl-style --header 'Name: value' into the
// Name=value form bench parses, so both forms work in a sweep. A value
// that is neither is passed on for bench to reject (its error is masked).
func normalizeHeaderArgs(args []string) []string {
	out := slices.Clone(args)
	for i, a := range out {
		switch {
		case a == "--header" && i+1 < len(out):
			out[i+1] = headerAsKeyValue(out[i+1])
		case strings.HasPrefix(a, "--header="):
			out[i] = "--header=" + headerAsKeyValue(strings.TrimPrefix(a, "--header="))
		}
	}
	return out
}

func headerAsKeyValue(h string) string {
	name, value, err := redact.SplitHeader(h)
	if err != nil {
		return h
	}
	return name + "=" + value
}
