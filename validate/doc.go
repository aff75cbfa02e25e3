// Package validate measures how far sim is from real GPUs: it holds the
// corpus of published real vLLM runs (validate/corpus, embedded in the
// binary; corpus/README.md is the schema) and reports sim's error against
// them, or against a user's own benchmark results. It fits nothing (that
// is package calibrate): every figure it prints is a prediction made before
// looking at the run's result.
//
// # Simulating a run
//
// Each run is simulated as `servebench sim` would simulate it from the
// command line Result.Command holds (newPlan and plan.simulate mirror
// cmd/servebench's sim.go, engineflags.go and workloadflags.go; a test in
// cmd/servebench proves the figures equal byte for byte): the model from
// models/<org>--<name>/config.json beside the corpus or perf's catalog, the
// GPU from perf's catalog, the release profile from vllm.Lookup with the
// run's engine, the server flags through vllm.Resolve (the release's
// validation and defaults), and the workload as sim's random dataset.
// Approximations, each listed in the run's notes:
//
//   - every dataset is simulated as token-ID prompts of the run's lengths:
//     ShareGPT spread as ShareGPT's around its mean lengths
//     (--random-length-dist sharegpt: prompts shaped as vLLM's own
//     ShareGPT sample, replies log-normal at ShareGPT's median/mean; see
//     workload), or at its mean prompt when the client fixed every reply's
//     length (workload.sharegpt_output_len), sonnet with its shared prefix as
//     random_prefix_len (input_len counts the whole prompt, so the random
//     part is input_len − prefix_len), fixed lengths with range ratio 0;
//     a run that publishes every request's lengths (workload.lengths, or
//     a user's detailed result file with input_lens and output_lens)
//     replays those, in order (--random-lengths-from), once they add up to
//     its published totals, without a shared prefix (they are whole
//     prompts);
//   - a run whose outputs stopped at EOS (ignore_eos false) is simulated at
//     its published mean output length (total_output_tokens / completed),
//     unless it replays its own lengths;
//   - a client that called the chat API (workload.backend) is simulated
//     with sim --backend, which charges vLLM's server the chat template's
//     preparation and the chat ingest latency before the engine, and
//     streams the chat role chunk (vllm, "Chat preparation");
//   - the throughput benchmark is sim --throughput (every request at t=0);
//     the latency benchmark is a batch of batch_size requests at once, and
//     its "Avg latency" is compared with the simulated time to the batch's
//     last token (benchmark_latency times the whole generate call);
//   - fp8 applied on the fly to an unquantized checkpoint (--quantization
//     fp8) is sim --quantization fp8: the checkpoint as an fp8 one;
//   - server flags that change nothing sim models (ports, logging, names)
//     are accepted and listed; any other flag sim does not know makes the
//     run unsimulable, as do gptq or awq applied on the fly to an
//     unquantized checkpoint, fp32, data-parallel replicas (gpu_count above
//     TP × PP), an unknown model or GPU, a release without a profile, and a
//     setup vLLM would refuse to start (weights or KV cache do not fit).
//     Such runs are listed with their reason and counted, never dropped;
//   - so is a run whose published figures its recorded setup cannot
//     produce at its GPUs' peak (peakbound.go; 2 FLOPs per active linear
//     parameter a token, at the dense peak of the run's compute
//     precision, the shared prefix left out): a throughput that puts more
//     tokens through the model than that peak allows, or, for a serving
//     run that sent every prompt at once, a mean TTFT under 0.8 of the
//     least arrival-order prefill allows ((N+1)/2 prompts). Its error
//     would measure the corpus entry, not sim. In the built-in corpus this
//     refuses gpustack-quantization-impact/a100-bf16 alone (TTFT 0.71 of
//     its bound; the next burst is at 1.68; the highest throughput is
//     0.74 of its peak, nm-vllm's A10G prefill; TestBuiltinCorpusWithinPeak
//     logs each).
//
// # Errors and groups
//
// A figure's error is sim / published − 1. Summaries take one figure per
// run and family (the headline: throughput prefers output_throughput, then
// total_token_throughput, then request_throughput; TPOT/ITL mean TPOT, mean
// ITL, then the medians; TTFT mean then median; E2E mean then median), and
// report the median and worst absolute error per family × GPU class ×
// regime × release line (0.4, 0.5, 0.6, 0.7-0.10, 0.11+), on holdout runs for
// the headline, fit runs apart, and per source (the publication, or a
// user's result file: one lab's machines or setup show there rather than
// hiding in the medians). GPU classes fold memory sizes and form
// factors together (A100-40GB and A100-80GB are A100; A10 and A10G share
// one class). Twins, runs with the same sim command and benchmark, get one
// prediction; their published figures' spread about each group's median
// is reported beside sim's error on them (twins.go).
//
// # Regimes
//
// A corpus run declares its regime; a user's run and a sim run get theirs
// from ClassifyRegime, the rule corpus/README.md's definitions come to when
// made exact (a test holds every corpus run to it): offline runs by their
// lengths (at most 8 output tokens: prefill; outputs at least 4× the
// prompts: decode; else mixed), serving runs saturated when everything is
// sent at once, when a concurrency cap of 32 or more is kept full, or when
// a rate-paced run held 32 or more requests in flight on average (rate ×
// mean request latency) or fell behind its arrivals (duration above 1.1 ×
// num_prompts / rate plus one mean request latency), else low.
//
// # Expected error
//
// expected.json beside the corpus holds the holdout errors per family and
// per GPU class × regime. The CI guard (TestCorpusHoldoutErrorGuard) fails
// when a family's median rises more than 2 points above it; sim prints the
// cell of its own GPU class and regime under its Simulated Engine section,
// or says the corpus has fewer than 3 such runs.
package validate
