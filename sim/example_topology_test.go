package sim_test

import (
	"context"
	"fmt"
	"time"

	"github.com/servebench/servebench/engine"
	"github.com/servebench/servebench/metrics"
	"github.com/servebench/servebench/perf"
	"github.com/servebench/servebench/sim"
	"github.com/servebench/servebench/workload"
)

// One prefill and one decode instance joined by the rdma preset. A lone
// request's TTFT is a proxy hop (2 ms), the prefill (60 ms), the transfer
// of 1000 tokens' KV (3.64 ms, which hides the second hop) and a decode
// step (10.05 ms): 75.7 ms; the rest of the mean is waiting for the
// decode instance's step in progress.
func ExampleRunTopology() {
	reqs := make([]workload.Request, 8)
	for i := range reqs {
		reqs[i] = workload.Request{Index: i, PromptLen: 1000, MaxTokens: 20, Arrival: time.Duration(i) * 100 * time.Millisecond}
	}
	ec := engine.Config{Version: engine.V1, BlockSize: 16, NumGPUBlocks: 1000, MaxNumSeqs: 256,
		MaxNumBatchedTokens: 2048, MaxModelLen: 4096, EnablePrefixCaching: true}
	model, _ := perf.LookupModel("Qwen/Qwen2.5-7B-Instruct")
	link, _ := perf.LookupKVLink("rdma")
	pool := sim.Pool{Instances: 1, Engine: ec, Model: constantModel{}, GPUs: 1}
	cfg := sim.TopologyConfig{
		Kind: sim.Disaggregated, Router: sim.RouteRoundRobin, Prefill: pool, Decode: pool,
		Transfer: sim.KVTransfer{Link: link, BytesPerToken: perf.KVTransferBytes(model, "auto", 1, false), Ranks: 1,
			Handoff: sim.HandoffSequential, HopCost: 2 * time.Millisecond, BufferBytes: 1e9, Overflow: sim.OverflowSpill, SpillBandwidth: 21e9},
	}
	var ttft time.Duration
	res, err := sim.RunTopology(context.Background(), cfg, reqs, func(r *metrics.Record) error {
		ttft += r.TTFT
		return nil
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(cfg)
	fmt.Printf("mean TTFT %v\n", ttft/time.Duration(len(reqs)))
	for _, l := range res.Lines() {
		fmt.Println(l)
	}
	// Output:
	// pd 1P1D (prefill tp×pp 1, decode tp×pp 1), router rr, KV link rdma, sequential handoff, 2 GPUs
	// mean TTFT 78.792028ms
	// prefill 0: 8 requests, 8 steps, 0 preemptions, max KV usage 6.3%
	// decode 0: 8 requests, 90 steps, 0 preemptions, max KV usage 12.8%
	// KV transfers: 8 (437.5 MiB sent), per request mean 3.64 ms, median 3.64 ms, P99 3.64 ms
}
