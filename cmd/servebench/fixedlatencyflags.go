package main

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/servebench/servebench/perf"
	"github.com/servebench/servebench/serve"
)

// latencyValue is a latency flag as llm-d-inference-sim takes it: a bare
// number is milliseconds (its original form), anything else a Go duration
// such as 250us or 1.5s.
type latencyValue struct{ d *time.Duration }

func (v latencyValue) String() string {
	if v.d == nil {
		return "0"
	}
	return v.d.String()
}

func (v latencyValue) Set(s string) error {
	if ms, err := strconv.ParseFloat(strings.TrimSpace(s), 64); err == nil {
		*v.d = time.Duration(ms * float64(time.Millisecond))
		return nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("%q is neither milliseconds (100) nor a duration (100ms)", s)
	}
	*v.d = d
	return nil
}

func (latencyValue) Type() string { return "latency" }

// fixedLatencyFlags are llm-d-inference-sim's fixed-latency flags, with its
// names and meanings.
type fixedLatencyFlags struct {
	fs  *pflag.FlagSet
	cfg serve.FixedLatency
}

var fixedLatencyFlagNames = []string{"time-to-first-token", "time-to-first-token-std-dev", "inter-token-latency", "inter-token-latency-std-dev", "time-factor-under-load", "kv-cache-transfer-latency", "kv-cache-transfer-latency-std-dev"}

func (f *fixedLatencyFlags) register(fs *pflag.FlagSet) {
	f.fs = fs
	fs.Var(latencyValue{&f.cfg.TimeToFirstToken}, "time-to-first-token", "fixed-latency mode (llm-d-inference-sim's flag): a step that samples a first token takes this long instead of the engine model's time; milliseconds or a duration. Any of these five flags selects the mode; all zero is the zero-latency mode")
	fs.Var(latencyValue{&f.cfg.TimeToFirstTokenStdDev}, "time-to-first-token-std-dev", "standard deviation of --time-to-first-token (at most 30% of it; draws clamped to ±70%, seeded by --seed)")
	fs.Var(latencyValue{&f.cfg.InterTokenLatency}, "inter-token-latency", "fixed-latency mode: a decode-only step takes this long; milliseconds or a duration")
	fs.Var(latencyValue{&f.cfg.InterTokenLatencyStdDev}, "inter-token-latency-std-dev", "standard deviation of --inter-token-latency (at most 30% of it)")
	fs.Var(latencyValue{&f.cfg.KVCacheTransferLatency}, "kv-cache-transfer-latency", "fixed-latency mode: a request with kv_transfer_params.do_remote_prefill (P/D decode) waits this long for its KV instead of a prefill, then gets its first token with the next decode step; milliseconds or a duration")
	fs.Var(latencyValue{&f.cfg.KVCacheTransferLatencyStdDev}, "kv-cache-transfer-latency-std-dev", "standard deviation of --kv-cache-transfer-latency (at most 30% of it)")
	fs.Float64Var(&f.cfg.TimeFactorUnderLoad, "time-factor-under-load", 1, "fixed-latency mode: multiply both latencies by up to this factor (≥1), linearly from 1 sequence running to max-num-seqs")
}

// stepModel returns the fixed-latency step model when any of its flags was
// given, else model unchanged.
func (f *fixedLatencyFlags) stepModel(model perf.StepModel, maxNumSeqs int, seed uint64) (perf.StepModel, bool, error) {
	on := false
	for _, name := range fixedLatencyFlagNames {
		on = on || f.fs.Changed(name)
	}
	if !on {
		return model, false, nil
	}
	cfg := f.cfg
	cfg.MaxNumSeqs, cfg.Seed = maxNumSeqs, seed
	fixed, err := cfg.StepModel()
	return fixed, true, err
}

func describeFixedLatency(c serve.FixedLatency) string {
	return fmt.Sprintf("time to first token %v (std-dev %v), inter-token latency %v (std-dev %v), KV-cache transfer latency %v (std-dev %v), time factor under load %g; the scheduler's limits still apply",
		c.TimeToFirstToken, c.TimeToFirstTokenStdDev, c.InterTokenLatency, c.InterTokenLatencyStdDev, c.KVCacheTransferLatency, c.KVCacheTransferLatencyStdDev, c.TimeFactorUnderLoad)
}
