package report

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/servebench/servebench/internal/golden"
	"github.com/servebench/servebench/internal/tooltest"
)

// htmlFixture is two setups swept over request rate, one with per-request
// records and server metrics, plus the captured vLLM file.
func htmlFixture(t testing.TB) []LoadedResult {
	t.Helper()
	dir := t.TempDir()
	writeSweepFixture(t, filepath.Join(dir, "setupA"), "setup A", 10, []float64{2, 4, 6, 8, 9}, true)
	writeSweepFixture(t, filepath.Join(dir, "setupB"), "setup B", 14, []float64{2, 4, 6, 8, 9}, false)
	results, err := LoadResults(filepath.Join(dir, "setupA"), filepath.Join(dir, "setupB"), vllmCapture)
	if err != nil {
		t.Fatal(err)
	}
	return results
}

// chartOutline is what the golden file pins: which charts exist, their
// series and sizes, not every downsampled value.
func chartOutline(rep *HTMLReport) string {
	var b strings.Builder
	for _, c := range rep.Charts {
		fmt.Fprintf(&b, "%s [%s/%s] %q x=%q (%d points) y=%q", c.ID, c.Section, c.Kind, c.Title, c.XLabel, len(c.X), c.YLabel)
		if c.Y2Label != "" {
			fmt.Fprintf(&b, " y2=%q", c.Y2Label)
		}
		if c.Facet != "" {
			fmt.Fprintf(&b, " facet=%q", c.Facet)
		}
		b.WriteString("\n")
		if len(c.Styles) > 0 {
			b.WriteString("  styles:")
			for _, st := range c.Styles {
				fmt.Fprintf(&b, " %v=%s", st.Dash, st.Label)
			}
			b.WriteString("\n")
		}
		for _, s := range c.Series {
			fmt.Fprintf(&b, "  %s %s axis=%d dash=%v values=%d", s.Label, s.Color, s.Axis, s.Dash, len(s.Values))
			if s.Setup != "" || len(c.Styles) > 0 {
				fmt.Fprintf(&b, " cell=%q/%d", s.Setup, s.Style)
			}
			b.WriteString("\n")
		}
	}
	for _, n := range rep.Notes {
		fmt.Fprintf(&b, "note: %s\n", n)
	}
	return b.String()
}

func TestHTMLReportChartsGolden(t *testing.T) {
	tests := []struct {
		name, golden string
		results      func(t *testing.T) []LoadedResult
	}{
		{"two setups and a file over request rate", "charts.golden.txt", func(t *testing.T) []LoadedResult { return htmlFixture(t) }},
		{"two setups over input length and request rate", "charts-twokeys.golden.txt", func(t *testing.T) []LoadedResult { return loadOrFail(t, twoKeyDirs...) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rep, err := BuildHTMLReport(tt.results(t), HTMLOptions{GroupBy: "request_rate", MaxPoints: 150})
			if err != nil {
				t.Fatal(err)
			}
			golden.CheckFile(t, filepath.Join("testdata", "html", tt.golden), []byte(chartOutline(rep)))
		})
	}
}

func TestLoadCurveValuesComeFromTheResults(t *testing.T) {
	results := htmlFixture(t)
	rep, err := BuildHTMLReport(results, HTMLOptions{GroupBy: "request_rate"})
	if err != nil {
		t.Fatal(err)
	}
	var chart *ChartSpec
	for i := range rep.Charts {
		if rep.Charts[i].ID == "load-ttft" {
			chart = &rep.Charts[i]
		}
	}
	if chart == nil {
		t.Fatal("no TTFT-vs-load chart")
	}
	if got := fmt.Sprint([]float64(chart.X)); got != "[2 4 6 8 9]" {
		t.Fatalf("x = %s, want every request rate once", got)
	}
	for _, r := range results {
		x, _ := r.Number("request_rate")
		want, _ := r.Number("p99_ttft_ms")
		// A sweep's line is named by the sweep; a lone file's by its label.
		label := cmp.Or(r.Series, r.Label) + " P99"
		found := false
		for _, s := range chart.Series {
			for i, xv := range chart.X {
				if s.Label == label && xv == x {
					found = true
					if math.Abs(s.Values[i]-want) > 1e-9 {
						t.Errorf("%s at %v = %v, want %v", label, x, s.Values[i], want)
					}
				}
			}
		}
		if !found {
			t.Errorf("no %s point at x=%v", label, x)
		}
	}
}

