package serve

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/servebench/servebench/perf"
)

// FixedLatency is llm-d-inference-sim's fixed-latency mode as a step model:
// instead of predicting a GPU's step from its shape, a step takes the
// configured time to first token when it samples some sequence's first
// token, and the inter-token latency when it only decodes. Only the timing
// is replaced: the scheduler still admits at most max-num-seqs sequences
// and holds KV blocks, so requests beyond that queue as on vLLM.
//
// A decode batched with a finishing prefill waits for that step, as decodes
// do on a GPU; llm-d-inference-sim instead times every request on its own,
// so under continuous arrivals its ITL stays at the configured value while
// ours includes those stalls. Prefill chunks that do not finish the prompt
// add no time, so chunked prefill does not multiply the TTFT.
//
// With all fields zero every step takes no time: the zero-latency mode,
// where tokens stream as fast as the host can deliver them.
type FixedLatency struct {
	// TimeToFirstToken is the step time of a step that finishes a prefill
	// (llm-d's --time-to-first-token).
	TimeToFirstToken time.Duration
	// TimeToFirstTokenStdDev draws that time from a normal distribution
	// with this standard deviation (--time-to-first-token-std-dev).
	TimeToFirstTokenStdDev time.Duration
	// InterTokenLatency is the step time of a decode-only step
	// (--inter-token-latency).
	InterTokenLatency time.Duration
	// InterTokenLatencyStdDev is its standard deviation
	// (--inter-token-latency-std-dev).
	InterTokenLatencyStdDev time.Duration
	// KVCacheTransferLatency replaces the prefill of a request that says
	// kv_transfer_params.do_remote_prefill (a P/D decode request): it waits
	// this long for its KV, then its first token comes with the next decode
	// step (llm-d's --kv-cache-transfer-latency, which answers after the
	// transfer alone; here the request still needs a decode slot).
	KVCacheTransferLatency time.Duration
	// KVCacheTransferLatencyStdDev is its standard deviation
	// (--kv-cache-transfer-latency-std-dev).
	KVCacheTransferLatencyStdDev time.Duration
	// TimeFactorUnderLoad (≥ 1; 0 means 1) multiplies both times by
	// 1 + (f−1)·(running−1)/(max-num-seqs−1), llm-d's
	// --time-factor-under-load: f with max-num-seqs sequences running, 1
	// with one.
	TimeFactorUnderLoad float64
	// MaxNumSeqs is the scheduler's cap, the load at which the factor is
	// reached in full.
	MaxNumSeqs int
	// Seed makes the jitter reproducible.
	Seed uint64
}

// maxStdDevShare is llm-d-inference-sim's bound on a standard deviation
// (30% of the mean); drawn values are clamped to [0.3, 1.7]× the mean as
// llm-d does, so a time never goes negative.
const maxStdDevShare = 0.3

// Validate reports the first setting llm-d-inference-sim would reject,
// naming its flag.
func (f FixedLatency) Validate() error {
	for _, c := range []struct {
		flag        string
		mean, stdev time.Duration
	}{
		{"time-to-first-token", f.TimeToFirstToken, f.TimeToFirstTokenStdDev},
		{"inter-token-latency", f.InterTokenLatency, f.InterTokenLatencyStdDev},
		{"kv-cache-transfer-latency", f.KVCacheTransferLatency, f.KVCacheTransferLatencyStdDev},
	} {
		if c.mean < 0 {
			return fmt.Errorf("--%s %v is negative; give 0 or a positive duration", c.flag, c.mean)
		}
		if c.stdev < 0 || float64(c.stdev) > maxStdDevShare*float64(c.mean) {
			return fmt.Errorf("--%s-std-dev %v must be between 0 and 30%% of --%s (%v)", c.flag, c.stdev, c.flag, c.mean)
		}
	}
	if f.TimeFactorUnderLoad != 0 && f.TimeFactorUnderLoad < 1 {
		return fmt.Errorf("--time-factor-under-load %g must be at least 1.0", f.TimeFactorUnderLoad)
	}
	return nil
}

// StepModel returns the step model, or an error from Validate.
func (f FixedLatency) StepModel() (perf.StepModel, error) {
	if err := f.Validate(); err != nil {
		return nil, err
	}
	return &fixedLatencyModel{cfg: f, rng: rand.New(rand.NewPCG(f.Seed, 0x6c6c6d2d64))}, nil
}

// fixedLatencyModel is used by the step loop's goroutine only, so its
// random source needs no lock.
type fixedLatencyModel struct {
	cfg FixedLatency
	rng *rand.Rand
}

func (m *fixedLatencyModel) StepTime(s perf.StepShape) time.Duration {
	mean, stdev := m.cfg.InterTokenLatency, m.cfg.InterTokenLatencyStdDev
	switch {
	case s.PrefillsDone > 0:
		mean, stdev = m.cfg.TimeToFirstToken, m.cfg.TimeToFirstTokenStdDev
	case s.Decodes == 0:
		return 0 // only unfinished prefill chunks: no token is due
	}
	mean = time.Duration(float64(mean) * m.loadFactor(s.Prefills+s.Decodes))
	return m.jitter(mean, stdev)
}

func (m *fixedLatencyModel) loadFactor(running int) float64 {
	f := m.cfg.TimeFactorUnderLoad
	if f <= 1 || m.cfg.MaxNumSeqs <= 1 {
		return 1
	}
	return 1 + (f-1)*float64(running-1)/float64(m.cfg.MaxNumSeqs-1)
}

func (m *fixedLatencyModel) jitter(mean, stdev time.Duration) time.Duration {
	return jitterWith(m.rng, mean, stdev)
}

func jitterWith(rng *rand.Rand, mean, stdev time.Duration) time.Duration {
	if stdev == 0 || mean == 0 {
		return mean
	}
	v := float64(mean) + rng.NormFloat64()*float64(stdev)
	v = min(max(v, 0.3*float64(mean)), 1.7*float64(mean))
	return time.Duration(v)
}
