package validate

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/servebench/servebench/workload"
)

func results(name string) string { return filepath.Join("testdata", "results", name) }

func TestLoadResultRuns(t *testing.T) {
	runs, err := LoadResultRuns([]string{results("with-metadata.json"), results("sidecar-ok.json")})
	if err != nil {
		t.Fatal(err)
	}
	meta, side := runs[0], runs[1]
	if meta.GPU != "L4" || meta.Model != "Qwen/Qwen2-0.5B-Instruct" || meta.VLLMVersion != "0.6.3" || meta.Split != SplitUser ||
		meta.Workload.InputLen != 127 || meta.Workload.OutputLen != 64 || meta.Workload.NumPrompts != 50 ||
		float64(meta.Workload.RequestRate) != 4 || meta.Workload.Burstiness != 1 || strings.Join(meta.ServerArgs, " ") != "--max-num-seqs 32 --disable-log-requests" ||
		meta.Published["mean_ttft_ms"] != 160.38567965998482 || meta.Published["completed"] != 50 {
		t.Errorf("from metadata: %+v %+v", meta, meta.Workload)
	}
	// The sidecar overrides and adds; the file's own figures stay.
	if side.GPU != "A10" || side.VLLMVersion != "0.8.5" || side.Engine != "v1" || side.Workload.RangeRatio != 0.1 ||
		side.Workload.InputLen != 127 || side.Published["request_throughput"] != 4.277664841841243 || side.FullID() != results("sidecar-ok.json") {
		t.Errorf("from the sidecar: %+v %+v", side, side.Workload)
	}

	rep, err := Evaluate(t.Context(), nil, runs, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rep.Results {
		if !r.Simulated() || r.Regime != ServingLow || len(r.Metrics) < 10 {
			t.Errorf("%s: %q regime %s, %d metrics", r.Run.FullID(), r.Unsimulable, r.Regime, len(r.Metrics))
		}
	}
	hints := rep.CalibrateHints()
	if len(hints) != 2 || !strings.HasPrefix(hints[0].Command, "servebench calibrate --model Qwen/Qwen2-0.5B-Instruct --gpu L4 --vllm-version 0.6.3 testdata/results/with-metadata.json") ||
		!strings.Contains(hints[0].Reason, "TTFT -") || !strings.Contains(hints[0].Reason, "all low") {
		t.Errorf("hints %+v", hints)
	}
	var b bytes.Buffer
	if err := rep.WriteText(&b, TextOptions{SummaryOnly: true}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"2 runs from result files (user 2)", "Your runs: 2 runs, 2 simulated", "Calibrating on these files would help:"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, b.String())
		}
	}
}

func TestLoadResultRunsErrors(t *testing.T) {
	tests := []struct {
		file string
		want string
	}{
		{"vllm-tiny.json", "vllm-tiny.json: no gpu: record it when benchmarking (--metadata gpu=H100) or put it in testdata/results/vllm-tiny.json.setup.yaml (gpu: H100)"},
		{"no-model.json", "no-model.json: no model: record it when benchmarking (--metadata model="},
		{"no-version.json", "no-version.json: no vllm_version: record it when benchmarking (--metadata vllm_version=0.6.3) or put it in"},
		{"no-totals.json", "no-totals.json: no token totals"},
		{"sidecar-unknown-key.json", "sidecar-unknown-key.json.setup.yaml: field gpu_type (line 4): unknown key"},
		{"sidecar-published.json", "sidecar-published.json.setup.yaml: field published: the figures come from the result file"},
		{"missing.json", "missing.json"},
		{"detailed-bad-totals.json", "detailed-bad-totals.json: input_lens and output_lens: its requests sum to 6375 tokens, but published.total_input_tokens is 6350"},
		{"detailed-short.json", "detailed-short.json"},
	}
	for _, tt := range tests {
		_, err := LoadResultRuns([]string{results(tt.file)})
		if err == nil || !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: %v, want one line with %q", tt.file, err, tt.want)
		}
	}
	if _, err := LoadResultRuns(nil); err == nil {
		t.Error("no files: no error")
	}
}

