package serve

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/servebench/servebench/engine"
)

// Histogram buckets exactly as vLLM registers them (vllm/engine/metrics.py
// in 0.5.4 for V0, vllm/v1/metrics/loggers.py in 0.8.5 and later for V1).
var (
	bucketsTTFTV0    = []float64{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0}
	bucketsTPOTV0    = []float64{0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5}
	bucketsE2EV0     = []float64{1.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0}
	bucketsTTFTV1    = []float64{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0}
	bucketsTPOTV1    = []float64{0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0}
	bucketsLatencyV1 = []float64{0.3, 0.5, 0.8, 1, 1.5, 2, 2.5, 5, 10, 15, 20, 30, 40, 50, 60, 120, 240, 480, 960, 1920, 7680}
	bucketsIteration = []float64{1, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384}
)

// Metric names. V1 exports both the 0.8.5 names (gpu_cache_usage_perc,
// gpu_prefix_cache_*) and their current replacements (kv_cache_usage_perc,
// prefix_cache_*, inter_token_latency_seconds,
// request_time_per_output_token_seconds), so dashboards and scrapers of
// either era find what they look for.
const (
	metricRunning          = "vllm:num_requests_running"
	metricWaiting          = "vllm:num_requests_waiting"
	metricSwapped          = "vllm:num_requests_swapped"
	metricGPUCacheUsage    = "vllm:gpu_cache_usage_perc"
	metricCPUCacheUsage    = "vllm:cpu_cache_usage_perc"
	metricKVCacheUsage     = "vllm:kv_cache_usage_perc"
	metricPrefixQueries    = "vllm:prefix_cache_queries_total"
	metricPrefixHits       = "vllm:prefix_cache_hits_total"
	metricGPUPrefixQueries = "vllm:gpu_prefix_cache_queries_total"
	metricGPUPrefixHits    = "vllm:gpu_prefix_cache_hits_total"
	metricGPUPrefixRate    = "vllm:gpu_prefix_cache_hit_rate"
	metricPreemptions      = "vllm:num_preemptions_total"
	metricPromptTokens     = "vllm:prompt_tokens_total"
	metricGenTokens        = "vllm:generation_tokens_total"
	metricSuccess          = "vllm:request_success_total"
	metricTTFT             = "vllm:time_to_first_token_seconds"
	metricTPOT             = "vllm:time_per_output_token_seconds"
	metricITL              = "vllm:inter_token_latency_seconds"
	metricReqTPOT          = "vllm:request_time_per_output_token_seconds"
	metricE2E              = "vllm:e2e_request_latency_seconds"
	metricQueueTime        = "vllm:request_queue_time_seconds"
	metricInferenceTime    = "vllm:request_inference_time_seconds"
	metricPrefillTime      = "vllm:request_prefill_time_seconds"
	metricDecodeTime       = "vllm:request_decode_time_seconds"
	metricReqPromptTokens  = "vllm:request_prompt_tokens"
	metricReqGenTokens     = "vllm:request_generation_tokens"
	metricIterationTokens  = "vllm:iteration_tokens_total"
	metricParamsN          = "vllm:request_params_n"
	metricParamsBestOf     = "vllm:request_params_best_of"
	metricParamsMaxTokens  = "vllm:request_params_max_tokens"
	metricAvgPromptTput    = "vllm:avg_prompt_throughput_toks_per_s"
	metricAvgGenTput       = "vllm:avg_generation_throughput_toks_per_s"
	metricCacheConfig      = "vllm:cache_config_info"
)

// Finish reasons, vLLM's label values of request_success_total.
const (
	finishStop   = "stop"
	finishLength = "length"
	finishAbort  = "abort"
)

// build125Buckets is vLLM's build_1_2_5_buckets: 1, 2, 5, 10, 20, 50, ...
// up to max.
func build125Buckets(maxValue int) []float64 {
	var out []float64
	for exp := 1.0; ; exp *= 10 {
		for _, m := range []float64{1, 2, 5} {
			v := m * exp
			if v > float64(maxValue) {
				return out
			}
			out = append(out, v)
		}
	}
}

// promMetrics holds the collectors of one server, on a private registry.
// The step loop sets gauges and counters; request instants (from the engine
// model, not the wall clock) feed the histograms when a request finishes.
type promMetrics struct {
	reg *prometheus.Registry

	running, waiting, swapped prometheus.Gauge
	kvUsage                   []prometheus.Gauge // every name the version exports
	cpuUsage                  prometheus.Gauge
	prefixHitRate             prometheus.Gauge // V0 with prefix caching
	avgPromptTput, avgGenTput prometheus.Gauge // V0
	prefixQueries             []prometheus.Counter
	prefixHits                []prometheus.Counter
	preemptions               prometheus.Counter
	promptTokens, genTokens   prometheus.Counter
	success                   map[string]prometheus.Counter

	ttft, e2e                              prometheus.Histogram
	tpot                                   []prometheus.Histogram // per output token after the first
	reqTPOT                                prometheus.Histogram
	queue, inference, prefill, decode      prometheus.Histogram
	reqPromptTokens, reqGenTokens          prometheus.Histogram
	iterationTokens                        prometheus.Histogram
	paramsN, paramsBestOf, paramsMaxTokens prometheus.Histogram
}

