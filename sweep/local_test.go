package sweep

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/servebench/servebench/runspec"
)

// TestRunSpecRunsTheSpecInProcess checks the real wiring: the result lands
// where the sweep asked, the point's output and the command line that
// reproduces it go to output.log, and a failing run names its reason and
// the log.
func TestRunSpecRunsTheSpecInProcess(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "result.json")
	spec, err := runspec.Parse(runspec.Sim, []string{"--model", "Qwen2-0.5B", "--gpu", "H100", "--num-prompts", "5",
		"--random-input-len", "64", "--random-output-len", "8", "--metadata", "token=tok-PLANTED"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := RunSpec(t.Context(), spec, path); err != nil {
		t.Fatal(err)
	}
	if data, err := os.ReadFile(path); err != nil || !strings.Contains(string(data), `"completed": 5`) {
		t.Fatalf("result %s, %v", data, err)
	}
	log, err := os.ReadFile(filepath.Join(dir, LogFile))
	if err != nil {
		t.Fatal(err)
	}
	head, _, _ := strings.Cut(string(log), "\n")
	for _, want := range []string{"$ servebench sim ", "--model=Qwen2-0.5B", "--save-result", "--result-dir=" + dir, "--result-filename=result.json", "token=[REDACTED]"} {
		if !strings.Contains(head, want) {
			t.Errorf("output.log's command line %q lacks %q", head, want)
		}
	}
	if !strings.Contains(string(log), "Serving Benchmark Result") || strings.Contains(string(log), "PLANTED") {
		t.Errorf("output.log:\n%s", log)
	}
	if strings.Contains(head, "--disable-tqdm") {
		t.Errorf("sim was given bench's --disable-tqdm: %q", head)
	}
	broken := spec.Clone()
	if err := broken.Set("model", "broken-model"); err != nil {
		t.Fatal(err)
	}
	_, err = RunSpec(t.Context(), broken, path)
	if err == nil || !strings.Contains(err.Error(), `unknown model "broken-model"`) || !strings.Contains(err.Error(), LogFile) {
		t.Errorf("failing run: %v", err)
	}
}
