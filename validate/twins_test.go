package validate

import (
	"bytes"
	"maps"
	"slices"
	"strings"
	"testing"
)

// TestTwinsSpread: runs with the same sim command form a group; each
// published figure is measured against its group's median, sim's error on
// the same figures beside it. A run alone, a figure published under
// another key than its twin's, and a family no twin shares add nothing.
func TestTwinsSpread(t *testing.T) {
	ttft := func(pub, sim float64) Metric {
		return Metric{Key: "mean_ttft_ms", Family: FamilyTTFT, Published: pub, Sim: sim, Error: sim/pub - 1}
	}
	run := func(id string, cmd string, m ...Metric) Result {
		return Result{Run: &Run{ID: id, Split: SplitHoldout}, Command: strings.Fields(cmd), Metrics: m}
	}
	rep := &Report{Results: []Result{
		// Medians 150 (pair) and 100 (trio).
		run("a1", "sim --model x --rate 1", ttft(100, 120)),
		run("a2", "sim --model x --rate 1", ttft(200, 120)),
		run("b1", "sim --model x --rate 2", ttft(50, 50)),
		run("b2", "sim --model x --rate 2", ttft(100, 50)),
		run("b3", "sim --model x --rate 2", ttft(125, 50)),
		run("alone", "sim --model x --rate 3", ttft(10, 30)),
		// The same command, a median TTFT beside the others' mean: not
		// comparable, so c's group has one figure and no spread.
		run("c1", "sim --model y", ttft(10, 10)),
		run("c2", "sim --model y", Metric{Key: "median_ttft_ms", Family: FamilyTTFT, Published: 40, Sim: 10, Error: -0.75}),
	}}
	tw := rep.Summarize(SplitHoldout).Twins
	if tw.Groups != 3 || tw.Runs != 7 {
		t.Fatalf("twins: %d groups of %d runs, want 3 groups of 7 runs", tw.Groups, tw.Runs)
	}
	// Spread: a1 +50%, a2 −25%, b1 +100%, b2 0, b3 −20%.
	spread := tw.Spread.Families[FamilyTTFT]
	if spread.Runs != 5 || !near(spread.MedianAbs, 25) || !near(spread.WorstAbs, 100) || !near(spread.MedianSigned, 0) {
		t.Errorf("TTFT spread %+v, want 5 figures, median |25%%|, worst 100%%, signed median 0", spread)
	}
	// Sim: a1 +20%, a2 −40%, b1 0, b2 −50%, b3 −60%.
	sim := tw.Sim.Families[FamilyTTFT]
	if sim.Runs != 5 || !near(sim.MedianAbs, 40) || !near(sim.WorstAbs, 60) {
		t.Errorf("sim on the twins %+v, want 5 figures, median |40%%|, worst 60%%", sim)
	}
	if got := len(tw.Spread.Families); got != 1 {
		t.Errorf("spread families %v, want TTFT only", slices.Collect(maps.Keys(tw.Spread.Families)))
	}
	var b bytes.Buffer
	if err := rep.WriteText(&b, TextOptions{SummaryOnly: true}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Runs sim cannot tell apart (one sim command, differing published figures): 7 runs in 3 groups",
		"  Spread: each from its group's median", "  Sim on the same runs"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("text report lacks %q:\n%s", want, b.String())
		}
	}
}

// TestCorpusTwinsGetOneSimulation: the built-in corpus' twins (the same
// sim command) get the same figures from sim, which is what makes their
// spread a floor for any model of the runs' setups.
func TestCorpusTwinsGetOneSimulation(t *testing.T) {
	if testing.Short() {
		t.Skip("a numeric study of the whole corpus (about 8 s, 100 s under -race); run without -short")
	}
	rep, err := builtinReport()
	if err != nil {
		t.Fatal(err)
	}
	first := map[string]*Result{}
	twins := 0
	for i := range rep.Results {
		r := &rep.Results[i]
		if !r.Simulated() {
			continue
		}
		k := twinKey(r)
		f, ok := first[k]
		if !ok {
			first[k] = r
			continue
		}
		twins++
		if !maps.Equal(f.Sim, r.Sim) {
			t.Errorf("%s and %s share a sim command but not sim's figures", f.Run.FullID(), r.Run.FullID())
		}
	}
	if twins == 0 {
		t.Error("the built-in corpus has no twins; this test checks nothing")
	}
}
