package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/servebench/servebench/report"
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
the median and worst absolute error per metric family by GPU class, regime and release line: holdout
runs for the headline, fit runs apart. Runs sim cannot simulate are listed with their reason.

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
	fs.StringVar(&f.filter.Release, "release", "", "only runs of this release line (0.5, 0.6, 0.7-0.10, 0.11+) or version (0.6.3)")
	fs.StringVar(&f.filter.Split, "split", "", "only fit or holdout runs")
	fs.BoolVar(&f.json, "json", false, "print the report as JSON (stable keys) instead of text")
	fs.StringVar(&f.html, "html", "", "also write an HTML page plotting sim against published figures to this file")
	fs.BoolVar(&f.summary, "summary", false, "print only the error tables, not every run's figures")
	fs.StringVar(&f.explain, "explain", "", "print one run in full (source, setup, approximations, the servebench sim command that reproduces it) by its id")
	fs.Float64Var(&f.maxMedianError, "max-median-error", 0, "exit non-zero when a family's median absolute error over the holdout runs (your runs, with result files) exceeds this many percent")
	return cmd
}

func runValidate(ctx context.Context, out io.Writer, f *validateFlags, files []string) error {
	if f.maxMedianError < 0 {
		return fmt.Errorf("--max-median-error %g: give a percentage, 0 or more (0: no limit)", f.maxMedianError)
	}
	if f.filter.Split != "" && !slices.Contains([]string{validate.SplitFit, validate.SplitHoldout}, f.filter.Split) {
		return fmt.Errorf("--split %q: use fit or holdout", f.filter.Split)
	}
	if f.filter.Regime != "" && !slices.Contains(validate.Regimes(), validate.Regime(f.filter.Regime)) {
		return fmt.Errorf("--regime %q: use one of offline-prefill, offline-decode, offline-mixed, serving-low, serving-saturated", f.filter.Regime)
	}
	var corpus *validate.Corpus
	var runs []*validate.Run
	var err error
	switch {
	case len(files) > 0 && f.corpus != "":
		return fmt.Errorf("--corpus %s and result files: validate one or the other", f.corpus)
	case len(files) > 0:
		if f.filter.Split != "" {
			return fmt.Errorf("--split: your result files have no fit/holdout split; leave it out")
		}
		runs, err = validate.LoadResultRuns(files)
	case f.corpus != "":
		corpus, err = validate.LoadDir(f.corpus)
	default:
		corpus, err = validate.LoadBuiltin()
	}
	if err != nil {
		return err
	}
	if corpus != nil {
		runs = corpus.Runs
	}
	runs = f.filter.Select(runs)
	if len(runs) == 0 {
		return fmt.Errorf("no runs match --gpu %q --regime %q --release %q --split %q", f.filter.GPU, f.filter.Regime, f.filter.Release, f.filter.Split)
	}
	rep, err := validate.Evaluate(ctx, corpus, runs, validate.Options{HFCacheDirs: hfEnv().CacheDirs()})
	if err != nil {
		return err
	}
	if f.explain != "" {
		r, err := rep.Find(f.explain)
		if err != nil {
			return err
		}
		return r.WriteExplain(out)
	}
	if f.json {
		err = rep.WriteJSON(out)
	} else {
		err = rep.WriteText(out, validate.TextOptions{SummaryOnly: f.summary})
	}
	if err != nil {
		return err
	}
	if f.html != "" {
		if err := writeValidateHTML(f.html, rep); err != nil {
			return err
		}
	}
	return checkMaxMedianError(rep, f.maxMedianError)
}

// writeValidateHTML plots every simulated figure against the published one.
func writeValidateHTML(path string, rep *validate.Report) error {
	page := report.FidelityReport{Title: "servebench validate: sim vs published"}
	for _, r := range rep.Results {
		for _, m := range r.Metrics {
			page.Points = append(page.Points, report.FidelityPoint{Run: r.Run.FullID(), Metric: m.Key,
				Group: r.GPUClass, Published: m.Published, Sim: m.Sim, Split: r.Run.Split})
		}
	}
	fh, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("--html: %w", err)
	}
	if err := page.Write(fh); err != nil {
		fh.Close()
		return fmt.Errorf("--html %s: %w", path, err)
	}
	if err := fh.Close(); err != nil {
		return fmt.Errorf("--html %s: %w", path, err)
	}
	return nil
}

// checkMaxMedianError fails when a family's headline median is above the
// limit: holdout runs, or the user's own.
func checkMaxMedianError(rep *validate.Report, limit float64) error {
	if limit <= 0 {
		return nil
	}
	split := validate.SplitHoldout
	if !slices.Contains(rep.Splits(), split) {
		split = validate.SplitUser
	}
	s := rep.Summarize(split)
	var over []string
	for _, fam := range validate.Families() {
		if st, ok := s.Overall.Families[fam]; ok && st.MedianAbs > limit {
			over = append(over, fmt.Sprintf("%s %.1f%%", fam.Title(), st.MedianAbs))
		}
	}
	if len(over) == 0 {
		if s.Simulated == 0 {
			return fmt.Errorf("--max-median-error %g: no %s run was simulated, so no median to check", limit, split)
		}
		return nil
	}
	return fmt.Errorf("median absolute error over %s runs above --max-median-error %g%%: %s", split, limit, strings.Join(over, ", "))
}
