package bench

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/servebench/servebench/internal/textline"
	names "github.com/servebench/servebench/metrics"
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

	// StepLag is servebench serve's step-loop lag histogram (cumulative
	// since the server started); nil for other servers.
	StepLag *HistogramSample `json:"step_lag,omitempty"`
	// StepLoopBehind is serve's seconds behind the model, cumulative.
	StepLoopBehind float64 `json:"step_loop_behind,omitempty"`
}

// HistogramSample is one scrape of a Prometheus histogram: the upper
// bounds of its finite buckets and the cumulative count at each, plus the
// total count (the +Inf bucket).
type HistogramSample struct {
	Bounds     []float64 `json:"bounds"`
	Cumulative []float64 `json:"cumulative"`
	Count      float64   `json:"count"`
}

// Metric names by meaning, newest first: vLLM renamed several over time
// (V0 → V1 → 0.10), and llama.cpp and SGLang expose the same gauges under
// their own names.
var (
	runningNames    = []string{names.VLLMRunning, "llamacpp:requests_processing", "sglang:num_running_reqs"}
	waitingNames    = []string{names.VLLMWaiting, "llamacpp:requests_deferred", "sglang:num_queue_reqs"}
	swappedNames    = []string{names.VLLMSwapped}
	kvUsageNames    = []string{names.VLLMKVCacheUsage, names.VLLMGPUCacheUsage, "llamacpp:kv_cache_usage_ratio", "sglang:token_usage"}
	prefixHitNames  = []string{names.VLLMPrefixHits, names.VLLMGPUPrefixHits, "vllm:gpu_prefix_cache_hits"}
	prefixQueryName = []string{names.VLLMPrefixQueries, names.VLLMGPUPrefixQueries, "vllm:gpu_prefix_cache_queries"}
	preemptionNames = []string{names.VLLMPreemptions, "vllm:num_preemptions"}
	promptTokNames  = []string{names.VLLMPromptTokens, "llamacpp:prompt_tokens_total", "sglang:prompt_tokens_total"}
	genTokNames     = []string{names.VLLMGenTokens, "llamacpp:tokens_predicted_total", "sglang:generation_tokens_total"}
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
	return fmt.Errorf("GET %s has no vllm:*, llamacpp:* or sglang:* metrics", s.url)
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
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		return nil, fmt.Errorf("GET %s answered HTTP %d %s: %s", s.url, resp.StatusCode, http.StatusText(resp.StatusCode), errorReason(body))
	}
	fams, err := parseMetrics(io.LimitReader(resp.Body, maxMetricsBody))
	if err != nil {
		return nil, fmt.Errorf("scrape %s: %w", s.url, err)
	}
	return fams, nil
}

// errorReason is the server's own words for a refused scrape: the message
// of an OpenAI-style JSON error (llama.cpp without --metrics answers 501
// "This server does not support metrics endpoint. Start it with
// `--metrics`"), else the body's first line, else a generic reason.
func errorReason(body []byte) string {
	var e struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
		Message string `json:"message"`
	}
	if json.Unmarshal(body, &e) == nil {
		if m := cmp.Or(e.Error.Message, e.Message); m != "" {
			return textline.OneLine(m, 200)
		}
	}
	if line := textline.OneLine(string(body), 200); line != "" {
		return line
	}
	return "the server exposes no Prometheus metrics there"
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
	sample := ServerSample{
		Running:          familyValue(fams, runningNames, false),
		Waiting:          familyValue(fams, waitingNames, false),
		Swapped:          familyValue(fams, swappedNames, false),
		KVCacheUsage:     familyValue(fams, kvUsageNames, true),
		PrefixHits:       familyValue(fams, prefixHitNames, false),
		PrefixQueries:    familyValue(fams, prefixQueryName, false),
		Preemptions:      familyValue(fams, preemptionNames, false),
		PromptTokens:     familyValue(fams, promptTokNames, false),
		GenerationTokens: familyValue(fams, genTokNames, false),
		StepLag:          histogramValue(fams[names.StepLoopLag]),
		StepLoopBehind:   familyValue(fams, []string{names.StepLoopBehind}, false),
	}
	return sample
}

// histogramValue sums a histogram family over its label sets, or returns
// nil when there is none (or its label sets disagree on the buckets).
func histogramValue(fam *dto.MetricFamily) *HistogramSample {
	var h *HistogramSample
	for _, m := range fam.GetMetric() {
		hist := m.GetHistogram()
		if hist == nil {
			continue
		}
		var bounds, counts []float64
		for _, b := range hist.GetBucket() {
			if math.IsInf(b.GetUpperBound(), 1) {
				continue
			}
			bounds = append(bounds, b.GetUpperBound())
			counts = append(counts, float64(b.GetCumulativeCount()))
		}
		if h == nil {
			h = &HistogramSample{Bounds: bounds, Cumulative: counts}
		} else if !slices.Equal(h.Bounds, bounds) {
			return nil
		} else {
			for i, c := range counts {
				h.Cumulative[i] += c
			}
		}
		h.Count += float64(hist.GetSampleCount())
	}
	return h
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
	// EmulatorLag is set when the target is servebench serve.
	EmulatorLag *EmulatorLag `json:"emulator_lag,omitempty"`
}

