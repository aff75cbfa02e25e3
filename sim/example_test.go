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

// constantModel takes 10 ms per step plus 50 µs per token.
type constantModel struct{}

func (constantModel) StepTime(s perf.StepShape) time.Duration {
	return 10*time.Millisecond + time.Duration(s.Tokens())*50*time.Microsecond
}

func ExampleRun() {
	reqs := make([]workload.Request, 8)
	for i := range reqs {
		reqs[i] = workload.Request{Index: i, PromptLen: 100, MaxTokens: 20, Arrival: time.Duration(i) * 50 * time.Millisecond}
	}
	cfg := sim.Config{
		Engine: engine.Config{Version: engine.V1, BlockSize: 16, NumGPUBlocks: 1000, MaxNumSeqs: 256,
			MaxNumBatchedTokens: 2048, MaxModelLen: 4096, EnablePrefixCaching: true},
		Model: constantModel{},
	}
	var ttft time.Duration
	res, err := sim.Run(context.Background(), cfg, reqs, func(r *metrics.Record) error {
		ttft += r.TTFT
		return nil
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("mean TTFT %v\n", ttft/time.Duration(len(reqs)))
	fmt.Println(sim.ThroughputLine(res, len(reqs), int64(len(reqs)*120)))
	// Output:
	// mean TTFT 19.625ms
	// Throughput: 14.0944 requests/s, 1691.3319 tokens/s, Delay 10.9000 ms, n_step: 52
}
