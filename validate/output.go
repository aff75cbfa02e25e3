package validate

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
)

// CommandLine is the run's `servebench sim` command, quoted for a POSIX
// shell.
func (r *Result) CommandLine() string {
	if len(r.Command) == 0 {
		return ""
	}
	parts := []string{"servebench", "sim"}
	for _, a := range r.Command {
		parts = append(parts, shellQuote(a))
	}
	return strings.Join(parts, " ")
}

func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(c rune) bool {
		return !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("-_./=:,+@%", c))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

type jsonMetric struct {
	Key       string   `json:"key"`
	Family    Family   `json:"family"`
	Published float64  `json:"published"`
	Sim       float64  `json:"sim"`
	ErrorPct  *float64 `json:"error_pct"`
}

type jsonSource struct {
	ID    string `json:"id"`
	Title string `json:"title"`
	URL   string `json:"url"`
	Ref   string `json:"ref"`
}

type jsonRun struct {
	ID          string       `json:"id"`
	File        string       `json:"file"`
	Source      *jsonSource  `json:"source"`
	Split       string       `json:"split"`
	Benchmark   string       `json:"benchmark"`
	GPU         string       `json:"gpu"`
	GPUClass    string       `json:"gpu_class"`
	Regime      Regime       `json:"regime"`
	VLLMVersion string       `json:"vllm_version"`
	ReleaseLine string       `json:"release_line"`
	Model       string       `json:"model"`
	Simulated   bool         `json:"simulated"`
	Unsimulable string       `json:"unsimulable_reason"`
	Command     string       `json:"command"`
	CommandArgs []string     `json:"command_args"`
	Notes       []string     `json:"notes"`
	Uncertain   []string     `json:"uncertain"`
	Metrics     []jsonMetric `json:"metrics"`
}

type jsonReport struct {
	Corpus         string    `json:"corpus"`
	Runs           []jsonRun `json:"runs"`
	Summaries      []Summary `json:"summaries"`
	CalibrateHints []Hint    `json:"calibrate_hints"`
}

// WriteJSON writes the report with stable keys: every run (setup,
// equivalent sim command, figures and signed errors in percent, or why it
// could not be simulated) and every split's summary.
func (rep *Report) WriteJSON(w io.Writer) error {
	out := jsonReport{Corpus: rep.Corpus, Runs: []jsonRun{}, Summaries: []Summary{}, CalibrateHints: rep.CalibrateHints()}
	if out.CalibrateHints == nil {
		out.CalibrateHints = []Hint{}
	}
	for _, r := range rep.Results {
		jr := jsonRun{ID: r.Run.FullID(), File: r.Run.File, Split: r.Run.Split, Benchmark: r.Run.Benchmark,
			GPU: r.GPU, GPUClass: r.GPUClass, Regime: r.Regime, VLLMVersion: r.Run.VLLMVersion,
			ReleaseLine: r.ReleaseLine, Model: r.Run.Model, Simulated: r.Simulated(), Unsimulable: r.Unsimulable,
			Command: r.CommandLine(), CommandArgs: nonNil(r.Command), Notes: nonNil(r.Notes),
			Uncertain: nonNil(r.Run.Uncertain), Metrics: []jsonMetric{}}
		if s := r.Run.Source; s != nil {
			jr.Source = &jsonSource{ID: s.ID, Title: s.Title, URL: s.URL, Ref: s.Ref}
		}
		for _, m := range r.Metrics {
			jm := jsonMetric{Key: m.Key, Family: m.Family, Published: m.Published, Sim: m.Sim}
			if !math.IsNaN(m.Error) {
				e := 100 * m.Error
				jm.ErrorPct = &e
			}
			jr.Metrics = append(jr.Metrics, jm)
		}
		out.Runs = append(out.Runs, jr)
	}
	for _, s := range rep.Splits() {
		out.Summaries = append(out.Summaries, rep.Summarize(s))
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// Find returns the result of the run with this id (<source>/<run>, or a
// result file's path).
func (rep *Report) Find(id string) (*Result, error) {
	for i := range rep.Results {
		if rep.Results[i].Run.FullID() == id {
			return &rep.Results[i], nil
		}
	}
	var near []string
	for _, r := range rep.Results {
		if strings.Contains(r.Run.FullID(), id) {
			near = append(near, r.Run.FullID())
		}
	}
	if len(near) > 0 {
		return nil, fmt.Errorf("no run %q; did you mean %s?", id, strings.Join(near, ", "))
	}
	return nil, fmt.Errorf("no run %q in the selected runs; servebench validate lists their ids", id)
}

// WriteExplain prints one run in full: its source, setup, what sim
// approximated, the command that reproduces its simulation, and every
// figure with its error.
func (r *Result) WriteExplain(w io.Writer) error {
	var b strings.Builder
	run := r.Run
	fmt.Fprintf(&b, "Run %s (%s)\n", run.FullID(), run.File)
	if s := run.Source; s != nil {
		fmt.Fprintf(&b, "Source: %s\n  %s\n  %s\n", s.Title, s.URL, s.Ref)
		if run.Ref != "" {
			fmt.Fprintf(&b, "  this run: %s\n", run.Ref)
		}
	}
	fmt.Fprintf(&b, "Setup: %s benchmark on %d× %s (class %s), %s, TP %d, PP %d, vLLM %s (%s line, engine %s), regime %s, split %s\n",
		run.Benchmark, run.GPUCount, r.GPU, r.GPUClass, run.Model, run.TensorParallel, run.PipelineParallel,
		run.VLLMVersion, r.ReleaseLine, run.Engine, r.Regime, run.Split)
	if len(run.ServerArgs) > 0 {
		fmt.Fprintf(&b, "Server flags: %s\n", strings.Join(run.ServerArgs, " "))
	}
	for _, u := range run.Uncertain {
		fmt.Fprintf(&b, "Uncertain: %s\n", u)
	}
	for _, n := range r.Notes {
		fmt.Fprintf(&b, "Approximated: %s\n", n)
	}
	if !r.Simulated() {
		fmt.Fprintf(&b, "Not simulable: %s\n", r.Unsimulable)
	}
	if cmd := r.CommandLine(); cmd != "" {
		fmt.Fprintf(&b, "Reproduce sim's prediction:\n  %s\n", cmd)
		if slices.ContainsFunc(r.Command, func(a string) bool { return strings.HasPrefix(a, builtinModelsDir) }) {
			fmt.Fprintf(&b, "  (run it from a servebench checkout: the files it names are in validate/corpus/)\n")
		}
	}
	if len(r.Metrics) > 0 {
		fmt.Fprintf(&b, "%-32s %14s %14s %9s\n", "Metric", "Published", "Sim", "Error")
		for _, m := range r.Metrics {
			fmt.Fprintf(&b, "%-32s %14s %14s %9s\n", m.Key, number(m.Published), number(m.Sim), signedPct(m.Error))
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}