func TestTimelineIsDownsampledInStartOrder(t *testing.T) {
	timings := make([]RequestTiming, 1000)
	for i := range timings {
		// Deliberately out of order.
		timings[i] = RequestTiming{Start: float64((i * 7919) % 1000), TTFT: 10, Latency: 50, Success: i%10 != 0, OutputLen: 5}
	}
	chart, ok := timelineChart(0, LoadedResult{Label: "run"}, timings, 100)
	if !ok {
		t.Fatal("no chart")
	}
	if len(chart.X) != 100 || len(chart.Gantt.End) != 100 {
		t.Fatalf("kept %d requests, want 100", len(chart.X))
	}
	for i := 1; i < len(chart.X); i++ {
		if chart.X[i] < chart.X[i-1] {
			t.Fatalf("starts not ascending at %d", i)
		}
	}
	if !strings.Contains(chart.Title, "every 10 of 1000") {
		t.Errorf("title %q does not say the run was downsampled", chart.Title)
	}
	for i := range chart.X {
		if got := chart.Gantt.End[i] - chart.X[i]; math.Abs(got-0.05) > 1e-9 {
			t.Fatalf("bar %d lasts %v s, want 0.05", i, got)
		}
	}
}

func TestLTTBKeepsEndsAndPeaks(t *testing.T) {
	n := 10000
	xs := make([]float64, n)
	ys := make([]float64, n)
	for i := range xs {
		xs[i] = float64(i)
		ys[i] = math.Sin(float64(i) / 500)
	}
	ys[4321] = 50 // a spike a stride would likely miss
	idx := lttbIndices(xs, ys, 200)
	if len(idx) != 200 || idx[0] != 0 || idx[len(idx)-1] != n-1 {
		t.Fatalf("got %d indices from %d to %d", len(idx), idx[0], idx[len(idx)-1])
	}
	spike := false
	for i, k := range idx {
		if i > 0 && k <= idx[i-1] {
			t.Fatalf("indices not increasing at %d", i)
		}
		spike = spike || k == 4321
	}
	if !spike {
		t.Error("LTTB dropped the spike")
	}
	if got := lttbIndices(xs[:5], ys[:5], 200); len(got) != 5 {
		t.Errorf("short series downsampled to %d", len(got))
	}
}

func TestServerMetricsScaledToPercent(t *testing.T) {
	r := LoadedResult{Label: "run", Fields: map[string]any{"server_metrics": map[string]any{"samples": []any{
		map[string]any{"t": json.Number("1700000000.5"), "running": json.Number("3"), "waiting": json.Number("0"), "kv_cache_usage": json.Number("0.5")},
		map[string]any{"t": json.Number("1700000001.5"), "running": json.Number("4"), "waiting": json.Number("1"), "kv_cache_usage": json.Number("0.75")},
		map[string]any{"t": "bad"},
	}}}}
	chart, ok := serverMetricsChart(0, r, 100)
	if !ok {
		t.Fatal("no chart")
	}
	if fmt.Sprint([]float64(chart.X)) != "[0 1]" {
		t.Errorf("epoch times not rebased: %v", chart.X)
	}
	for _, s := range chart.Series {
		if s.Label == "KV cache usage %" && fmt.Sprint([]float64(s.Values)) != "[50 75]" {
			t.Errorf("KV usage = %v, want percent", s.Values)
		}
		if s.Label == "prefix hit rate %" {
			t.Error("a metric absent from every sample got a series")
		}
	}
}

func TestHTMLIsSelfContainedAndEscapesLabels(t *testing.T) {
	results := htmlFixture(t)
	results[0].Label = `</script><script>alert(1)</script>`
	var page bytes.Buffer
	if err := WriteHTML(&page, results, HTMLOptions{Title: "a <b> title"}); err != nil {
		t.Fatal(err)
	}
	html := page.String()
	if strings.Count(html, "<script>") != 3 || strings.Contains(html, "<script>alert") {
		t.Error("a label broke out of its script or cell")
	}
	if !strings.Contains(html, "a &lt;b&gt; title") {
		t.Error("title not escaped")
	}
	if !strings.Contains(html, "uPlot") || !strings.Contains(html, ".u-legend") {
		t.Error("uPlot script or stylesheet not embedded")
	}
	if loads := regexp.MustCompile(`(?i)(src|href)\s*=\s*["']?(https?:)?//`).FindString(html); loads != "" {
		t.Errorf("page loads something from the network: %s", loads)
	}
}

