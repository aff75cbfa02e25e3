package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTuneHTMLAfterTheStudyAndFromStorage writes the study page at the
// end of a sim study, then again with --report-only from the stored
// study alone (no engine flags), and checks both hold every trial.
func TestTuneHTMLAfterTheStudyAndFromStorage(t *testing.T) {
	dir := t.TempDir()
	first := filepath.Join(dir, "first.html")
	args := append([]string{"--html", first}, simStudy...)
	if _, stderr, _, err := runTuneCmdIn(t, dir, args...); err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	again := filepath.Join(dir, "again.html")
	if _, stderr, _, err := runTuneCmdIn(t, dir, "--report-only", "--html", again); err != nil {
		t.Fatalf("--report-only: %v\n%s", err, stderr)
	}
	for _, page := range []string{first, again} {
		data, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		html := string(data)
		_, trialsTable, _ := strings.Cut(html, `<section id="trials">`)
		if n := strings.Count(trialsTable, `<tr><td class="label">`); n != 10 {
			t.Errorf("%s: %d rows in the trials table, want 10", filepath.Base(page), n)
		}
		for _, want := range []string{"10 trials:", `"id":"history"`, `"id":"pareto"`, "Parameter importance"} {
			if !strings.Contains(html, want) {
				t.Errorf("%s lacks %q", filepath.Base(page), want)
			}
		}
	}
	if _, _, _, err := runTuneCmdIn(t, dir, "--report-only"); err == nil || !strings.Contains(err.Error(), "--report-only needs --html") {
		t.Errorf("--report-only without --html: %v", err)
	}
	if _, _, _, err := runTuneCmdIn(t, t.TempDir(), "--report-only", "--html", again); err == nil || !strings.Contains(err.Error(), "no study at") {
		t.Errorf("--report-only on an empty directory: %v", err)
	}
}
