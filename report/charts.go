package report

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/servebench/servebench/metrics"
)

// loadCharts draws, per latency metric and facet, every statistic of every
// setup against load. A point is one run, or the mean of one sweep point's
// repeats; runs that differ in any key are never averaged.
func loadCharts(results []LoadedResult, l *chartLayout) []ChartSpec {
	xSet := map[float64]bool{}
	for _, p := range l.places {
		if p.xOK {
			xSet[p.x] = true
		}
	}
	// One load is a dot per statistic, not a curve: the table says it
	// better, and a chart of lone dots reads as an empty one.
	if len(xSet) < 2 {
		return nil
	}
	percentiles := discoverPercentiles(results)
	points := l.loadPoints()
	var charts []ChartSpec
	for _, m := range latencyMetrics {
		stats := []loadStat{{"mean_" + m.key + "_ms", "mean"}, {"median_" + m.key + "_ms", "median"}}
		for _, p := range percentiles[m.key] {
			stats = append(stats, loadStat{"p" + strconv.FormatFloat(p, 'f', -1, 64) + "_" + m.key + "_ms", PercentileLabel(p)})
		}
		for fi := range l.facets {
			if c, ok := l.loadChart(results, points[fi], fi, m.key, m.abbrev, stats); ok {
				charts = append(charts, c)
			}
		}
	}
	return charts
}

type loadStat struct{ key, label string }

// loadPoint is one point of a setup's curve: one run, or one sweep
// point's repeats.
type loadPoint struct {
	x    float64
	runs []int
}

// loadPoints groups runs per facet and identity into points in x order.
func (l *chartLayout) loadPoints() []map[int][]loadPoint {
	out := make([]map[int][]loadPoint, len(l.facets))
	for i := range out {
		out[i] = map[int][]loadPoint{}
	}
	index := map[string]int{}
	for i, p := range l.places {
		if !p.xOK {
			continue
		}
		key := fmt.Sprintf("%d\x00%d\x00%s", p.facet, p.identity, p.point)
		pts := out[p.facet][p.identity]
		if k, ok := index[key]; ok {
			pts[k].runs = append(pts[k].runs, i)
			continue
		}
		index[key] = len(pts)
		out[p.facet][p.identity] = append(pts, loadPoint{runs: []int{i}})
	}
	for _, byIdentity := range out {
		for id, pts := range byIdentity {
			for k := range pts {
				sum := 0.0
				for _, i := range pts[k].runs {
					sum += l.places[i].x
				}
				pts[k].x = sum / float64(len(pts[k].runs))
			}
			slices.SortStableFunc(pts, func(a, b loadPoint) int { return cmp.Compare(a.x, b.x) })
			byIdentity[id] = pts
		}
	}
	return out
}

func (l *chartLayout) facetSuffix(fi int) string {
	if len(l.facets) == 1 {
		return ""
	}
	return fmt.Sprintf("-f%d", fi+1)
}

func (l *chartLayout) facetTitle(title string, fi int) string {
	if f := l.facets[fi].label; f != "" {
		return title + " · " + f
	}
	return title
}

