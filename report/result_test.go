package report

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/servebench/servebench/internal/golden"

	"github.com/servebench/servebench/metrics"
)

func checkGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	golden.CheckFile(t, filepath.Join("testdata", name), got)
}

func dist(mean, median, std, p99 float64) metrics.Distribution {
	return metrics.Distribution{Count: 1, Mean: mean, Median: median, Std: std, Percentiles: []metrics.PercentileValue{{P: 99, Value: p99}}}
}

// vllmCaptured rebuilds the summary behind the real vLLM output in testdata.
func vllmCaptured() *Result {
	return &Result{
		Info: RunInfo{
			Date: time.Date(2026, 11, 22, 6, 28, 13, 0, time.UTC), Backend: "vllm", EndpointType: "vllm",
			ModelID: "tiny", TokenizerID: "http://127.0.0.1:8090", NumPrompts: 50, RequestRate: 4, Burstiness: 1,
		},
		Summary: metrics.Summary{
			Completed: 50, Duration: 11688620275 * time.Nanosecond,
			TotalInput: 6350, TotalOutput: 3200,
			RequestThroughput: 4.277664841841243, OutputThroughput: 273.7705498778395, TotalTokenThroughput: 817.0339847916774,
			TTFT: dist(160.38567965998482, 104.96858349983995, 141.75635671136348, 550.8216260299922),
			TPOT: dist(9.550653998730056, 10.027436857141101, 4.956037248638736, 17.059438420633736),
			ITL:  dist(9.40142942156264, 7.942532500010202, 13.688273226460934, 55.87923985989729),
		},
	}
}

// Every row vLLM printed must come out byte for byte, trailing spaces
// included; rows vLLM added later (failed, peak) may be extra, and the one
// label vLLM since re-cased ("Total Token throughput") is compared case-blind.
func TestTextBlockMatchesVLLMLabelForLabel(t *testing.T) {
	captured, err := os.ReadFile("testdata/vllm-benchmark_serving-stdout.txt")
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := WriteText(&b, vllmCaptured()); err != nil {
		t.Fatal(err)
	}
	ours := map[string]bool{}
	for _, l := range strings.Split(b.String(), "\n") {
		ours[strings.ToLower(l)] = true
	}
	inBlock := false
	matched := 0
	for _, l := range strings.Split(string(captured), "\n") {
		if strings.HasPrefix(l, "============ Serving") {
			inBlock = true
		}
		if !inBlock {
			continue
		}
		if !ours[strings.ToLower(l)] {
			t.Errorf("vLLM line not reproduced exactly: %q\nours:\n%s", l, b.String())
		}
		matched++
		if l == strings.Repeat("=", 50) {
			break
		}
	}
	if matched < 20 {
		t.Fatalf("only %d lines of the captured block were checked; the capture is not what this test expects", matched)
	}
}

func TestTextAndJSONGolden(t *testing.T) {
	r := vllmCaptured()
	r.Info.MaxConcurrency = 8
	r.Info.PercentileMetrics = []string{"ttft", "tpot", "itl", "e2el"}
	r.Info.Percentiles = []float64{50, 99.9}
	r.Info.Metadata = [][2]string{{"gpu", "H100"}, {"run", "3"}}
	g := 3.5
	r.Summary.RequestGoodput = &g
	r.Summary.Failed = 2
	r.Summary.MaxOutputTokensPerS = 401
	r.Summary.MaxConcurrentRequests = 7
	d := metrics.Distribution{Count: 3, Mean: 1.5, Median: 1.25, Std: 0.5, Max: 3, Percentiles: []metrics.PercentileValue{{P: 50, Value: 1.25}, {P: 99.9, Value: 2.99}}}
	r.Summary.TTFT, r.Summary.TPOT, r.Summary.ITL, r.Summary.E2EL = d, d, d, d
	r.Summary.SendLag = metrics.Distribution{Count: 3, Max: 0.9, Percentiles: []metrics.PercentileValue{{P: 50, Value: 0.1}, {P: 99, Value: 0.8}}}
	r.Records = []metrics.Record{
		{Index: 0, Start: time.Second, TTFT: 100 * time.Millisecond, Latency: 300 * time.Millisecond, ITL: []time.Duration{100 * time.Millisecond, 100 * time.Millisecond}, PromptLen: 10, OutputLen: 3, Success: true, GeneratedText: "a b c"},
		{Index: 1, Start: 2 * time.Second, Dispatched: 1500 * time.Millisecond, PromptLen: 11, Success: false, Error: "HTTP 503: busy"},
		{Index: 2, Warmup: true, Success: true},
	}
	r.Extra = []Section{{"engine", map[string]any{"steps": 12}}}

	var text bytes.Buffer
	if err := WriteText(&text, r); err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "result.golden.txt", text.Bytes())

	for _, detailed := range []bool{false, true} {
		js, err := JSON(r, detailed)
		if err != nil {
			t.Fatal(err)
		}
		var decoded map[string]any
		if err := json.Unmarshal(js, &decoded); err != nil {
			t.Fatalf("JSON is not valid: %v\n%s", err, js)
		}
		for _, key := range []string{"date", "backend", "model_id", "num_prompts", "request_rate", "burstiness", "max_concurrency", "duration", "completed", "failed", "total_input_tokens", "total_output_tokens", "request_throughput", "request_goodput", "output_throughput", "total_token_throughput", "max_output_tokens_per_s", "max_concurrent_requests", "mean_ttft_ms", "median_ttft_ms", "std_ttft_ms", "p50_ttft_ms", "p99.9_ttft_ms", "p99.9_e2el_ms", "gpu", "run", "engine"} {
			if _, ok := decoded[key]; !ok {
				t.Errorf("detailed=%v: key %q missing", detailed, key)
			}
		}
		_, hasTTFTs := decoded["ttfts"]
		if hasTTFTs != detailed {
			t.Errorf("detailed=%v but ttfts present=%v", detailed, hasTTFTs)
		}
		if detailed {
			if n := len(decoded["ttfts"].([]any)); n != 2 {
				t.Errorf("ttfts has %d entries, want 2 (warmup excluded)", n)
			}
			checkGolden(t, "result.detailed.golden.json", js)
		} else {
			checkGolden(t, "result.golden.json", js)
		}
	}
}

