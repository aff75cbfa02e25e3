package main

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/servebench/servebench/validate"
)

const validateFixture = "testdata/validate-corpus"

// isolateHFCache keeps the machine's Hugging Face cache out of sim's model
// lookup, so a cached config cannot make sim and validate disagree.
func isolateHFCache(t *testing.T) {
	t.Helper()
	dir := t.TempDir()
	t.Setenv("HF_HUB_CACHE", dir)
	t.Setenv("HUGGINGFACE_HUB_CACHE", dir)
	t.Setenv("HF_HOME", dir)
}

// TestValidatePredictionEqualsSim runs every fixture run (serving paced by
// a rate and by a concurrency cap, throughput, latency; V0 and V1; 0.5 to
// 0.11; TP 2; server flags; a config.json beside the corpus; EOS-stopped
// outputs) through validate and through `servebench sim` with the command
// validate prints, and requires every summary figure to be the same
// float64.
func TestValidatePredictionEqualsSim(t *testing.T) {
	isolateHFCache(t)
	c, err := validate.LoadDir(validateFixture)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := validate.Evaluate(t.Context(), c, c.Runs, validate.Options{})
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]bool{}
	dir := t.TempDir()
	for i, r := range rep.Results {
		if !r.Simulated() {
			t.Fatalf("%s: not simulated: %s", r.Run.FullID(), r.Unsimulable)
		}
		kinds[r.Run.Benchmark] = true
		name := "run" + strconv.Itoa(i) + ".json"
		args := append([]string{"sim"}, r.Command...)
		args = append(args, "--save-result", "--result-dir", dir, "--result-filename", name)
		if _, stderr, err := runCLI(t, args...); err != nil {
			t.Fatalf("%s: servebench %s: %v\n%s", r.Run.FullID(), strings.Join(args, " "), err, stderr)
		}
		raw, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		var saved map[string]any
		if err := dec.Decode(&saved); err != nil {
			t.Fatal(err)
		}
		compared := 0
		for key, v := range saved {
			num, ok := v.(json.Number)
			if !ok || !summaryKey(key) {
				continue
			}
			want, err := num.Float64()
			if err != nil {
				t.Fatal(err)
			}
			if r.Run.Benchmark == validate.BenchmarkLatency && key == "mean_e2el_ms" {
				continue // validate's is the batch's time, checked below
			}
			got, ok := r.Sim[key]
			if !ok {
				t.Errorf("%s: validate has no %s", r.Run.FullID(), key)
				continue
			}
			if got != want {
				t.Errorf("%s: %s: validate %v, servebench sim %v (%s)", r.Run.FullID(), key, got, want, r.CommandLine())
			}
			compared++
		}
		if compared < 10 {
			t.Errorf("%s: only %d figures compared", r.Run.FullID(), compared)
		}
		// Every published figure was predicted by the same simulation.
		for _, m := range r.Metrics {
			if r.Run.Benchmark == validate.BenchmarkLatency {
				dur, _ := saved["duration"].(json.Number).Float64()
				if math.Abs(m.Sim-1e3*dur) > 1e-9*m.Sim {
					t.Errorf("%s: batch latency %v ms, sim's duration %v s", r.Run.FullID(), m.Sim, dur)
				}
				continue
			}
			num, ok := saved[m.Key].(json.Number)
			if !ok && m.Key == "input_throughput" {
				// vLLM before 0.6 printed it; sim's JSON has its parts.
				in, _ := saved["total_input_tokens"].(json.Number).Float64()
				dur, _ := saved["duration"].(json.Number).Float64()
				num = json.Number(strconv.FormatFloat(in/dur, 'g', -1, 64))
			}
			if want, err := num.Float64(); err != nil || m.Sim != want {
				t.Errorf("%s: %s: compared %v, sim printed %v (%v)", r.Run.FullID(), m.Key, m.Sim, want, err)
			}
		}
	}
	for _, k := range []string{validate.BenchmarkServing, validate.BenchmarkThroughput, validate.BenchmarkLatency} {
		if !kinds[k] {
			t.Errorf("no %s run in the fixture", k)
		}
	}
}