// loadChart is one metric's curves in one facet: a colour per setup, a
// line style per statistic.
func (l *chartLayout) loadChart(results []LoadedResult, points map[int][]loadPoint, fi int, key, abbrev string, stats []loadStat) (ChartSpec, bool) {
	ids := make([]int, 0, len(points))
	for id := range points {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	xs := loadSlots(ids, points)
	chart := ChartSpec{
		ID:      "load-" + key + l.facetSuffix(fi),
		Section: "load",
		Title:   l.facetTitle(abbrev+" vs load", fi),
		Facet:   l.facets[fi].label,
		XLabel:  l.xLabel,
		YLabel:  abbrev + " (ms)",
		XKind:   "num",
		Kind:    "lines",
		X:       xs,
	}
	single := len(l.identities) == 1
	used := make([]bool, len(stats))
	for _, id := range ids {
		for k, st := range stats {
			values := loadValues(results, points[id], xs, st.key)
			if !anyNonZero(values) {
				continue
			}
			s := SeriesSpec{Label: st.label, Color: l.identities[id].color, Dash: lineDashes[k%len(lineDashes)], Values: values, Setup: l.identities[id].label, Style: k}
			if label := l.identities[id].label; label != "" {
				s.Label = label + " " + st.label
			}
			if single {
				s.Color = paletteColor(k)
			}
			chart.Series = append(chart.Series, s)
			used[k] = true
		}
	}
	column := make([]int, len(stats))
	for k, st := range stats {
		if used[k] {
			column[k] = len(chart.Styles)
			chart.Styles = append(chart.Styles, StyleSpec{Label: st.label, Dash: lineDashes[k%len(lineDashes)]})
		}
	}
	for i := range chart.Series {
		chart.Series[i].Style = column[chart.Series[i].Style]
	}
	return chart, len(chart.Series) > 0
}

// loadSlots is a load chart's x axis: each load once, and a load twice
// where one setup has two points at it (two loads that reached the same
// throughput), so that neither is lost.
func loadSlots(ids []int, points map[int][]loadPoint) []float64 {
	slots := map[float64]int{}
	for _, id := range ids {
		at := map[float64]int{}
		for _, p := range points[id] {
			at[p.x]++
			slots[p.x] = max(slots[p.x], at[p.x])
		}
	}
	var xs []float64
	for x, n := range slots {
		for range n {
			xs = append(xs, x)
		}
	}
	slices.Sort(xs)
	return xs
}

// loadValues is one setup's curve of the metric key on the slots xs: at
// each of its points the mean over the point's runs, NaN where it has none.
func loadValues(results []LoadedResult, points []loadPoint, xs []float64, key string) jsonFloats {
	values := make(jsonFloats, len(xs))
	for i := range values {
		values[i] = math.NaN()
	}
	at := map[float64]int{}
	for _, p := range points {
		slot, _ := slices.BinarySearch(xs, p.x)
		slot += at[p.x]
		at[p.x]++
		sum, n := 0.0, 0
		for _, i := range p.runs {
			if y, ok := results[i].Number(key); ok && isFiniteNumber(y) {
				sum += y
				n++
			}
		}
		if n > 0 {
			values[slot] = sum / float64(n)
		}
	}
	return values
}

func seriesLabel(name string) string {
	if name == "" {
		return "files"
	}
	return name
}

// order lists the runs by facet, setup and load: the order of their
// distribution lines, timelines and server-metric charts.
func (l *chartLayout) order() []int {
	idx := make([]int, len(l.places))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int {
		pa, pb := l.places[a], l.places[b]
		return cmp.Or(cmp.Compare(pa.facet, pb.facet), cmp.Compare(pa.identity, pb.identity), compareValues(pa.load, pb.load))
	})
	return idx
}

// notes say what the charts did that a reader could not see: averaged
// repeats, and runs kept apart only by their labels.
func (l *chartLayout) notes() []string {
	var out []string
	if l.repeats > 0 {
		out = append(out, fmt.Sprintf("Load curves average the repeated runs (sweep --repeat) of %d sweep point(s); the table, distributions and timelines show every run.", l.repeats))
	}
	if n := len(l.sharedLoad); n > 0 {
		names := l.sharedLoad
		more := ""
		if len(names) > 6 {
			names, more = names[:6], fmt.Sprintf(" and %d more", n-6)
		}
		out = append(out, fmt.Sprintf("%d run(s) share a setup and a load with another run as far as their files tell, so each is drawn as a line of its own, never averaged: %s%s. bench --metadata KEY=VALUE records what differs.", n, strings.Join(names, "; "), more))
	}
	return out
}

// distributionMetric is one latency whose per-request values a
// distribution chart draws.
type distributionMetric struct {
	key, abbrev string
	values      func([]RequestTiming) []float64
}

