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
	rates := fs.String("matmul-rates", "", "checkout of zzc0721/torch-performance-test-data")
	ratesCommit := fs.String("matmul-rates-commit", "", "the torch-performance-test-data commit the checkout is at")
	out := fs.String("out", "perf/kerneltables", "where the embedded tables go")
	figures := fs.String("figures", "perf/testdata/kernels", "where the published figures for tests go")
	if err := fs.Parse(args); err != nil {
		return err
	}
	kernels := *aic != "" || *vidur != "" || *aicCommit != "" || *vidurCommit != ""
	if kernels && (*aic == "" || *vidur == "" || *aicCommit == "" || *vidurCommit == "") {
		return errors.New("give -aiconfigurator DIR -aiconfigurator-commit SHA -vidur DIR -vidur-commit SHA together (README.md says how to fetch them)")
	}
	if (*rates == "") != (*ratesCommit == "") {
		return errors.New("give -matmul-rates DIR with -matmul-rates-commit SHA")
	}
	if !kernels && *rates == "" {
		return errors.New("nothing to do: give the kernel databases (-aiconfigurator, -vidur), the matmul rates (-matmul-rates), or both")
	}
	for _, d := range []string{*out, *figures} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	if kernels {
		a := aiconfigurator{root: *aic, commit: *aicCommit}
		if err := a.writeAll(*out); err != nil {
			return fmt.Errorf("aiconfigurator: %w", err)
		}
		v := vidurSource{root: *vidur, commit: *vidurCommit}
		if err := v.writeAll(*out, *figures); err != nil {
			return fmt.Errorf("vidur: %w", err)
		}
	}
	if *rates != "" {
		if err := (matmulRateSource{root: *rates, commit: *ratesCommit}).write(*out); err != nil {
			return fmt.Errorf("matmul rates: %w", err)
		}
	}
	return nil
}
