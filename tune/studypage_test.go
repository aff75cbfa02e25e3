package tune

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/servebench/servebench/internal/tooltest"
)

var update = flag.Bool("update", false, "rewrite golden files")

// studyFixture is a small study: max_num_seqs sets the throughput, block
// size does nothing, one trial misses its SLO, one is invalid.
func studyFixture() []Trial {
	f := func(v float64) *float64 { return &v }
	b := func(v bool) *bool { return &v }
	trial := func(n int, seqs, block string, obj, ttft float64, met bool) Trial {
		score := obj
		if !met {
			score = Penalised(obj, 0.5)
		}
		return Trial{Number: n, State: StateComplete, Params: Point{"max_num_seqs": seqs, "block_size": block},
			Objective: f(obj), Score: score, SLOMet: b(met),
			Details: Details{Result: map[string]any{"request_throughput": obj, "p99_ttft_ms": ttft}}}
	}
	return []Trial{
		trial(0, "16", "16", 2.0, 900, true),
		trial(1, "16", "32", 2.0, 950, true),
		{Number: 2, State: StateInvalid, Params: Point{"max_num_seqs": "64", "block_size": "64"}, Reason: "invalid choice: 64 (choose from 8, 16, 32)"},
		trial(3, "64", "16", 4.0, 400, true),
		trial(4, "64", "32", 4.0, 420, true),
		trial(5, "256", "16", 5.0, 2500, false),
		trial(6, "32", "16", 3.0, 300, true),
	}
}

func TestImportance(t *testing.T) {
	got := Importance(studyFixture())
	if len(got) != 2 {
		t.Fatalf("importance of %d parameters, want 2: %+v", len(got), got)
	}
	tests := []struct {
		name      string
		explained float64
		bins      int
	}{
		// max_num_seqs alone sets every score: all the variance.
		{"max_num_seqs", 1, 4},
		// block_size 16 holds scores 2, 4, 2.5/1.5, 3 and 32 holds 2, 4.
		{"block_size", 0, 2},
	}
	for i, tc := range tests {
		if got[i].Name != tc.name || got[i].Bins != tc.bins {
			t.Errorf("rank %d: %s in %d groups, want %s in %d", i, got[i].Name, got[i].Bins, tc.name, tc.bins)
		}
		if tc.explained == 1 && math.Abs(got[i].Explained-1) > 1e-9 {
			t.Errorf("%s explains %.4f, want 1", tc.name, got[i].Explained)
		}
		if tc.explained == 0 && (got[i].Explained <= 0 || got[i].Explained > 0.1) {
			t.Errorf("%s explains %.4f, want a small positive share", tc.name, got[i].Explained)
		}
	}
	if Importance(studyFixture()[:2]) != nil {
		t.Error("importance from 2 trials")
	}
}

func studyPage(t *testing.T) []byte {
	t.Helper()
	var page bytes.Buffer
	if err := StudyPage("fixture", studyFixture(), "request_throughput", "p99_ttft_ms").Write(&page); err != nil {
		t.Fatal(err)
	}
	return page.Bytes()
}

// TestStudyPageGolden compares the page's structure and data (the
// embedded uPlot, script and stylesheets left out) with the golden file;
// -update rewrites it.
func TestStudyPageGolden(t *testing.T) {
	page := string(studyPage(t))
	for _, want := range []string{`id="section-study"`, `id="importance"`, `id="trials"`, "uPlot", `"id":"history"`, `"id":"pareto"`} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %s", want)
		}
	}
	structure := regexp.MustCompile(`(?s)<style>.*?</style>`).ReplaceAllString(page, "<style>…</style>")
	structure = regexp.MustCompile(`(?s)<script>(.*?)</script>`).ReplaceAllStringFunc(structure, func(s string) string {
		if strings.HasPrefix(s, "<script>const STUDY") {
			return s
		}
		return "<script>…</script>"
	})
	golden := filepath.Join("testdata", "study_page.golden.html")
	if *update {
		if err := os.WriteFile(golden, []byte(structure), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test -update)", err)
	}
	if structure != string(want) {
		t.Errorf("study page differs from %s (go test -update rewrites it):\n%s", golden, structure)
	}
}

// TestStudyPageRendersInChromium opens the page headless and checks both
// charts drew; STUDY_SCREENSHOT=FILE keeps a screenshot to look at.
func TestStudyPageRendersInChromium(t *testing.T) {
	browser := os.Getenv("CHROMIUM")
	if browser == "" {
		var err error
		if browser, err = exec.LookPath("chromium"); err != nil {
			tooltest.Missing(t, "Chromium not found (install the Debian package `chromium`, or set CHROMIUM=/path)")
		}
	}
	dir := t.TempDir()
	page := filepath.Join(dir, "study.html")
	if err := os.WriteFile(page, studyPage(t), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	args := func(extra ...string) func(int) []string {
		return func(attempt int) []string {
			return append([]string{"--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
				"--disable-component-update", "--disable-sync", "--hide-scrollbars", "--user-data-dir=" + filepath.Join(dir, fmt.Sprintf("profile-%d", attempt)),
				"--virtual-time-budget=5000", "--window-size=1300,1100"}, extra...)
		}
	}
	dom, err := tooltest.Run(ctx, browser, false, args("--dump-dom", "file://"+page))
	if err != nil {
		t.Fatalf("chromium --dump-dom: %v", err)
	}
	status := regexp.MustCompile(`<p id="render-status" data-status="([^"]*)" data-charts="(\d+)" data-drawn="(\d+)"`).FindSubmatch(dom)
	if status == nil || string(status[1]) != "ok" || string(status[2]) != "2" || string(status[3]) != "2" {
		t.Fatalf("charts not drawn: %s", regexp.MustCompile(`<p id="render-status"[^<]*`).Find(dom))
	}
	if shot := os.Getenv("STUDY_SCREENSHOT"); shot != "" {
		if out, err := tooltest.Run(ctx, browser, true, args("--screenshot="+shot, "file://"+page)); err != nil {
			t.Fatalf("chromium --screenshot: %v\n%s", err, out)
		}
	}
}
