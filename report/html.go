package report

import (
	"bytes"
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The chart library is uPlot (MIT, see assets/uPlot.LICENSE), embedded so
// the report is one file that opens offline.
var (
	//go:embed assets/uPlot.iife.min.js
	uplotJS string
	//go:embed assets/uPlot.min.css
	uplotCSS string
	//go:embed assets/report.js
	reportJS string
	//go:embed assets/report.css
	reportCSS string
	//go:embed assets/report.html.tmpl
	reportTemplateText string
)

var reportTemplate = template.Must(template.New("report").Parse(reportTemplateText))

// HTMLOptions shapes the HTML report.
type HTMLOptions struct {
	Title string
	// GroupBy is the table's group column and the x axis of the
	// latency-vs-load curves (see CompareOptions.GroupBy).
	GroupBy string
	Labels  []string
	// Generated is printed under the title; zero leaves it out, which
	// keeps golden files stable.
	Generated time.Time
	// MaxPoints bounds the points per per-request or over-time series
	// (default 2000); larger runs are downsampled.
	MaxPoints int
}

// HTMLReport is the data behind the page: the table and every chart,
// serialised into the page for the embedded script to draw.
type HTMLReport struct {
	Title     string        `json:"title"`
	Generated string        `json:"generated,omitempty"`
	Table     *CompareTable `json:"-"`
	Charts    []ChartSpec   `json:"charts"`
	// Notes explain what is missing (no per-request data, unreadable
	// records files) rather than failing the whole report.
	Notes []string `json:"notes"`
}

// ChartSpec is one chart. X is shared by every series; NaN values are gaps.
type ChartSpec struct {
	ID      string `json:"id"`
	Section string `json:"section"` // load, distribution, timeline, server
	Title   string `json:"title"`
	// Facet names the key values the chart is limited to
	// ("random-input-len=256"); empty when it shows every run.
	Facet   string       `json:"facet,omitempty"`
	XLabel  string       `json:"xLabel"`
	YLabel  string       `json:"yLabel"`
	Y2Label string       `json:"y2Label,omitempty"`
	XKind   string       `json:"xKind"` // "num", or "pctlog": x = -log10(1-q) drawn as percentiles
	Kind    string       `json:"kind"`  // "lines", or "gantt": one bar per request
	X       jsonFloats   `json:"x"`
	Series  []SeriesSpec `json:"series"`
	// Styles say what each line style stands for when the dashes of a
	// chart encode one thing: the statistic on load curves, the load on
	// distributions. The legend is then a table of setups by styles.
	Styles []StyleSpec `json:"styles,omitempty"`
	// Gantt holds, for kind "gantt", the first-token and end instants
	// parallel to X (the start instants); Series[0] is the request rank.
	Gantt *GanttSpec `json:"gantt,omitempty"`
}

// StyleSpec is one entry of a chart's line-style key.
type StyleSpec struct {
	Label string `json:"label"`
	Dash  []int  `json:"dash,omitempty"`
}

// SeriesSpec is one line of a chart.
type SeriesSpec struct {
	Label  string     `json:"label"`
	Color  string     `json:"color"`
	Dash   []int      `json:"dash,omitempty"`
	Axis   int        `json:"axis"` // 0 left, 1 right
	Values jsonFloats `json:"values"`
	// Setup and Style place the line in a chart's legend table when the
	// chart has Styles: a row per setup, a column per line style.
	Setup string `json:"setup,omitempty"`
	Style int    `json:"style"`
}

// GanttSpec is the per-request timeline: bars from start to first token
// (waiting and prefill) and from first token to end (decode).
type GanttSpec struct {
	FirstToken   jsonFloats `json:"firstToken"`
	End          jsonFloats `json:"end"`
	PrefillColor string     `json:"prefillColor"`
	DecodeColor  string     `json:"decodeColor"`
}

// jsonFloats marshals NaN and ±Inf as null (uPlot's gap) and trims
// digits the charts cannot show.
type jsonFloats []float64

func (f jsonFloats) MarshalJSON() ([]byte, error) {
	b := make([]byte, 0, 8*len(f)+2)
	b = append(b, '[')
	for i, v := range f {
		if i > 0 {
			b = append(b, ',')
		}
		if math.IsNaN(v) || math.IsInf(v, 0) {
			b = append(b, "null"...)
			continue
		}
		b = strconv.AppendFloat(b, v, 'g', 6, 64)
	}
	return append(b, ']'), nil
}

// palette is Tableau 10: distinct, colour-blind friendly enough, and
// matched exactly by the page's drawn-pixel check.
var palette = []string{"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"}

// BuildHTMLReport prepares every chart and the table for results.
func BuildHTMLReport(results []LoadedResult, opts HTMLOptions) (*HTMLReport, error) {
	if len(results) == 0 {
		return nil, fmt.Errorf("no results to report: pass result files or a run directory")
	}
	if opts.MaxPoints <= 0 {
		opts.MaxPoints = 2000
	}
	if opts.Title == "" {
		opts.Title = "servebench report"
	}
	results = slices.Clone(results)
	for i := range results {
		if i < len(opts.Labels) && opts.Labels[i] != "" {
			results[i].Label = opts.Labels[i]
		}
	}
	rep := &HTMLReport{
		Title: opts.Title,
		Table: NewCompareTable(results, CompareOptions{GroupBy: opts.GroupBy}),
	}
	if !opts.Generated.IsZero() {
		rep.Generated = opts.Generated.Format(time.RFC3339)
	}
	layout := newChartLayout(results, opts.GroupBy)
	rep.Charts = append(rep.Charts, loadCharts(results, layout)...)
	rep.Notes = append(rep.Notes, layout.notes()...)
	for _, r := range results {
		if r.Recovered {
			rep.Notes = append(rep.Notes, r.Label+": "+RecoveredNote+"; its numbers cover the requests it recorded.")
		}
	}

	// Every run gets its distribution lines, timeline and server metrics,
	// in the order of its facet, setup and load.
	order := layout.order()
	timings := make([][]RequestTiming, len(results))
	anyTimings := false
	for _, i := range order {
		t, err := results[i].Requests()
		if err != nil {
			rep.Notes = append(rep.Notes, fmt.Sprintf("%s: per-request data skipped: %v", results[i].Label, err))
			continue
		}
		timings[i] = t
		anyTimings = anyTimings || len(t) > 0
	}
	if anyTimings {
		rep.Charts = append(rep.Charts, distributionCharts(results, timings, layout)...)
		for _, i := range order {
			if c, ok := timelineChart(i, results[i], timings[i], opts.MaxPoints); ok {
				rep.Charts = append(rep.Charts, c)
			}
		}
	} else {
		rep.Notes = append(rep.Notes, "No per-request data: keep the .records.jsonl beside each result, or run with --save-detailed, to see distributions and timelines.")
	}
	for _, i := range order {
		if c, ok := serverMetricsChart(i, results[i], opts.MaxPoints); ok {
			rep.Charts = append(rep.Charts, c)
		}
	}
	return rep, nil
}

// WriteHTML writes the self-contained report page.
func WriteHTML(w io.Writer, results []LoadedResult, opts HTMLOptions) error {
	rep, err := BuildHTMLReport(results, opts)
	if err != nil {
		return err
	}
	return rep.Write(w)
}

// htmlTable is one block of the runs table.
type htmlTable struct {
	Caption string
	// Keys is how many leading columns name the run (label, group).
	Keys   int
	Header []string
	Rows   [][]string
}

// maxHTMLTableMetrics keeps each block of the runs table narrow enough for
// a laptop screen: a page that scrolls sideways hides the columns people
// compare.
const maxHTMLTableMetrics = 6

// tableBlocks splits the runs table into blocks that each repeat the label
// (and group) column: requests and throughput first, then the latency
// metrics, joined while a block stays within maxHTMLTableMetrics columns.
func (t *CompareTable) tableBlocks() []htmlTable {
	fixed := len(t.keyHeaders())
	type section struct {
		name string
		cols []int
	}
	var sections []section
	metricOf := func(key string) string {
		for _, m := range latencyMetrics {
			if strings.Contains(key, "_"+m.key+"_") || m.key == "e2el" && strings.Contains(key, "_e2e_latency_") {
				return m.abbrev
			}
		}
		return "Requests and throughput"
	}
	for i, c := range t.Columns {
		name := metricOf(c.Key)
		if len(sections) == 0 || sections[len(sections)-1].name != name {
			sections = append(sections, section{name: name})
		}
		sections[len(sections)-1].cols = append(sections[len(sections)-1].cols, i)
	}
	// Join neighbouring latency sections while they fit.
	var merged []section
	for _, sec := range sections {
		if n := len(merged); n > 0 && merged[n-1].name != "Requests and throughput" && sec.name != "Requests and throughput" &&
			len(merged[n-1].cols)+len(sec.cols) <= maxHTMLTableMetrics {
			merged[n-1].name += ", " + sec.name
			merged[n-1].cols = append(merged[n-1].cols, sec.cols...)
			continue
		}
		merged = append(merged, sec)
	}
	header := t.headers()
	rows := make([][]string, len(t.Rows))
	for i, r := range t.Rows {
		rows[i] = t.displayRow(r, true)
	}
	var blocks []htmlTable
	for _, sec := range merged {
		// Even chunks: 8 columns make 4+4, not 6+2.
		chunks := (len(sec.cols) + maxHTMLTableMetrics - 1) / maxHTMLTableMetrics
		size := (len(sec.cols) + chunks - 1) / chunks
		for start := 0; start < len(sec.cols); start += size {
			cols := sec.cols[start:min(start+size, len(sec.cols))]
			b := htmlTable{Caption: sec.name, Keys: fixed, Header: slices.Clone(header[:fixed])}
			for _, c := range cols {
				b.Header = append(b.Header, header[fixed+c])
			}
			for _, row := range rows {
				cells := slices.Clone(row[:fixed])
				for _, c := range cols {
					cells = append(cells, row[fixed+c])
				}
				b.Rows = append(b.Rows, cells)
			}
			blocks = append(blocks, b)
		}
	}
	return blocks
}

// Write renders the page.
func (rep *HTMLReport) Write(w io.Writer) error {
	data := struct {
		Report    *HTMLReport
		Tables    []htmlTable
		UPlotJS   template.JS
		UPlotCSS  template.CSS
		ReportJS  template.JS
		ReportCSS template.CSS
	}{rep, rep.Table.tableBlocks(), template.JS(uplotJS), template.CSS(uplotCSS), template.JS(reportJS), template.CSS(reportCSS)}
	var page bytes.Buffer
	if err := reportTemplate.Execute(&page, data); err != nil {
		return fmt.Errorf("rendering HTML report: %w", err)
	}
	_, err := w.Write(page.Bytes())
	return err
}

// loadAxis picks the x axis of latency-vs-load curves: the group key when
// it is numeric, else the configured request rate when it varies and is
// finite, else the achieved request throughput (always finite).
func loadAxis(results []LoadedResult, groupBy string) (key, label string) {
	if groupBy != "" {
		for _, r := range results {
			if v, ok := r.Number(groupBy); ok && isFiniteNumber(v) {
				return groupBy, groupBy
			}
		}
	}
	rates := map[float64]bool{}
	finite := true
	for _, r := range results {
		v, ok := r.Number("request_rate")
		if !ok || !isFiniteNumber(v) {
			finite = false
			break
		}
		rates[v] = true
	}
	if finite && len(rates) > 1 {
		return "request_rate", "Request rate (req/s)"
	}
	return "request_throughput", "Achieved request throughput (req/s)"
}

func isFiniteNumber(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// distributionLevels are the x positions of the latency-by-percentile
// curves: -log10(1-q) from 0 (p0) to 3 (p99.9), so the tail gets as much
// room as the body.
var distributionLevels = func() []float64 {
	const steps = 120
	xs := make([]float64, steps+1)
	for i := range xs {
		xs[i] = 3 * float64(i) / steps
	}
	return xs
}()

// timelineChart draws one bar per request: start → first token → end, in
// start order, keeping every k-th request when there are more than
// maxPoints so the page stays light.
func timelineChart(index int, r LoadedResult, timings []RequestTiming, maxPoints int) (ChartSpec, bool) {
	var ordered []RequestTiming
	for _, t := range timings {
		if isFiniteNumber(t.Start) && isFiniteNumber(t.Latency) {
			ordered = append(ordered, t)
		}
	}
	if len(ordered) == 0 {
		return ChartSpec{}, false
	}
	slices.SortStableFunc(ordered, func(a, b RequestTiming) int {
		switch {
		case a.Start < b.Start:
			return -1
		case a.Start > b.Start:
			return 1
		}
		return 0
	})
	stride := max(1, (len(ordered)+maxPoints-1)/maxPoints)
	var starts, ranks, firsts, ends jsonFloats
	for i := 0; i < len(ordered); i += stride {
		t := ordered[i]
		starts = append(starts, t.Start)
		ranks = append(ranks, float64(i))
		first := math.NaN()
		if t.Success {
			first = t.Start + t.TTFT/1e3
		}
		firsts = append(firsts, first)
		ends = append(ends, t.Start+t.Latency/1e3)
	}
	title := "Request timeline: " + r.Label
	if stride > 1 {
		title += fmt.Sprintf(" (every %d of %d requests)", stride, len(ordered))
	}
	return ChartSpec{
		ID:      fmt.Sprintf("timeline-%d", index),
		Section: "timeline",
		Title:   title,
		XLabel:  "time since first request (s)",
		YLabel:  "request (by start)",
		XKind:   "num",
		Kind:    "gantt",
		X:       starts,
		Series:  []SeriesSpec{{Label: "start", Color: "#555555", Values: ranks}},
		Gantt:   &GanttSpec{FirstToken: firsts, End: ends, PrefillColor: palette[1], DecodeColor: palette[0]},
	}, true
}

// serverMetricsChart draws servebench's scraped server_metrics.samples:
// running and waiting requests on the left axis, KV-cache usage and prefix
// hit rate in percent on the right (fractions ≤ 1 are scaled to percent).
// Sample times are seconds since the run started; epoch timestamps are
// rebased to the first sample.
func serverMetricsChart(index int, r LoadedResult, maxPoints int) (ChartSpec, bool) {
	sm, _ := r.Fields["server_metrics"].(map[string]any)
	samples, _ := sm["samples"].([]any)
	type column struct {
		key, label string
		axis       int
	}
	columns := []column{{"running", "running", 0}, {"waiting", "waiting", 0}, {"kv_cache_usage", "KV cache usage %", 1}, {"prefix_hit_rate", "prefix hit rate %", 1}}
	var ts []float64
	values := make([][]float64, len(columns))
	for _, s := range samples {
		obj, ok := s.(map[string]any)
		if !ok {
			continue
		}
		t, ok := anyToFloat(obj["t"])
		if !ok || !isFiniteNumber(t) {
			continue
		}
		ts = append(ts, t)
		for i, c := range columns {
			v, ok := anyToFloat(obj[c.key])
			if !ok {
				v = math.NaN()
			}
			values[i] = append(values[i], v)
		}
	}
	if len(ts) == 0 {
		return ChartSpec{}, false
	}
	if ts[0] > 1e6 {
		origin := ts[0]
		for i := range ts {
			ts[i] -= origin
		}
	}
	for i, c := range columns {
		if c.axis == 1 && allAtMostOne(values[i]) {
			for j := range values[i] {
				values[i][j] *= 100
			}
		}
	}
	keep := lttbIndices(ts, values[0], maxPoints)
	chart := ChartSpec{
		ID:      fmt.Sprintf("server-%d", index),
		Section: "server",
		Title:   "Server metrics: " + r.Label,
		XLabel:  "time since start (s)",
		YLabel:  "requests",
		Y2Label: "%",
		XKind:   "num",
		Kind:    "lines",
		X:       pickIndices(ts, keep),
	}
	for i, c := range columns {
		picked := pickIndices(values[i], keep)
		if !anyNonZero(picked) {
			continue
		}
		chart.Series = append(chart.Series, SeriesSpec{Label: c.label, Color: paletteColor(i), Axis: c.axis, Values: picked})
	}
	if len(chart.Series) == 0 {
		return ChartSpec{}, false
	}
	return chart, true
}

func allAtMostOne(xs []float64) bool {
	for _, x := range xs {
		if isFiniteNumber(x) && x > 1 {
			return false
		}
	}
	return true
}

// anyNonZero tells a series worth drawing: one with no finite value, or
// only zeros (a server that exports no such gauge, a metric a tool writes
// as 0 when it did not measure it), would draw an empty chart.
func anyNonZero(xs []float64) bool {
	return slices.ContainsFunc(xs, func(x float64) bool { return isFiniteNumber(x) && x != 0 })
}

func pickIndices(xs []float64, idx []int) jsonFloats {
	out := make(jsonFloats, len(idx))
	for i, k := range idx {
		out[i] = xs[k]
	}
	return out
}

// lttbIndices chooses at most threshold points of (xs, ys) by
// Largest-Triangle-Three-Buckets, which keeps a curve's peaks and troughs
// where a stride would miss them. NaN ys count as 0.
func lttbIndices(xs, ys []float64, threshold int) []int {
	n := len(xs)
	if threshold >= n || threshold < 3 {
		all := make([]int, n)
		for i := range all {
			all[i] = i
		}
		return all
	}
	y := func(i int) float64 {
		if !isFiniteNumber(ys[i]) {
			return 0
		}
		return ys[i]
	}
	out := make([]int, 0, threshold)
	out = append(out, 0)
	bucket := float64(n-2) / float64(threshold-2)
	a := 0
	for i := range threshold - 2 {
		lo := int(float64(i)*bucket) + 1
		hi := min(int(float64(i+1)*bucket)+1, n-1)
		nextLo, nextHi := hi, min(int(float64(i+2)*bucket)+1, n)
		var avgX, avgY float64
		for j := nextLo; j < nextHi; j++ {
			avgX += xs[j]
			avgY += y(j)
		}
		count := float64(max(nextHi-nextLo, 1))
		avgX /= count
		avgY /= count
		best, bestArea := lo, -1.0
		for j := lo; j < hi; j++ {
			area := math.Abs((xs[a]-avgX)*(y(j)-y(a)) - (xs[a]-xs[j])*(avgY-y(a)))
			if area > bestArea {
				best, bestArea = j, area
			}
		}
		out = append(out, best)
		a = best
	}
	return append(out, n-1)
}
