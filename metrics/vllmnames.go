package metrics

// The Prometheus names and histogram buckets serve exports and bench's
// scraper reads, in one place so that a test can prove that the one reads
// what the other writes. The vllm:* names and buckets are vLLM's
// (vllm/engine/metrics.py in 0.5.4 for V0, vllm/v1/metrics/loggers.py in
// 0.8.5 and later for V1). V1 exports both the 0.8.5 names
// (gpu_cache_usage_perc, gpu_prefix_cache_*) and their current
// replacements (kv_cache_usage_perc, prefix_cache_*,
// inter_token_latency_seconds, request_time_per_output_token_seconds).
const (
	VLLMRunning          = "vllm:num_requests_running"
	VLLMWaiting          = "vllm:num_requests_waiting"
	VLLMSwapped          = "vllm:num_requests_swapped"
	VLLMGPUCacheUsage    = "vllm:gpu_cache_usage_perc"
	VLLMCPUCacheUsage    = "vllm:cpu_cache_usage_perc"
	VLLMKVCacheUsage     = "vllm:kv_cache_usage_perc"
	VLLMPrefixQueries    = "vllm:prefix_cache_queries_total"
	VLLMPrefixHits       = "vllm:prefix_cache_hits_total"
	VLLMGPUPrefixQueries = "vllm:gpu_prefix_cache_queries_total"
	VLLMGPUPrefixHits    = "vllm:gpu_prefix_cache_hits_total"
	VLLMGPUPrefixRate    = "vllm:gpu_prefix_cache_hit_rate"
	VLLMPreemptions      = "vllm:num_preemptions_total"
	VLLMPromptTokens     = "vllm:prompt_tokens_total"
	VLLMGenTokens        = "vllm:generation_tokens_total"
	VLLMSuccess          = "vllm:request_success_total"
	VLLMTTFT             = "vllm:time_to_first_token_seconds"
	VLLMTPOT             = "vllm:time_per_output_token_seconds"
	VLLMITL              = "vllm:inter_token_latency_seconds"
	VLLMReqTPOT          = "vllm:request_time_per_output_token_seconds"
	VLLME2E              = "vllm:e2e_request_latency_seconds"
	VLLMQueueTime        = "vllm:request_queue_time_seconds"
	VLLMInferenceTime    = "vllm:request_inference_time_seconds"
	VLLMPrefillTime      = "vllm:request_prefill_time_seconds"
	VLLMDecodeTime       = "vllm:request_decode_time_seconds"
	VLLMReqPromptTokens  = "vllm:request_prompt_tokens"
	VLLMReqGenTokens     = "vllm:request_generation_tokens"
	VLLMIterationTokens  = "vllm:iteration_tokens_total"
	VLLMParamsN          = "vllm:request_params_n"
	VLLMParamsBestOf     = "vllm:request_params_best_of"
	VLLMParamsMaxTokens  = "vllm:request_params_max_tokens"
	VLLMAvgPromptTput    = "vllm:avg_prompt_throughput_toks_per_s"
	VLLMAvgGenTput       = "vllm:avg_generation_throughput_toks_per_s"
	VLLMCacheConfig      = "vllm:cache_config_info"
)

// Metrics only servebench's emulator exports: how far its wall-clock step
// loop fell behind the engine model's timeline. vLLM has no equivalent (a
// real GPU's steps take what they take).
const (
	// StepLoopLag is a histogram of how late each engine step's tokens were
	// released: the wall clock minus the instant the step model said the
	// step ends.
	StepLoopLag = "servebench:step_loop_lag_seconds"
	// StepLoopBehind counts the seconds the model's timeline was pushed
	// back because the loop fell too far behind to catch up: the run took
	// that much longer than the model says.
	StepLoopBehind = "servebench:step_loop_behind_seconds_total"
)

// Emulator lag thresholds: beyond either, timings measured against the
// emulator are the host's, not the model's.
const (
	StepLoopLagP99Limit      = 0.005 // seconds, at p99
	StepLoopBehindShareLimit = 0.01  // of the run's duration
)

// Histogram buckets, returned fresh so that no caller can change another's.
func BucketsTTFTV0() []float64 {
	return []float64{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0}
}

func BucketsTPOTV0() []float64 {
	return []float64{0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5}
}

func BucketsE2EV0() []float64 {
	return []float64{1.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0}
}

func BucketsTTFTV1() []float64 {
	return []float64{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0}
}

func BucketsTPOTV1() []float64 {
	return []float64{0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0}
}

func BucketsLatencyV1() []float64 {
	return []float64{0.3, 0.5, 0.8, 1, 1.5, 2, 2.5, 5, 10, 15, 20, 30, 40, 50, 60, 120, 240, 480, 960, 1920, 7680}
}

func BucketsIteration() []float64 {
	return []float64{1, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384}
}

// BucketsStepLoopLag has an edge at StepLoopLagP99Limit, so the share of
// steps over the limit (and so whether p99 is) is exact.
func BucketsStepLoopLag() []float64 {
	return []float64{0.0001, 0.00025, 0.0005, 0.001, 0.0025, StepLoopLagP99Limit, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5}
}
