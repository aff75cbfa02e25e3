// Package serve is an emulated vLLM server: an OpenAI-compatible HTTP API
// whose tokens come out when the engine model says a GPU running vLLM would
// produce them. It stands in for a GPU server in tests of clients, gateways
// and routers, and is the embedded default target of `servebench bench`.
//
// # Timing
//
// One goroutine (Server.Run) owns the engine. Each iteration it takes the
// requests and aborts handlers queued since the last step, asks the engine
// for a step, times it with the perf.StepModel, sleeps once until the step
// is due (a runtime timer, then nanosleep(2) for the last 2 ms because Go's
// timers can fire up to 1 ms late on an idle process), completes the step
// and releases all of its tokens at once. Consecutive steps follow the
// model's timeline (the next step starts when the previous one was due, not
// when the loop got round to it) so late wake-ups do not accumulate; only a
// loop more than 20 ms behind restarts the timeline from the wall clock.
// With pipeline parallelism the loop keeps up to pipeline_parallel_size
// batches in flight, timed through perf.Pipeline as sim does, and sleeps
// until the oldest is due (V0's virtual engines also wake for a new
// request while one of them is free).
// With V0's async output processing (Config.AsyncOutputLag) a step's
// tokens are released when the next step ends, or after one more decode
// of the finished sequences when none follows, as sim does.
// Under the same arrivals the timeline is exactly sim's (TestDriverMatchesSim).
//
// Tokens reach a request's handler through a mutex-guarded backlog and a
// one-slot notification channel: the step loop never blocks on a client, so
// a slow reader only grows its own backlog. With --engine v1 a handler that
// fell behind sends its backlog as one chunk, as vLLM V1's output collector
// merges outputs; with v0 it sends one chunk per token. A client that
// disconnects aborts its request, which frees its KV blocks. Every streamed
// token's write lag (written minus due) is kept in a histogram (WriteLag).
//
// # Wire format
//
// Chunks, usage (stream_options.include_usage and continuous_usage_stats),
// finish reasons and error messages follow vLLM 0.8.5. Error bodies default
// to current vLLM's {"error":{...}} shape, which the OpenAI SDKs read;
// ErrorStyleLegacy gives 0.5–0.8's flat {"object":"error",...}.
// Generated text is built from common English words that are single tokens
// of the configured tokenizer, so it re-tokenizes to exactly the reported
// usage; it is a pure function of the seed and the prompt (or the request's
// seed). Requests run to max_tokens unless Config.OutputLen draws a shorter
// "EOS" length (ignore_eos always runs to max_tokens; min_tokens is honoured).
//
// # Metrics
//
// /metrics uses a private registry with vLLM's names, labels and buckets:
// V0 (0.5.4) names with label model_name, or V1 names with labels model_name
// and engine="0". V1 exports both 0.8.5's names (gpu_cache_usage_perc,
// gpu_prefix_cache_queries/hits) and their current replacements
// (kv_cache_usage_perc, prefix_cache_queries/hits_total,
// inter_token_latency_seconds, request_time_per_output_token_seconds), so
// scrapers of either era work. Request timings (TTFT, ITL, queue, prefill,
// decode, e2e) are taken on the engine clock, from the model's due times.
// request_success_total uses vLLM's label finished_reason (llm-d's emulator
// says finish_reason).
//
// # Faults
//
// Faults.Rate of generation requests fail, the k-th request's fate a pure
// function of (Seed, k): 429, 500 or 503 with an OpenAI error body, a
// connection dropped mid-stream, or a slow first byte.
//
// # Several instances
//
// To test a router, start several servers with different seeds (and ports)
// and point the router at them:
//
//	servebench serve --port 8001 --seed 1 &
//	servebench serve --port 8002 --seed 2 &
//	servebench serve --port 8003 --seed 3 --failure-rate 0.05 --failure-types 503,drop &
//	servebench bench --base-url http://127.0.0.1:9000 ...   # the router
//
// Not emulated: n>1, best_of, beam search, echo, log probabilities (refused
// with a 400; /v1/models says allow_logprobs false),
// LoRA, tool calls, images, prefill/decode disaggregation roles.
package serve