func newPromMetrics(modelName string, ec engine.Config) *promMetrics {
	v1 := ec.Version != engine.V0
	labels := prometheus.Labels{"model_name": modelName}
	if v1 {
		labels["engine"] = "0"
	}
	m := &promMetrics{reg: prometheus.NewRegistry(), success: map[string]prometheus.Counter{}}
	gauge := func(name, help string) prometheus.Gauge {
		g := prometheus.NewGauge(prometheus.GaugeOpts{Name: name, Help: help, ConstLabels: labels})
		m.reg.MustRegister(g)
		return g
	}
	counter := func(name, help string) prometheus.Counter {
		c := prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help, ConstLabels: labels})
		m.reg.MustRegister(c)
		return c
	}
	histogram := func(name, help string, buckets []float64) prometheus.Histogram {
		h := prometheus.NewHistogram(prometheus.HistogramOpts{Name: name, Help: help, Buckets: buckets, ConstLabels: labels})
		m.reg.MustRegister(h)
		return h
	}

	m.running = gauge(metricRunning, "Number of requests currently running on GPU.")
	m.waiting = gauge(metricWaiting, "Number of requests waiting to be processed.")
	m.preemptions = counter(metricPreemptions, "Cumulative number of preemption from the engine.")
	m.promptTokens = counter(metricPromptTokens, "Number of prefill tokens processed.")
	m.genTokens = counter(metricGenTokens, "Number of generation tokens processed.")
	successVec := prometheus.NewCounterVec(prometheus.CounterOpts{Name: metricSuccess,
		Help: "Count of successfully processed requests.", ConstLabels: labels}, []string{"finished_reason"})
	m.reg.MustRegister(successVec)
	for _, r := range []string{finishStop, finishLength, finishAbort} {
		m.success[r] = successVec.WithLabelValues(r)
	}
	lenBuckets := build125Buckets(max(ec.MaxModelLen, 1))
	m.reqPromptTokens = histogram(metricReqPromptTokens, "Number of prefill tokens processed.", lenBuckets)
	m.reqGenTokens = histogram(metricReqGenTokens, "Number of generation tokens processed.", lenBuckets)
	m.paramsN = histogram(metricParamsN, "Histogram of the n request parameter.", []float64{1, 2, 5, 10, 20})

	info := prometheus.NewGauge(prometheus.GaugeOpts{Name: metricCacheConfig, Help: "Information of the LLMEngine CacheConfig",
		ConstLabels: cacheConfigLabels(ec)})
	info.Set(1)
	m.reg.MustRegister(info)

	if !v1 {
		m.swapped = gauge(metricSwapped, "Number of requests swapped to CPU.")
		m.kvUsage = []prometheus.Gauge{gauge(metricGPUCacheUsage, "GPU KV-cache usage. 1 means 100 percent usage.")}
		m.cpuUsage = gauge(metricCPUCacheUsage, "CPU KV-cache usage. 1 means 100 percent usage.")
		m.avgPromptTput = gauge(metricAvgPromptTput, "Average prefill throughput in tokens/s.")
		m.avgGenTput = gauge(metricAvgGenTput, "Average generation throughput in tokens/s.")
		if ec.EnablePrefixCaching {
			m.prefixHitRate = gauge(metricGPUPrefixRate, "GPU prefix cache block hit rate.")
		}
		m.ttft = histogram(metricTTFT, "Histogram of time to first token in seconds.", bucketsTTFTV0)
		m.tpot = []prometheus.Histogram{histogram(metricTPOT, "Histogram of time per output token in seconds.", bucketsTPOTV0)}
		m.e2e = histogram(metricE2E, "Histogram of end to end request latency in seconds.", bucketsE2EV0)
		m.paramsBestOf = histogram(metricParamsBestOf, "Histogram of the best_of request parameter.", []float64{1, 2, 5, 10, 20})
		return m
	}

	m.kvUsage = []prometheus.Gauge{
		gauge(metricGPUCacheUsage, "GPU KV-cache usage. 1 means 100 percent usage."),
		gauge(metricKVCacheUsage, "KV-cache usage. 1 means 100 percent usage."),
	}
	m.prefixQueries = []prometheus.Counter{
		counter(metricGPUPrefixQueries, "GPU prefix cache queries, in terms of number of queried tokens."),
		counter(metricPrefixQueries, "Prefix cache queries, in terms of number of queried tokens."),
	}
	m.prefixHits = []prometheus.Counter{
		counter(metricGPUPrefixHits, "GPU prefix cache hits, in terms of number of cached tokens."),
		counter(metricPrefixHits, "Prefix cache hits, in terms of number of cached tokens."),
	}
	m.ttft = histogram(metricTTFT, "Histogram of time to first token in seconds.", bucketsTTFTV1)
	m.tpot = []prometheus.Histogram{
		histogram(metricTPOT, "Histogram of time per output token in seconds.", bucketsTPOTV1),
		histogram(metricITL, "Histogram of inter-token latency in seconds.", bucketsTPOTV1),
	}
	m.reqTPOT = histogram(metricReqTPOT, "Histogram of time_per_output_token_seconds per request.", bucketsTPOTV1)
	m.e2e = histogram(metricE2E, "Histogram of end to end request latency in seconds.", bucketsLatencyV1)
	m.queue = histogram(metricQueueTime, "Histogram of time spent in WAITING phase for request.", bucketsLatencyV1)
	m.inference = histogram(metricInferenceTime, "Histogram of time spent in RUNNING phase for request.", bucketsLatencyV1)
	m.prefill = histogram(metricPrefillTime, "Histogram of time spent in PREFILL phase for request.", bucketsLatencyV1)
	m.decode = histogram(metricDecodeTime, "Histogram of time spent in DECODE phase for request.", bucketsLatencyV1)
	m.iterationTokens = histogram(metricIterationTokens, "Histogram of number of tokens per engine_step.", bucketsIteration)
	m.paramsMaxTokens = histogram(metricParamsMaxTokens, "Histogram of the max_tokens request parameter.", lenBuckets)
	return m
}

