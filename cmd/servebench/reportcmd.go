package main

import (
	"fmt"
	"time"

	"github.com/servebench/servebench/report"
	"github.com/spf13/cobra"
)

func newReportCmd() *cobra.Command {
	f := &tableFlags{}
	cmd := &cobra.Command{
		Use:   "report DIR [DIR | RESULT.json]...",
		Short: "Tabulate every result in run directories (sweeps, result folders), optionally as an HTML report",
		Long: `Read every result under the given directories and print one row per run. A sweep
directory is read through its manifest.json, in point order and with the swept values
attached (so --group-by can use any swept flag, e.g. --group-by max-num-seqs); other
directories are walked for *.json and *.jsonl results (vLLM's --save-result files, SGLang's
JSONL, servebench results). Per-request records beside a result (*.records.jsonl), or
--save-detailed lists, add latency distributions and request timelines to the HTML report.

Examples:
  servebench report sweeps/qps --group-by request_rate --format md
  servebench report sweeps/baseline sweeps/chunked --group-by request_rate --html report.html`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := f.validate(); err != nil {
				return err
			}
			results, err := report.LoadResults(args...)
			if err != nil {
				return err
			}
			if len(results) == 0 {
				return fmt.Errorf("no benchmark results under %v: expected --save-result JSON files or a sweep's manifest.json", args)
			}
			return f.writeTables(results, cmd.OutOrStdout(), cmd.ErrOrStderr(), time.Now())
		},
	}
	f.register(cmd, false)
	return cmd
}
