package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/servebench/servebench/perf"
)

// vllmExample is a result file saved by vLLM's own benchmark client
// (captured in shared/examples/vllm-bench-output).
const vllmExample = "testdata/vllm-4.0qps-tiny-20261122-062813.json"

// simRun saves one small sim result (with records) and returns its path.
func simRun(t *testing.T, dir, name, gpu, rate string, extra ...string) string {
	t.Helper()
	args := append([]string{"sim", "--model", "Qwen/Qwen2-0.5B", "--gpu", gpu, "--num-prompts", "60", "--request-rate", rate,
		"--random-input-len", "256", "--random-output-len", "32", "--save-result", "--result-dir", dir, "--result-filename", name}, extra...)
	if _, stderr, err := runCLI(t, args...); err != nil {
		t.Fatalf("sim: %v\n%s", err, stderr)
	}
	return filepath.Join(dir, name)
}

func TestCalibrateRejectsBadInput(t *testing.T) {
	dir := t.TempDir()
	l4 := simRun(t, dir, "l4.json", "L4", "4")
	a10 := simRun(t, dir, "a10.json", "A10", "4")
	malformed := filepath.Join(dir, "broken.json")
	if err := os.WriteFile(malformed, []byte(`{"median_ttft_ms": 12,`), 0o644); err != nil {
		t.Fatal(err)
	}
	notResult := filepath.Join(dir, "other.json")
	if err := os.WriteFile(notResult, []byte(`{"gpu": "L4", "model_id": "Qwen2-0.5B"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		want []string
	}{
		{"no files", nil, []string{"no result files"}},
		{"missing file", []string{filepath.Join(dir, "nope.json")}, []string{"nope.json"}},
		{"malformed JSON", []string{malformed}, []string{"broken.json"}},
		{"not a benchmark result", []string{notResult}, []string{"other.json", "mean_ttft_ms"}},
		{"no GPU recorded", []string{vllmExample, "--model", "Qwen2-0.5B"}, []string{"vllm-4.0qps-tiny", "--gpu"}},
		{"unknown model", []string{vllmExample, "--gpu", "L4"}, []string{"vllm-4.0qps-tiny", `"tiny"`, "--model"}},
		{"inconsistent GPUs", []string{l4, a10}, []string{"a10.json", "A10", "L4", "one GPU at a time"}},
		{"server flag sim does not model", []string{vllmExample, "--model", "Qwen2-0.5B", "--gpu", "L4", "--server-args", "--speculative-model x"},
			[]string{"--server-args", "--speculative-model", "not modelled"}},
		{"server flags disagree", []string{vllmExample, "--model", "Qwen2-0.5B", "--gpu", "L4", "--max-num-seqs", "64", "--server-args", "--max_num_seqs 128"},
			[]string{"--max-num-seqs 64", "disagrees", "128"}},
		{"server dtype", []string{vllmExample, "--model", "Qwen2-0.5B", "--gpu", "L4", "--server-args", "--dtype float16"},
			[]string{"--dtype float16", "not modelled by calibrate"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"calibrate", "-o", filepath.Join(dir, "c.yaml"), "--bootstrap", "0"}, tt.args...)
			_, _, err := runCLI(t, args...)
			if err == nil {
				t.Fatal("calibrate succeeded")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}

// vLLM's own --save-result file (no per-request lists): the arrivals are
// rebuilt from its request rate, the model and GPU come from flags.
func TestCalibrateFromVLLMSaveResult(t *testing.T) {
	if testing.Short() {
		t.Skip("a whole fit, about 400 simulations (20 s under -race); run without -short")
	}
	out := filepath.Join(t.TempDir(), "c.yaml")
	stdout, stderr, err := runCLI(t, "calibrate", vllmExample, "--model", "Qwen2-0.5B", "--gpu", "L4", "-o", out)
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	if !strings.Contains(stderr, "calibrate: 1 runs of Qwen2-0.5B on L4") || !strings.Contains(stdout, "compute_scale:") {
		t.Errorf("stdout:\n%s\nstderr:\n%s", stdout, stderr)
	}
	c, err := perf.LoadCalibrationFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if c.GPU != "L4" || c.Model != "Qwen2-0.5B" {
		t.Errorf("calibration header %+v", c)
	}
}

// lambdaMultiStep is one of Lambda's published vLLM 0.6.0 runs (the
// corpus' lambda-vllm-benchmark/a100x1-llama3-8b-sharegpt10: ten ShareGPT
// prompts at once, Llama-3-8B-Instruct on one A100 80GB SXM, vLLM's
// --save-result file with its generated texts removed). Its server ran
// --num-scheduler-steps 10, which no result file records.
const lambdaMultiStep = "testdata/lambda-a100-llama3-8b-tp1-multistep.json"

// Without the server's flags calibrate replays a single-step server, whose
// TPOT no fit of its parameters reaches; with them the fit matches every
// figure. The file's per-request prompt lengths (input_lens) are replayed
// as they were, not as ten prompts of the mean.
func TestCalibrateReplaysTheServersFlags(t *testing.T) {
	worst := func(serverArgs string) float64 {
		t.Helper()
		out := filepath.Join(t.TempDir(), "c.yaml")
		args := []string{"calibrate", lambdaMultiStep, "--model", "Llama-3-8B", "--gpu", "A100-80GB", "--vllm-version", "0.6.0",
			"--bootstrap", "0", "-o", out}
		if serverArgs != "" {
			args = append(args, "--server-args", serverArgs)
		}
		if _, stderr, err := runCLI(t, args...); err != nil {
			t.Fatalf("%v\n%s", err, stderr)
		}
		data, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		var file struct {
			Fit struct {
				Runs []struct {
					Error map[string]float64 `yaml:"error_percent"`
					Max   float64            `yaml:"max_abs_error_percent"`
				} `yaml:"runs"`
			} `yaml:"fit"`
		}
		if err := yaml.Unmarshal(data, &file); err != nil || len(file.Fit.Runs) != 1 {
			t.Fatalf("calibration %s: %v\n%s", out, err, data)
		}
		t.Logf("--server-args %q: error %v", serverArgs, file.Fit.Runs[0].Error)
		return file.Fit.Runs[0].Max
	}
	if got := worst(""); got < 15 {
		t.Errorf("without the server's flags the worst figure is %.1f%% off; a single-step replay of a 10-step server should miss TPOT by more than 15%%", got)
	}
	if got := worst("--num-scheduler-steps 10 --max-model-len 2000 --max-num-seqs 1024 --gpu-memory-utilization 0.95 --disable-log-requests"); got > 2 {
		t.Errorf("with the server's flags the worst figure is %.1f%% off, want within 2%%", got)
	}
}

// sim --calibration applies the file and records it; a file fitted on
// another GPU is refused.
func TestSimWithCalibration(t *testing.T) {
	dir := t.TempDir()
	cal := filepath.Join(dir, "c.yaml")
	if err := os.WriteFile(cal, []byte("kind: servebench-calibration\nmodel: Qwen2-0.5B\ngpu: L4\nparameters: {compute_scale: 0.5, bandwidth_scale: 0.5, sequence_overhead_us: 10}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	plain := simRun(t, dir, "plain.json", "L4", "2")
	calibrated := simRun(t, dir, "cal.json", "L4", "2", "--calibration", cal)
	read := func(p string) map[string]any {
		raw, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(raw, &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	a, b := read(plain), read(calibrated)
	if _, ok := a["calibration"]; ok {
		t.Error("uncalibrated result records a calibration")
	}
	rec, ok := b["calibration"].(map[string]any)
	if !ok || rec["file"] != cal || rec["compute_scale"] != 0.5 {
		t.Errorf("calibration section %v", b["calibration"])
	}
	if b["median_tpot_ms"].(float64) < 1.8*a["median_tpot_ms"].(float64) {
		t.Errorf("half the bandwidth: TPOT %v vs %v, want about twice", b["median_tpot_ms"], a["median_tpot_ms"])
	}
	_, _, err := runCLI(t, "sim", "--model", "Qwen/Qwen2-0.5B", "--gpu", "A10", "--num-prompts", "5", "--calibration", cal)
	if err == nil || !strings.Contains(err.Error(), "fitted on L4") {
		t.Errorf("calibration on the wrong GPU: %v", err)
	}
}