func TestHTMLNotesMissingPerRequestData(t *testing.T) {
	results, err := LoadResults(vllmCapture)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := BuildHTMLReport(results, HTMLOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Notes) != 1 || !strings.Contains(rep.Notes[0], "--save-detailed") {
		t.Errorf("notes = %q", rep.Notes)
	}
	for _, c := range rep.Charts {
		if c.Section != "load" {
			t.Errorf("chart %s drawn without per-request data", c.ID)
		}
	}
	if _, err := BuildHTMLReport(nil, HTMLOptions{}); err == nil {
		t.Error("no results accepted")
	}
}

// chromium finds a headless-capable Chromium, or skips.
func chromium(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		// CI's -race pass: the pages' JavaScript is not Go; the full pass renders them.
		t.Skip("renders the pages in Chromium (tens of seconds); run without -short")
	}
	if p := os.Getenv("CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	tooltest.Missing(t, "Chromium not found (install the Debian package `chromium`, or set CHROMIUM=/path): skipping the rendered-report check")
	return ""
}

func chromiumArgs(profile string, extra ...string) []string {
	return append([]string{
		"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--hide-scrollbars", "--user-data-dir=" + profile,
	}, extra...)
}

// runChromium runs headless Chromium with a fresh profile per attempt
// (tooltest.Run repeats a crashed browser).
func runChromium(ctx context.Context, browser, profile string, combined bool, extra ...string) ([]byte, error) {
	return tooltest.Run(ctx, browser, combined, func(attempt int) []string {
		return chromiumArgs(fmt.Sprintf("%s-%d", profile, attempt), extra...)
	})
}

// renderedChart is what the page says about one drawn chart: data-*
// attributes of its box, read back from uPlot and the canvas.
type renderedChart map[string]string

var chartBox = regexp.MustCompile(`<div class="chart" id="([^"]+)"([^>]*)>`)
var dataAttr = regexp.MustCompile(`data-([a-z-]+)="([^"]*)"`)

func renderedCharts(dom []byte) map[string]renderedChart {
	out := map[string]renderedChart{}
	for _, m := range chartBox.FindAllSubmatch(dom, -1) {
		attrs := renderedChart{}
		for _, a := range dataAttr.FindAllSubmatch(m[2], -1) {
			attrs[string(a[1])] = string(a[2])
		}
		out[string(m[1])] = attrs
	}
	return out
}

func dashText(d []int) string {
	if len(d) == 0 {
		return "solid"
	}
	return strings.Trim(fmt.Sprint(d), "[]")
}

// checkRenderedCharts compares what the page drew with what the report
// asked for: every series and point (counted by the page from uPlot's
// data), each legend entry's dash, the style key of load charts, the
// legend's value under the cursor, and on timelines the first-token
// segment of every request visible on the canvas.
func checkRenderedCharts(t *testing.T, width int, dom []byte, rep *HTMLReport) {
	t.Helper()
	drawn := renderedCharts(dom)
	for _, c := range rep.Charts {
		got, ok := drawn[c.ID]
		if !ok {
			t.Errorf("width %d: chart %s not on the page", width, c.ID)
			continue
		}
		points := 0
		var dashes []string
		for _, s := range c.Series {
			dashes = append(dashes, dashText(s.Dash))
			for _, v := range s.Values {
				if isFiniteNumber(v) {
					points++
				}
			}
		}
		if got["series"] != fmt.Sprint(len(c.Series)) || got["points"] != fmt.Sprint(points) {
			t.Errorf("width %d: %s drew %s series and %s points, want %d and %d", width, c.ID, got["series"], got["points"], len(c.Series), points)
		}
		if c.Kind == "gantt" {
			bars, _ := strconv.Atoi(got["bars"])
			seen, _ := strconv.Atoi(got["first-tokens"])
			want := 0
			for _, v := range c.Gantt.FirstToken {
				if isFiniteNumber(v) {
					want++
				}
			}
			if bars != want || seen < want*95/100 {
				t.Errorf("width %d: %s shows the first-token segment of %d of %d requests (drew %d bars)", width, c.ID, seen, want, bars)
			}
			continue
		}
		if got["legend"] != "ok" {
			t.Errorf("width %d: %s legend under the cursor: %s", width, c.ID, got["legend"])
		}
		if got["dashes"] != strings.Join(dashes, "|") {
			t.Errorf("width %d: %s legend dashes %q, want %q", width, c.ID, got["dashes"], strings.Join(dashes, "|"))
		}
		if c.Section == "load" {
			var styles []string
			for _, st := range c.Styles {
				styles = append(styles, dashText(st.Dash)+"="+st.Label)
			}
			if got["legend-kind"] != "table" || got["styles"] != strings.Join(styles, "|") {
				t.Errorf("width %d: %s legend %s says styles %q, want a table saying %q", width, c.ID, got["legend-kind"], got["styles"], strings.Join(styles, "|"))
			}
		}
	}
}

