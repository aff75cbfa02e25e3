package validate

import (
	"bytes"
	"strings"
	"testing"
)

// TestSummaryBySource: each publication's simulated runs make one row,
// in its name's order, a user's result files one row each, unsimulable
// runs none; and the text report prints the rows under "By source".
func TestSummaryBySource(t *testing.T) {
	labA, labB := &Source{ID: "lab-a"}, &Source{ID: "lab-b"}
	tpot := func(err float64) []Metric {
		return []Metric{{Key: "mean_tpot_ms", Family: FamilyTPOT, Published: 100, Sim: 100 * (1 + err), Error: err}}
	}
	rep := &Report{Results: []Result{
		{Run: &Run{ID: "r1", Source: labB, Split: SplitHoldout}, Metrics: tpot(-0.40)},
		{Run: &Run{ID: "r2", Source: labB, Split: SplitHoldout}, Metrics: tpot(-0.20)},
		{Run: &Run{ID: "r3", Source: labA, Split: SplitHoldout}, Metrics: tpot(0.05)},
		{Run: &Run{ID: "r4", Source: labA, Split: SplitHoldout}, Unsimulable: "unknown GPU"},
		{Run: &Run{ID: "r5", Source: labA, Split: SplitFit}, Metrics: tpot(0.90)},
		{Run: &Run{ID: "mine.json", File: "mine.json", Split: SplitUser}, Metrics: tpot(0.10)},
	}}
	tests := []struct {
		split string
		want  []Cell // Source, Runs, and the TPOT median |error| in percent
	}{
		{SplitHoldout, []Cell{{Source: "lab-a", Runs: 1}, {Source: "lab-b", Runs: 2}}},
		{SplitFit, []Cell{{Source: "lab-a", Runs: 1}}},
		{SplitUser, []Cell{{Source: "mine.json", Runs: 1}}},
	}
	wantTPOT := map[string]map[string]float64{
		SplitHoldout: {"lab-a": 5, "lab-b": 30},
		SplitFit:     {"lab-a": 90},
		SplitUser:    {"mine.json": 10},
	}
	for _, tt := range tests {
		t.Run(tt.split, func(t *testing.T) {
			got := rep.Summarize(tt.split).BySource
			if len(got) != len(tt.want) {
				t.Fatalf("by source %+v, want %d rows", got, len(tt.want))
			}
			for i, w := range tt.want {
				g := got[i]
				if g.Source != w.Source || g.Runs != w.Runs {
					t.Errorf("row %d: %s with %d runs, want %s with %d", i, g.Source, g.Runs, w.Source, w.Runs)
				}
				if st := g.Families[FamilyTPOT]; !near(st.MedianAbs, wantTPOT[tt.split][g.Source]) {
					t.Errorf("%s: TPOT median |error| %.2f%%, want %.2f%%", g.Source, st.MedianAbs, wantTPOT[tt.split][g.Source])
				}
			}
		})
	}
	var b bytes.Buffer
	if err := rep.WriteText(&b, TextOptions{SummaryOnly: true}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "By source\n  lab-a ") || !strings.Contains(b.String(), "\n  mine.json ") {
		t.Errorf("text report lacks the by-source rows:\n%s", b.String())
	}
}

func near(a, b float64) bool { return a-b < 1e-9 && b-a < 1e-9 }
