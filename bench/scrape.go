package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strings"
	"sync"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// ServerSample is one scrape of the target's Prometheus /metrics during a
// run. Gauges and counters are summed over label sets (several models or
// engines), except the KV-cache fraction, which is averaged.
type ServerSample struct {
	// At is the offset from the run's start when the scrape was sent.
	At time.Duration `json:"at_ns"`

	Running float64 `json:"running"`
	Waiting float64 `json:"waiting"`
	Swapped float64 `json:"swapped"`
	// KVCacheUsage is the used fraction of the KV cache, 0..1.
	KVCacheUsage float64 `json:"kv_cache_usage"`

	// Counters since server start; rates come from deltas between samples.
	PrefixHits       float64 `json:"prefix_cache_hits"`
	PrefixQueries    float64 `json:"prefix_cache_queries"`
	Preemptions      float64 `json:"preemptions"`
	PromptTokens     float64 `json:"prompt_tokens"`
	GenerationTokens float64 `json:"generation_tokens"`
}

// Metric names by meaning, newest first: vLLM renamed several over time
// (V0 → V1 → 0.10), and llama.cpp and SGLang expose the same gauges under
// their own names.
var (
	runningNames    = []string{"vllm:num_requests_running", "llamacpp:requests_processing", "sglang:num_running_reqs"}
	waitingNames    = []string{"vllm:num_requests_waiting", "llamacpp:requests_deferred", "sglang:num_queue_reqs"}
	swappedNames    = []string{"vllm:num_requests_swapped"}
	kvUsageNames    = []string{"vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc", "llamacpp:kv_cache_usage_ratio", "sglang:token_usage"}
	prefixHitNames  = []string{"vllm:prefix_cache_hits_total", "vllm:gpu_prefix_cache_hits_total", "vllm:gpu_prefix_cache_hits"}
	prefixQueryName = []string{"vllm:prefix_cache_queries_total", "vllm:gpu_prefix_cache_queries_total", "vllm:gpu_prefix_cache_queries"}
	preemptionNames = []string{"vllm:num_preemptions_total", "vllm:num_preemptions"}
	promptTokNames  = []string{"vllm:prompt_tokens_total", "llamacpp:prompt_tokens_total", "sglang:prompt_tokens_total"}
	genTokNames     = []string{"vllm:generation_tokens_total", "llamacpp:tokens_predicted_total", "sglang:generation_tokens_total"}
	// knownPrefixes are the metric namespaces a scrape must contain to be
	// worth keeping.
	knownPrefixes = []string{"vllm:", "llamacpp:", "sglang:"}
)

// maxMetricsBody bounds one /metrics page; vLLM's is tens of KiB.
const maxMetricsBody = 16 << 20

// Scraper samples a server's /metrics periodically during a run. Run and
// Samples may be called from different goroutines.
type Scraper struct {
	url      string
	client   *http.Client
	interval time.Duration

	mu       sync.Mutex
	samples  []ServerSample
	failures int
	lastErr  error
}

// NewScraper scrapes url (e.g. "http://127.0.0.1:8000/metrics") every
// interval with client; a nil client uses one with a timeout of the
// interval, and a non-positive interval means one second.
func NewScraper(url string, client *http.Client, interval time.Duration) *Scraper {
	if interval <= 0 {
		interval = time.Second
	}
	if client == nil {
		client = &http.Client{Timeout: max(interval, time.Second)}
	}
	return &Scraper{url: url, client: client, interval: interval}
}

// Probe fetches the page once and fails when there is none or it holds no
// vLLM (or llama.cpp, SGLang) metrics, so the caller can disable scraping
// with a clear message instead of recording empty samples.
func (s *Scraper) Probe(ctx context.Context) error {
	fams, err := s.fetch(ctx)
	if err != nil {
		return err
	}
	for name := range fams {
		for _, p := range knownPrefixes {
			if strings.HasPrefix(name, p) {
				return nil
			}
		}
	}
	return fmt.Errorf("server metrics at %s have no vllm:* (or llamacpp:*, sglang:*) metrics: server-side statistics will be left out", s.url)
}

// Run scrapes at once and then every interval until ctx ends, keeping every
// sample. A failed scrape is counted and skipped; Run never panics on a
// malformed page.
func (s *Scraper) Run(ctx context.Context, base time.Time) {
	ticker := time.NewTicker(s.interval)
	defer ticker.Stop()
	for {
		s.scrapeOnce(ctx, base)
		select {
		case <-ctx.Done():
			// One last sample at the end of the run, so even a run shorter
			// than the interval shows the server under load.
			final, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
			s.scrapeOnce(final, base)
			cancel()
			return
		case <-ticker.C:
		}
	}
}

func (s *Scraper) scrapeOnce(ctx context.Context, base time.Time) {
	at := time.Since(base)
	// A scrape that outlives its interval would delay the next one.
	reqCtx, cancel := context.WithTimeout(ctx, s.interval)
	defer cancel()
	fams, err := s.fetch(reqCtx)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		if ctx.Err() == nil { // the run ending mid-scrape is not a failure
			s.failures++
			s.lastErr = err
		}
		return
	}
	sample := sampleFrom(fams)
	sample.At = at
	s.samples = append(s.samples, sample)
}

// Samples returns a copy of the samples so far, in time order.
func (s *Scraper) Samples() []ServerSample {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]ServerSample(nil), s.samples...)
}

// Failures reports how many scrapes failed during Run and the last error.
func (s *Scraper) Failures() (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.failures, s.lastErr
}

