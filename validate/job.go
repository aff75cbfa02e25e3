package validate

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/servebench/servebench/report"
)

// Job is one `servebench validate`: which runs (the built-in corpus, a
// corpus directory, or a user's result files), filtered, simulated and
// reported as asked.
type Job struct {
	// Corpus is a corpus directory; "" with no Files: the built-in corpus.
	Corpus string
	// Files are result files (vLLM --save-result or servebench results)
	// to validate instead of a corpus.
	Files  []string
	Filter Filter
	// JSON prints the report as JSON instead of text; SummaryOnly prints
	// only the error tables.
	JSON, SummaryOnly bool
	// HTML, when set, also writes the sim-vs-published page there.
	HTML string
	// Explain prints one run in full, by its id, instead of the report.
	Explain string
	// MaxMedianError fails the job when a family's headline median
	// absolute error is above it, in percent (0: no limit).
	MaxMedianError float64
	// HFCacheDirs are where models named by Hugging Face id are looked up.
	HFCacheDirs []string
}

// Run checks the job, simulates its runs and writes the report to out.
func (j *Job) Run(ctx context.Context, out io.Writer) error {
	runs, corpus, err := j.load()
	if err != nil {
		return err
	}
	rep, err := Evaluate(ctx, corpus, runs, Options{HFCacheDirs: j.HFCacheDirs})
	if err != nil {
		return err
	}
	if j.Explain != "" {
		r, err := rep.Find(j.Explain)
		if err != nil {
			return err
		}
		return r.WriteExplain(out)
	}
	if j.JSON {
		err = rep.WriteJSON(out)
	} else {
		err = rep.WriteText(out, TextOptions{SummaryOnly: j.SummaryOnly})
	}
	if err != nil {
		return err
	}
	if j.HTML != "" {
		if err := writeHTML(j.HTML, rep); err != nil {
			return err
		}
	}
	return checkMaxMedianError(rep, j.MaxMedianError)
}

// load checks the job's options and reads the runs it names.
func (j *Job) load() ([]*Run, *Corpus, error) {
	f := j.Filter
	switch {
	case j.MaxMedianError < 0:
		return nil, nil, fmt.Errorf("--max-median-error %g: give a percentage, 0 or more (0: no limit)", j.MaxMedianError)
	case f.Split != "" && !slices.Contains([]string{SplitFit, SplitHoldout}, f.Split):
		return nil, nil, fmt.Errorf("--split %q: use fit or holdout", f.Split)
	case f.Regime != "" && !slices.Contains(Regimes(), Regime(f.Regime)):
		return nil, nil, fmt.Errorf("--regime %q: use one of offline-prefill, offline-decode, offline-mixed, serving-low, serving-saturated", f.Regime)
	case len(j.Files) > 0 && j.Corpus != "":
		return nil, nil, fmt.Errorf("--corpus %s and result files: validate one or the other", j.Corpus)
	case len(j.Files) > 0 && f.Split != "":
		return nil, nil, fmt.Errorf("--split: your result files have no fit/holdout split; leave it out")
	}
	var corpus *Corpus
	var runs []*Run
	var err error
	switch {
	case len(j.Files) > 0:
		runs, err = LoadResultRuns(j.Files)
	case j.Corpus != "":
		corpus, err = LoadDir(j.Corpus)
	default:
		corpus, err = LoadBuiltin()
	}
	if err != nil {
		return nil, nil, err
	}
	if corpus != nil {
		runs = corpus.Runs
	}
	runs = f.Select(runs)
	if len(runs) == 0 {
		return nil, nil, fmt.Errorf("no runs match --gpu %q --regime %q --release %q --split %q", f.GPU, f.Regime, f.Release, f.Split)
	}
	return runs, corpus, nil
}

// writeHTML plots every simulated figure against the published one.
func writeHTML(path string, rep *Report) error {
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
func checkMaxMedianError(rep *Report, limit float64) error {
	if limit <= 0 {
		return nil
	}
	split := SplitHoldout
	if !slices.Contains(rep.Splits(), split) {
		split = SplitUser
	}
	s := rep.Summarize(split)
	var over []string
	for _, fam := range Families() {
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