// A result whose prompts began with a shared prefix (vLLM's
// random_prefix_len) counts the prefix in its token totals: the run's
// input_len is the whole prompt, and sim's random dataset gets the rest.
func TestLoadResultRunsSharedPrefix(t *testing.T) {
	runs, err := LoadResultRuns([]string{results("with-prefix.json")})
	if err != nil {
		t.Fatal(err)
	}
	w := runs[0].Workload
	if w.InputLen != 127 || w.PrefixLen != 100 {
		t.Fatalf("input_len %d, prefix_len %d: want 127 (6350 tokens / 50) and 100", w.InputLen, w.PrefixLen)
	}
	p, err := newPlan(runs[0], nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := p.spec.Random; got.InputLen != 27 || got.PrefixLen != 100 {
		t.Errorf("sim's random prompts: %d tokens after a %d-token prefix, want 27 after 100", got.InputLen, got.PrefixLen)
	}
}

// FuzzSidecar: any sidecar bytes set up the run or fail with one line.
func FuzzSidecar(f *testing.F) {
	for _, name := range []string{"sidecar-ok.json.setup.yaml", "sidecar-published.json.setup.yaml", "sidecar-unknown-key.json.setup.yaml"} {
		data, err := os.ReadFile(results(name))
		if err == nil {
			f.Add(data)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		r := &Run{Published: map[string]float64{"completed": 1}, ID: "x", Split: SplitUser}
		if err := applySidecar(r, "x.setup.yaml", data); err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("multi-line error %q", err)
			}
			return
		}
		if r.ID != "x" || r.Split != SplitUser || r.Published["completed"] != 1 {
			t.Fatalf("the sidecar overwrote the file's own fields: %+v", r)
		}
	})
}

// A detailed result replays its own per-request lengths, and the sim
// command names the file for them.
func TestLoadResultRunsReplaysDetailedLengths(t *testing.T) {
	file := results("detailed.json")
	runs, err := LoadResultRuns([]string{file, results("with-metadata.json")})
	if err != nil {
		t.Fatal(err)
	}
	detailed, plain := runs[0], runs[1]
	if len(detailed.lengths) != 50 || detailed.lengthsFile != file || detailed.lengths[1] != (workload.RequestLengths{Input: 227, Output: 128}) {
		t.Fatalf("detailed run: %d lengths from %q", len(detailed.lengths), detailed.lengthsFile)
	}
	if plain.lengths != nil {
		t.Errorf("a result without input_lens got lengths")
	}
	rep, err := Evaluate(t.Context(), nil, runs[:1], Options{})
	if err != nil {
		t.Fatal(err)
	}
	r := rep.Results[0]
	if !r.Simulated() || !strings.Contains(r.CommandLine(), "--random-lengths-from "+file) || strings.Contains(r.CommandLine(), "--random-input-len") {
		t.Errorf("%q, command %q: want it simulated from the file's lengths", r.Unsimulable, r.CommandLine())
	}
}

// A result's backend says which API its client called: a chat API
// (vLLM's "backend", or 0.9's "endpoint_type" beside a default backend) is
// simulated with the server's chat preparation; a completions API, or a
// name sim does not know, without.
func TestLoadResultRunsChatBackend(t *testing.T) {
	src, err := os.ReadFile(results("with-metadata.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		replace, want string
	}{
		{`"backend": "openai-chat"`, "openai-chat"},
		{`"backend": "vllm"`, ""},
		{`"backend": "tensorrt-llm"`, ""},
		{`"backend": "vllm", "endpoint_type": "openai-chat"`, "openai-chat"},
		{`"endpoint_type": "openai-chat"`, "openai-chat"},
	} {
		path := filepath.Join(t.TempDir(), "run.json")
		data := bytes.Replace(src, []byte(`"backend": "vllm"`), []byte(tt.replace), 1)
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		runs, err := LoadResultRuns([]string{path})
		if err != nil {
			t.Fatal(err)
		}
		if got := runs[0].Workload.Backend; got != tt.want {
			t.Errorf("%s: workload backend %q, want %q", tt.replace, got, tt.want)
		}
	}
}

// TestUserResultBeyondPeak: a user's result whose setup names a model its
// GPU could not have run at the published rate is listed with the
// arithmetic instead of entering the error tables: Qwen2-0.5B's 50 prompts
// at 4/s, labelled as Llama-3.3-70B on an A10G, would need 1.5× the A10G's
// peak.
func TestUserResultBeyondPeak(t *testing.T) {
	dir := t.TempDir()
	data, err := os.ReadFile(results("with-metadata.json"))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "mislabelled.json")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path+".setup.yaml", []byte("gpu: A10G\nmodel: Llama-3.3-70B\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	runs, err := LoadResultRuns([]string{path})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Evaluate(t.Context(), nil, runs, Options{})
	if err != nil {
		t.Fatal(err)
	}
	r := rep.Results[0]
	if r.Simulated() || !strings.Contains(r.Unsimulable, "tokens/s through the model") || !strings.Contains(r.Unsimulable, "not what its setup says") {
		t.Errorf("mislabelled result: unsimulable %q", r.Unsimulable)
	}
}