var summaryKeyPattern = regexp.MustCompile(`^((mean|median|std|p[0-9.]+)_(ttft|tpot|itl|e2el)_ms|completed|failed|duration|total_input_tokens|total_output_tokens|request_throughput|output_throughput|total_token_throughput|max_output_tokens_per_s|max_concurrent_requests)$`)

func summaryKey(k string) bool { return summaryKeyPattern.MatchString(k) }

func TestValidateText(t *testing.T) {
	isolateHFCache(t)
	out, _, err := runCLI(t, "validate", "--corpus", validateFixture)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"servebench validate: 5 runs from the testdata/validate-corpus corpus (holdout 4, fit 1): 5 simulated, 0 not simulable",
		"fixture-paths/h100x2-qwen2-7b-v0-throughput-chunked  [H100-SXM · offline-mixed · vLLM 0.5.3.post1 · holdout]",
		"Holdout runs (the headline", "Fit runs (used to fit", "By GPU class × regime × release line",
		"  L4 · serving-low · 0.7-0.10", "By source\n  fixture-paths ",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	// The fit run is apart: the holdout table counts 4 runs.
	if !regexp.MustCompile(`Holdout runs .*: 4 runs, 4 simulated`).MatchString(out) {
		t.Errorf("holdout header:\n%s", out)
	}
	summary, _, err := runCLI(t, "validate", "--corpus", validateFixture, "--summary", "--split", "holdout", "--gpu", "h100")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(summary, "Run / metric") || !strings.Contains(summary, "2 runs from") || strings.Contains(summary, "L4") {
		t.Errorf("--summary --gpu h100 --split holdout:\n%s", summary)
	}
}

