package report

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const (
	vllmCapture   = "testdata/compare/vllm-4.0qps-tiny-20261122-062813.json"
	sglangCapture = "testdata/compare/sglang-bench_serving.jsonl"
)

func writeResultFixture(t testing.TB, dir, name, content string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func loadOne(t *testing.T, path string) LoadedResult {
	t.Helper()
	rs, err := LoadResults(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 1 {
		t.Fatalf("%s: got %d runs, want 1", path, len(rs))
	}
	return rs[0]
}

func TestReadsCapturedVLLMAndSGLangFiles(t *testing.T) {
	tests := []struct {
		path      string
		tool      string
		label     string
		key       string
		want      float64
		wantFound bool
	}{
		{vllmCapture, "vllm", "vllm-4.0qps-tiny-20261122-062813", "p99_ttft_ms", 550.8216260299922, true},
		{vllmCapture, "vllm", "vllm-4.0qps-tiny-20261122-062813", "request_rate", 4, true},
		{vllmCapture, "vllm", "vllm-4.0qps-tiny-20261122-062813", "total_input_tokens", 6350, true},
		// "request_goodput:" is null in the capture: blank, not zero.
		{vllmCapture, "vllm", "vllm-4.0qps-tiny-20261122-062813", "request_goodput", 0, false},
		{vllmCapture, "vllm", "vllm-4.0qps-tiny-20261122-062813", "max_concurrency", 0, false},
		{vllmCapture, "vllm", "vllm-4.0qps-tiny-20261122-062813", "mean_e2el_ms", 0, false},
		{sglangCapture, "sglang", "sglang-bench_serving", "mean_e2el_ms", 553.5637433400098, true},
		{sglangCapture, "sglang", "sglang-bench_serving", "p99_e2el_ms", 845.8393848999845, true},
		{sglangCapture, "sglang", "sglang-bench_serving", "p95_itl_ms", 12.745236349974212, true},
		{sglangCapture, "sglang", "sglang-bench_serving", "completed", 50, true},
		// SGLang writes no total_token_throughput: derived from its definition.
		{sglangCapture, "sglang", "sglang-bench_serving", "total_token_throughput", (6400 + 3200) / 11.077243408999948, true},
	}
	for _, tt := range tests {
		t.Run(filepath.Base(tt.path)+"/"+tt.key, func(t *testing.T) {
			r := loadOne(t, tt.path)
			if r.Tool != tt.tool || r.Label != tt.label {
				t.Errorf("tool, label = %q, %q; want %q, %q", r.Tool, r.Label, tt.tool, tt.label)
			}
			got, found := r.Number(tt.key)
			if found != tt.wantFound || math.Abs(got-tt.want) > 1e-9 {
				t.Errorf("Number(%q) = %v, %v; want %v, %v", tt.key, got, found, tt.want, tt.wantFound)
			}
		})
	}
}

func TestGoodputQuirkKey(t *testing.T) {
	path := writeResultFixture(t, t.TempDir(), "old.json", `{"completed": 3, "request_goodput:": 2.5}`)
	if got, ok := loadOne(t, path).Number("request_goodput"); !ok || got != 2.5 {
		t.Fatalf(`"request_goodput:" read as %v, %v; want 2.5`, got, ok)
	}
}

func TestNumberNormalisesUnitsAndSpellings(t *testing.T) {
	tests := []struct {
		name, json, key string
		want            float64
		found           bool
	}{
		{"rate as string inf", `{"request_rate": "inf"}`, "request_rate", math.Inf(1), true},
		{"rate as Python Infinity", `{"request_rate": Infinity}`, "request_rate", math.Inf(1), true},
		{"rate as numeric string", `{"request_rate": "4.0"}`, "request_rate", 4, true},
		{"rate as number", `{"request_rate": 8}`, "request_rate", 8, true},
		{"NaN is missing", `{"mean_ttft_ms": NaN}`, "mean_ttft_ms", 0, false},
		{"null is missing", `{"mean_ttft_ms": null}`, "mean_ttft_ms", 0, false},
		{"text is missing", `{"mean_ttft_ms": "fast"}`, "mean_ttft_ms", 0, false},
		{"seconds to ms", `{"mean_ttft_s": 0.25}`, "mean_ttft_ms", 250, true},
		{"microseconds to ms", `{"p99_itl_us": 1500}`, "p99_itl_ms", 1.5, true},
		{"ms key wins over s key", `{"mean_ttft_ms": 1, "mean_ttft_s": 9}`, "mean_ttft_ms", 1, true},
		{"duration in ms", `{"duration_ms": 2500}`, "duration", 2.5, true},
		{"sglang e2e in s", `{"median_e2e_latency_s": 0.5}`, "median_e2el_ms", 500, true},
		{"summary-json p99", `{"ttft_ms": {"average": 10, "p50": 9, "p99": 30}}`, "p99_ttft_ms", 30, true},
		{"summary-json mean", `{"latency_ms": {"average": 12}}`, "mean_e2el_ms", 12, true},
		{"summary-json rps", `{"requests_per_second": 3.5}`, "request_throughput", 3.5, true},
		{"metadata key", `{"metadata": {"gpu_count": "2"}}`, "gpu_count", 2, true},
		{"dash spelling", `{"max_num_seqs": 64}`, "max-num-seqs", 64, true},
		{"engine setting", `{"engine": {"max_num_batched_tokens": 2048}}`, "max-num-batched-tokens", 2048, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objects, err := DecodeResultObjects([]byte(tt.json))
			if err != nil {
				t.Fatal(err)
			}
			r := LoadedResult{Fields: objects[0]}
			got, found := r.Number(tt.key)
			if found != tt.found || got != tt.want {
				t.Fatalf("Number(%q) = %v, %v; want %v, %v", tt.key, got, found, tt.want, tt.found)
			}
		})
	}
}

func TestCorruptJSONNamesFileAndOffset(t *testing.T) {
	tests := []struct {
		name, content string
		want          []string
	}{
		{"truncated", `{"completed": 50, "duration": 11.6`, []string{"byte offset 34", "line 1, column 35"}},
		{"stray character", "{\"completed\": 50,\n \"duration\": x}", []string{"byte offset 31", "line 2, column 14"}},
		{"offset after NaN is the file's", `{"a": NaN, "b": ?}`, []string{"byte offset 16"}},
		{"second line of JSONL", "{\"completed\": 1}\n{\"completed\": }\n", []string{"byte offset 31", "line 2"}},
		{"not an object", `[1, 2]`, []string{"element 0", "want a result object"}},
		{"a bare string", `"hello"`, []string{"byte offset 0", "a string"}},
		{"empty", "  \n", []string{"no result object found"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeResultFixture(t, t.TempDir(), "bad.json", tt.content)
			_, err := LoadResults(path)
			if err == nil {
				t.Fatal("no error")
			}
			msg := err.Error()
			if !strings.Contains(msg, path) {
				t.Errorf("error %q does not name the file", msg)
			}
			for _, w := range tt.want {
				if !strings.Contains(msg, w) {
					t.Errorf("error %q lacks %q", msg, w)
				}
			}
			if strings.Contains(msg, "\n") {
				t.Errorf("error is not one line: %q", msg)
			}
		})
	}
}

func TestAppendResultFileHoldsSeveralRuns(t *testing.T) {
	path := writeResultFixture(t, t.TempDir(), "runs.json",
		"{\"completed\": 1, \"request_rate\": 2}\n{\"completed\": 2, \"request_rate\": 4, \"label\": \"fast\"}\n")
	rs, err := LoadResults(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 2 || rs[0].Label != "runs#1" || rs[1].Label != "fast" {
		t.Fatalf("got %d runs labelled %v", len(rs), resultLabels(rs))
	}
}

func resultLabels(rs []LoadedResult) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.Label
	}
	return out
}

