package tune

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/servebench/servebench/metrics"
	"github.com/servebench/servebench/perf"
	"github.com/servebench/servebench/report"
	"github.com/servebench/servebench/sim"
	"github.com/servebench/servebench/vllm"
	"github.com/servebench/servebench/workload"
)

// SimTarget validates and runs points in-process: vllm.Resolve (the
// resolver sim and serve use) for validation and capacity, sim.Run for
// the load test. Requests must already carry their arrival times.
type SimTarget struct {
	Profile  vllm.Profile
	Model    perf.Model
	GPU      perf.GPU
	Base     vllm.Options
	Requests []workload.Request
	Summary  metrics.Options
	Info     report.RunInfo
}

// Options applies p's values to the target's base options. Names are
// vLLM's options; an unknown one is an error naming it.
func Options(base vllm.Options, p Point) (vllm.Options, error) {
	o := base
	for name, v := range p {
		if err := setOption(&o, name, v); err != nil {
			return o, fmt.Errorf("parameter %s=%s: %w", name, v, err)
		}
	}
	return o, nil
}

func setOption(o *vllm.Options, name, v string) error {
	atoi := func(dst *int) error {
		n, err := strconv.Atoi(v)
		if err != nil {
			return fmt.Errorf("%q is not an integer", v)
		}
		*dst = n
		return nil
	}
	atof := func(dst *float64) error {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return fmt.Errorf("%q is not a number", v)
		}
		*dst = f
		return nil
	}
	boolPtr := func(dst **bool) error {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return fmt.Errorf("%q is not true or false", v)
		}
		*dst = &b
		return nil
	}
	switch name {
	case "max_num_seqs":
		return atoi(&o.MaxNumSeqs)
	case "max_num_batched_tokens":
		return atoi(&o.MaxNumBatchedTokens)
	case "max_model_len":
		return atoi(&o.MaxModelLen)
	case "block_size":
		return atoi(&o.BlockSize)
	case "tensor_parallel_size":
		return atoi(&o.TensorParallel)
	case "pipeline_parallel_size":
		return atoi(&o.PipelineParallel)
	case "num_scheduler_steps":
		return atoi(&o.NumSchedulerSteps)
	case "max_seq_len_to_capture":
		return atoi(&o.MaxSeqLenToCapture)
	case "gpu_memory_utilization":
		return atof(&o.GPUMemoryUtilization)
	case "scheduler_delay_factor":
		return atof(&o.SchedulerDelayFactor)
	case "swap_space":
		var f float64
		if err := atof(&f); err != nil {
			return err
		}
		o.SwapSpaceGiB = &f
	case "enable_chunked_prefill":
		return boolPtr(&o.EnableChunkedPrefill)
	case "enable_prefix_caching":
		return boolPtr(&o.EnablePrefixCaching)
	case "async_scheduling":
		return boolPtr(&o.AsyncScheduling)
	case "preemption_mode":
		o.PreemptionMode = v
	case "kv_cache_dtype":
		o.KVCacheDType = v
	case "enforce_eager":
		b, err := strconv.ParseBool(v)
		o.EnforceEager = b
		return err
	default:
		return fmt.Errorf("servebench does not model --%s; pin it in the launch template instead", name)
	}
	return nil
}

// resolve runs the release's checks on p.
func (s *SimTarget) resolve(ctx context.Context, p Point) (*vllm.Resolved, error) {
	o, err := Options(s.Base, p)
	if err != nil {
		return nil, err
	}
	return vllm.Resolve(ctx, s.Profile, s.Model, s.GPU, o)
}

// PredictedCapacity turns the memory profile into a trial's prediction.
func PredictedCapacity(c perf.Capacity, tokensPerRequest int) *Capacity {
	const gib = 1 << 30
	return &Capacity{
		GPUBlocks: c.GPUBlocks, KVCacheTokens: c.Tokens(),
		KVCacheGiB: float64(c.KVCacheBytes) / gib, WeightsGiB: float64(c.WeightBytes) / gib,
		MaxConcurrency: c.MaxConcurrency(tokensPerRequest),
	}
}

// Validate is a Validator.
func (s *SimTarget) Validate(ctx context.Context, p Point) (*Capacity, error) {
	r, err := s.resolve(ctx, p)
	if err != nil {
		return nil, err
	}
	return PredictedCapacity(r.Capacity, r.Engine.MaxModelLen), nil
}

// Run is a Runner: one simulation of the requests under t's point.
func (s *SimTarget) Run(ctx context.Context, t Trial) (*Outcome, error) {
	r, err := s.resolve(ctx, t.Params)
	if err != nil {
		return nil, err
	}
	reqs := make([]workload.Request, len(s.Requests))
	copy(reqs, s.Requests)
	rec := metrics.NewRecorder(s.Summary, nil, metrics.KeepNone)
	cfg := sim.ConfigFor(r)
	cfg.ReuseRecords = true
	res, err := sim.Run(ctx, cfg, reqs, func(m *metrics.Record) error {
		return rec.Add(m)
	})
	if err != nil {
		return nil, err
	}
	if res.Err != nil {
		return nil, fmt.Errorf("engine failed: %w", res.Err)
	}
	if err := rec.Close(); err != nil {
		return nil, err
	}
	result, err := ResultMap(&report.Result{Info: s.Info, Summary: rec.Summary(rec.LastEnd())})
	if err != nil {
		return nil, err
	}
	return &Outcome{Result: result}, nil
}

// ResultMap is a result's --save-result JSON as a map, the shape SLAs
// and objectives read.
func ResultMap(r *report.Result) (map[string]any, error) {
	data, err := report.JSON(r, false)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, err
	}
	return m, nil
}