// TestHTMLRendersInChromium opens each report as a person would, at a
// laptop's, a half screen's and a sideways phone's width, and checks
// every chart drew pixels in its series' colours and everything
// checkRenderedCharts reads back, that no axis labels collide and the
// runs table never scrolls sideways; then it saves a screenshot at
// 1,400 px.
func TestHTMLRendersInChromium(t *testing.T) {
	browser := chromium(t)
	tests := []struct {
		name, shot string
		build      func(t *testing.T) (*HTMLReport, error)
		widths     []int // default 1400, 900 and 700
	}{
		{"three setups, one overloaded", "report-screenshot.png", func(t *testing.T) (*HTMLReport, error) {
			// An overloaded setup queues for minutes: six-digit millisecond
			// labels must still fit their axes.
			overloaded := filepath.Join(t.TempDir(), "setupC")
			writeSweepFixture(t, overloaded, "setup C", 0.5, []float64{2, 9}, false)
			return BuildHTMLReport(append(htmlFixture(t), loadOrFail(t, overloaded)...), HTMLOptions{GroupBy: "request_rate", Title: "servebench sweep: three setups"})
		}, nil},
		{"two setups over two keys", "twokeys-screenshot.png", func(t *testing.T) (*HTMLReport, error) {
			return BuildHTMLReport(loadOrFail(t, twoKeyDirs...), HTMLOptions{GroupBy: "request_rate", Title: "servebench: colocated vs 1P1D over input length and rate"})
		}, nil},
		// 600 requests over 150 s: a 30 ms first token is a fifth of a
		// pixel, and the bars are one pixel high.
		{"a long run of short requests", "timeline-screenshot.png", func(t *testing.T) (*HTMLReport, error) {
			run := syntheticRun{label: "600 short requests", rate: 4, capacity: 40, requests: 600, outputLen: 32, seed: 5, detailed: true}
			return BuildHTMLReport(loadOrFail(t, run.write(t, t.TempDir())), HTMLOptions{})
		}, []int{1400}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rep, err := tt.build(t)
			if err != nil {
				t.Fatal(err)
			}
			widths := tt.widths
			if widths == nil {
				widths = []int{1400, 900, 700}
			}
			renderInChromium(t, browser, rep, tt.shot, widths)
		})
	}
}