// vLLM's own JSON must carry the same values our JSON would for the same
// summary, key for key (the keys both versions have).
func TestJSONKeysAgreeWithVLLMCapture(t *testing.T) {
	raw, err := os.ReadFile("testdata/vllm-4.0qps-tiny-20261122-062813.json")
	if err != nil {
		t.Fatal(err)
	}
	var theirs map[string]any
	if err := json.Unmarshal(raw, &theirs); err != nil {
		t.Fatal(err)
	}
	js, err := JSON(vllmCaptured(), false)
	if err != nil {
		t.Fatal(err)
	}
	var ours map[string]any
	if err := json.Unmarshal(js, &ours); err != nil {
		t.Fatal(err)
	}
	compared := 0
	for k, v := range theirs {
		if k == "request_goodput:" { // a typo in that vLLM version; we write request_goodput
			k = "request_goodput"
		}
		o, ok := ours[k]
		if !ok {
			t.Errorf("vLLM key %q missing from our JSON", k)
			continue
		}
		if fv, isNum := v.(float64); isNum {
			if of, _ := o.(float64); math.Abs(of-fv) > 1e-9*math.Max(1, math.Abs(fv)) {
				t.Errorf("key %q: ours %v, vLLM %v", k, o, v)
			}
		} else if v != o {
			t.Errorf("key %q: ours %v, vLLM %v", k, o, v)
		}
		compared++
	}
	if compared < 20 {
		t.Fatalf("compared only %d keys", compared)
	}
}

func TestResultFilenameFollowsVLLM(t *testing.T) {
	date := time.Date(2026, 11, 22, 6, 28, 13, 0, time.UTC)
	tests := []struct {
		in   RunInfo
		want string
	}{
		{RunInfo{Backend: "vllm", RequestRate: 4, ModelID: "tiny", Date: date}, "vllm-4.0qps-tiny-20261122-062813.json"},
		{RunInfo{Backend: "openai", RequestRate: 0.25, ModelID: "m", Date: date}, "openai-0.25qps-m-20261122-062813.json"},
		{RunInfo{Backend: "vllm", Label: "h100", RequestRate: math.Inf(1), MaxConcurrency: 16, ModelID: "meta-llama/Llama-3.1-8B", Date: date}, "h100-infqps-concurrency16-Llama-3.1-8B-20261122-062813.json"},
	}
	for _, tt := range tests {
		if got := ResultFilename(&tt.in); got != tt.want {
			t.Errorf("ResultFilename = %q, want %q", got, tt.want)
		}
	}
	if got := RecordsFilename("results/x.json"); got != "results/x.records.jsonl" {
		t.Errorf("RecordsFilename = %q", got)
	}
}

func TestSummaryJSON(t *testing.T) {
	r := vllmCaptured()
	d := metrics.Distribution{Mean: 10, Percentiles: []metrics.PercentileValue{{P: 50, Value: 9}, {P: 95, Value: 19}, {P: 99, Value: 29}}}
	r.Summary.E2EL, r.Summary.TTFT, r.Summary.TPOT, r.Summary.TokensPerSecond = d, d, d, d
	js, err := SummaryJSON(r)
	if err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "summary.golden.json", js)
}

