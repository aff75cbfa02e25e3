package bench

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
)

// vllmV0Page is the shape of vLLM V0's page (gpu_* names, swapped
// requests), with two engines to check summing over label sets.
const vllmV0Page = `# HELP vllm:num_requests_running Number of requests currently running on GPU.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{model_name="m",engine="0"} 3.0
vllm:num_requests_running{model_name="m",engine="1"} 2.0
# HELP vllm:num_requests_swapped Number of requests swapped to CPU.
# TYPE vllm:num_requests_swapped gauge
vllm:num_requests_swapped{model_name="m"} 1.0
# HELP vllm:num_requests_waiting Number of requests waiting to be processed.
# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{model_name="m",engine="0"} 4.0
vllm:num_requests_waiting{model_name="m",engine="1"} 0.0
# HELP vllm:gpu_cache_usage_perc GPU KV-cache usage. 1 means 100 percent usage.
# TYPE vllm:gpu_cache_usage_perc gauge
vllm:gpu_cache_usage_perc{model_name="m",engine="0"} 0.5
vllm:gpu_cache_usage_perc{model_name="m",engine="1"} 0.25
# HELP vllm:num_preemptions_total Cumulative number of preemption from the engine.
# TYPE vllm:num_preemptions_total counter
vllm:num_preemptions_total{model_name="m"} 7.0
# HELP vllm:prompt_tokens_total Number of prefill tokens processed.
# TYPE vllm:prompt_tokens_total counter
vllm:prompt_tokens_total{model_name="m"} 1000.0
# HELP vllm:generation_tokens_total Number of generation tokens processed.
# TYPE vllm:generation_tokens_total counter
vllm:generation_tokens_total{model_name="m"} 500.0
`

// vllmV1Page has vLLM 0.8's V1 names: gpu_prefix_cache counters, NaN
// where an engine has not reported yet.
const vllmV1Page = `# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="m"} 8.0
# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{engine="0",model_name="m"} 1.0
# TYPE vllm:gpu_cache_usage_perc gauge
vllm:gpu_cache_usage_perc{engine="0",model_name="m"} 0.75
vllm:gpu_cache_usage_perc{engine="1",model_name="m"} NaN
# TYPE vllm:gpu_prefix_cache_queries_total counter
vllm:gpu_prefix_cache_queries_total{engine="0",model_name="m"} 2000.0
# TYPE vllm:gpu_prefix_cache_hits_total counter
vllm:gpu_prefix_cache_hits_total{engine="0",model_name="m"} 500.0
# TYPE vllm:num_preemptions_total counter
vllm:num_preemptions_total{engine="0",model_name="m"} 2.0
`

// vllmNewPage has the current names (kv_cache_usage_perc, prefix_cache_*).
func vllmNewPage(running, waiting, kv, hits, queries, preempt float64) string {
	return fmt.Sprintf(`# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{model_name="m"} %g
# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{model_name="m"} %g
# TYPE vllm:kv_cache_usage_perc gauge
vllm:kv_cache_usage_perc{model_name="m"} %g
# TYPE vllm:prefix_cache_hits_total counter
vllm:prefix_cache_hits_total{model_name="m"} %g
# TYPE vllm:prefix_cache_queries_total counter
vllm:prefix_cache_queries_total{model_name="m"} %g
# TYPE vllm:num_preemptions_total counter
vllm:num_preemptions_total{model_name="m"} %g
# TYPE vllm:time_to_first_token_seconds histogram
vllm:time_to_first_token_seconds_bucket{model_name="m",le="0.1"} 1
vllm:time_to_first_token_seconds_bucket{model_name="m",le="+Inf"} 2
vllm:time_to_first_token_seconds_sum{model_name="m"} 0.3
vllm:time_to_first_token_seconds_count{model_name="m"} 2
`, running, waiting, kv, hits, queries, preempt)
}

func readScrapeFile(t testing.TB, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "scrape", name))
	if err != nil {
		t.Fatalf("captured /metrics page missing (copy it from shared/examples/sse): %v", err)
	}
	return string(b)
}

