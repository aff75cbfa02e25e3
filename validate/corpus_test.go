package validate

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// loadOne loads a single corpus file as its own corpus directory.
func loadOne(t *testing.T, src string) (*Corpus, error) {
	t.Helper()
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, filepath.Base(src)), data, 0o644); err != nil {
		t.Fatal(err)
	}
	return LoadDir(dir)
}

func TestLoadRejectsBadCorpus(t *testing.T) {
	tests := []struct {
		file string
		want string // the rest of the line after "<dir>/<file>: "
	}{
		{"unknown-key", "run r1: field splitt (line 9): unknown key"},
		{"unknown-workload-key", "run r1: field workload.input_length (line 20): unknown key"},
		{"missing-gpu", "run r1: field gpu: missing (required)"},
		{"missing-rate", "run r1: field workload.request_rate: missing (required)"},
		{"missing-source-url", "field source.url: missing (required)"},
		{"bad-split", `run r1: field split "test": must be fit or holdout`},
		{"bad-regime", `run r1: field regime "busy": must be one of offline-prefill`},
		{"bad-engine", `run r1: field engine "v2": must be v0 or v1`},
		{"bad-published-key", "run r1: field published.tokens_per_second: unknown key"},
		{"no-figures", "run r1: field published: no throughput or latency figure"},
		{"negative-figure", "run r1: field published.request_throughput -1: must be a finite number"},
		{"bad-rate", `request_rate "fast": give requests per second`},
		{"bad-dataset", `run r1: field workload.dataset "hf": must be one of random, sharegpt, sonnet, fixed`},
		{"zero-tp", "run r1: field tensor_parallel 0: must be at least 1"},
		{"bad-range-ratio", "run r1: field workload.range_ratio 1.5: must be in [0, 1)"},
		{"sharegpt-output-len-on-random", "run r1: field workload.sharegpt_output_len 128: only a sharegpt workload has one; leave it out"},
		{"sharegpt-output-len-mismatch", "run r1: field workload.sharegpt_output_len 100: every reply is that long, so output_len must be 100 too, not 128"},
		{"bad-backend", `run r1: field workload.backend "openai-chatty": give vLLM's --backend name (openai, vllm, openai-chat, ...) or leave it out for a completions API`},
		{"backend-offline", `run r1: field workload.backend "openai-chat": only a serving benchmark calls an API; leave it out`},
		{"prefix-not-below-input", "run r1: field workload.prefix_len 512: must be below input_len 512, which counts the whole prompt, the shared prefix included"},
		{"latency-without-batch", "run r1: field workload.batch_size: missing (required)"},
		{"throughput-with-rate", "run r1: fields workload.request_rate and max_concurrency: the throughput benchmark sends every request at once"},
		{"duplicate-run", `run r1: field id "r1": duplicate id in this file`},
		{"not-yaml", "yaml:"},
		{"empty-runs", "field runs: missing or empty"},
		{"bad-client", `run r1: field client "locust": leave it out for vLLM's benchmark client, or give inference-perf`},
		{"client-offline", `run r1: field client "inference-perf": only serving runs name their client`},
		{"id-mismatch", `field source.id "another-name": must equal the file name without .yaml ("id-mismatch")`},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			_, err := loadOne(t, filepath.Join("testdata", "bad", tt.file+".yaml"))
			if err == nil {
				t.Fatal("loaded without error")
			}
			msg := err.Error()
			if strings.Contains(msg, "\n") {
				t.Errorf("error spans lines: %q", msg)
			}
			if !strings.Contains(msg, tt.file+".yaml: ") || !strings.Contains(msg, tt.want) {
				t.Errorf("got %q, want the file and %q", msg, tt.want)
			}
		})
	}
}

func TestLoadDirRejectsWhatIsNotACorpus(t *testing.T) {
	empty := t.TempDir()
	file := filepath.Join(empty, "x.yaml")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ dir, want string }{
		{filepath.Join(empty, "missing"), "no such file"},
		{file, "is not a directory"},
		{t.TempDir(), "holds no runs"},
	} {
		if _, err := LoadDir(tt.dir); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("LoadDir(%s): %v, want %q", tt.dir, err, tt.want)
		}
	}
}

func TestBuiltinCorpusLoads(t *testing.T) {
	c, err := LoadBuiltin()
	if err != nil {
		t.Fatal(err)
	}
	if c.Name != BuiltinName || len(c.Runs) < 4 {
		t.Fatalf("built-in corpus: %s with %d runs", c.Name, len(c.Runs))
	}
	holdout := 0
	for _, r := range c.Runs {
		if r.Source == nil || r.Source.URL == "" || r.Source.Ref == "" {
			t.Errorf("%s: no source", r.FullID())
		}
		if r.Split == SplitHoldout {
			holdout++
		}
	}
	// corpus/README.md: at least half of the corpus is holdout.
	if 2*holdout < len(c.Runs) {
		t.Errorf("%d of %d runs are holdout; at least half must be", holdout, len(c.Runs))
	}
}

