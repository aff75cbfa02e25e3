package report

import (
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// twoKeyDirs are the committed fixture: two setups, each swept over input
// length and request rate (see testdata/twokeys/README.md).
var twoKeyDirs = []string{filepath.Join("testdata", "twokeys", "colo1"), filepath.Join("testdata", "twokeys", "pdrdma")}

func loadOrFail(t *testing.T, paths ...string) []LoadedResult {
	t.Helper()
	results, err := LoadResults(paths...)
	if err != nil {
		t.Fatal(err)
	}
	return results
}

// statKey turns a load chart's style label (mean, median, P99) back into
// the result key it plots.
func statKey(metric, style string) string {
	switch style {
	case "mean", "median":
		return style + "_" + metric + "_ms"
	}
	return strings.ToLower(style) + "_" + metric + "_ms"
}

// facetMatches tells whether r has every "key=value" the chart's facet
// names.
func facetMatches(r LoadedResult, facet string) bool {
	if facet == "" {
		return true
	}
	for _, part := range strings.Split(facet, ", ") {
		k, v, _ := strings.Cut(part, "=")
		if got, _ := r.Text(k); got != v {
			return false
		}
	}
	return true
}

// pointValues are what a load-curve point may honestly be at x: one run's
// value, or the mean over the repeats of one sweep point.
func pointValues(results []LoadedResult, xKey, key, facet string, x float64) []float64 {
	groups := map[string][]float64{}
	for i, r := range results {
		rx, ok := r.Number(xKey)
		y, okY := r.Number(key)
		if !ok || !okY || rx != x || !facetMatches(r, facet) {
			continue
		}
		g := fmt.Sprint("run", i)
		if r.Repeat > 0 {
			g = r.Series + "\x00" + paramText(r.Params)
		}
		groups[g] = append(groups[g], y)
	}
	var out []float64
	for _, ys := range groups {
		sum := 0.0
		for _, y := range ys {
			sum += y
		}
		out = append(out, sum/float64(len(ys)))
	}
	return out
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }

// checkLoadPoints fails when a load chart draws a value no run (or no one
// point's repeats) measured, or leaves out a run.
func checkLoadPoints(t *testing.T, rep *HTMLReport, results []LoadedResult, xKey string) {
	t.Helper()
	drawn := map[string]int{} // run index / stat key → times its value was found
	for _, c := range rep.Charts {
		if c.Section != "load" {
			continue
		}
		metric := strings.Split(strings.TrimPrefix(c.ID, "load-"), "-")[0]
		for _, s := range c.Series {
			key := statKey(metric, c.Styles[s.Style].Label)
			for i, v := range s.Values {
				if !isFiniteNumber(v) {
					continue
				}
				honest := pointValues(results, xKey, key, c.Facet, c.X[i])
				if !slices.ContainsFunc(honest, func(h float64) bool { return near(float64(v), h) }) {
					t.Errorf("%s %q at %s=%v is %v, which no run measured (runs there: %v)", c.ID, s.Label, xKey, c.X[i], v, honest)
				}
				for j, r := range results {
					if x, _ := r.Number(xKey); x == c.X[i] && facetMatches(r, c.Facet) {
						if y, ok := r.Number(key); ok && near(float64(v), y) {
							drawn[fmt.Sprint(j, "/", key)]++
						}
					}
				}
			}
		}
	}
	for j, r := range results {
		if r.Repeat > 0 {
			continue // a repeat's own value need not be drawn, its point's mean is
		}
		for _, key := range []string{"mean_ttft_ms", "median_tpot_ms", "p99_itl_ms"} {
			if y, ok := r.Number(key); ok && y != 0 && drawn[fmt.Sprint(j, "/", key)] == 0 {
				t.Errorf("run %q: its %s (%v) is on no load curve", r.Label, key, y)
			}
		}
	}
}

func TestLoadCurvesNeverAverageRunsThatDiffer(t *testing.T) {
	tests := []struct {
		name    string
		paths   func(t *testing.T) []string
		groupBy string
		xKey    string
		// charts counts the charts per latency metric (one per facet),
		// itlSeries the lines of one ITL chart.
		charts, itlSeries int
		note              string
		// lines are names some line of the ITL chart must have.
		lines []string
	}{
		{name: "two setups over two keys (the P/D example of docs/topologies.md): input length is a facet",
			paths: func(*testing.T) []string { return twoKeyDirs }, groupBy: "request_rate", xKey: "request_rate",
			charts: 2, itlSeries: 2 * 3},
		{name: "one setup over two keys: input length is a colour",
			paths: func(*testing.T) []string { return twoKeyDirs[:1] }, groupBy: "request_rate", xKey: "request_rate",
			charts: 1, itlSeries: 2 * 3},
		{name: "grouped by input length: request rate is a facet",
			paths: func(*testing.T) []string { return twoKeyDirs }, groupBy: "random-input-len", xKey: "random-input-len",
			charts: 3, itlSeries: 2 * 3},
		{name: "no group: the varying request rate is the x axis",
			paths: func(*testing.T) []string { return twoKeyDirs }, xKey: "request_rate",
			charts: 2, itlSeries: 2 * 3},
		{name: "loose files from two servers at the same rates are two lines",
			paths: func(t *testing.T) []string {
				dir := t.TempDir()
				var files []string
				for _, run := range []syntheticRun{
					{label: "server-a-4", rate: 4, capacity: 12, seed: 1}, {label: "server-a-8", rate: 8, capacity: 12, seed: 2},
					{label: "server-b-4", rate: 4, capacity: 6, seed: 3}, {label: "server-b-8", rate: 8, capacity: 6, seed: 4},
				} {
					run.requests, run.outputLen = 60, 12
					files = append(files, run.write(t, dir))
				}
				return files
			}, groupBy: "request_rate", xKey: "request_rate", charts: 1, itlSeries: 2 * 4, note: "never averaged",
			lines: []string{"server-a P99", "server-b P99"}},
		{name: "repeats of one sweep point are averaged, and the page says so",
			paths: func(t *testing.T) []string {
				dir := t.TempDir()
				sweepFixture{label: "rep", capacity: 10, repeat: 2, axes: []sweepAxis{{"request-rate", []string{"2", "6"}}}}.write(t, dir)
				return []string{dir}
			}, groupBy: "request_rate", xKey: "request_rate", charts: 1, itlSeries: 4, note: "average the repeated runs"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			results := loadOrFail(t, tt.paths(t)...)
			rep, err := BuildHTMLReport(results, HTMLOptions{GroupBy: tt.groupBy})
			if err != nil {
				t.Fatal(err)
			}
			checkLoadPoints(t, rep, results, tt.xKey)
			var itl []ChartSpec
			for _, c := range rep.Charts {
				if c.Section == "load" && strings.HasPrefix(c.ID, "load-itl") {
					itl = append(itl, c)
				}
			}
			if len(itl) != tt.charts {
				t.Fatalf("%d ITL-vs-load charts, want %d (one per facet)", len(itl), tt.charts)
			}
			for _, c := range itl {
				if len(c.Series) != tt.itlSeries {
					t.Errorf("%s has %d lines, want %d: %v", c.ID, len(c.Series), tt.itlSeries, seriesLabels(c))
				}
				for _, want := range tt.lines {
					if !slices.Contains(seriesLabels(c), want) {
						t.Errorf("%s has no line %q: %v", c.ID, want, seriesLabels(c))
					}
				}
			}
			notes := strings.Join(rep.Notes, "\n")
			if tt.note != "" && !strings.Contains(notes, tt.note) {
				t.Errorf("notes %q do not say %q", notes, tt.note)
			}
			if tt.note == "" && strings.Contains(notes, "average") {
				t.Errorf("notes speak of averaging runs that are no repeats: %q", notes)
			}
		})
	}
}

