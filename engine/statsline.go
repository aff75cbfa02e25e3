package engine

import (
	"fmt"
	"time"
)

// StatsLine is one interval of vLLM's periodic engine statistics, rendered
// as vLLM logs it. Both the simulator and the emulated server print it.
type StatsLine struct {
	Version          Version
	Elapsed          time.Duration // interval length
	PromptTokens     int64         // computed during the interval
	GenerationTokens int64         // generated during the interval
	Running          int
	Waiting          int
	Swapped          int
	GPUUsage         float64 // 0..1
	CPUUsage         float64 // 0..1
	PrefixCaching    bool
	// PrefixHitRate is 0..1: V1 shows it over recent requests; V0's separate
	// line shows the cumulative rate.
	PrefixHitRate float64
}

// Throughputs are the interval's prompt and generation tokens per second.
func (s StatsLine) Throughputs() (prompt, generation float64) {
	secs := s.Elapsed.Seconds()
	if secs <= 0 {
		return 0, 0
	}
	return float64(s.PromptTokens) / secs, float64(s.GenerationTokens) / secs
}

// Lines renders the line in the engine version's format (V0 adds a separate
// prefix-cache line when caching is on).
func (s StatsLine) Lines() []string {
	pt, gt := s.Throughputs()
	if s.Version != V0 {
		return []string{fmt.Sprintf("Engine 000: Avg prompt throughput: %.1f tokens/s, Avg generation throughput: %.1f tokens/s, Running: %d reqs, Waiting: %d reqs, GPU KV cache usage: %.1f%%, Prefix cache hit rate: %.1f%%",
			pt, gt, s.Running, s.Waiting, s.GPUUsage*100, s.PrefixHitRate*100)}
	}
	out := []string{fmt.Sprintf("Avg prompt throughput: %.1f tokens/s, Avg generation throughput: %.1f tokens/s, Running: %d reqs, Swapped: %d reqs, Pending: %d reqs, GPU KV cache usage: %.1f%%, CPU KV cache usage: %.1f%%.",
		pt, gt, s.Running, s.Swapped, s.Waiting, s.GPUUsage*100, s.CPUUsage*100)}
	if s.PrefixCaching {
		out = append(out, fmt.Sprintf("Prefix cache hit rate: GPU: %.2f%%, CPU: %.2f%%", s.PrefixHitRate*100, 0.0))
	}
	return out
}

// Idle reports an all-zero interval, which vLLM ≥0.8 logs at debug level only.
func (s StatsLine) Idle() bool {
	return s.PromptTokens == 0 && s.GenerationTokens == 0 && s.Running == 0 && s.Waiting == 0 && s.Swapped == 0
}
