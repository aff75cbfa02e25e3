package validate

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"strings"
)

// TextOptions shape the text report.
type TextOptions struct {
	// SummaryOnly leaves out the per-run lines: the tables alone (the
	// fidelity page, docs/fidelity.md).
	SummaryOnly bool
}

// WriteText prints every run's published figures, sim's and the signed
// error, the runs sim could not simulate with their reasons, then per
// split (holdout first, fit apart, a user's own runs apart) the median and
// worst absolute error per metric family, overall and by GPU class, regime,
// release line and their combinations, and by source, then the spread of
// the runs sim cannot tell apart (Twins).
func (rep *Report) WriteText(w io.Writer, o TextOptions) error {
	var b bytes.Buffer
	rep.writeHeader(&b)
	if !o.SummaryOnly {
		rep.writeRuns(&b)
	}
	rep.writeUnsimulable(&b, o.SummaryOnly)
	for _, split := range rep.Splits() {
		writeSummary(&b, rep.Summarize(split))
	}
	for _, h := range rep.CalibrateHints() {
		fmt.Fprintf(&b, "\n%s\n  %s\n", h.Reason, h.Command)
	}
	_, err := w.Write(b.Bytes())
	return err
}

func (rep *Report) writeHeader(b *bytes.Buffer) {
	sim, splits := 0, map[string]int{}
	for _, r := range rep.Results {
		if r.Simulated() {
			sim++
		}
		splits[r.Run.Split]++
	}
	from := "the " + rep.Corpus + " corpus"
	if rep.Corpus == "" {
		from = "result files"
	}
	var parts []string
	for _, s := range []string{SplitHoldout, SplitFit, SplitUser} {
		if splits[s] > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", s, splits[s]))
		}
	}
	fmt.Fprintf(b, "servebench validate: %s from %s (%s): %d simulated, %d not simulable\n",
		plural(len(rep.Results), "run"), from, strings.Join(parts, ", "), sim, len(rep.Results)-sim)
}

func (rep *Report) writeRuns(b *bytes.Buffer) {
	fmt.Fprintf(b, "\n%-34s %14s %14s %9s\n", "Run / metric", "Published", "Sim", "Error")
	for _, r := range rep.Results {
		if !r.Simulated() {
			continue
		}
		fmt.Fprintf(b, "%s  [%s · %s · vLLM %s · %s]\n", r.Run.FullID(), r.GPU, r.Regime, r.Run.VLLMVersion, r.Run.Split)
		for _, m := range r.Metrics {
			fmt.Fprintf(b, "  %-32s %14s %14s %9s\n", m.Key, number(m.Published), number(m.Sim), signedPct(m.Error))
		}
	}
}

func (rep *Report) writeUnsimulable(b *bytes.Buffer, countOnly bool) {
	var lines []string
	for _, r := range rep.Results {
		if !r.Simulated() {
			lines = append(lines, fmt.Sprintf("  %s: %s", r.Run.FullID(), r.Unsimulable))
		}
	}
	if len(lines) == 0 {
		return
	}
	fmt.Fprintf(b, "\nNot simulable: %s (counted, not in the error tables)\n", plural(len(lines), "run"))
	if !countOnly {
		b.WriteString(strings.Join(lines, "\n") + "\n")
	}
}

var splitTitles = map[string]string{
	SplitHoldout: "Holdout runs (the headline: no parameter was fitted or chosen on them)",
	SplitFit:     "Fit runs (used to fit or choose parameters: shown apart, not a measure of fidelity)",
	SplitUser:    "Your runs",
}

// writeSummary prints one split's tables: "median / worst (runs)" per
// family.
func writeSummary(b *bytes.Buffer, s Summary) {
	fmt.Fprintf(b, "\n%s: %s, %d simulated\n", splitTitles[s.Split], plural(s.Runs, "run"), s.Simulated)
	head := fmt.Sprintf("%-40s", "Absolute error: median / worst (runs)")
	for _, f := range Families() {
		head += fmt.Sprintf(" %-18s", f.Title())
	}
	b.WriteString(strings.TrimRight(head, " ") + "\n")
	row := func(label string, c Cell) {
		line := fmt.Sprintf("%-40s", label)
		for _, f := range Families() {
			text := "-"
			if st, ok := c.Families[f]; ok {
				text = fmt.Sprintf("%s / %s (%d)", pct(st.MedianAbs), pct(st.WorstAbs), st.Runs)
			}
			line += fmt.Sprintf(" %-18s", text)
		}
		b.WriteString(strings.TrimRight(line, " ") + "\n")
	}
	row("All", s.Overall)
	section := func(title string, cells []Cell, label func(Cell) string) {
		if len(cells) == 0 {
			return
		}
		fmt.Fprintf(b, "%s\n", title)
		for _, c := range cells {
			row("  "+label(c), c)
		}
	}
	section("By GPU class", s.ByGPUClass, func(c Cell) string { return c.GPUClass })
	section("By regime", s.ByRegime, func(c Cell) string { return c.Regime })
	section("By release line", s.ByRelease, func(c Cell) string { return c.ReleaseLine })
	section("By GPU class × regime", s.ByGPUClassRegime, func(c Cell) string { return c.GPUClass + " · " + c.Regime })
	section("By GPU class × regime × release line", s.Cells, func(c Cell) string {
		return c.GPUClass + " · " + c.Regime + " · " + c.ReleaseLine
	})
	section("By source", s.BySource, func(c Cell) string { return c.Source })
	if tw := s.Twins; tw.Groups > 0 {
		fmt.Fprintf(b, "Runs sim cannot tell apart (one sim command, differing published figures): %s in %s\n",
			plural(tw.Runs, "run"), plural(tw.Groups, "group"))
		row("  Spread: each from its group's median", tw.Spread)
		row("  Sim on the same runs", tw.Sim)
	}
}

// pct prints an absolute error in percent: one decimal below 10%.
func pct(v float64) string {
	if v < 9.95 {
		return fmt.Sprintf("%.1f%%", v)
	}
	return fmt.Sprintf("%.0f%%", v)
}

func signedPct(e float64) string {
	if math.IsNaN(e) {
		return "n/a"
	}
	return fmt.Sprintf("%+.1f%%", 100*e)
}

func number(v float64) string {
	switch a := math.Abs(v); {
	case a >= 1e5:
		return fmt.Sprintf("%.0f", v)
	case a >= 100:
		return fmt.Sprintf("%.2f", v)
	default:
		return fmt.Sprintf("%.3f", v)
	}
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