func cacheConfigLabels(ec engine.Config) prometheus.Labels {
	return prometheus.Labels{
		"block_size":            strconv.Itoa(ec.BlockSize),
		"num_gpu_blocks":        strconv.Itoa(ec.NumGPUBlocks),
		"num_cpu_blocks":        strconv.Itoa(ec.NumCPUBlocks),
		"enable_prefix_caching": pyBool(ec.EnablePrefixCaching),
	}
}

func pyBool(b bool) string {
	if b {
		return "True"
	}
	return "False"
}

// engineSample is what the step loop reads from the engine after a step.
type engineSample struct {
	stats   engine.Stats
	kvUsage float64
}

// observeEngine updates gauges and counters from a new engine sample; prev
// is the previous sample, for counter deltas.
func (m *promMetrics) observeEngine(cur, prev *engineSample) {
	m.running.Set(float64(cur.stats.Running))
	m.waiting.Set(float64(cur.stats.Waiting))
	if m.swapped != nil {
		m.swapped.Set(float64(cur.stats.Swapped))
	}
	for _, g := range m.kvUsage {
		g.Set(cur.kvUsage)
	}
	if m.cpuUsage != nil {
		used := 0.0
		if cur.stats.CPUBlocksTotal > 0 {
			used = float64(cur.stats.CPUBlocksUsed) / float64(cur.stats.CPUBlocksTotal)
		}
		m.cpuUsage.Set(used)
	}
	if m.prefixHitRate != nil && cur.stats.PrefixQueries > 0 {
		m.prefixHitRate.Set(float64(cur.stats.PrefixHits) / float64(cur.stats.PrefixQueries))
	}
	addDelta := func(cs []prometheus.Counter, now, before int64) {
		if d := now - before; d > 0 {
			for _, c := range cs {
				c.Add(float64(d))
			}
		}
	}
	addDelta(m.prefixQueries, cur.stats.PrefixQueries, prev.stats.PrefixQueries)
	addDelta(m.prefixHits, cur.stats.PrefixHits, prev.stats.PrefixHits)
	addDelta([]prometheus.Counter{m.preemptions}, cur.stats.Preemptions, prev.stats.Preemptions)
	addDelta([]prometheus.Counter{m.promptTokens}, cur.stats.PromptTokens, prev.stats.PromptTokens)
	addDelta([]prometheus.Counter{m.genTokens}, cur.stats.GenerationTokens, prev.stats.GenerationTokens)
}

// requestTimes are one request's instants on the engine clock.
type requestTimes struct {
	arrival, scheduled, firstToken, lastToken, end float64 // seconds
	promptTokens, genTokens, maxTokens             int
	reason                                         string
}

func (m *promMetrics) observeRequest(t *requestTimes) {
	m.success[t.reason].Inc()
	m.reqPromptTokens.Observe(float64(t.promptTokens))
	m.reqGenTokens.Observe(float64(t.genTokens))
	m.paramsN.Observe(1)
	if m.paramsBestOf != nil {
		m.paramsBestOf.Observe(1)
	}
	if m.paramsMaxTokens != nil {
		m.paramsMaxTokens.Observe(float64(t.maxTokens))
	}
	m.e2e.Observe(t.end - t.arrival)
	if m.queue == nil || t.genTokens == 0 {
		return
	}
	m.queue.Observe(t.scheduled - t.arrival)
	m.prefill.Observe(t.firstToken - t.scheduled)
	m.decode.Observe(t.lastToken - t.firstToken)
	m.inference.Observe(t.lastToken - t.scheduled)
	if t.genTokens > 1 {
		m.reqTPOT.Observe((t.lastToken - t.firstToken) / float64(t.genTokens-1))
	}
}

func (m *promMetrics) observeTTFT(seconds float64) { m.ttft.Observe(seconds) }

func (m *promMetrics) observeITL(seconds float64) {
	for _, h := range m.tpot {
		h.Observe(seconds)
	}
}
