package engine

import (
	"testing"
	"time"
)

func TestStatsLinesMatchVLLM(t *testing.T) {
	v1 := StatsLine{Version: V1, Elapsed: 10 * time.Second, PromptTokens: 12345, GenerationTokens: 6789,
		Running: 12, Waiting: 3, GPUUsage: 0.4567, PrefixHitRate: 0.25}
	want := "Engine 000: Avg prompt throughput: 1234.5 tokens/s, Avg generation throughput: 678.9 tokens/s, Running: 12 reqs, Waiting: 3 reqs, GPU KV cache usage: 45.7%, Prefix cache hit rate: 25.0%"
	if got := v1.Lines(); len(got) != 1 || got[0] != want {
		t.Errorf("v1 line\n got %q\nwant %q", got, want)
	}
	v0 := StatsLine{Version: V0, Elapsed: 5 * time.Second, PromptTokens: 500, GenerationTokens: 1000, Running: 4, Swapped: 1, Waiting: 2,
		GPUUsage: 0.9, CPUUsage: 0.125, PrefixCaching: true, PrefixHitRate: 0.5}
	want0 := []string{
		"Avg prompt throughput: 100.0 tokens/s, Avg generation throughput: 200.0 tokens/s, Running: 4 reqs, Swapped: 1 reqs, Pending: 2 reqs, GPU KV cache usage: 90.0%, CPU KV cache usage: 12.5%.",
		"Prefix cache hit rate: GPU: 50.00%, CPU: 0.00%",
	}
	got0 := v0.Lines()
	if len(got0) != 2 || got0[0] != want0[0] || got0[1] != want0[1] {
		t.Errorf("v0 lines\n got %q\nwant %q", got0, want0)
	}
	v0.PrefixCaching = false
	if got := v0.Lines(); len(got) != 1 {
		t.Errorf("v0 without prefix caching: %d lines, want 1", len(got))
	}
	if v1.Idle() || !(StatsLine{Version: V1, Elapsed: time.Second}).Idle() {
		t.Error("Idle wrong")
	}
	if p, g := (StatsLine{}).Throughputs(); p != 0 || g != 0 {
		t.Error("zero interval must give zero throughput, not NaN")
	}
}
