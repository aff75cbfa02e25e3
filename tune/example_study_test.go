package tune_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/servebench/servebench/runspec"
	"github.com/servebench/servebench/tune"
)

// A tune study on the simulator with Go calls only: the fixed flags are a
// sim spec, the space one --param, and every trial is stored in the
// study's SQLite file.
func ExampleStudy_Run() {
	dir, err := os.MkdirTemp("", "tune-example-")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)

	fixed := runspec.New(runspec.Sim)
	fixed.Engine.Model, fixed.Engine.GPU = "Qwen2-0.5B", "H100"
	fixed.Workload.Dataset.NumPrompts = 40
	fixed.Workload.Dataset.Random.InputLen, fixed.Workload.Dataset.Random.OutputLen = 256, 32
	study := &tune.Study{
		Name: "example", Dir: dir, Target: tune.TargetSim, Fixed: fixed,
		Trials: 3, Sampler: tune.SamplerRandom, Seed: 1,
		Params: []string{"max_num_seqs=int:8:64:log"},
	}
	if err := study.Run(context.Background(), runspec.IO{Out: io.Discard, Err: io.Discard}); err != nil {
		fmt.Println(err)
		return
	}
	store, err := tune.OpenStorage(context.Background(), filepath.Join(dir, "study.db"))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer store.Close()
	trials, err := store.Trials(context.Background(), "example")
	if err != nil {
		fmt.Println(err)
		return
	}
	complete := 0
	for _, t := range trials {
		if t.State == tune.StateComplete {
			complete++
		}
	}
	fmt.Printf("%d trials, %d complete; the best has max_num_seqs set: %v\n", len(trials), complete, tune.Best(trials).Params["max_num_seqs"] != "")
	// Output:
	// 3 trials, 3 complete; the best has max_num_seqs set: true
}
