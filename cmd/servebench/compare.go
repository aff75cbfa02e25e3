package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/servebench/servebench/report"
	"github.com/spf13/cobra"
)

// tableFlags are the output flags compare, report and sweep share.
type tableFlags struct {
	format     string
	groupBy    string
	html       string
	labels     []string
	title      string
	allColumns bool
	strict     bool
}

func (f *tableFlags) register(cmd *cobra.Command, withLabels bool) {
	fs := cmd.Flags()
	fs.StringVar(&f.format, "format", "term", "table format: term (aligned text), md (Markdown), csv or json")
	fs.StringVar(&f.groupBy, "group-by", "", "key shown first and sorted on, e.g. request_rate, num_prompts, a --metadata key or a swept flag")
	fs.StringVar(&f.html, "html", "", "also write a self-contained HTML report with charts to this file")
	fs.StringVar(&f.title, "title", "", "title of the HTML report")
	fs.BoolVar(&f.allColumns, "all-columns", false, "terminal table: show every column (wrapped to 120 columns) instead of the headline ones; md, csv and json always hold every column")
	fs.BoolVar(&f.strict, "strict", false, "fail on the first result file that cannot be read, instead of skipping it with a warning")
	if withLabels {
		fs.StringSliceVar(&f.labels, "label", nil, "labels for the runs, in order (comma-separated or repeated); default: each file's label, metadata or name")
	}
}

// validate checks the flags before any file is read, so a typo fails fast.
func (f *tableFlags) validate() error {
	if _, err := report.ParseCompareFormat(f.format); err != nil {
		return fmt.Errorf("--format: %w", err)
	}
	return nil
}

// writeTables prints the comparison table to out and, with --html, writes
// the HTML report, saying where on errw.
func (f *tableFlags) writeTables(results []report.LoadedResult, out, errw io.Writer, now time.Time) error {
	if len(results) == 0 {
		return fmt.Errorf("no benchmark results found: point at --save-result JSON files or a sweep directory")
	}
	table := report.NewCompareTable(results, report.CompareOptions{GroupBy: f.groupBy, Labels: f.labels, AllColumns: f.allColumns})
	write, err := table.Reporter(f.format)
	if err != nil {
		return fmt.Errorf("--format: %w", err)
	}
	if err := write(out); err != nil {
		return fmt.Errorf("writing the table: %w", err)
	}
	if f.html == "" {
		return nil
	}
	var page bytes.Buffer
	opts := report.HTMLOptions{Title: f.title, GroupBy: f.groupBy, Labels: f.labels, Generated: now}
	if err := report.WriteHTML(&page, results, opts); err != nil {
		return err
	}
	if err := os.WriteFile(f.html, page.Bytes(), 0o644); err != nil {
		return fmt.Errorf("writing the HTML report: %w", err)
	}
	fmt.Fprintf(errw, "HTML report written to %s\n", f.html)
	return nil
}

// loadResults reads the runs, printing one warning line on errw for each
// file skipped (unless --strict).
func (f *tableFlags) loadResults(errw io.Writer, paths ...string) ([]report.LoadedResult, error) {
	results, warnings, err := report.LoadResultsWith(report.LoadOptions{Strict: f.strict}, paths...)
	for _, w := range warnings {
		fmt.Fprintln(errw, report.TerminalSafe(w.String()))
	}
	if len(warnings) > 0 && err == nil {
		fmt.Fprintf(errw, "warning: %d file(s) skipped; --strict makes this an error\n", len(warnings))
	}
	return results, err
}

// compare and report were two commands that differed only in wording; they
// are one now, under both names, so scripts using either keep working.
func newCompareCmd() *cobra.Command { return newTableCmd("compare") }

func newReportCmd() *cobra.Command { return newTableCmd("report") }

func newTableCmd(name string) *cobra.Command {
	f := &tableFlags{}
	other := map[string]string{"compare": "report", "report": "compare"}[name]
	cmd := &cobra.Command{
		Use:   name + " RESULT.json|DIR...",
		Short: "Tabulate saved results side by side (servebench, vLLM, SGLang; files or sweep directories), optionally as HTML",
		Long: `Print one row per saved benchmark run, with the columns of vLLM's result block, and
optionally write an HTML report with charts. "` + name + `" and "` + other + `" are the same command
under two names: give result files to compare them side by side, or run directories to
tabulate everything in them.

Inputs: servebench results, vLLM's --save-result and --append-result files and SGLang's
bench_serving JSONL; keys a file lacks print blank. A directory is walked for *.json and
*.jsonl results; a sweep directory is read through its manifest.json, in point order and
with the swept values attached (so --group-by can use any swept flag, e.g. max-num-seqs).
Per-request records beside a result (*.records.jsonl), or --save-detailed lists, add
latency distributions and request timelines to the HTML report.

Rows are labelled by --label, else each run's label, else the sweep point, else the file
name (lengthened into its path when two files share a name). A file that cannot be read
(a run killed mid-write) is skipped with a warning on stderr; --strict fails instead.
The terminal table shows the headline columns within 120 columns; --all-columns shows
all of them, and --format md, csv and json always hold every column.

Examples:
  servebench ` + name + ` a.json b.json --label baseline,chunked --format md
  servebench ` + name + ` sweeps/baseline sweeps/chunked --group-by request_rate --html report.html`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := f.validate(); err != nil {
				return err
			}
			results, err := f.loadResults(cmd.ErrOrStderr(), args...)
			if err != nil {
				return err
			}
			if len(results) == 0 {
				return fmt.Errorf("no benchmark results in %v: expected --save-result JSON files or a sweep's manifest.json", args)
			}
			if len(f.labels) > len(results) {
				return fmt.Errorf("--label gives %d labels for %d runs; give at most one per run, in order", len(f.labels), len(results))
			}
			return f.writeTables(results, cmd.OutOrStdout(), cmd.ErrOrStderr(), time.Now())
		},
	}
	f.register(cmd, true)
	return cmd
}
