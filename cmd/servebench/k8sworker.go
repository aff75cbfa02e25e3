package main

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/spf13/pflag"

	"github.com/servebench/servebench/tune"
)

// tuneWorkerFlags make `tune` one worker of a shared study, the way the
// Kubernetes worker Job (servebench k8s tune) runs it.
type tuneWorkerFlags struct {
	worker           bool
	concurrentTrials int
	gpusPerTrial     int
}

func (w *tuneWorkerFlags) register(fs *pflag.FlagSet) {
	fs.BoolVar(&w.worker, "worker", false, "run as one worker of a shared study (needs --storage): claim, run and store trials until the study's --trials are used")
	fs.IntVar(&w.concurrentTrials, "concurrent-trials", 1, "with --worker: trials this worker runs at once, each with its own GPUs")
	fs.IntVar(&w.gpusPerTrial, "gpus-per-trial", 0, "with --worker: GPUs of $CUDA_VISIBLE_DEVICES (else $NVIDIA_VISIBLE_DEVICES) given to each trial's server through its environment")
}

// check refuses worker flags that cannot work; changed reports flags the
// user set.
func (w *tuneWorkerFlags) check(changed func(string) bool, f *tuneFlags) error {
	if !w.worker {
		if changed("concurrent-trials") || changed("gpus-per-trial") {
			return errors.New("--concurrent-trials and --gpus-per-trial need --worker")
		}
		return nil
	}
	switch {
	case f.storage == "":
		return errors.New("--worker: give the shared study's --storage (postgresql://USER@HOST/DB, or an SQLite file every worker can reach)")
	case f.confirm > 0:
		return errors.New("--worker: --confirm would run on every worker; run it once, without --worker, after the study")
	case w.gpusPerTrial > 0 && f.launch == "":
		return fmt.Errorf("--gpus-per-trial %d: only --launch servers run on GPUs", w.gpusPerTrial)
	}
	return nil
}

// optimize runs the study: one loop, or with --worker one loop per
// concurrent trial, each with its share of the GPUs.
func (w *tuneWorkerFlags) optimize(ctx context.Context, cfg tune.Config) error {
	if !w.worker {
		return tune.Optimize(ctx, cfg)
	}
	devices, from := tune.VisibleGPUs(os.Getenv)
	slots, err := tune.SplitGPUs(devices, from, w.concurrentTrials, w.gpusPerTrial)
	if err != nil {
		return err
	}
	return tune.RunWorkers(ctx, cfg, slots)
}
