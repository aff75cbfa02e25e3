package main

import (
	"github.com/spf13/cobra"

	"github.com/servebench/servebench/report"
	"github.com/servebench/servebench/runspec"
)

func init() { extraCommands = append(extraCommands, newMergeCmd) }

func newMergeCmd() *cobra.Command {
	var spec *runspec.Spec
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
			s, err := given(cmd, spec)
			if err != nil {
				return err
			}
			o := &s.Output
			if err := s.Validate(); err != nil {
				return err
			}
			metadata, err := o.MetadataPairs()
			if err != nil {
				return err
			}
			if err := report.CheckOutputDirs(o.Files()); err != nil {
				return err
			}
			shards, err := report.LoadShards(args...)
			if err != nil {
				return err
			}
			merged, err := report.MergeShards(shards)
			if err != nil {
				return err
			}
			return report.WriteMerged(cmd.OutOrStdout(), cmd.ErrOrStderr(), o.Files(), o.Label, metadata, merged)
		},
	}
	spec = specOf(cmd, runspec.Merge)
	return cmd
}