// vLLM writes rates as Python floats ("4.0", "1.0") and keeps per-request
// lists out of the file unless --save-detailed; both must match its bytes.
func TestJSONRateAndListsAsVLLMWritesThem(t *testing.T) {
	raw, err := os.ReadFile("testdata/vllm-4.0qps-tiny-20261122-062813.json")
	if err != nil {
		t.Fatal(err)
	}
	const want = `"num_prompts": 50, "request_rate": 4.0, "burstiness": 1.0, "max_concurrency": null`
	if !bytes.Contains(raw, []byte(want)) {
		t.Fatalf("the vLLM capture no longer contains %s", want)
	}
	tests := []struct {
		name      string
		rate      float64
		burst     float64
		detailed  bool
		wantBytes string
		wantLists bool
	}{
		{"vllm capture", 4, 1, false, want, false},
		{"fractional", 0.25, 0.5, false, `"request_rate": 0.25, "burstiness": 0.5,`, false},
		{"infinite", math.Inf(1), 1, false, `"request_rate": "inf", "burstiness": 1.0,`, false},
		{"detailed", 4, 1, true, want, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := vllmCaptured()
			r.Info.RequestRate, r.Info.Burstiness = tt.rate, tt.burst
			r.Records = []metrics.Record{{Index: 0, Start: time.Second, Latency: time.Second, Success: true, OutputLen: 1}}
			js, err := JSON(r, tt.detailed)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Contains(js, []byte(tt.wantBytes)) {
				t.Errorf("JSON lacks %s:\n%s", tt.wantBytes, js)
			}
			for _, key := range []string{"input_lens", "output_lens", "ttfts", "itls", "latencies", "start_times", "queue_times", "generated_texts", "errors"} {
				if got := bytes.Contains(js, []byte(`"`+key+`"`)); got != tt.wantLists {
					t.Errorf("detailed=%v: list %q present=%v", tt.detailed, key, got)
				}
			}
		})
	}
}

// Resends after closed reused connections show only when they happened, so
// vLLM's block stays byte-identical otherwise.
func TestRetriesReportedOnlyWhenNonzero(t *testing.T) {
	for _, tc := range []struct {
		retries, reused int
		wantLine        string
	}{
		{0, 0, ""},
		{0, 40, ""},
		{7, 40, "Resends (reused connection had closed):  7         \nRequests answered on reused connections: 40        \n"},
	} {
		r := vllmCaptured()
		r.Summary.Retries, r.Summary.ConnReused = tc.retries, tc.reused
		var text bytes.Buffer
		if err := WriteText(&text, r); err != nil {
			t.Fatal(err)
		}
		hasLine := strings.Contains(text.String(), "Resends (")
		if hasLine != (tc.wantLine != "") || (hasLine && !strings.Contains(text.String(), tc.wantLine)) {
			t.Errorf("retries %d: text block\n%s\nwant line %q", tc.retries, text.String(), tc.wantLine)
		}
		js, err := JSON(r, false)
		if err != nil {
			t.Fatal(err)
		}
		wantKeys := tc.retries > 0 || tc.reused > 0
		if got := bytes.Contains(js, []byte(`"retries": `)) && bytes.Contains(js, []byte(`"connections_reused": `)); got != wantKeys {
			t.Errorf("retries %d reused %d: JSON keys present=%v, want %v", tc.retries, tc.reused, got, wantKeys)
		}
	}
}

// The detailed arrays are in request order, as vLLM's client gathers its
// outputs, whatever order the records finished in.
func TestDetailedArraysInRequestOrder(t *testing.T) {
	var r Result

	r.Records = []metrics.Record{
		{Index: 2, PromptLen: 30, OutputLen: 3, TTFT: 30 * time.Millisecond, Success: true},
		{Index: 0, PromptLen: 10, OutputLen: 1, TTFT: 10 * time.Millisecond, Success: true},
		{Index: 5, Warmup: true, Success: true},
		{Index: 1, PromptLen: 20, Success: false, Error: "HTTP 503"},
	}
	js, err := JSON(&r, true)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		InputLens  []int     `json:"input_lens"`
		OutputLens []int     `json:"output_lens"`
		TTFTs      []float64 `json:"ttfts"`
		Errors     []string  `json:"errors"`
	}
	if err := json.Unmarshal(js, &got); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got.InputLens, []int{10, 20, 30}) || !slices.Equal(got.OutputLens, []int{1, 0, 3}) ||
		!slices.Equal(got.TTFTs, []float64{0.01, 0, 0.03}) || !slices.Equal(got.Errors, []string{"", "HTTP 503", ""}) {
		t.Errorf("detailed arrays %+v, want them in request order 0, 1, 2", got)
	}
}
