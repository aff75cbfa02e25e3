package main

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/servebench/servebench/metrics"
	"github.com/servebench/servebench/report"
)

func init() { extraCommands = append(extraCommands, newMergeCmd) }

func newMergeCmd() *cobra.Command {
	var o outputFlags
	cmd := &cobra.Command{
		Use:   "merge DIR|FILE...",
		Short: "Merge the shards of a sharded bench run into one result",
		Long: `Merge the shards written by "bench --shard I/N" (or by bench --shards N --local) into one
vLLM-format result. DIR is a directory holding the shards' *.shard.json manifests; FILEs are
manifests or records files. merge checks that the shards are every shard of one run, each once
(same schedule hash, shard count and --start-at) and that every request of the schedule has
exactly one record, then computes the result from all records: percentiles come from every
record, never from per-shard percentiles.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runMerge(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), &o, args)
		},
	}
	o.register(cmd.Flags())
	return cmd
}

func runMerge(_ context.Context, out, errw io.Writer, o *outputFlags, paths []string) error {
	metadata, err := o.validate()
	if err != nil {
		return err
	}
	if err := o.checkDirs(); err != nil {
		return err
	}
	shards, err := report.LoadShards(paths...)
	if err != nil {
		return err
	}
	merged, err := report.MergeShards(shards)
	if err != nil {
		return err
	}
	return writeMerged(out, errw, o, metadata, merged)
}

// writeMerged prints a merged run like a bench result, with a section on
// the shards, and saves what the output flags ask for; the merged records
// file holds every record in global index order.
func writeMerged(out, errw io.Writer, o *outputFlags, metadata [][2]string, merged *report.Merged) error {
	result := merged.Result
	if o.label != "" {
		result.Info.Label = o.label
	}
	result.Info.Metadata = append(result.Info.Metadata, metadata...)
	outs, err := o.open(&result.Info)
	if err != nil {
		return err
	}
	defer outs.close()
	if err := report.WriteText(out, result); err != nil {
		return err
	}
	if err := writeErrorSection(out, &result.Summary); err != nil {
		return err
	}
	if err := report.WriteSection(out, fmt.Sprintf("Shards (%d, schedule %.19s…)", len(merged.Shards), merged.ScheduleHash), merged.ShardRows()); err != nil {
		return err
	}
	var recordsErr error
	if w := outs.recordsWriter(); w != nil {
		jw := metrics.NewBufferedJSONLWriter(w, 1<<20)
		for i := range result.Records {
			if recordsErr = jw.Add(&result.Records[i]); recordsErr != nil {
				break
			}
		}
		if err := jw.Close(); recordsErr == nil {
			recordsErr = err
		}
		fmt.Fprintf(errw, "Merged records: %s\n", outs.recordsPath)
	}
	if err := outs.write(out, errw, result); err != nil {
		return err
	}
	return runOutcome(&result.Summary, result.Info.Interrupted, 0, recordsErr, outs.savedPaths(recordsErr == nil))
}
