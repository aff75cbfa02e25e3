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
	format  string
	groupBy string
	html    string
	labels  []string
	title   string
}

func (f *tableFlags) register(cmd *cobra.Command, withLabels bool) {
	fs := cmd.Flags()
	fs.StringVar(&f.format, "format", "term", "table format: term (aligned text), md (Markdown), csv or json")
	fs.StringVar(&f.groupBy, "group-by", "", "key shown first and sorted on, e.g. request_rate, num_prompts, a --metadata key or a swept flag")
	fs.StringVar(&f.html, "html", "", "also write a self-contained HTML report with charts to this file")
	fs.StringVar(&f.title, "title", "", "title of the HTML report")
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
	table := report.NewCompareTable(results, report.CompareOptions{GroupBy: f.groupBy, Labels: f.labels})
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

func newCompareCmd() *cobra.Command {
	f := &tableFlags{}
	cmd := &cobra.Command{
		Use:   "compare RESULT.json [RESULT.json | DIR]...",
		Short: "Compare saved results side by side (servebench, vLLM --save-result and SGLang JSONL files)",
		Long: `Compare saved benchmark results side by side: one row per run, with the columns of vLLM's
result block (successful requests, duration, token totals, throughputs, mean/median/P99
TTFT, TPOT, ITL and E2EL when present). Reads servebench results, vLLM's --save-result and
--append-result files and SGLang's bench_serving JSONL; keys a file lacks print blank.

Examples:
  servebench compare a.json b.json --label baseline,chunked --format md
  servebench compare results/*.json --group-by request_rate --html report.html`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := f.validate(); err != nil {
				return err
			}
			results, err := report.LoadResults(args...)
			if err != nil {
				return err
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
