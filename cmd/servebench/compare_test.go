package main

import (
	"encoding/csv"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// Real vLLM and SGLang outputs, kept as report's golden inputs.
const (
	vllmResult   = "../../report/testdata/compare/vllm-4.0qps-tiny-20261122-062813.json"
	sglangResult = "../../report/testdata/compare/sglang-bench_serving.jsonl"
)

func TestCompareTwoSetupsAsMarkdown(t *testing.T) {
	stdout, _, err := executeForTest(t, newCompareCmd(), t.Context(), vllmResult, sglangResult, "--label", "vLLM,SGLang", "--format", "md")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	if len(lines) != 4 {
		t.Fatalf("want header, rule and two rows:\n%s", stdout)
	}
	for _, want := range []string{"| vLLM | 50 |", "| SGLang | 50 |", "550.82", "176.94", "P95 ITL (ms)", "Mean E2EL (ms)"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("table lacks %q:\n%s", want, stdout)
		}
	}
}

func TestCompareFormatsAndHTML(t *testing.T) {
	dir := t.TempDir()
	html := filepath.Join(dir, "out.html")
	stdout, stderr, err := executeForTest(t, newCompareCmd(), t.Context(), vllmResult, sglangResult, "--format", "csv", "--group-by", "request_rate", "--html", html)
	if err != nil {
		t.Fatal(err)
	}
	records, err := csv.NewReader(strings.NewReader(stdout)).ReadAll()
	if err != nil || len(records) != 3 || records[0][1] != "request_rate" {
		t.Fatalf("CSV %q: %v", records, err)
	}
	page, err := os.ReadFile(html)
	if err != nil || !strings.Contains(string(page), "uPlot") {
		t.Fatalf("HTML report: %v", err)
	}
	if !strings.Contains(stderr, "HTML report written to "+html) {
		t.Errorf("stderr: %s", stderr)
	}
}

func TestCompareBadInput(t *testing.T) {
	dir := t.TempDir()
	corrupt := filepath.Join(dir, "corrupt.json")
	if err := os.WriteFile(corrupt, []byte(`{"completed": 50, "duration": }`), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"--strict: corrupt JSON names file and offset", []string{corrupt, vllmResult, "--strict"}, corrupt + ": invalid JSON at byte offset 30"},
		{"only a corrupt file", []string{corrupt}, "no benchmark results"},
		{"missing file", []string{filepath.Join(dir, "nope.json")}, "nope.json"},
		{"bad format", []string{vllmResult, "--format", "yaml"}, "use term, md, csv or json"},
		{"too many labels", []string{vllmResult, "--label", "a,b"}, "2 labels for 1 runs"},
		{"no files", nil, "requires at least 1 arg"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := executeForTest(t, newCompareCmd(), t.Context(), tt.args...)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want %q", err, tt.want)
			}
		})
	}
}

func TestCompareSkipsACorruptFileWithAWarning(t *testing.T) {
	dir := t.TempDir()
	corrupt := filepath.Join(dir, "killed-mid-write.json")
	if err := os.WriteFile(corrupt, []byte(`{"completed": 50, "duration": 11.`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"compare", "report"} {
		t.Run(name, func(t *testing.T) {
			cmd := map[string]func() *cobra.Command{"compare": newCompareCmd, "report": newReportCmd}[name]()
			stdout, stderr, err := executeForTest(t, cmd, t.Context(), vllmResult, corrupt, sglangResult, "--format", "csv")
			if err != nil {
				t.Fatal(err)
			}
			records, err := csv.NewReader(strings.NewReader(stdout)).ReadAll()
			if err != nil || len(records) != 3 {
				t.Fatalf("want header and the two good runs, got %q: %v", records, err)
			}
			warnings := strings.Split(strings.TrimSpace(stderr), "\n")
			if len(warnings) != 2 || !strings.Contains(warnings[0], "warning: skipped "+corrupt) || !strings.Contains(warnings[1], "--strict") {
				t.Errorf("stderr should hold one warning naming the file and a --strict hint:\n%s", stderr)
			}
		})
	}
}

func TestCompareLabelsSweepPointFilesByPath(t *testing.T) {
	dir := t.TempDir()
	var files []string
	for _, point := range []string{"000-request-rate=2", "001-request-rate=4"} {
		path := filepath.Join(dir, point, "result.json")
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(`{"completed": 3, "duration": 1}`), 0o644); err != nil {
			t.Fatal(err)
		}
		files = append(files, path)
	}
	stdout, _, err := executeForTest(t, newCompareCmd(), t.Context(), append(files, "--format", "csv")...)
	if err != nil {
		t.Fatal(err)
	}
	records, err := csv.NewReader(strings.NewReader(stdout)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if got := records[1][0] + "|" + records[2][0]; got != "000-request-rate=2/result|001-request-rate=4/result" {
		t.Errorf("row labels %s, want the point directories", got)
	}
}

func TestCompareAndReportHelpSayTheyAreOneCommand(t *testing.T) {
	for _, cmd := range []*cobra.Command{newCompareCmd(), newReportCmd()} {
		if !strings.Contains(cmd.Long, `"compare" and "report"`) && !strings.Contains(cmd.Long, `"report" and "compare"`) {
			t.Errorf("%s help does not say how it relates to the other:\n%s", cmd.Name(), cmd.Long)
		}
		for _, flag := range []string{"strict", "all-columns", "label", "html"} {
			if cmd.Flags().Lookup(flag) == nil {
				t.Errorf("%s lacks --%s", cmd.Name(), flag)
			}
		}
	}
}