var distributionMetrics = []distributionMetric{
	{"ttft", "TTFT", func(ts []RequestTiming) []float64 {
		var out []float64
		for _, t := range ts {
			if t.Success {
				out = append(out, t.TTFT)
			}
		}
		return out
	}},
	{"tpot", "TPOT", func(ts []RequestTiming) []float64 {
		var out []float64
		for _, t := range ts {
			if v, ok := t.TPOT(); ok {
				out = append(out, v)
			}
		}
		return out
	}},
	{"itl", "ITL", func(ts []RequestTiming) []float64 {
		var out []float64
		for _, t := range ts {
			if t.Success {
				out = append(out, t.ITL...)
			}
		}
		return out
	}},
	{"e2el", "E2EL", func(ts []RequestTiming) []float64 {
		var out []float64
		for _, t := range ts {
			if t.Success {
				out = append(out, t.Latency)
			}
		}
		return out
	}},
}

// lineStyle is what a distribution's dash stands for: the run's load, and
// its repeat when a sweep point ran more than once.
type lineStyle struct {
	load   string
	repeat int
}

func (l *chartLayout) styleOf(r LoadedResult, p runPlace, repeated map[string]bool) lineStyle {
	s := lineStyle{load: p.load}
	if repeated[p.point] {
		s.repeat = r.Repeat
	}
	return s
}

func (l *chartLayout) styleLabel(s lineStyle) string {
	var parts []string
	if l.loadKey != nil && s.load != "" {
		parts = append(parts, l.loadKey.name+"="+s.load)
	}
	if s.repeat > 0 {
		parts = append(parts, fmt.Sprintf("run %d", s.repeat))
	}
	return strings.Join(parts, " ")
}

// distributionCharts draw every run's latency by percentile: per metric
// and facet, a colour per setup and a line style per load. A facet with
// more loads than there are line styles is split over several charts.
func distributionCharts(results []LoadedResult, timings [][]RequestTiming, l *chartLayout) []ChartSpec {
	d := newDistributionRuns(results, timings, l)
	order := l.order()
	var charts []ChartSpec
	for _, m := range distributionMetrics {
		for fi := range l.facets {
			runs, facetStyles := d.facetRuns(m, fi, order)
			chunks := (len(facetStyles) + len(lineDashes) - 1) / len(lineDashes)
			for c := range chunks {
				chunk := facetStyles[c*len(lineDashes) : min((c+1)*len(lineDashes), len(facetStyles))]
				if chart := d.chart(m, fi, runs, chunk, c, chunks); len(chart.Series) > 0 {
					charts = append(charts, chart)
				}
			}
		}
	}
	return charts
}

// distributionRuns is what every distribution chart of a report draws
// from: the runs, their timings and each run's line style.
type distributionRuns struct {
	l        *chartLayout
	results  []LoadedResult
	timings  [][]RequestTiming
	runStyle []lineStyle
	// styles are numbered across the whole report, so with one setup (one
	// colour per style) a load keeps its colour in every chart.
	styles []lineStyle
}

func newDistributionRuns(results []LoadedResult, timings [][]RequestTiming, l *chartLayout) *distributionRuns {
	counts := map[string]int{}
	for _, p := range l.places {
		counts[p.point]++
	}
	repeated := map[string]bool{}
	for k, n := range counts {
		repeated[k] = n > 1
	}
	d := &distributionRuns{l: l, results: results, timings: timings, runStyle: make([]lineStyle, len(l.places))}
	for i, p := range l.places {
		s := l.styleOf(results[i], p, repeated)
		d.runStyle[i] = s
		if !slices.Contains(d.styles, s) {
			d.styles = append(d.styles, s)
		}
	}
	slices.SortStableFunc(d.styles, compareLineStyles)
	return d
}

func compareLineStyles(a, b lineStyle) int {
	return cmp.Or(compareValues(a.load, b.load), cmp.Compare(a.repeat, b.repeat))
}

