package bench_test

import (
	"context"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/servebench/servebench/bench"
	"github.com/servebench/servebench/report"
	"github.com/servebench/servebench/runspec"
	"github.com/servebench/servebench/serve"
)

// A sharded benchmark with Go calls only: two shards of one seeded
// schedule run against the emulated vLLM server, start together at one
// instant, and merge into the run an unsharded benchmark would have sent.
func Example_shards() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "bench-example-")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	server, err := serve.StartEmulatedModel(ctx, runspec.DefaultEmulatedModel, runspec.DefaultEmulatedGPU, runspec.Env{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer server.Close()

	start := time.Now().Add(2 * time.Second).UTC().Format(time.RFC3339Nano)
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i := range 2 {
		s := runspec.New(runspec.Bench)
		s.Target.BaseURL, s.Target.Model = server.URL(), server.Model
		s.Workload.Dataset.NumPrompts, s.Workload.Dataset.Seed = 30, 7
		s.Workload.Dataset.Random.InputLen, s.Workload.Dataset.Random.OutputLen = 64, 8
		s.Workload.RequestRate = 60
		s.Shard.Shard, s.Shard.StartAt = fmt.Sprintf("%d/2", i), start
		s.Output.ResultDir = dir
		s.Client.SkipTestRequest, s.Client.ServerMetricsInterval = true, 0
		wg.Go(func() { errs[i] = bench.RunSpec(ctx, s, runspec.IO{}) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			fmt.Println(err)
			return
		}
	}
	shards, err := report.LoadShards(dir)
	if err != nil {
		fmt.Println(err)
		return
	}
	merged, err := report.MergeShards(shards)
	if err != nil {
		fmt.Println(err)
		return
	}
	s := merged.Result.Summary
	fmt.Printf("%d shards merged: %d requests completed, %d failed\n", len(merged.Shards), s.Completed, s.Failed)
	// Output:
	// 2 shards merged: 30 requests completed, 0 failed
}
