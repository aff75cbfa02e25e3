package validate

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"math"

	"github.com/servebench/servebench/sim"
)

// ExpectedFile is the corpus file holding the holdout errors the CI guard
// compares against and sim prints beside its predictions. `go test
// ./validate -update` writes it from the built-in corpus.
const ExpectedFile = "expected.json"

// minCellRuns is the fewest holdout runs a GPU class × regime cell needs
// before sim quotes its error as an expectation.
const minCellRuns = 3

// Expected is the committed summary of the built-in corpus' holdout runs.
type Expected struct {
	Comment string `json:"comment"`
	Runs    int    `json:"holdout_runs"`
	// Families is each family's holdout error over the whole corpus.
	Families map[Family]Stat `json:"families"`
	// Cells are the errors per GPU class × regime, what sim quotes.
	Cells []Cell `json:"cells"`
}

// ExpectedOf summarises a report's holdout runs for ExpectedFile, rounded
// to 0.01 percentage points so the file diffs only where numbers moved.
func ExpectedOf(rep *Report) *Expected {
	s := rep.Summarize(SplitHoldout)
	e := &Expected{
		Comment:  "Holdout error of the built-in corpus, written by `go test ./validate -update`; sim quotes the cells, the CI guard the families. Do not edit.",
		Runs:     s.Runs,
		Families: roundStats(s.Overall.Families),
		Cells:    []Cell{},
	}
	for _, c := range s.ByGPUClassRegime {
		c.Families = roundStats(c.Families)
		e.Cells = append(e.Cells, c)
	}
	return e
}

func roundStats(m map[Family]Stat) map[Family]Stat {
	out := make(map[Family]Stat, len(m))
	r := func(v float64) float64 { return math.Round(v*100) / 100 }
	for f, s := range m {
		out[f] = Stat{Runs: s.Runs, MedianAbs: r(s.MedianAbs), WorstAbs: r(s.WorstAbs), MedianSigned: r(s.MedianSigned)}
	}
	return out
}

// Marshal is the file's bytes.
func (e *Expected) Marshal() ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "  ")
	if err := enc.Encode(e); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// LoadExpected reads the committed expected errors of the built-in corpus.
func LoadExpected() (*Expected, error) {
	data, err := fs.ReadFile(builtin, "corpus/"+ExpectedFile)
	if err != nil {
		return nil, fmt.Errorf("validate: %s: %w", ExpectedFile, err)
	}
	var e Expected
	if err := json.Unmarshal(data, &e); err != nil {
		return nil, fmt.Errorf("validate: %s: %w", ExpectedFile, err)
	}
	return &e, nil
}

// Cell returns the holdout cell of a GPU class and regime.
func (e *Expected) Cell(gpuClass string, regime Regime) (Cell, bool) {
	for _, c := range e.Cells {
		if c.GPUClass == gpuClass && c.Regime == string(regime) {
			return c, true
		}
	}
	return Cell{}, false
}

// ExpectedRows are the lines sim prints under its Simulated Engine section:
// how far the corpus' holdout runs of the same GPU class and regime were
// from sim, per family, or that there are too few of them to say.
func (e *Expected) ExpectedRows(gpu string, regime Regime) [][2]string {
	class := GPUClass(gpu)
	c, ok := e.Cell(class, regime)
	what := fmt.Sprintf("%s %s", class, regime)
	switch {
	case !ok || c.Runs == 0:
		return [][2]string{{"Expected error:", fmt.Sprintf("unknown: no published %s runs in the corpus", what)}}
	case c.Runs < minCellRuns:
		noun := "runs"
		if c.Runs == 1 {
			noun = "run"
		}
		return [][2]string{{"Expected error:", fmt.Sprintf("unknown: %d published %s %s (fewer than %d)", c.Runs, what, noun, minCellRuns)}}
	}
	rows := [][2]string{{"Expected error, from the corpus:", fmt.Sprintf("%d published %s runs", c.Runs, what)}}
	for _, f := range Families() {
		st, ok := c.Families[f]
		if !ok {
			continue
		}
		text := fmt.Sprintf("median %s, worst %s", pct(st.MedianAbs), pct(st.WorstAbs))
		if st.Runs != c.Runs {
			text += fmt.Sprintf(" (%d runs)", st.Runs)
		}
		// Not "Throughput:": scripts find vLLM's throughput line by it.
		rows = append(rows, [2]string{"Expected " + f.Title() + " error:", text})
	}
	return rows
}

// TrustRows are the rows sim ends its "Simulated Engine" section with: the
// corpus' holdout error for the run's GPU class and regime (the regime by
// ClassifyRegime, from the run's own setup and figures), as committed in
// ExpectedFile.
func TrustRows(in sim.TrustInput) [][2]string {
	e, err := LoadExpected()
	if err != nil {
		return [][2]string{{"Expected error:", "unavailable (" + err.Error() + ")"}}
	}
	s := in.Summary
	regimeIn := RegimeInput{Benchmark: BenchmarkServing, NumPrompts: in.NumPrompts, RequestRate: in.Arrivals.Rate,
		MaxConcurrency: in.MaxConcurrency, DurationS: s.Duration.Seconds(), MeanE2ELMs: s.E2EL.Mean}
	if in.Throughput {
		regimeIn.Benchmark = BenchmarkThroughput
	}
	if in.Arrivals.RampUp != "" {
		regimeIn.RequestRate = (in.Arrivals.RampStart + in.Arrivals.RampEnd) / 2
	}
	if s.Completed > 0 {
		regimeIn.InputLen = float64(s.TotalInput) / float64(s.Completed)
		regimeIn.OutputLen = float64(s.TotalOutput) / float64(s.Completed)
	}
	regime, _ := ClassifyRegime(regimeIn)
	return e.ExpectedRows(in.GPU, regime)
}
