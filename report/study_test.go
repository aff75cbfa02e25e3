package report

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// studyAxisCase is one pair of study charts: n trials, objective rising
// with the trial, and a Pareto chart whose TTFTs span lo to hi ms.
type studyAxisCase struct {
	name   string
	trials int
	lo, hi float64
}

func (c studyAxisCase) charts(id int) []StudyChart {
	trials := make([]float64, c.trials)
	history := make([]float64, c.trials)
	for i := range trials {
		trials[i] = float64(i)
		history[i] = 1 + float64(i%5)
	}
	ttft := []float64{c.lo, math.Sqrt(c.lo * c.hi), c.hi}
	return []StudyChart{
		{ID: fmt.Sprintf("history-%d", id), Title: c.name + ": objective by trial", XLabel: "trial", YLabel: "objective", X: trials,
			Series: []StudySeries{{Label: "trials", Color: StudyColor(0), Values: history, Points: true}}},
		{ID: fmt.Sprintf("pareto-%d", id), Title: c.name + ": Pareto front", XLabel: "p99_ttft_ms (log scale)", YLabel: "objective", X: ttft, XLog: true,
			Series: []StudySeries{{Label: "front", Color: StudyColor(2), Values: []float64{1, 2, 3}, Points: true, Line: true}}},
	}
}

// TestStudyPageAxesInChromium opens a study page as a person would, at
// 1,400 px, and reads back each x axis: a trial axis ticks whole numbers
// only, and a log-scale Pareto axis spans the trials' TTFTs with a margin
// (not whole decades either side) and labels at least two ticks.
func TestStudyPageAxesInChromium(t *testing.T) {
	browser := chromium(t)
	cases := []studyAxisCase{
		{"three trials, TTFT within a decade", 3, 300, 2500},
		{"seven trials", 7, 120, 900},
		{"forty trials, TTFT over three decades", 40, 12, 45000},
	}
	rep := &StudyReport{Title: "study axes"}
	for i, c := range cases {
		rep.Charts = append(rep.Charts, c.charts(i)...)
	}
	var page bytes.Buffer
	if err := rep.Write(&page); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "study.html")
	if err := os.WriteFile(file, page.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	dom, err := runChromium(ctx, browser, filepath.Join(dir, "profile"), false,
		"--virtual-time-budget=5000", "--window-size=1400,1100", "--dump-dom", "file://"+file)
	if err != nil {
		t.Fatalf("chromium --dump-dom: %v", err)
	}
	box := regexp.MustCompile(`<div class="chart" id="(history|pareto)-(\d+)"[^>]*data-xticks="([^"]*)" data-xlabels="([^"]*)" data-xrange="([^"]*)" data-xdata="([^"]*)"`)
	found := box.FindAllSubmatch(dom, -1)
	if len(found) != len(rep.Charts) {
		t.Fatalf("the page reported %d of its %d axes: %s", len(found), len(rep.Charts), regexp.MustCompile(`<p id="render-status"[^<]*`).Find(dom))
	}
	for _, m := range found {
		i, _ := strconv.Atoi(string(m[2]))
		name := cases[i].name
		ticks, labels := floats(t, string(m[3])), strings.Split(string(m[4]), "|")
		axis, data := floats(t, string(m[5])), floats(t, string(m[6]))
		switch string(m[1]) {
		case "history":
			for _, x := range ticks {
				if x != math.Trunc(x) || x < data[0] || x > data[1] {
					t.Errorf("%s: trial axis ticks %v, want whole trial numbers from %v to %v", name, ticks, data[0], data[1])
					break
				}
			}
		case "pareto":
			if axis[0] > data[0] || axis[1] < data[1] || axis[0] < data[0]/1.5 || axis[1] > data[1]*1.5 {
				t.Errorf("%s: Pareto axis spans %v for TTFTs %v, want the data with a margin under 1.5x", name, axis, data)
			}
			if len(labels) < 2 {
				t.Errorf("%s: Pareto axis labels %q, want at least two", name, labels)
			}
		}
	}
}

func floats(t *testing.T, s string) []float64 {
	t.Helper()
	var out []float64
	for _, f := range strings.Fields(s) {
		v, err := strconv.ParseFloat(f, 64)
		if err != nil {
			t.Fatalf("%q: %v", s, err)
		}
		out = append(out, v)
	}
	return out
}
