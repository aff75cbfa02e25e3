package report

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

func fidelityFixture() *FidelityReport {
	return &FidelityReport{Title: "sim vs published <fixture>", Points: []FidelityPoint{
		{Run: "src/a", Metric: "output_throughput", Group: "H100", Split: "holdout", Published: 500, Sim: 900},
		{Run: "src/a", Metric: "mean_ttft_ms", Group: "H100", Split: "holdout", Published: 40, Sim: 12},
		{Run: "src/b", Metric: "output_throughput", Group: "A10/A10G", Split: "fit", Published: 120, Sim: 118},
		{Run: "src/b", Metric: "mean_tpot_ms", Group: "A10/A10G", Split: "fit", Published: 30, Sim: 28},
		{Run: "src/c", Metric: "median_itl_ms", Group: "H100", Split: "holdout", Published: 0, Sim: 8},
		{Run: "src/c", Metric: "mean_e2el_ms", Group: "L4", Split: "holdout", Published: 2000, Sim: 2300},
	}}
}

// pageCharts reads the charts the page hands its script.
func pageCharts(t *testing.T, page []byte) []fidelityChart {
	t.Helper()
	m := regexp.MustCompile(`const FIDELITY = (.*);</script>`).FindSubmatch(page)
	if m == nil {
		t.Fatal("no chart data in the page")
	}
	var charts []fidelityChart
	if err := json.Unmarshal(m[1], &charts); err != nil {
		t.Fatal(err)
	}
	return charts
}

func TestFidelityPageCharts(t *testing.T) {
	var b bytes.Buffer
	if err := fidelityFixture().Write(&b); err != nil {
		t.Fatal(err)
	}
	page := b.Bytes()
	if !bytes.Contains(page, []byte("sim vs published &lt;fixture&gt;")) {
		t.Error("title not escaped")
	}
	if !bytes.Contains(page, []byte("1 figures of 0 are not drawn")) {
		t.Error("the zero figure is dropped without a note")
	}
	charts := pageCharts(t, page)
	var ids []string
	for _, c := range charts {
		ids = append(ids, c.ID)
	}
	if !slices.Equal(ids, []string{"chart-throughput", "chart-tpot_itl", "chart-ttft", "chart-e2e"}) {
		t.Fatalf("charts %v", ids)
	}
	tp := charts[0]
	// The axes' ends frame every published and simulated value.
	if len(tp.X) != 4 || tp.X[1] != 120 || tp.X[2] != 500 || !(tp.X[0] < 118) || !(tp.X[3] > 900) ||
		len(tp.Meta) != 4 || tp.Meta[2].Run != "src/a" || tp.Meta[0].Run != "" {
		t.Fatalf("throughput x %v meta %+v", tp.X, tp.Meta)
	}
	// One series per GPU class, each with values only at its own points.
	if len(tp.Series) != 2 || tp.Series[0].Label != "A10/A10G" || tp.Series[1].Label != "H100" || tp.Series[0].Color == tp.Series[1].Color {
		t.Fatalf("series %+v", tp.Series)
	}
	if !bytes.Contains(page, []byte(`"values":[null,118,null,null]`)) || !bytes.Contains(page, []byte(`"values":[null,null,900,null]`)) {
		t.Errorf("values %+v", tp.Series)
	}
}

// TestFidelityPageRendersInChromium opens the page and reads back the
// script's own check that every chart drew.
func TestFidelityPageRendersInChromium(t *testing.T) {
	browser := chromium(t)
	dir := t.TempDir()
	page := filepath.Join(dir, "fidelity.html")
	var b bytes.Buffer
	if err := fidelityFixture().Write(&b); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(page, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	dom, err := runChromium(ctx, browser, filepath.Join(dir, "profile"), false,
		"--virtual-time-budget=5000", "--window-size=1200,2000", "--dump-dom", "file://"+page)
	if err != nil {
		t.Fatalf("chromium --dump-dom: %v", err)
	}
	status := regexp.MustCompile(`<p id="render-status" data-status="([^"]*)" data-charts="(\d+)" data-drawn="(\d+)"[^>]*>([^<]*)`).FindSubmatch(dom)
	if status == nil {
		t.Fatalf("the page never reported its charts (script error?): %s", regexp.MustCompile(`<p id="render-status"[^<]*<`).Find(dom))
	}
	if string(status[1]) != "ok" || string(status[2]) != "4" || string(status[3]) != "4" {
		t.Fatalf("render status %s: %s", status[1], strings.TrimSpace(string(status[4])))
	}
}