func TestValidateJSONAndExplain(t *testing.T) {
	isolateHFCache(t)
	out, _, err := runCLI(t, "validate", "--corpus", validateFixture, "--json", "--regime", "offline-decode")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Corpus string `json:"corpus"`
		Runs   []struct {
			ID      string   `json:"id"`
			Command string   `json:"command"`
			Args    []string `json:"command_args"`
			Metrics []struct {
				Key      string   `json:"key"`
				ErrorPct *float64 `json:"error_pct"`
			} `json:"metrics"`
		} `json:"runs"`
		Summaries []validate.Summary `json:"summaries"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if len(doc.Runs) != 1 || doc.Runs[0].ID != "fixture-paths/a10-tiny-llama-v1-latency" || len(doc.Summaries) != 1 {
		t.Fatalf("--regime offline-decode selected %+v", doc)
	}
	run := doc.Runs[0]
	if !strings.HasPrefix(run.Command, "servebench sim --model testdata/validate-corpus/models/acme--tiny-llama/config.json --gpu A10 ") ||
		!slices.Contains(run.Args, "--throughput") || len(run.Metrics) != 1 || run.Metrics[0].ErrorPct == nil {
		t.Errorf("run %+v", run)
	}

	explain, _, err := runCLI(t, "validate", "--corpus", validateFixture, "--explain", "fixture-paths/a100-llama3-8b-v0-concurrency")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Source: validate-to-sim equivalence fixture", "split fit",
		"Approximated: outputs stopped at EOS: simulated at the run's mean of 185 tokens",
		"Approximated: ShareGPT approximated by random token prompts spread as ShareGPT's around the run's means (220 in, 185 out; --random-length-dist sharegpt)",
		"servebench sim --model meta-llama/Meta-Llama-3-8B-Instruct --gpu A100-80GB --vllm-version 0.6.3 --engine v0 --max-num-seqs 128 --num-scheduler-steps 8 --swap-space 16 --dataset-name random --num-prompts 200 --random-input-len 220 --random-output-len 185",
		"--max-concurrency 8", "--burstiness 2", "median_ttft_ms"} {
		if !strings.Contains(explain, want) {
			t.Errorf("--explain lacks %q:\n%s", want, explain)
		}
	}
	if _, _, err := runCLI(t, "validate", "--corpus", validateFixture, "--explain", "a100"); err == nil || !strings.Contains(err.Error(), "did you mean fixture-paths/a100-llama3-8b-v0-concurrency") {
		t.Errorf("--explain with a partial id: %v", err)
	}
}

func TestValidateMaxMedianError(t *testing.T) {
	isolateHFCache(t)
	tests := []struct {
		limit   string
		wantErr string
	}{
		{"1000", ""},
		{"1", "median absolute error over holdout runs above --max-median-error 1%: "},
		{"-1", "--max-median-error -1: give a percentage"},
	}
	for _, tt := range tests {
		_, _, err := runCLI(t, "validate", "--corpus", validateFixture, "--summary", "--max-median-error", tt.limit)
		if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
			t.Errorf("--max-median-error %s: got %v, want %q", tt.limit, err, tt.wantErr)
		}
	}
}

func TestValidateHTML(t *testing.T) {
	isolateHFCache(t)
	page := filepath.Join(t.TempDir(), "fidelity.html")
	if _, _, err := runCLI(t, "validate", "--corpus", validateFixture, "--summary", "--html", page); err != nil {
		t.Fatal(err)
	}
	html, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"<title>servebench validate: sim vs published</title>", "fixture-paths/l4-qwen05b-v1-rate-prefix", `"id":"chart-ttft"`, "uPlot"} {
		if !strings.Contains(string(html), want) {
			t.Errorf("page lacks %q", want)
		}
	}
}

func TestValidateRejectsBadInput(t *testing.T) {
	isolateHFCache(t)
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no such corpus", []string{"--corpus", "testdata/nope"}, "validate: corpus testdata/nope:"},
		{"split", []string{"--split", "train"}, `--split "train": use fit or holdout`},
		{"regime", []string{"--regime", "busy"}, `--regime "busy": use one of`},
		{"nothing selected", []string{"--corpus", validateFixture, "--gpu", "B200"}, `no runs match --gpu "B200"`},
		{"both inputs", []string{"--corpus", validateFixture, "x.json"}, "validate one or the other"},
		{"sim result", []string{"testdata/validate-results/sim-result.json"}, "a servebench sim result"},
		{"no gpu", []string{"testdata/validate-results/tiny-bare.json"},
			"tiny-bare.json: no gpu: record it when benchmarking (--metadata gpu=H100) or put it in testdata/validate-results/tiny-bare.json.setup.yaml (gpu: H100)"},
		{"split of result files", []string{"--split", "fit", "testdata/validate-results/tiny-metadata.json"}, "your result files have no fit/holdout split"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := runCLI(t, append([]string{"validate"}, tt.args...)...)
			if err == nil || !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("got %v, want one line containing %q", err, tt.want)
			}
		})
	}
}

// TestValidateUserResults validates a real vLLM --save-result file whose
// setup is given as --metadata keys, and the same file with a sidecar.
func TestValidateUserResults(t *testing.T) {
	isolateHFCache(t)
	out, _, err := runCLI(t, "validate", "testdata/validate-results/tiny-metadata.json", "testdata/validate-results/tiny-sidecar.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"servebench validate: 2 runs from result files (user 2): 2 simulated, 0 not simulable",
		"testdata/validate-results/tiny-metadata.json  [L4 · serving-low · vLLM 0.8.5 · user]",
		"testdata/validate-results/tiny-sidecar.json  [L4 · serving-low · vLLM 0.6.3 · user]",
		"Your runs: 2 runs, 2 simulated",
		"servebench calibrate --model Qwen/Qwen2-0.5B-Instruct --gpu L4 --vllm-version 0.8.5 testdata/validate-results/tiny-metadata.json",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	// The sidecar's server flags reach the simulation.
	explain, _, err := runCLI(t, "validate", "testdata/validate-results/tiny-sidecar.json", "--explain", "testdata/validate-results/tiny-sidecar.json")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(explain, "--vllm-version 0.6.3 --engine v0 --max-num-seqs 64 --dataset-name random --num-prompts 50 --random-input-len 127 --random-output-len 64 --client vllm-bench --request-rate 4") {
		t.Errorf("--explain:\n%s", explain)
	}
	// Against your own runs, --max-median-error reads their median.
	if _, _, err := runCLI(t, "validate", "testdata/validate-results/tiny-metadata.json", "--max-median-error", "50"); err == nil ||
		!strings.Contains(err.Error(), "over user runs above --max-median-error 50%: ") || !strings.Contains(err.Error(), "TTFT") {
		t.Errorf("--max-median-error on user runs: %v", err)
	}
}
