package main

import (
	"context"
	"io"

	"github.com/spf13/cobra"

	"github.com/servebench/servebench/validate"
)

func init() { extraCommands = append(extraCommands, newValidateCmd) }

type validateFlags struct {
	corpus         string
	filter         validate.Filter
	json           bool
	html           string
	summary        bool
	explain        string
	maxMedianError float64
}

func newValidateCmd() *cobra.Command {
	f := &validateFlags{}
	cmd := &cobra.Command{
		Use:   "validate [RESULT.json...]",
		Short: "Measure sim's error against published real vLLM runs, or against your own results",
		Long: `Simulate every run of the built-in corpus of published real vLLM runs (or --corpus DIR) exactly
as servebench sim would, and print per run the published figures, sim's and the signed error, then
the median and worst absolute error per metric family by GPU class, regime and release line, and by
source (publication, or result file): holdout runs for the headline, fit runs apart. Runs sim cannot simulate are listed with their reason.

Given result files (vLLM --save-result JSON or servebench results), validates those instead: their
setup comes from the file (--metadata gpu=H100 model=... vllm_version=0.6.3 tp=1 when benchmarking)
or from a sidecar FILE.setup.yaml beside it (the corpus run schema without published).`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runValidate(cmd.Context(), cmd.OutOrStdout(), f, args)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&f.corpus, "corpus", "", "corpus directory of <source-id>.yaml files (default: the built-in corpus)")
	fs.StringVar(&f.filter.GPU, "gpu", "", "only runs on this GPU or GPU class (H100, A10G, ...)")
	fs.StringVar(&f.filter.Regime, "regime", "", "only runs of this regime: offline-prefill, offline-decode, offline-mixed, serving-low, serving-saturated")
	fs.StringVar(&f.filter.Release, "release", "", "only runs of this release line (0.4, 0.5, 0.6, 0.7-0.10, 0.11+) or version (0.6.3)")
	fs.StringVar(&f.filter.Split, "split", "", "only fit or holdout runs")
	fs.BoolVar(&f.json, "json", false, "print the report as JSON (stable keys) instead of text")
	fs.StringVar(&f.html, "html", "", "also write an HTML page plotting sim against published figures to this file")
	fs.BoolVar(&f.summary, "summary", false, "print only the error tables, not every run's figures")
	fs.StringVar(&f.explain, "explain", "", "print one run in full (source, setup, approximations, the servebench sim command that reproduces it) by its id")
	fs.Float64Var(&f.maxMedianError, "max-median-error", 0, "exit non-zero when a family's median absolute error over the holdout runs (your runs, with result files) exceeds this many percent")
	return cmd
}

func runValidate(ctx context.Context, out io.Writer, f *validateFlags, files []string) error {
	job := validate.Job{Corpus: f.corpus, Files: files, Filter: f.filter, JSON: f.json, SummaryOnly: f.summary,
		HTML: f.html, Explain: f.explain, MaxMedianError: f.maxMedianError, HFCacheDirs: readEnv().HF.CacheDirs()}
	return job.Run(ctx, out)
}