func renderInChromium(t *testing.T, browser string, rep *HTMLReport, shotName string, widths []int) {
	dir := t.TempDir()
	page := filepath.Join(dir, "report.html")
	var b bytes.Buffer
	if err := rep.Write(&b); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(page, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()

	for _, width := range widths {
		dom, err := runChromium(ctx, browser, filepath.Join(dir, fmt.Sprintf("profile-dom-%d", width)), false,
			"--virtual-time-budget=5000", fmt.Sprintf("--window-size=%d,2000", width), "--dump-dom", "file://"+page)
		if err != nil {
			t.Fatalf("chromium --dump-dom: %v", err)
		}
		layout := regexp.MustCompile(`data-overlaps="([^"]*)" data-scrolls="([^"]*)"`).FindSubmatch(dom)
		if layout == nil {
			t.Fatalf("width %d: the page did not report its layout checks", width)
		}
		if len(layout[1]) > 0 {
			t.Errorf("width %d: axis labels collide: %s", width, layout[1])
		}
		if len(layout[2]) > 0 {
			t.Errorf("width %d: scrolls sideways: %s", width, layout[2])
		}
		status := regexp.MustCompile(`<p id="render-status" data-status="([^"]*)" data-charts="(\d+)" data-drawn="(\d+)"[^>]*>([^<]*)`).FindSubmatch(dom)
		if status == nil {
			t.Fatalf("the page never reported its charts (script error?); status element: %s", regexp.MustCompile(`<p id="render-status"[^<]*`).Find(dom))
		}
		charts, _ := strconv.Atoi(string(status[2]))
		if string(status[1]) != "ok" || charts != len(rep.Charts) || string(status[3]) != string(status[2]) {
			t.Fatalf("render status %q: %s (want all %d charts drawn)", status[1], status[4], len(rep.Charts))
		}
		checkRenderedCharts(t, width, dom, rep)
	}

	artifacts := os.Getenv("SERVEBENCH_ARTIFACTS")
	if artifacts == "" {
		artifacts = t.ArtifactDir()
	}
	if err := os.MkdirAll(artifacts, 0o755); err != nil {
		t.Fatal(err)
	}
	shot := filepath.Join(artifacts, shotName)
	if out, err := runChromium(ctx, browser, filepath.Join(dir, "profile-shot"), true,
		"--virtual-time-budget=5000", "--screenshot="+shot, "--window-size=1400,3200", "file://"+page); err != nil {
		t.Fatalf("chromium --screenshot: %v\n%s", err, out)
	}
	png, err := os.ReadFile(shot)
	if err != nil || !bytes.HasPrefix(png, []byte("\x89PNG")) || len(png) < 50_000 {
		t.Fatalf("screenshot %s missing or implausibly small (%d bytes): %v", shot, len(png), err)
	}
	if err := os.WriteFile(filepath.Join(artifacts, strings.TrimSuffix(shotName, "-screenshot.png")+".html"), b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", shot)
}

func TestHTMLReportDrawsNoEmptyCharts(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string { return writeResultFixture(t, dir, name, content) }
	tests := []struct {
		name     string
		files    []string
		noCharts []string // chart ID prefixes that must not appear
		want     []string // chart IDs that must appear
	}{
		{"a single load draws no load curves",
			[]string{write("one.json", `{"completed": 5, "request_rate": 4, "mean_ttft_ms": 12, "p99_ttft_ms": 30}`)},
			[]string{"load-"}, nil},
		{"a metric every run reports as 0 gets no chart",
			[]string{
				write("a.json", `{"completed": 5, "request_rate": 2, "mean_ttft_ms": 12, "mean_itl_ms": 0, "p99_itl_ms": 0}`),
				write("b.json", `{"completed": 5, "request_rate": 4, "mean_ttft_ms": 15, "mean_itl_ms": 0, "p99_itl_ms": 0}`),
			},
			[]string{"load-itl"}, []string{"load-ttft"}},
		{"server metrics that never moved get no chart",
			[]string{write("idle.json", `{"completed": 5, "request_rate": 4, "server_metrics": {"samples": [{"t": 0, "running": 0, "waiting": 0}, {"t": 1, "running": 0, "waiting": 0}]}}`)},
			[]string{"server-"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			results, err := LoadResults(tt.files...)
			if err != nil {
				t.Fatal(err)
			}
			rep, err := BuildHTMLReport(results, HTMLOptions{})
			if err != nil {
				t.Fatal(err)
			}
			var ids []string
			for _, c := range rep.Charts {
				ids = append(ids, c.ID)
				for _, s := range c.Series {
					if !anyNonZero(s.Values) {
						t.Errorf("chart %s draws the empty series %q", c.ID, s.Label)
					}
				}
				for _, prefix := range tt.noCharts {
					if strings.HasPrefix(c.ID, prefix) {
						t.Errorf("chart %s drawn", c.ID)
					}
				}
			}
			for _, id := range tt.want {
				if !strings.Contains(strings.Join(ids, " "), id) {
					t.Errorf("chart %s missing from %v", id, ids)
				}
			}
		})
	}
}

func TestRunsTableIsSplitIntoNarrowBlocks(t *testing.T) {
	rep, err := BuildHTMLReport(htmlFixture(t), HTMLOptions{GroupBy: "request_rate"})
	if err != nil {
		t.Fatal(err)
	}
	blocks := rep.Table.tableBlocks()
	seen := map[string]int{}
	for _, b := range blocks {
		if len(b.Header)-2 > maxHTMLTableMetrics || b.Header[0] != "Label" || b.Header[1] != "request_rate" {
			t.Errorf("block %q has header %q", b.Caption, b.Header)
		}
		for _, h := range b.Header[2:] {
			seen[h]++
		}
	}
	for _, c := range rep.Table.Columns {
		if seen[c.Header] != 1 {
			t.Errorf("column %q appears %d times across the blocks", c.Header, seen[c.Header])
		}
	}
}
