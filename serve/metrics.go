package serve

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/servebench/servebench/engine"
	names "github.com/servebench/servebench/metrics"
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

	// servebench's own: the step loop against the model's timeline.
	stepLag    prometheus.Histogram
	stepBehind prometheus.Counter
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

	m.running = gauge(names.VLLMRunning, "Number of requests currently running on GPU.")
	m.waiting = gauge(names.VLLMWaiting, "Number of requests waiting to be processed.")
	m.preemptions = counter(names.VLLMPreemptions, "Cumulative number of preemption from the engine.")
	m.promptTokens = counter(names.VLLMPromptTokens, "Number of prefill tokens processed.")
	m.genTokens = counter(names.VLLMGenTokens, "Number of generation tokens processed.")
	successVec := prometheus.NewCounterVec(prometheus.CounterOpts{Name: names.VLLMSuccess,
		Help: "Count of successfully processed requests.", ConstLabels: labels}, []string{"finished_reason"})
	m.reg.MustRegister(successVec)
	for _, r := range []string{finishStop, finishLength, finishAbort} {
		m.success[r] = successVec.WithLabelValues(r)
	}
	m.stepLag = histogram(names.StepLoopLag, "How late each engine step's tokens were released, in seconds past the instant the step model says the step ends (servebench's emulator only).", names.BucketsStepLoopLag())
	m.stepBehind = counter(names.StepLoopBehind, "Seconds the model's timeline was pushed back because the step loop fell too far behind to catch up (servebench's emulator only).")
	lenBuckets := build125Buckets(max(ec.MaxModelLen, 1))
	m.reqPromptTokens = histogram(names.VLLMReqPromptTokens, "Number of prefill tokens processed.", lenBuckets)
	m.reqGenTokens = histogram(names.VLLMReqGenTokens, "Number of generation tokens processed.", lenBuckets)
	m.paramsN = histogram(names.VLLMParamsN, "Histogram of the n request parameter.", []float64{1, 2, 5, 10, 20})

	info := prometheus.NewGauge(prometheus.GaugeOpts{Name: names.VLLMCacheConfig, Help: "Information of the LLMEngine CacheConfig",
		ConstLabels: cacheConfigLabels(ec)})
	info.Set(1)
	m.reg.MustRegister(info)

	if !v1 {
		m.swapped = gauge(names.VLLMSwapped, "Number of requests swapped to CPU.")
		m.kvUsage = []prometheus.Gauge{gauge(names.VLLMGPUCacheUsage, "GPU KV-cache usage. 1 means 100 percent usage.")}
		m.cpuUsage = gauge(names.VLLMCPUCacheUsage, "CPU KV-cache usage. 1 means 100 percent usage.")
		m.avgPromptTput = gauge(names.VLLMAvgPromptTput, "Average prefill throughput in tokens/s.")
		m.avgGenTput = gauge(names.VLLMAvgGenTput, "Average generation throughput in tokens/s.")
		if ec.EnablePrefixCaching {
			m.prefixHitRate = gauge(names.VLLMGPUPrefixRate, "GPU prefix cache block hit rate.")
		}
		m.ttft = histogram(names.VLLMTTFT, "Histogram of time to first token in seconds.", names.BucketsTTFTV0())
		m.tpot = []prometheus.Histogram{histogram(names.VLLMTPOT, "Histogram of time per output token in seconds.", names.BucketsTPOTV0())}
		m.e2e = histogram(names.VLLME2E, "Histogram of end to end request latency in seconds.", names.BucketsE2EV0())
		m.paramsBestOf = histogram(names.VLLMParamsBestOf, "Histogram of the best_of request parameter.", []float64{1, 2, 5, 10, 20})
		return m
	}

	m.kvUsage = []prometheus.Gauge{
		gauge(names.VLLMGPUCacheUsage, "GPU KV-cache usage. 1 means 100 percent usage."),
		gauge(names.VLLMKVCacheUsage, "KV-cache usage. 1 means 100 percent usage."),
	}
	m.prefixQueries = []prometheus.Counter{
		counter(names.VLLMGPUPrefixQueries, "GPU prefix cache queries, in terms of number of queried tokens."),
		counter(names.VLLMPrefixQueries, "Prefix cache queries, in terms of number of queried tokens."),
	}
	m.prefixHits = []prometheus.Counter{
		counter(names.VLLMGPUPrefixHits, "GPU prefix cache hits, in terms of number of cached tokens."),
		counter(names.VLLMPrefixHits, "Prefix cache hits, in terms of number of cached tokens."),
	}
	m.ttft = histogram(names.VLLMTTFT, "Histogram of time to first token in seconds.", names.BucketsTTFTV1())
	m.tpot = []prometheus.Histogram{
		histogram(names.VLLMTPOT, "Histogram of time per output token in seconds.", names.BucketsTPOTV1()),
		histogram(names.VLLMITL, "Histogram of inter-token latency in seconds.", names.BucketsTPOTV1()),
	}
	m.reqTPOT = histogram(names.VLLMReqTPOT, "Histogram of time_per_output_token_seconds per request.", names.BucketsTPOTV1())
	m.e2e = histogram(names.VLLME2E, "Histogram of end to end request latency in seconds.", names.BucketsLatencyV1())
	m.queue = histogram(names.VLLMQueueTime, "Histogram of time spent in WAITING phase for request.", names.BucketsLatencyV1())
	m.inference = histogram(names.VLLMInferenceTime, "Histogram of time spent in RUNNING phase for request.", names.BucketsLatencyV1())
	m.prefill = histogram(names.VLLMPrefillTime, "Histogram of time spent in PREFILL phase for request.", names.BucketsLatencyV1())
	m.decode = histogram(names.VLLMDecodeTime, "Histogram of time spent in DECODE phase for request.", names.BucketsLatencyV1())
	m.iterationTokens = histogram(names.VLLMIterationTokens, "Histogram of number of tokens per engine_step.", names.BucketsIteration())
	m.paramsMaxTokens = histogram(names.VLLMParamsMaxTokens, "Histogram of the max_tokens request parameter.", lenBuckets)
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