func seriesLabels(c ChartSpec) []string {
	var out []string
	for _, s := range c.Series {
		out = append(out, s.Label)
	}
	return out
}

// TestReadmeExampleKeepsBothInputLengths pins the numbers of the issue: at
// 24 req/s the colocated setup's P99 ITL is 11.96 ms at 256 input tokens
// and 36.12 ms at 1024; the chart must show both, never their mean.
func TestReadmeExampleKeepsBothInputLengths(t *testing.T) {
	rep, err := BuildHTMLReport(loadOrFail(t, twoKeyDirs...), HTMLOptions{GroupBy: "request_rate"})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{"random-input-len=256": 11.96, "random-input-len=1024": 36.12}
	for _, c := range rep.Charts {
		if !strings.HasPrefix(c.ID, "load-itl") {
			continue
		}
		at := slices.Index(c.X, 24)
		for _, s := range c.Series {
			if s.Setup != "colocated 1 GPU" || c.Styles[s.Style].Label != "P99" {
				continue
			}
			got := math.Round(float64(s.Values[at])*100) / 100
			if got != want[c.Facet] {
				t.Errorf("%s (%s): P99 ITL at 24 req/s = %v, want %v", c.ID, c.Facet, got, want[c.Facet])
			}
			delete(want, c.Facet)
		}
	}
	if len(want) > 0 {
		t.Errorf("no colocated P99 ITL line for %v", want)
	}
}

