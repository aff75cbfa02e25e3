package sweep_test

import (
	"context"
	"fmt"
	"os"

	"github.com/servebench/servebench/report"
	"github.com/servebench/servebench/runspec"
	"github.com/servebench/servebench/sweep"
)

// A sweep of the simulator over the request rate, built and run with Go
// calls: the spec's fields are the flags' values.
func Example() {
	dir, err := os.MkdirTemp("", "sweep-example-")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)

	base := runspec.New(runspec.Sim)
	base.Engine.Model, base.Engine.GPU = "Qwen2-0.5B", "H100"
	base.Workload.Dataset.NumPrompts = 40
	base.Workload.Dataset.Random.InputLen, base.Workload.Dataset.Random.OutputLen = 256, 32

	m, err := sweep.Run(context.Background(), sweep.Config{
		Dir: dir, Base: base, Run: sweep.RunSpec,
		Axes: []sweep.Axis{{Flag: "request-rate", Values: []string{"5", "20"}}},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, p := range m.Points {
		fmt.Println(p.Describe(), p.Status)
	}
	results, err := report.LoadResults(dir)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, r := range results {
		completed, _ := r.Number("completed")
		rate, _ := r.Number("request_rate")
		fmt.Printf("%g req/s: %g requests completed\n", rate, completed)
	}
	// Output:
	// request-rate=5 done
	// request-rate=20 done
	// 5 req/s: 40 requests completed
	// 20 req/s: 40 requests completed
}