func TestYAMLDefaults(t *testing.T) {
	c, err := loadOne(t, filepath.Join("testdata", "unsimulable", "unsimulable.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	r := c.Runs[0]
	if r.DType != "auto" || r.KVCacheDType != "auto" || r.Workload.Burstiness != 1 || !*r.Workload.IgnoreEOS ||
		r.Workload.MaxConcurrency != 0 || r.FullID() != "unsimulable/fine" {
		t.Errorf("defaults: %+v %+v", r, r.Workload)
	}
}

// FuzzParseCorpusFile: any bytes give runs or an error, never a panic, and
// an error is one line.
func FuzzParseCorpusFile(f *testing.F) {
	for _, dir := range []string{"testdata/bad", "testdata/unsimulable", "corpus"} {
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			if strings.HasSuffix(e.Name(), ".yaml") {
				data, err := os.ReadFile(filepath.Join(dir, e.Name()))
				if err == nil {
					f.Add(data)
				}
			}
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		src, runs, err := parseCorpusFile("f.yaml", data)
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("multi-line error %q", err)
			}
			return
		}
		if src == nil || len(runs) == 0 {
			t.Fatal("no error and no runs")
		}
	})
}

// lengthsCorpus writes a one-run corpus whose run replays the lengths file
// it names, and the file itself when content is not empty.
func lengthsCorpus(t *testing.T, lengthsField, content string, published string) string {
	t.Helper()
	dir := t.TempDir()
	yamlText := `source:
  id: lengths-run
  title: "lengths fixture"
  url: https://example.invalid/lengths
  ref: "test fixture"
runs:
  - id: r1
    split: holdout
    regime: serving-low
    benchmark: serving
    gpu: H100
    gpu_count: 1
    tensor_parallel: 1
    pipeline_parallel: 1
    model: Qwen/Qwen2-7B
    vllm_version: 0.6.3
    engine: v0
    workload:
      dataset: sharegpt
      input_len: 30
      output_len: 5
      num_prompts: 3
      request_rate: 1
      ignore_eos: false
      lengths: ` + lengthsField + `
    published:
      request_throughput: 0.9
` + published
	if err := os.WriteFile(filepath.Join(dir, "lengths-run.yaml"), []byte(yamlText), 0o644); err != nil {
		t.Fatal(err)
	}
	if content != "" {
		if err := os.MkdirAll(filepath.Join(dir, "lengths"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "lengths", "r1.json"), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestCorpusLengths(t *testing.T) {
	good := `{"input_lens": [10, 20, 60, 7], "output_lens": [3, 0, 12, 9]}`
	tests := []struct {
		name, field, content, published, want string
	}{
		{"replayed", "lengths/r1.json", good, "      total_input_tokens: 90\n      total_output_tokens: 15\n", ""},
		{"missing file", "lengths/r1.json", "", "", `field workload.lengths "lengths/r1.json": open lengths/r1.json`},
		{"outside the corpus", "../r1.json", good, "", `field workload.lengths "../r1.json": give a path under lengths/`},
		{"not under lengths", "r1.json", good, "", `give a path under lengths/`},
		{"too few requests", "lengths/r1.json", `{"input_lens": [10, 20], "output_lens": [3, 4]}`, "", "2 requests, but the run sent 3"},
		{"input total differs", "lengths/r1.json", good, "      total_input_tokens: 91\n", "sum to 90 tokens, but published.total_input_tokens is 91"},
		{"output total differs", "lengths/r1.json", good, "      total_output_tokens: 16\n", "sum to 15 tokens, but published.total_output_tokens is 16"},
		{"not a result JSON", "lengths/r1.json", `[1, 2, 3]`, "", "field workload.lengths: "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := lengthsCorpus(t, tt.field, tt.content, tt.published)
			c, err := LoadDir(dir)
			if tt.want != "" {
				if err == nil {
					t.Fatalf("loaded; want an error containing %q", tt.want)
				}
				if msg := err.Error(); !strings.Contains(msg, tt.want) || !strings.Contains(msg, "lengths-run.yaml: run r1: ") || strings.Contains(msg, "\n") {
					t.Errorf("error %q: want one line naming the file, the run and %q", msg, tt.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			r := c.Runs[0]
			if got := len(r.lengths); got != 3 {
				t.Fatalf("%d lengths kept, want the run's 3", got)
			}
			p, err := newPlan(r, c, Options{})
			if err != nil {
				t.Fatal(err)
			}
			args := strings.Join(p.args, " ")
			if !strings.Contains(args, "--random-lengths-from "+filepath.Join(dir, "lengths", "r1.json")) || strings.Contains(args, "--random-input-len") {
				t.Errorf("sim args %q: want --random-lengths-from naming the file, and no mean lengths", args)
			}
			if !strings.Contains(strings.Join(p.notes, "; "), "replayed with the run's own per-request lengths") {
				t.Errorf("notes %q: want the replay said", p.notes)
			}
			sum, err := p.simulate(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			// The lengths, not the means: 10+20+60 prompt tokens, and
			// 3+1+12 generated (a reply counted as 0 tokens generated one).
			if sum.TotalInput != 90 || sum.TotalOutput != 16 {
				t.Errorf("simulated %d input and %d output tokens, want 90 and 16", sum.TotalInput, sum.TotalOutput)
			}
		})
	}
}
