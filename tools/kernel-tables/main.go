// Command kernel-tables reduces public measured kernel databases to the
// compact tables servebench embeds in package perf (perf/kerneltables) and
// the published figures its tests check against (perf/testdata/kernels).
//
// It is run by hand, never by CI, against checkouts fetched outside the
// repository (see README.md). Only measured figures carry over: latencies of
// GEMMs, attention kernels and collectives at grid points, each table with
// its source repository, commit, path and license in its header.
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "kernel-tables:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("kernel-tables", flag.ContinueOnError)
	aic := fs.String("aiconfigurator", "", "directory holding aiconfigurator's aic-core/src/aiconfigurator_core/systems/data")
	aicCommit := fs.String("aiconfigurator-commit", "", "the aiconfigurator commit the directory was taken from")
	vidur := fs.String("vidur", "", "directory holding Vidur's data/profiling")
	vidurCommit := fs.String("vidur-commit", "", "the Vidur commit the directory was taken from")
	out := fs.String("out", "perf/kerneltables", "where the embedded tables go")
	figures := fs.String("figures", "perf/testdata/kernels", "where the published figures for tests go")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *aic == "" || *vidur == "" || *aicCommit == "" || *vidurCommit == "" {
		return errors.New("give -aiconfigurator DIR -aiconfigurator-commit SHA -vidur DIR -vidur-commit SHA (README.md says how to fetch them)")
	}
	for _, d := range []string{*out, *figures} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	a := aiconfigurator{root: *aic, commit: *aicCommit}
	if err := a.writeAll(*out); err != nil {
		return fmt.Errorf("aiconfigurator: %w", err)
	}
	v := vidurSource{root: *vidur, commit: *vidurCommit}
	if err := v.writeAll(*out, *figures); err != nil {
		return fmt.Errorf("vidur: %w", err)
	}
	return nil
}
