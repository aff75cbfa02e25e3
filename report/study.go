package report

import (
	"bytes"
	_ "embed"
	"fmt"
	"html/template"
	"io"
)

// The study page reuses the run report's embedded uPlot and stylesheet;
// its own script draws scatter charts (trials are points, not a curve),
// which the run report's line charts do not.
var (
	//go:embed assets/study.js
	studyJS string
	//go:embed assets/study.html.tmpl
	studyTemplateText string
)

var studyTemplate = template.Must(template.New("study").Parse(studyTemplateText))

// StudyReport is the data behind a tuning study's page. The tuner fills
// it (report computes nothing); Write renders it as one offline file.
type StudyReport struct {
	Title     string `json:"title"`
	Generated string `json:"generated,omitempty"`
	// Summary lines go under the title: trial counts, the best trial.
	Summary []string     `json:"-"`
	Charts  []StudyChart `json:"charts"`
	// Importance is ordered most important first.
	Importance []ParamImportance `json:"-"`
	// ImportanceNote explains the measure.
	ImportanceNote string     `json:"-"`
	Trials         StudyTable `json:"-"`
	Notes          []string   `json:"-"`
}

// StudyChart is one chart; X is shared by every series and NaN is a gap.
type StudyChart struct {
	ID     string `json:"id"`
	Title  string `json:"title"`
	XLabel string `json:"xLabel"`
	YLabel string `json:"yLabel"`
	// XLog draws x on a log scale (latencies spanning decades); X > 0.
	XLog   bool          `json:"xLog,omitempty"`
	X      jsonFloats    `json:"x"`
	Series []StudySeries `json:"series"`
}

// StudySeries is drawn as points, a line (across gaps) or both.
type StudySeries struct {
	Label  string     `json:"label"`
	Color  string     `json:"color"`
	Values jsonFloats `json:"values"`
	Points bool       `json:"points"`
	Line   bool       `json:"line"`
	// Step draws the line as a staircase (best so far).
	Step bool `json:"step,omitempty"`
}

// ParamImportance is one parameter's share of the objective's variance.
type ParamImportance struct {
	Name string
	// Explained is in [0, 1]; Bins is how many value groups it used.
	Explained float64
	Bins      int
}

// Percent is Explained for the page.
func (p ParamImportance) Percent() string { return fmt.Sprintf("%.0f%%", 100*p.Explained) }

// Width is the bar's CSS width.
func (p ParamImportance) Width() template.CSS {
	return template.CSS(fmt.Sprintf("width: %.1f%%", 100*p.Explained))
}

// StudyTable is the trials table.
type StudyTable struct {
	Header []string
	Rows   [][]string
}

// StudyColor is the page's palette, for the tuner to pick series colours.
func StudyColor(i int) string { return paletteColor(i) }

// Write renders the page.
func (rep *StudyReport) Write(w io.Writer) error {
	data := struct {
		Report    *StudyReport
		UPlotJS   template.JS
		UPlotCSS  template.CSS
		StudyJS   template.JS
		ReportCSS template.CSS
	}{rep, template.JS(uplotJS), template.CSS(uplotCSS), template.JS(studyJS), template.CSS(reportCSS)}
	var page bytes.Buffer
	if err := studyTemplate.Execute(&page, data); err != nil {
		return fmt.Errorf("rendering the study page: %w", err)
	}
	_, err := w.Write(page.Bytes())
	return err
}
