package report

import (
	"bytes"
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"math"
	"slices"
	"strings"
)

// The fidelity page reuses the run report's embedded uPlot and stylesheet;
// its script draws sim against published figures on log-log axes.
var (
	//go:embed assets/fidelity.js
	fidelityJS string
	//go:embed assets/fidelity.html.tmpl
	fidelityTemplateText string
)

var fidelityTemplate = template.Must(template.New("fidelity").Parse(fidelityTemplateText))

// FidelityPoint is one published figure and sim's prediction of it.
type FidelityPoint struct {
	Run    string
	Metric string
	// Group colours the point (a GPU class); Split is fit, holdout or user.
	Group, Split   string
	Published, Sim float64
}

// FidelityReport is sim against published figures: the caller (validate)
// fills the points; Write draws one chart per metric family.
type FidelityReport struct {
	Title  string
	Points []FidelityPoint
}

// fidelityChart is one family's chart as the page's script reads it: X
// holds every point's published value in ascending order between the
// axes' two ends, each group's series its sim values at its own points
// (null elsewhere), Meta the run and metric behind each x position (empty
// at the ends).
type fidelityChart struct {
	ID     string             `json:"id"`
	Title  string             `json:"title"`
	Unit   string             `json:"unit"`
	X      jsonFloats         `json:"x"`
	Series []fidelitySeries   `json:"series"`
	Meta   []fidelityMetadata `json:"meta"`
}

type fidelitySeries struct {
	Label  string     `json:"label"`
	Color  string     `json:"color"`
	Values jsonFloats `json:"values"`
}

type fidelityMetadata struct {
	Run    string `json:"run"`
	Metric string `json:"metric"`
	Split  string `json:"split"`
}

// fidelityFamilies names each chart and which metrics go in it.
var fidelityFamilies = []struct{ id, title, unit string }{
	{"throughput", "Throughput", "req/s or tok/s"},
	{"tpot_itl", "TPOT / ITL", "ms"},
	{"ttft", "TTFT", "ms"},
	{"e2e", "E2E latency", "ms"},
}

func fidelityFamily(metric string) string {
	switch {
	case strings.HasSuffix(metric, "_throughput"):
		return "throughput"
	case strings.Contains(metric, "_tpot_") || strings.Contains(metric, "_itl_"):
		return "tpot_itl"
	case strings.Contains(metric, "_ttft_"):
		return "ttft"
	case strings.Contains(metric, "_e2el_"):
		return "e2e"
	}
	return ""
}

// Write renders the page: one log-log chart per family with the y = x line
// and a ±15% band, one colour per group, the run behind a point on hover.
func (rep *FidelityReport) Write(w io.Writer) error {
	var groups []string
	for _, p := range rep.Points {
		if !slices.Contains(groups, p.Group) {
			groups = append(groups, p.Group)
		}
	}
	slices.Sort(groups)
	var charts []fidelityChart
	skipped := 0
	for _, fam := range fidelityFamilies {
		var pts []FidelityPoint
		for _, p := range rep.Points {
			if fidelityFamily(p.Metric) != fam.id {
				continue
			}
			if !(p.Published > 0 && p.Sim > 0) || math.IsInf(p.Published, 0) || math.IsInf(p.Sim, 0) {
				skipped++ // a log axis has no place for 0
				continue
			}
			pts = append(pts, p)
		}
		if len(pts) == 0 {
			continue
		}
		slices.SortStableFunc(pts, func(a, b FidelityPoint) int {
			switch {
			case a.Published < b.Published:
				return -1
			case a.Published > b.Published:
				return 1
			}
			return strings.Compare(a.Run+a.Metric, b.Run+b.Metric)
		})
		// Both axes span every value, a margin beyond, so y = x is the
		// diagonal; the first and last x are those ends, pointless, so the
		// lines cross the whole chart.
		lo, hi := math.Inf(1), math.Inf(-1)
		for _, p := range pts {
			lo, hi = min(lo, p.Published, p.Sim), max(hi, p.Published, p.Sim)
		}
		lo, hi = niceLog(lo/1.2, false), niceLog(hi*1.2, true)
		c := fidelityChart{ID: "chart-" + fam.id, Title: fam.title, Unit: fam.unit, X: jsonFloats{lo}, Meta: []fidelityMetadata{{}}}
		for _, p := range pts {
			c.X = append(c.X, p.Published)
			c.Meta = append(c.Meta, fidelityMetadata{Run: p.Run, Metric: p.Metric, Split: p.Split})
		}
		c.X = append(c.X, hi)
		c.Meta = append(c.Meta, fidelityMetadata{})
		for gi, g := range groups {
			vals := make(jsonFloats, len(c.X))
			any := false
			for i := range vals {
				vals[i] = math.NaN()
			}
			for i, p := range pts {
				if p.Group == g {
					vals[i+1], any = p.Sim, true
				}
			}
			if any {
				c.Series = append(c.Series, fidelitySeries{Label: g, Color: paletteColor(gi), Values: vals})
			}
		}
		charts = append(charts, c)
	}
	notes := []string(nil)
	if skipped > 0 {
		notes = append(notes, fmt.Sprintf("%d figures of 0 are not drawn (a log axis has no 0).", skipped))
	}
	if len(charts) == 0 {
		notes = append(notes, "No simulated figure to draw.")
	}
	data := struct {
		Title      string
		Notes      []string
		Charts     []fidelityChart
		UPlotJS    template.JS
		UPlotCSS   template.CSS
		ReportCSS  template.CSS
		FidelityJS template.JS
	}{rep.Title, notes, charts, template.JS(uplotJS), template.CSS(uplotCSS), template.CSS(reportCSS), template.JS(fidelityJS)}
	if data.Charts == nil {
		data.Charts = []fidelityChart{}
	}
	var page bytes.Buffer
	if err := fidelityTemplate.Execute(&page, data); err != nil {
		return fmt.Errorf("rendering the fidelity page: %w", err)
	}
	_, err := w.Write(page.Bytes())
	return err
}

// niceLog rounds v > 0 down (or up) to 1, 2 or 5 times a power of ten, so a
// log axis starts and ends on a readable tick.
func niceLog(v float64, up bool) float64 {
	p := math.Pow(10, math.Floor(math.Log10(v)))
	steps := []float64{1, 2, 5, 10}
	if up {
		for _, s := range steps {
			if s*p >= v {
				return s * p
			}
		}
		return 10 * p
	}
	for i := len(steps) - 1; i >= 0; i-- {
		if steps[i]*p <= v {
			return steps[i] * p
		}
	}
	return p
}
