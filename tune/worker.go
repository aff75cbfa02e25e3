package tune

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
)

// GPU device environment: CUDA_VISIBLE_DEVICES is what a process was told
// to use; NVIDIA_VISIBLE_DEVICES is what the NVIDIA device plugin gave a
// Kubernetes pod.
const (
	EnvCUDAVisible   = "CUDA_VISIBLE_DEVICES"
	EnvNVIDIAVisible = "NVIDIA_VISIBLE_DEVICES"
)

// VisibleGPUs lists the GPUs this worker may hand to its trials, from
// CUDA_VISIBLE_DEVICES, else NVIDIA_VISIBLE_DEVICES; from is the name of
// the variable it used, empty when neither lists devices ("all", "none"
// and "void" name no countable devices).
func VisibleGPUs(getenv func(string) string) (devices []string, from string) {
	for _, name := range []string{EnvCUDAVisible, EnvNVIDIAVisible} {
		v := strings.TrimSpace(getenv(name))
		switch v {
		case "", "all", "none", "void", "NoDevFiles":
			continue
		}
		for d := range strings.SplitSeq(v, ",") {
			if d = strings.TrimSpace(d); d != "" {
				devices = append(devices, d)
			}
		}
		return devices, name
	}
	return nil, ""
}

// SplitGPUs gives each of slots concurrent trials perTrial devices of its
// own. perTrial 0 runs every slot without GPUs (CPU-only targets).
func SplitGPUs(devices []string, from string, slots, perTrial int) ([][]string, error) {
	switch {
	case slots < 1:
		return nil, fmt.Errorf("--concurrent-trials %d: need at least 1", slots)
	case perTrial < 0:
		return nil, fmt.Errorf("--gpus-per-trial %d: must not be negative", perTrial)
	case perTrial == 0:
		return make([][]string, slots), nil
	case from == "":
		return nil, fmt.Errorf("--gpus-per-trial %d: no GPUs listed in $%s or $%s; set one (e.g. %s=0,1,2,3) or use --gpus-per-trial 0",
			perTrial, EnvCUDAVisible, EnvNVIDIAVisible, EnvCUDAVisible)
	case slots*perTrial > len(devices):
		return nil, fmt.Errorf("--concurrent-trials %d × --gpus-per-trial %d needs %d GPUs but $%s lists %d (%s)",
			slots, perTrial, slots*perTrial, from, len(devices), strings.Join(devices, ","))
	}
	out := make([][]string, slots)
	for i := range out {
		out[i] = devices[i*perTrial : (i+1)*perTrial]
	}
	return out, nil
}

type gpusKey struct{}

// WithGPUs tells a trial's Runner which GPUs are its own.
func WithGPUs(ctx context.Context, devices []string) context.Context {
	return context.WithValue(ctx, gpusKey{}, devices)
}

// GPUEnv is the environment a trial's server needs to use only its own
// GPUs; nil when the worker assigned none.
func GPUEnv(ctx context.Context) []string {
	devices, _ := ctx.Value(gpusKey{}).([]string)
	if len(devices) == 0 {
		return nil
	}
	// Set both: CUDA for the process itself, NVIDIA for any container it
	// starts through the NVIDIA container runtime.
	list := strings.Join(devices, ",")
	return []string{EnvCUDAVisible + "=" + list, EnvNVIDIAVisible + "=" + list}
}

// RunWorkers runs one Optimize loop per slot, concurrently, each under its
// own worker identity with its slot's GPUs in the Runner's context, until
// every trial of the study's budget is finished or ctx ends. A failing
// loop stops the others.
func RunWorkers(ctx context.Context, cfg Config, slots [][]string) error {
	if len(slots) == 0 {
		return errors.New("tune: no worker slots")
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var mu sync.Mutex
	if onTrial := cfg.OnTrial; onTrial != nil {
		cfg.OnTrial = func(t Trial) {
			mu.Lock()
			defer mu.Unlock()
			onTrial(t)
		}
	}
	errs := make([]error, len(slots))
	var wg sync.WaitGroup
	for i, gpus := range slots {
		slot := cfg
		run := cfg.Run
		slot.Run = func(ctx context.Context, t Trial) (*Outcome, error) { return run(WithGPUs(ctx, gpus), t) }
		// Slots must not sample the same sequence from one seed.
		slot.Seed = cfg.Seed + int64(i)
		wg.Go(func() {
			if err := workUntilDone(ctx, slot); err != nil {
				errs[i] = err
				cancel(err)
			}
		})
	}
	wg.Wait()
	if cause := context.Cause(ctx); cause != nil && !errors.Is(cause, context.Canceled) {
		return cause
	}
	return errors.Join(errs...)
}

// workUntilDone runs Optimize until no trial of the study is left
// unfinished. Optimize returns once the budget is claimed; a worker that
// left then would leave nobody to reap and rerun the trial of a worker
// that dies later, so it stays, polling, while others still run trials.
func workUntilDone(ctx context.Context, cfg Config) error {
	poll := cfg.HeartbeatEvery
	if poll <= 0 {
		poll = 5 * time.Second
	}
	for {
		if err := Optimize(ctx, cfg); err != nil {
			return err
		}
		trials, err := cfg.Storage.Trials(ctx, cfg.Study)
		if err != nil {
			return err
		}
		if !slices.ContainsFunc(trials, func(t Trial) bool { return !t.State.finished() }) {
			return nil
		}
		timer := time.NewTimer(poll)
		select {
		case <-ctx.Done():
			timer.Stop()
			return ctx.Err()
		case <-timer.C:
		}
	}
}
