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