func (s *Scraper) fetch(ctx context.Context) (map[string]*dto.MetricFamily, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.url, nil)
	if err != nil {
		return nil, fmt.Errorf("server metrics URL %q: %w", s.url, err)
	}
	req.Header.Set("Accept", "text/plain;version=0.0.4")
	resp, err := s.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("scrape %s: %w", s.url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		return nil, fmt.Errorf("scrape %s: HTTP %d: the server exposes no Prometheus metrics there", s.url, resp.StatusCode)
	}
	fams, err := parseMetrics(io.LimitReader(resp.Body, maxMetricsBody))
	if err != nil {
		return nil, fmt.Errorf("scrape %s: %w", s.url, err)
	}
	return fams, nil
}

// parseMetrics reads a Prometheus text page. vLLM's names contain ':',
// which the legacy name rules allow.
func parseMetrics(r io.Reader) (map[string]*dto.MetricFamily, error) {
	parser := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := parser.TextToMetricFamilies(r)
	if err != nil {
		return nil, fmt.Errorf("not a Prometheus text page: %w", err)
	}
	if len(fams) == 0 {
		return nil, errors.New("the metrics page is empty")
	}
	return fams, nil
}

func sampleFrom(fams map[string]*dto.MetricFamily) ServerSample {
	return ServerSample{
		Running:          familyValue(fams, runningNames, false),
		Waiting:          familyValue(fams, waitingNames, false),
		Swapped:          familyValue(fams, swappedNames, false),
		KVCacheUsage:     familyValue(fams, kvUsageNames, true),
		PrefixHits:       familyValue(fams, prefixHitNames, false),
		PrefixQueries:    familyValue(fams, prefixQueryName, false),
		Preemptions:      familyValue(fams, preemptionNames, false),
		PromptTokens:     familyValue(fams, promptTokNames, false),
		GenerationTokens: familyValue(fams, genTokNames, false),
	}
}

// familyValue sums (or, with mean, averages) the first family present
// among names over its label sets. Non-finite values are skipped: they
// carry no information and would break the JSON result.
func familyValue(fams map[string]*dto.MetricFamily, names []string, mean bool) float64 {
	for _, name := range names {
		fam, ok := fams[name]
		if !ok {
			continue
		}
		var sum float64
		n := 0
		for _, m := range fam.GetMetric() {
			var v float64
			switch {
			case m.Gauge != nil:
				v = m.GetGauge().GetValue()
			case m.Counter != nil:
				v = m.GetCounter().GetValue()
			case m.Untyped != nil:
				v = m.GetUntyped().GetValue()
			default:
				continue // a histogram or summary under a gauge's name
			}
			if math.IsNaN(v) || math.IsInf(v, 0) {
				continue
			}
			sum += v
			n++
		}
		if mean && n > 0 {
			sum /= float64(n)
		}
		if math.IsInf(sum, 0) { // finite values can still overflow
			return 0
		}
		return sum
	}
	return 0
}

// ServerSummary condenses the samples of one run for the JSON result and
// the text report.
type ServerSummary struct {
	Samples          int     `json:"samples"`
	MaxRunning       float64 `json:"max_running"`
	MeanRunning      float64 `json:"mean_running"`
	MaxWaiting       float64 `json:"max_waiting"`
	MeanWaiting      float64 `json:"mean_waiting"`
	MaxKVCacheUsage  float64 `json:"max_kv_cache_usage"`
	MeanKVCacheUsage float64 `json:"mean_kv_cache_usage"`
	// PrefixCacheHitRate is Δhits/Δqueries over the run, 0 without queries.
	PrefixCacheHitRate float64 `json:"prefix_cache_hit_rate"`
	// Deltas of counters over the run; a counter reset (server restart)
	// gives 0 rather than a negative count.
	Preemptions      float64 `json:"preemptions"`
	PromptTokens     float64 `json:"prompt_tokens"`
	GenerationTokens float64 `json:"generation_tokens"`
}

// SummarizeServer computes maxima and means of the gauges and the deltas of
// the counters between the first and last sample.
func SummarizeServer(samples []ServerSample) ServerSummary {
	sum := ServerSummary{Samples: len(samples)}
	if len(samples) == 0 {
		return sum
	}
	for _, s := range samples {
		sum.MaxRunning = max(sum.MaxRunning, s.Running)
		sum.MaxWaiting = max(sum.MaxWaiting, s.Waiting)
		sum.MaxKVCacheUsage = max(sum.MaxKVCacheUsage, s.KVCacheUsage)
		sum.MeanRunning += s.Running
		sum.MeanWaiting += s.Waiting
		sum.MeanKVCacheUsage += s.KVCacheUsage
	}
	n := float64(len(samples))
	sum.MeanRunning /= n
	sum.MeanWaiting /= n
	sum.MeanKVCacheUsage /= n
	first, last := samples[0], samples[len(samples)-1]
	delta := func(a, b float64) float64 { return max(b-a, 0) }
	if queries := delta(first.PrefixQueries, last.PrefixQueries); queries > 0 {
		sum.PrefixCacheHitRate = min(delta(first.PrefixHits, last.PrefixHits)/queries, 1)
	}
	sum.Preemptions = delta(first.Preemptions, last.Preemptions)
	sum.PromptTokens = delta(first.PromptTokens, last.PromptTokens)
	sum.GenerationTokens = delta(first.GenerationTokens, last.GenerationTokens)
	return sum
}