// EmulatorLag is how far servebench serve's step loop fell behind its
// engine model during the run: when it is over the limits, the run
// measured the host as much as the model.
type EmulatorLag struct {
	Steps float64 `json:"steps"`
	// P99Seconds is the step-lag p99, interpolated within the histogram's
	// buckets as Prometheus's histogram_quantile does.
	P99Seconds float64 `json:"p99_seconds"`
	// OverLimitShare is the share of steps later than the p99 limit (exact:
	// the limit is a bucket edge); over 1% means p99 is over the limit.
	OverLimitShare float64 `json:"over_limit_share"`
	// BehindSeconds is how much longer the run took than the model says,
	// BehindShare that as a share of the scraped span of the run.
	BehindSeconds float64 `json:"behind_seconds"`
	BehindShare   float64 `json:"behind_share"`
}

// OverLimits reports whether the lag is past either of serve's warning
// limits (5 ms at p99, 1% of the run behind).
func (l *EmulatorLag) OverLimits() bool {
	return l.OverLimitShare > 0.01 || l.BehindShare > names.StepLoopBehindShareLimit
}

// Rows are the lines of the lag in the server-metrics section.
func (l *EmulatorLag) Rows() [][2]string {
	return [][2]string{
		{"Emulator step-loop lag p99 (ms):", fmt.Sprintf("%.2f", 1000*l.P99Seconds)},
		{"Emulator behind the model (ms):", fmt.Sprintf("%.1f (%.2f%% of the run)", 1000*l.BehindSeconds, 100*l.BehindShare)},
	}
}

// Warning is a line for stderr when the lag is past the limits, else "".
func (l *EmulatorLag) Warning() string {
	if !l.OverLimits() {
		return ""
	}
	return fmt.Sprintf("Warning: the emulated server fell behind its engine model (step-loop lag p99 %.2f ms, limit %.0f ms; %.1f ms behind, %.2f%% of the run, limit %.0f%%): these timings include the host's delays. Free CPU or lower the load.",
		1000*l.P99Seconds, 1000*names.StepLoopLagP99Limit, 1000*l.BehindSeconds, 100*l.BehindShare, 100*names.StepLoopBehindShareLimit)
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
	sum.EmulatorLag = summarizeLag(samples)
	return sum
}

// summarizeLag takes the step-lag histogram's growth between the first and
// last samples (all of it when there is one sample: a server started for
// the run).
func summarizeLag(samples []ServerSample) *EmulatorLag {
	first, last := samples[0], samples[len(samples)-1]
	if last.StepLag == nil {
		return nil
	}
	counts := slices.Clone(last.StepLag.Cumulative)
	total := last.StepLag.Count
	behind := last.StepLoopBehind
	span := last.At
	if len(samples) > 1 && first.StepLag != nil && slices.Equal(first.StepLag.Bounds, last.StepLag.Bounds) {
		for i := range counts {
			counts[i] = max(counts[i]-first.StepLag.Cumulative[i], 0)
		}
		total = max(total-first.StepLag.Count, 0)
		behind = max(behind-first.StepLoopBehind, 0)
		span = last.At - first.At
	}
	lag := &EmulatorLag{Steps: total, BehindSeconds: behind}
	if span > 0 {
		lag.BehindShare = behind / span.Seconds()
	}
	if total == 0 {
		return lag
	}
	lag.P99Seconds = histogramQuantile(0.99, last.StepLag.Bounds, counts, total)
	if i := slices.Index(last.StepLag.Bounds, names.StepLoopLagP99Limit); i >= 0 {
		lag.OverLimitShare = (total - counts[i]) / total
	}
	return lag
}

// histogramQuantile is Prometheus's histogram_quantile on cumulative
// bucket counts: linear within the bucket holding the rank, the largest
// finite bound when the rank lies in the +Inf bucket.
func histogramQuantile(q float64, bounds, cumulative []float64, total float64) float64 {
	rank := q * total
	lower, below := 0.0, 0.0
	for i, upper := range bounds {
		if cumulative[i] >= rank {
			in := cumulative[i] - below
			if in <= 0 {
				return upper
			}
			return lower + (upper-lower)*(rank-below)/in
		}
		lower, below = upper, cumulative[i]
	}
	if len(bounds) == 0 {
		return 0
	}
	return bounds[len(bounds)-1]
}