func TestSampleFromPages(t *testing.T) {
	tests := []struct {
		name string
		page string
		want ServerSample
	}{
		{"llm-d vLLM emulator (captured)", readScrapeFile(t, "llmd-vllm-emulated-metrics.txt"), ServerSample{PromptTokens: 13, GenerationTokens: 10}},
		{"llama.cpp (captured)", readScrapeFile(t, "llamacpp-metrics.txt"), ServerSample{KVCacheUsage: 0.00213623, PromptTokens: 20, GenerationTokens: 18}},
		{"vLLM V0, two engines", vllmV0Page, ServerSample{Running: 5, Waiting: 4, Swapped: 1, KVCacheUsage: 0.375, Preemptions: 7, PromptTokens: 1000, GenerationTokens: 500}},
		{"vLLM V1, NaN skipped", vllmV1Page, ServerSample{Running: 8, Waiting: 1, KVCacheUsage: 0.75, PrefixHits: 500, PrefixQueries: 2000, Preemptions: 2}},
		{"vLLM current names", vllmNewPage(2, 3, 0.5, 10, 40, 1), ServerSample{Running: 2, Waiting: 3, KVCacheUsage: 0.5, PrefixHits: 10, PrefixQueries: 40, Preemptions: 1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fams, err := parseMetrics(strings.NewReader(tc.page))
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tc.want, sampleFrom(fams)); d != "" {
				t.Errorf("sample (-want +got):\n%s", d)
			}
		})
	}
}

func TestParseMetricsRejectsGarbage(t *testing.T) {
	for _, page := range []string{
		"", "<html>Not found</html>", "vllm:num_requests_running{model_name=\"m\"} notanumber\n",
		"# TYPE x gauge\n# TYPE x counter\n", "vllm:x{a=\"b\" 1\n", "\x00\xff\xfe",
	} {
		if _, err := parseMetrics(strings.NewReader(page)); err == nil {
			t.Errorf("parseMetrics(%q) accepted garbage", page)
		}
	}
}

func TestProbe(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/vllm/metrics", func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, vllmV0Page) })
	mux.HandleFunc("/llamacpp/metrics", func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, readScrapeFile(t, "llamacpp-metrics.txt"))
	})
	mux.HandleFunc("/other/metrics", func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "# TYPE go_goroutines gauge\ngo_goroutines 12\n")
	})
	mux.HandleFunc("/html/metrics", func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "<html><body>hi</body></html>") })
	// llama.cpp started without --metrics (its server.cpp's error body).
	mux.HandleFunc("/llamacpp-off/metrics", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		w.WriteHeader(http.StatusNotImplemented)
		_, _ = io.WriteString(w, `{"error":{"code":501,"message":"This server does not support metrics endpoint. Start it with `+"`--metrics`"+`","type":"not_supported_error"}}`)
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	tests := []struct {
		path    string
		wantErr string
	}{
		{"/vllm/metrics", ""},
		{"/llamacpp/metrics", ""},
		{"/other/metrics", "has no vllm:*, llamacpp:* or sglang:* metrics"},
		{"/html/metrics", "not a Prometheus text page"},
		{"/missing/metrics", "/missing/metrics answered HTTP 404 Not Found: 404 page not found"},
		{"/llamacpp-off/metrics", "/llamacpp-off/metrics answered HTTP 501 Not Implemented: This server does not support metrics endpoint. Start it with `--metrics`"},
	}
	for _, tc := range tests {
		err := NewScraper(srv.URL+tc.path, srv.Client(), time.Second).Probe(context.Background())
		switch {
		case tc.wantErr == "" && err != nil:
			t.Errorf("Probe(%s) = %v", tc.path, err)
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("Probe(%s) = %v, want error containing %q", tc.path, err, tc.wantErr)
		}
	}
}

// pageTransport serves pages in order, one per request, on the fake clock;
// a page "FAIL" answers 500.
type pageTransport struct {
	mu    sync.Mutex
	pages []string
	calls int
}

func (p *pageTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	page := p.pages[min(p.calls, len(p.pages)-1)]
	p.calls++
	status := http.StatusOK
	if page == "FAIL" {
		status = http.StatusInternalServerError
	}
	return &http.Response{StatusCode: status, Body: io.NopCloser(strings.NewReader(page)), Header: http.Header{}, Request: req}, nil
}

func TestScraperRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		pages := &pageTransport{pages: []string{
			vllmNewPage(0, 0, 0, 0, 0, 0),
			vllmNewPage(4, 2, 0.5, 30, 100, 1),
			"FAIL",
			"garbage {{{",
			vllmNewPage(8, 6, 0.9, 90, 200, 3),
		}}
		s := NewScraper("http://127.0.0.1:8000/metrics", &http.Client{Transport: pages}, time.Second)
		ctx, cancel := context.WithCancel(context.Background())
		base := time.Now()
		time.Sleep(250 * time.Millisecond) // Run starts a little after the run's zero
		done := make(chan struct{})
		go func() {
			s.Run(ctx, base)
			close(done)
		}()
		time.Sleep(4500 * time.Millisecond)
		cancel()
		<-done
		ms := time.Millisecond
		want := []ServerSample{
			{At: 250 * ms},
			{At: 1250 * ms, Running: 4, Waiting: 2, KVCacheUsage: 0.5, PrefixHits: 30, PrefixQueries: 100, Preemptions: 1},
			{At: 4250 * ms, Running: 8, Waiting: 6, KVCacheUsage: 0.9, PrefixHits: 90, PrefixQueries: 200, Preemptions: 3},
			// the final scrape when the run ends
			{At: 4750 * ms, Running: 8, Waiting: 6, KVCacheUsage: 0.9, PrefixHits: 90, PrefixQueries: 200, Preemptions: 3},
		}
		if d := cmp.Diff(want, s.Samples()); d != "" {
			t.Errorf("samples (-want +got):\n%s", d)
		}
		if n, err := s.Failures(); n != 2 || err == nil || !strings.Contains(err.Error(), "not a Prometheus text page") {
			t.Errorf("failures = %d, %v; want 2, the last a parse error", n, err)
		}
		got := s.Samples()
		got[0].Running = 99
		if s.Samples()[0].Running == 99 {
			t.Error("Samples returned the scraper's own slice")
		}
	})
}

func TestSummarizeServer(t *testing.T) {
	tests := []struct {
		name    string
		samples []ServerSample
		want    ServerSummary
	}{
		{"no samples", nil, ServerSummary{}},
		{
			"hit rate from deltas, not totals",
			[]ServerSample{
				{Running: 2, Waiting: 0, KVCacheUsage: 0.2, PrefixHits: 1000, PrefixQueries: 1000, Preemptions: 5, PromptTokens: 100, GenerationTokens: 10},
				{Running: 6, Waiting: 4, KVCacheUsage: 0.8, PrefixHits: 1030, PrefixQueries: 1100, Preemptions: 5, PromptTokens: 300, GenerationTokens: 60},
				{Running: 4, Waiting: 2, KVCacheUsage: 0.5, PrefixHits: 1060, PrefixQueries: 1200, Preemptions: 9, PromptTokens: 500, GenerationTokens: 110},
			},
			ServerSummary{Samples: 3, MaxRunning: 6, MeanRunning: 4, MaxWaiting: 4, MeanWaiting: 2, MaxKVCacheUsage: 0.8, MeanKVCacheUsage: 0.5,
				PrefixCacheHitRate: 0.3, Preemptions: 4, PromptTokens: 400, GenerationTokens: 100},
		},
		{
			"no queries: hit rate 0; counter reset: delta 0",
			[]ServerSample{{PrefixHits: 5, PrefixQueries: 5, Preemptions: 10}, {PrefixHits: 5, PrefixQueries: 5, Preemptions: 2}},
			ServerSummary{Samples: 2},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := SummarizeServer(tc.samples)
			if d := cmp.Diff(tc.want, got, cmp.Comparer(func(a, b float64) bool { return math.Abs(a-b) < 1e-9 })); d != "" {
				t.Errorf("summary (-want +got):\n%s", d)
			}
		})
	}
}

// FuzzParseMetrics feeds arbitrary pages through the scrape path: garbage
// must give an error or finite values, never a panic.
func FuzzParseMetrics(f *testing.F) {
	f.Add([]byte(vllmV0Page))
	f.Add([]byte(vllmV1Page))
	f.Add([]byte(vllmNewPage(1, 2, 0.5, 3, 4, 5)))
	f.Add([]byte(readScrapeFile(f, "llamacpp-metrics.txt")))
	f.Add([]byte("vllm:num_requests_running +Inf\nvllm:kv_cache_usage_perc -Inf\n"))
	f.Add([]byte("# TYPE vllm:num_requests_running histogram\nvllm:num_requests_running_bucket{le=\"1\"} 1\n"))
	f.Fuzz(func(t *testing.T, page []byte) {
		fams, err := parseMetrics(bytes.NewReader(page))
		if err != nil {
			return
		}
		s := sampleFrom(fams)
		for _, v := range []float64{s.Running, s.Waiting, s.Swapped, s.KVCacheUsage, s.PrefixHits, s.PrefixQueries, s.Preemptions, s.PromptTokens, s.GenerationTokens} {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				t.Fatalf("non-finite value in sample %+v from %q", s, page)
			}
		}
		_ = SummarizeServer([]ServerSample{s, s})
	})
}