// facetRuns lists, in layout order, the runs of facet fi that have values
// of m, and the line styles they take.
func (d *distributionRuns) facetRuns(m distributionMetric, fi int, order []int) (runs []int, styles []lineStyle) {
	for _, i := range order {
		if d.l.places[i].facet != fi || len(m.values(d.timings[i])) == 0 {
			continue
		}
		runs = append(runs, i)
		if s := d.runStyle[i]; !slices.Contains(styles, s) {
			styles = append(styles, s)
		}
	}
	slices.SortStableFunc(styles, compareLineStyles)
	return runs, styles
}

// chart draws m in facet fi for the runs whose style is in chunk, part c
// of chunks.
func (d *distributionRuns) chart(m distributionMetric, fi int, runs []int, chunk []lineStyle, c, chunks int) ChartSpec {
	l := d.l
	chart := ChartSpec{
		ID:      "dist-" + m.key + l.facetSuffix(fi),
		Section: "distribution",
		Title:   l.facetTitle(m.abbrev+" distribution", fi),
		Facet:   l.facets[fi].label,
		XLabel:  "percentile",
		YLabel:  m.abbrev + " (ms)",
		XKind:   "pctlog",
		Kind:    "lines",
		X:       distributionLevels,
	}
	if chunks > 1 {
		chart.ID += fmt.Sprintf("-%d", c+1)
		chart.Title += fmt.Sprintf(" (%s to %s)", l.styleLabel(chunk[0]), l.styleLabel(chunk[len(chunk)-1]))
	}
	var lineRuns []int
	chart.Series, lineRuns = d.lines(m, runs, chunk)
	d.nameAlikeLinesByRun(chart.Series, lineRuns)
	for k, s := range chunk {
		chart.Styles = append(chart.Styles, StyleSpec{Label: l.styleLabel(s), Dash: lineDashes[k]})
	}
	return chart
}

// lines draws m's percentiles for each run whose style is in chunk, and
// returns which run each line is.
func (d *distributionRuns) lines(m distributionMetric, runs []int, chunk []lineStyle) (series []SeriesSpec, lineRuns []int) {
	l := d.l
	// A chart of one setup takes a colour per load as well as a
	// dash, numbered across the report so a load keeps its colour.
	setups := map[int]bool{}
	for _, i := range runs {
		if slices.Contains(chunk, d.runStyle[i]) {
			setups[l.places[i].identity] = true
		}
	}
	single := len(setups) == 1
	for _, i := range runs {
		style := d.runStyle[i]
		k := slices.Index(chunk, style)
		if k < 0 {
			continue
		}
		sorted := sortedFinite(m.values(d.timings[i]))
		values := make(jsonFloats, len(distributionLevels))
		for j, x := range distributionLevels {
			values[j] = metrics.Percentile(sorted, 100*(1-math.Pow(10, -x)))
		}
		id := l.identities[l.places[i].identity]
		s := SeriesSpec{Color: id.color, Dash: lineDashes[k], Values: values, Setup: id.label, Style: k}
		if single {
			s.Color = paletteColor(slices.Index(d.styles, style))
		}
		s.Label = joinNonEmpty(" · ", id.label, l.styleLabel(style))
		series = append(series, s)
		lineRuns = append(lineRuns, i)
	}
	return series, lineRuns
}

// nameAlikeLinesByRun names lines that the layout names alike, or not at
// all, by their runs.
func (d *distributionRuns) nameAlikeLinesByRun(series []SeriesSpec, lineRuns []int) {
	for a := range series {
		for b := range series {
			if a != b && (series[a].Label == series[b].Label || series[a].Label == "") {
				series[a].Label = d.results[lineRuns[a]].Label
				break
			}
		}
	}
	if len(series) == 1 && series[0].Label == "" {
		series[0].Label = d.results[lineRuns[0]].Label
	}
}

func joinNonEmpty(sep string, parts ...string) string {
	var kept []string
	for _, p := range parts {
		if p != "" {
			kept = append(kept, p)
		}
	}
	return strings.Join(kept, sep)
}