// TestEveryRunGetsItsDistributionTimelineAndServerMetrics: 24 runs, each
// with records and server metrics, give 24 lines in each distribution
// (split over charts when the loads outnumber the line styles), 24
// timelines and 24 server-metric charts, and no line shares both colour
// and dash with another line of its chart.
func TestEveryRunGetsItsDistributionTimelineAndServerMetrics(t *testing.T) {
	rates := []string{"1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "11", "12"}
	var dirs []string
	for i, label := range []string{"setup A", "setup B"} {
		dir := filepath.Join(t.TempDir(), fmt.Sprint("s", i))
		sweepFixture{label: label, capacity: float64(14 + 4*i), axes: []sweepAxis{{"request-rate", rates}}, detailed: true, server: true}.write(t, dir)
		dirs = append(dirs, dir)
	}
	results := loadOrFail(t, dirs...)
	rep, err := BuildHTMLReport(results, HTMLOptions{GroupBy: "request_rate", MaxPoints: 50})
	if err != nil {
		t.Fatal(err)
	}
	lines := map[string]int{}
	sections := map[string]int{}
	for _, c := range rep.Charts {
		sections[c.Section]++
		if c.Section != "distribution" {
			continue
		}
		metric := strings.Split(c.ID, "-")[1]
		lines[metric] += len(c.Series)
		styles := map[string]bool{}
		labels := map[string]bool{}
		for _, s := range c.Series {
			style := s.Color + fmt.Sprint(s.Dash)
			if styles[style] {
				t.Errorf("%s: two lines drawn %s", c.ID, style)
			}
			styles[style] = true
			if labels[s.Label] {
				t.Errorf("%s: two lines named %q", c.ID, s.Label)
			}
			labels[s.Label] = true
			if !slices.ContainsFunc(c.Styles, func(st StyleSpec) bool { return slices.Equal(st.Dash, s.Dash) }) {
				t.Errorf("%s: line %q has a dash %v its style key does not explain", c.ID, s.Label, s.Dash)
			}
		}
		if len(c.Series) > 2*len(lineDashes) {
			t.Errorf("%s crowds %d lines", c.ID, len(c.Series))
		}
	}
	for _, m := range []string{"ttft", "tpot", "itl", "e2el"} {
		if lines[m] != len(results) {
			t.Errorf("%s distributions draw %d lines, want one per run (%d)", m, lines[m], len(results))
		}
	}
	if sections["timeline"] != len(results) || sections["server"] != len(results) {
		t.Errorf("%d timelines and %d server-metric charts, want %d each", sections["timeline"], sections["server"], len(results))
	}
	for _, n := range rep.Notes {
		if strings.Contains(n, "first") {
			t.Errorf("note %q: every run must be shown", n)
		}
	}
}

// TestLoadChartsSayWhichDashIsWhichStatistic: every load chart's style
// key names each statistic once, with its own dash, and every line uses
// the dash of its statistic and names its setup.
func TestLoadChartsSayWhichDashIsWhichStatistic(t *testing.T) {
	rep, err := BuildHTMLReport(loadOrFail(t, twoKeyDirs...), HTMLOptions{GroupBy: "request_rate"})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range rep.Charts {
		if c.Section != "load" {
			continue
		}
		var labels []string
		dashes := map[string]bool{}
		for _, st := range c.Styles {
			labels = append(labels, st.Label)
			dashes[fmt.Sprint(st.Dash)] = true
		}
		if strings.Join(labels, ",") != "mean,median,P99" || len(dashes) != 3 {
			t.Errorf("%s style key %v", c.ID, c.Styles)
		}
		for _, s := range c.Series {
			if !slices.Equal(s.Dash, c.Styles[s.Style].Dash) || s.Setup == "" || !strings.HasPrefix(s.Label, s.Setup) {
				t.Errorf("%s line %q (setup %q) dash %v, style %v", c.ID, s.Label, s.Setup, s.Dash, c.Styles[s.Style])
			}
		}
	}
}

func TestDifferingKeys(t *testing.T) {
	run := func(series string, fields map[string]any, params ...Param) LoadedResult {
		return LoadedResult{Series: series, Fields: fields, Params: params}
	}
	tests := []struct {
		name    string
		results []LoadedResult
		exclude []string
		want    string
	}{
		{"swept flags in axis order",
			[]LoadedResult{
				run("a", nil, Param{"random-input-len", "256"}, Param{"request-rate", "4"}),
				run("a", nil, Param{"random-input-len", "1024"}, Param{"request-rate", "12"}),
			}, nil, "random-input-len request-rate"},
		{"a key that only tells two sweeps apart is their series",
			[]LoadedResult{
				run("a", map[string]any{"metadata": map[string]any{"gpus": "1"}}, Param{"request-rate", "4"}),
				run("a", map[string]any{"metadata": map[string]any{"gpus": "1"}}, Param{"request-rate", "8"}),
				run("b", map[string]any{"metadata": map[string]any{"gpus": "2"}}, Param{"request-rate", "4"}),
			}, nil, "request-rate"},
		{"loose files: settings and metadata, but not a key one file lacks",
			[]LoadedResult{
				run("", map[string]any{"request_rate": 4, "burstiness": 1, "model_id": "a", "metadata": map[string]any{"gpus": "1", "label": "x"}}),
				run("", map[string]any{"request_rate": 4, "model_id": "b", "metadata": map[string]any{"gpus": "2", "label": "y"}}),
			}, nil, "model_id gpus"},
		{"the x axis is left out",
			[]LoadedResult{run("", map[string]any{"request_rate": 4}), run("", map[string]any{"request_rate": 8})},
			[]string{"request_rate"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, k := range differingKeys(tt.results, tt.exclude...) {
				got = append(got, k.name)
			}
			if strings.Join(got, " ") != tt.want {
				t.Errorf("differing keys %q, want %q", strings.Join(got, " "), tt.want)
			}
		})
	}
}

func TestCompareValuesSortsNumbersNumerically(t *testing.T) {
	values := []string{"20", "", "inf", "10", "b", "4", "a", "14"}
	slices.SortFunc(values, compareValues)
	if got := strings.Join(values, ","); got != "4,10,14,20,inf,a,b," {
		t.Errorf("sorted %s", got)
	}
}

func TestPaletteGivesEveryIdentityItsOwnColour(t *testing.T) {
	seen := map[string]int{}
	for i := range 40 {
		c := paletteColor(i)
		if len(c) != 7 || c[0] != '#' {
			t.Fatalf("colour %d is %q", i, c)
		}
		if j, ok := seen[c]; ok {
			t.Errorf("colours %d and %d are both %s", j, i, c)
		}
		seen[c] = i
	}
}
