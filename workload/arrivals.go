package workload

import (
	"math"
	"math/rand/v2"
	"time"

	"github.com/servebench/servebench/internal/option"
)

// Ramp-up strategies accepted in Arrivals.RampUp.
const (
	RampLinear      = "linear"
	RampExponential = "exponential"
)

// Arrivals describes the open-loop arrival process: when each request is
// released, independent of how fast the server answers.
type Arrivals struct {
	// Rate is the mean request rate in requests per second (--request-rate);
	// math.Inf(1) releases every request at once.
	Rate float64
	// Burstiness is the shape of the gamma-distributed gaps (--burstiness):
	// 1 gives a Poisson process, smaller is burstier, larger is steadier and
	// math.Inf(1) gives constant gaps. The gaps' coefficient of variation is
	// 1/sqrt(Burstiness).
	Burstiness float64
	// RampUp ("", RampLinear or RampExponential; --ramp-up-strategy) moves the
	// rate from RampStart to RampEnd requests per second over the run.
	RampUp             string
	RampStart, RampEnd float64
	// Seed seeds the gaps (--seed); the prompts use an independent stream.
	Seed int64
}

// DefaultArrivals returns vLLM's defaults: infinite rate, burstiness 1.
func DefaultArrivals() Arrivals {
	return Arrivals{Rate: math.Inf(1), Burstiness: 1}
}

// Validate reports the first invalid or contradictory value as a one-line
// error naming its flag, with vLLM's ramp-up rules.
func (a Arrivals) Validate() error {
	switch {
	case math.IsNaN(a.Rate) || a.Rate <= 0:
		return option.Errorf("{request_rate} %g: must be > 0 (inf sends every request at once)", a.Rate)
	case math.IsNaN(a.Burstiness) || a.Burstiness <= 0:
		return option.Errorf("{burstiness} %g: must be > 0 (1 is Poisson, inf gives constant gaps)", a.Burstiness)
	}
	switch a.RampUp {
	case "":
		if a.RampStart != 0 || a.RampEnd != 0 {
			return option.Errorf("{ramp_up_start_rps} %g / {ramp_up_end_rps} %g: need {ramp_up_strategy} linear or exponential", a.RampStart, a.RampEnd)
		}
		return nil
	case RampLinear, RampExponential:
	default:
		return option.Errorf("{ramp_up_strategy} %q: must be %s or %s", a.RampUp, RampLinear, RampExponential)
	}
	switch {
	case !math.IsInf(a.Rate, 1):
		return option.Errorf("{request_rate} %g: leave it at inf with {ramp_up_strategy} (the ramp sets the rate)", a.Rate)
	case math.IsNaN(a.RampStart) || a.RampStart <= 0 || math.IsInf(a.RampStart, 0):
		// vLLM rejects 0 only for exponential, then fails an assertion on the
		// first request's zero rate for linear; both need a positive start.
		return option.Errorf("{ramp_up_start_rps} %g: must be a finite rate > 0", a.RampStart)
	case math.IsNaN(a.RampEnd) || math.IsInf(a.RampEnd, 0):
		return option.Errorf("{ramp_up_end_rps} %g: must be a finite rate", a.RampEnd)
	case a.RampStart > a.RampEnd:
		return option.Errorf("{ramp_up_start_rps} %g: must not exceed {ramp_up_end_rps} %g", a.RampStart, a.RampEnd)
	}
	return nil
}

// rateAt is vLLM's _get_current_request_rate.
func (a Arrivals) rateAt(i, n int) float64 {
	if a.RampUp == "" {
		return a.Rate
	}
	progress := float64(i) / float64(max(n-1, 1))
	if a.RampUp == RampLinear {
		return a.RampStart + (a.RampEnd-a.RampStart)*progress
	}
	return a.RampStart * math.Pow(a.RampEnd/a.RampStart, progress)
}

// Schedule returns the n send offsets from the run start, following vLLM's
// get_request: request i waits a gap drawn at the rate in force (0 at an
// infinite rate, 1/rate with infinite burstiness, else Gamma(shape b,
// scale 1/(rate·b))); the gaps are summed, so even the first request waits
// one; and without ramp-up the offsets are rescaled so the last is exactly
// n/Rate (vLLM PR #21108), which keeps the achieved rate at the target for
// every seed. Offsets beyond the range of time.Duration saturate.
//
// Schedule returns a.Validate()'s error for invalid arrivals, never a
// schedule that would quietly turn the run into a burst.
func Schedule(n int, a Arrivals) ([]time.Duration, error) {
	if err := a.Validate(); err != nil {
		return nil, err
	}
	if n <= 0 {
		return []time.Duration{}, nil
	}
	rng := newRand(a.Seed, arrivalStream)
	offsets := make([]time.Duration, n)
	// Accumulating in float64 seconds keeps the rescale exact; per-element
	// durations would round n times.
	sum := 0.0
	cumulative := make([]float64, n)
	for i := range cumulative {
		rate := a.rateAt(i, n)
		switch {
		case math.IsInf(rate, 1):
		case math.IsInf(a.Burstiness, 1):
			sum += 1 / rate
		default:
			sum += gamma(rng, a.Burstiness, 1/(rate*a.Burstiness))
		}
		cumulative[i] = sum
	}
	scale := 1.0
	if a.RampUp == "" && sum != 0 {
		scale = float64(n) / a.Rate / sum
	}
	for i, s := range cumulative {
		offsets[i] = seconds(s * scale)
	}
	if a.RampUp == "" && sum != 0 {
		// Pin the last offset to n/Rate despite floating-point rounding.
		offsets[n-1] = seconds(float64(n) / a.Rate)
	}
	return offsets, nil
}

// seconds converts to a Duration, rounding to the nearest nanosecond and
// saturating instead of overflowing.
func seconds(s float64) time.Duration {
	ns := math.Round(s * 1e9)
	if ns >= math.MaxInt64 {
		return math.MaxInt64
	}
	return time.Duration(ns)
}

// Assign sets reqs[i].Arrival = offsets[i] for every index both slices have.
func Assign(reqs []Request, offsets []time.Duration) {
	for i := range min(len(reqs), len(offsets)) {
		reqs[i].Arrival = offsets[i]
	}
}

// gamma draws from Gamma(shape, scale) by Marsaglia and Tsang's method
// (ACM TOMS 26(3), 2000); shapes below 1 use the boost
// Gamma(a) = Gamma(a+1)·U^(1/a).
func gamma(rng *rand.Rand, shape, scale float64) float64 {
	if shape < 1 {
		u := rng.Float64()
		for u == 0 {
			u = rng.Float64()
		}
		return gamma(rng, shape+1, scale) * math.Pow(u, 1/shape)
	}
	d := shape - 1.0/3
	c := 1 / math.Sqrt(9*d)
	for {
		x := rng.NormFloat64()
		v := 1 + c*x
		if v <= 0 {
			continue
		}
		v = v * v * v
		u := rng.Float64()
		x2 := x * x
		if u < 1-0.0331*x2*x2 || (u > 0 && math.Log(u) < 0.5*x2+d*(1-v+math.Log(v))) {
			return d * v * scale
		}
	}
}
