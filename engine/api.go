// Package engine models vLLM's scheduler and KV-cache manager: the V0
// (0.5/0.6) and V1 scheduler policies, paged KV blocks with watermark,
// prefix caching, and swap/recompute preemption. It knows no clock and does
// no I/O: the driver (sim on a virtual clock, serve on the wall clock) asks
// for a step, times it with a perf.StepModel, and reports it done.
package engine