func TestLoadDirectoryWalksResultsAndManifests(t *testing.T) {
	dir := t.TempDir()
	writeSweepFixture(t, filepath.Join(dir, "sweepA"), "A", 10, []float64{4, 2}, false)
	writeResultFixture(t, dir, "loose/vllm.json", `{"completed": 5, "request_rate": 1, "metadata": {"label": "meta"}}`)
	writeResultFixture(t, dir, "loose/vllm.pytorch.json", `{"traceEvents": []}`)
	writeResultFixture(t, dir, "loose/package.json", `{"name": "not a result"}`)
	// Records beside their result are that run's, not a run of their own.
	writeResultFixture(t, dir, "loose/vllm.records.jsonl", `{"index": 0, "start_ns": 0, "latency_ns": 5}`)
	// A point that never finished must not show up.
	manifest := filepath.Join(dir, "sweepA", "manifest.json")
	data, err := os.ReadFile(manifest)
	if err != nil {
		t.Fatal(err)
	}
	data = []byte(strings.Replace(string(data), `"status": "done"`, `"status": "failed"`, 1))
	if err := os.WriteFile(manifest, data, 0o644); err != nil {
		t.Fatal(err)
	}

	rs, err := LoadResults(dir)
	if err != nil {
		t.Fatal(err)
	}
	got := resultLabels(rs)
	want := []string{"meta", "A: request-rate=2"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("labels = %q, want %q", got, want)
	}
	if rs[1].Series != "A" || len(rs[1].Params) != 1 || rs[1].Params[0] != (Param{"request-rate", "2"}) {
		t.Errorf("sweep run carries series %q params %v", rs[1].Series, rs[1].Params)
	}
	if v, ok := rs[1].Number("request-rate"); !ok || v != 2 {
		t.Errorf("swept parameter lookup = %v, %v", v, ok)
	}

	// Named explicitly, even a file with no benchmark keys is a row.
	explicit, err := LoadResults(filepath.Join(dir, "loose/package.json"), filepath.Join(dir, "sweepA/manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(explicit) != 2 || explicit[0].Label != "package" {
		t.Fatalf("explicit load gave %v", resultLabels(explicit))
	}
}

func TestLoadResultsErrors(t *testing.T) {
	if _, err := LoadResults(); err == nil || !strings.Contains(err.Error(), "pass at least one") {
		t.Errorf("no paths: %v", err)
	}
	missing := filepath.Join(t.TempDir(), "nope.json")
	if _, err := LoadResults(missing); err == nil || !strings.Contains(err.Error(), missing) {
		t.Errorf("missing file: %v", err)
	}
	dir := t.TempDir()
	bad := writeResultFixture(t, dir, "deep/bad.json", `{"completed": `)
	if _, err := LoadResults(dir); err == nil || !strings.Contains(err.Error(), bad) {
		t.Errorf("corrupt file in a walked directory: %v", err)
	}
}

func TestRequestsFromRecordsAndDetailedArraysAgree(t *testing.T) {
	dir := t.TempDir()
	run := syntheticRun{label: "r", rate: 5, capacity: 10, requests: 40, outputLen: 8, seed: 3, detailed: true}
	path := run.write(t, dir)
	fromRecords, err := loadOne(t, path).Requests()
	if err != nil {
		t.Fatal(err)
	}
	recs := run.records()
	if len(fromRecords) != len(recs) {
		t.Fatalf("got %d requests, want %d", len(fromRecords), len(recs))
	}
	// The same run as vLLM's --save-detailed arrays, with perf_counter
	// start instants far from zero.
	detailed := LoadedResult{Fields: map[string]any{}}
	var ttfts, lats, starts, ins, outs, itls, errs []any
	for _, r := range recs {
		ttfts = append(ttfts, r.TTFT.Seconds())
		ins = append(ins, float64(r.PromptLen))
		lats = append(lats, r.Latency.Seconds())
		starts = append(starts, 5000+r.Start.Seconds())
		outs = append(outs, float64(r.OutputLen))
		var gaps []any
		for _, g := range r.ITL {
			gaps = append(gaps, g.Seconds())
		}
		itls = append(itls, gaps)
		errs = append(errs, "")
	}
	detailed.Fields["ttfts"], detailed.Fields["latencies"], detailed.Fields["start_times"] = ttfts, lats, starts
	detailed.Fields["output_lens"], detailed.Fields["itls"], detailed.Fields["errors"] = outs, itls, errs
	detailed.Fields["input_lens"] = ins
	fromArrays, err := detailed.Requests()
	if err != nil {
		t.Fatal(err)
	}
	first := recs[0].Start.Seconds()
	for i := range recs {
		a, b := fromRecords[i], fromArrays[i]
		if math.Abs(a.TTFT-b.TTFT) > 1e-6 || math.Abs(a.Latency-b.Latency) > 1e-6 || len(a.ITL) != len(b.ITL) {
			t.Fatalf("request %d: records %+v, arrays %+v", i, a, b)
		}
		if a.PromptLen != recs[i].PromptLen || b.PromptLen != recs[i].PromptLen || a.PromptLen <= 0 {
			t.Fatalf("request %d prompt length: records %d, arrays %d, want %d", i, a.PromptLen, b.PromptLen, recs[i].PromptLen)
		}
		if math.Abs(a.Start-b.Start) > 1e-6 || math.Abs(a.Start-(recs[i].Start.Seconds()-first)) > 1e-9 {
			t.Fatalf("request %d start: records %v, arrays %v", i, a.Start, b.Start)
		}
		tpotA, okA := a.TPOT()
		tpotB, okB := b.TPOT()
		if okA != okB || math.Abs(tpotA-tpotB) > 1e-6 {
			t.Fatalf("request %d TPOT: %v %v vs %v %v", i, tpotA, okA, tpotB, okB)
		}
	}
}

func TestCorruptRecordsFileNamesLine(t *testing.T) {
	dir := t.TempDir()
	path := writeResultFixture(t, dir, "run.json", `{"completed": 2}`)
	writeResultFixture(t, dir, "run.records.jsonl", "{\"index\": 0, \"start_ns\": 5}\n{\"index\": 1, \"start_ns\": \"soon\"}\n")
	_, err := loadOne(t, path).Requests()
	if err == nil || !strings.Contains(err.Error(), "run.records.jsonl line 2") {
		t.Fatalf("error = %v, want it to name run.records.jsonl line 2", err)
	}
}

func FuzzDecodeResultObjects(f *testing.F) {
	for _, p := range []string{vllmCapture, sglangCapture} {
		data, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
		f.Add(data[:len(data)/2])
	}
	f.Add([]byte(`{"request_rate": Infinity, "x": -Infinity, "y": NaN, "s": "NaN"}`))
	f.Add([]byte(`[{"completed": 1}, {"completed": "2"}]`))
	f.Add([]byte(`{"ttft_ms": {"p99": 1}, "metadata": {"label": 3}, "engine": []}`))
	f.Add([]byte(`{"ttfts": [0.1, "x"], "itls": [[0.01], 5], "start_times": [null]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		objects, err := DecodeResultObjects(data)
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("multi-line error: %q", err)
			}
			return
		}
		rs := make([]LoadedResult, len(objects))
		for i, o := range objects {
			if o == nil {
				t.Fatal("nil object decoded")
			}
			rs[i] = LoadedResult{Fields: o, Label: "fuzz", Tool: detectTool(o)}
			for k := range o {
				rs[i].Number(k)
				rs[i].Text(k)
			}
			if _, err := rs[i].Requests(); err != nil {
				t.Fatalf("detailed arrays never fail: %v", err)
			}
		}
		table := NewCompareTable(rs, CompareOptions{GroupBy: "request_rate"})
		for _, format := range []string{"term", "md", "csv", "json"} {
			report, err := table.Reporter(format)
			if err != nil {
				t.Fatal(err)
			}
			if err := report(nopWriter{}); err != nil {
				t.Fatalf("%s: %v", format, err)
			}
		}
		if _, err := BuildHTMLReport(rs, HTMLOptions{}); err != nil {
			t.Fatal(err)
		}
	})
}

type nopWriter struct{}

func (nopWriter) Write(p []byte) (int, error) { return len(p), nil }

func TestCorruptResultIsSkippedWithAWarningUnlessStrict(t *testing.T) {
	good := `{"completed": 5, "duration": 2, "label": "good"}`
	tests := []struct {
		name  string
		files map[string]string
		args  func(dir string) []string
	}{
		{"truncated file in a walked directory",
			map[string]string{"a.json": good, "b.json": `{"completed": 50, "duration": 11.6`},
			func(dir string) []string { return []string{dir} }},
		{"truncated file named explicitly",
			map[string]string{"a.json": good, "b.json": `{"completed": 50, "dur`},
			func(dir string) []string { return []string{filepath.Join(dir, "a.json"), filepath.Join(dir, "b.json")} }},
		{"sweep point left half-written",
			map[string]string{
				"sweep/manifest.json":  `{"kind": "servebench-sweep", "points": [{"name": "p1", "status": "done", "result": "p1/result.json"}, {"name": "p2", "status": "done", "result": "p2/result.json"}]}`,
				"sweep/p1/result.json": good,
				"sweep/p2/result.json": `{"completed": `,
			},
			func(dir string) []string { return []string{dir} }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			for name, content := range tt.files {
				writeResultFixture(t, dir, name, content)
			}
			results, warnings, err := LoadResultsWith(LoadOptions{}, tt.args(dir)...)
			if err != nil {
				t.Fatalf("lenient load failed: %v", err)
			}
			if len(results) != 1 || !strings.HasPrefix(results[0].Label, "good") {
				t.Fatalf("got %d runs %v, want the one good run", len(results), resultLabels(results))
			}
			if len(warnings) != 1 {
				t.Fatalf("got %d warnings %v, want 1", len(warnings), warnings)
			}
			msg := warnings[0].String()
			if !strings.Contains(msg, "result.json") && !strings.Contains(msg, "b.json") || strings.Contains(msg, "\n") {
				t.Errorf("warning %q does not name the file on one line", msg)
			}
			if _, err := LoadResults(tt.args(dir)...); err == nil {
				t.Error("strict load accepted the corrupt file")
			}
		})
	}
}

func TestManifestPathsMustStayInsideTheRunDirectory(t *testing.T) {
	tests := []struct {
		name   string
		result func(base string) string
	}{
		{"parent traversal", func(string) string { return "../secret.json" }},
		{"traversal through a point", func(string) string { return "p0/../../secret.json" }},
		{"absolute path", func(base string) string { return filepath.ToSlash(filepath.Join(base, "secret.json")) }},
		{"symlink out", func(string) string { return "link/secret.json" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			base := t.TempDir()
			writeResultFixture(t, base, "secret.json", `{"completed": 99, "label": "outside"}`)
			dir := filepath.Join(base, "run")
			writeResultFixture(t, dir, "p0/result.json", `{"completed": 1}`)
			if err := os.Symlink(base, filepath.Join(dir, "link")); err != nil {
				t.Fatal(err)
			}
			result := tt.result(base)
			manifest := fmt.Sprintf(`{"kind": "servebench-sweep", "points": [{"name": "p0", "status": "done", "result": "p0/result.json"}, {"name": "evil", "status": "done", "result": %q}]}`, result)
			writeResultFixture(t, dir, "manifest.json", manifest)

			_, err := LoadResults(dir)
			if err == nil || !strings.Contains(err.Error(), "evil") {
				t.Fatalf("strict load followed %q: err = %v", result, err)
			}
			results, warnings, err := LoadResultsWith(LoadOptions{}, dir)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range results {
				if v, _ := r.Number("completed"); v == 99 {
					t.Fatalf("read %s outside the run directory through %q", r.Path, result)
				}
			}
			if len(results) != 1 || len(warnings) != 1 {
				t.Errorf("got %d runs and warnings %v, want the inside run and one warning", len(results), warnings)
			}
		})
	}
}

func TestFileNameLabelsThatClashUseThePath(t *testing.T) {
	dir := t.TempDir()
	a := writeResultFixture(t, dir, "baseline/rate-2/result.json", `{"completed": 1}`)
	b := writeResultFixture(t, dir, "chunked/rate-2/result.json", `{"completed": 2}`)
	c := writeResultFixture(t, dir, "chunked/rate-4/result.json", `{"completed": 3}`)
	d := writeResultFixture(t, dir, "named/result.json", `{"completed": 4, "label": "mine"}`)
	e := writeResultFixture(t, dir, "solo.json", `{"completed": 5}`)
	rs, err := LoadResults(a, b, c, d, e)
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(resultLabels(rs), "|")
	want := "baseline/rate-2/result|chunked/rate-2/result|chunked/rate-4/result|mine|solo"
	if got != want {
		t.Errorf("labels = %s, want %s", got, want)
	}
}
