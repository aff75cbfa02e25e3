package serve

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
)

// OutputLenKind names an output-length distribution.
type OutputLenKind string

const (
	// OutputLenMax: the model never emits EOS early, every request runs to
	// its max_tokens (what `sim` assumes, so bench-vs-sim comparisons hold).
	OutputLenMax OutputLenKind = "max"
	// OutputLenFixed: N tokens.
	OutputLenFixed OutputLenKind = "fixed"
	// OutputLenUniform: an integer uniformly in [Min, Max].
	OutputLenUniform OutputLenKind = "uniform"
	// OutputLenLognormal: a log-normal with the given mean (in tokens) and
	// sigma of the underlying normal, the usual shape of chat answer lengths.
	OutputLenLognormal OutputLenKind = "lognormal"
)

// OutputLenDist is how many tokens a request generates when it does not set
// ignore_eos: the emulated model's "natural" answer length, always capped by
// the request's max_tokens and raised to its min_tokens. The zero value is
// OutputLenMax.
type OutputLenDist struct {
	Kind OutputLenKind
	// fixed: A=N; uniform: A=min, B=max; lognormal: A=mean, B=sigma.
	A, B float64
}

// DefaultUnlimitedOutput is what a request with no length limit (chat
// without max_tokens) generates under OutputLenMax: a real model stops at
// EOS long before the context window ends.
const DefaultUnlimitedOutput = 256

// ParseOutputLenDist parses the --output-len-dist flag:
// "max", "fixed:N", "uniform:MIN:MAX" or "lognormal:MEAN:SIGMA".
func ParseOutputLenDist(s string) (OutputLenDist, error) {
	const usage = `use "max", "fixed:N", "uniform:MIN:MAX" or "lognormal:MEAN:SIGMA"`
	parts := strings.Split(s, ":")
	num := func(i int) (float64, error) {
		v, err := strconv.ParseFloat(parts[i], 64)
		if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
			return 0, fmt.Errorf("output length distribution %q: %q is not a number; %s", s, parts[i], usage)
		}
		return v, nil
	}
	switch OutputLenKind(parts[0]) {
	case "", OutputLenMax:
		if len(parts) > 1 {
			break
		}
		return OutputLenDist{Kind: OutputLenMax}, nil
	case OutputLenFixed:
		if len(parts) != 2 {
			break
		}
		n, err := num(1)
		if err != nil {
			return OutputLenDist{}, err
		}
		if n < 1 || n != math.Trunc(n) {
			return OutputLenDist{}, fmt.Errorf("output length distribution %q: N must be a whole number ≥ 1", s)
		}
		return OutputLenDist{Kind: OutputLenFixed, A: n}, nil
	case OutputLenUniform:
		if len(parts) != 3 {
			break
		}
		lo, err := num(1)
		if err != nil {
			return OutputLenDist{}, err
		}
		hi, err := num(2)
		if err != nil {
			return OutputLenDist{}, err
		}
		if lo < 1 || hi < lo || lo != math.Trunc(lo) || hi != math.Trunc(hi) {
			return OutputLenDist{}, fmt.Errorf("output length distribution %q: need whole numbers 1 ≤ MIN ≤ MAX", s)
		}
		return OutputLenDist{Kind: OutputLenUniform, A: lo, B: hi}, nil
	case OutputLenLognormal:
		if len(parts) != 3 {
			break
		}
		mean, err := num(1)
		if err != nil {
			return OutputLenDist{}, err
		}
		sigma, err := num(2)
		if err != nil {
			return OutputLenDist{}, err
		}
		if mean < 1 || sigma < 0 || sigma > 5 {
			return OutputLenDist{}, fmt.Errorf("output length distribution %q: need MEAN ≥ 1 and 0 ≤ SIGMA ≤ 5", s)
		}
		return OutputLenDist{Kind: OutputLenLognormal, A: mean, B: sigma}, nil
	}
	return OutputLenDist{}, fmt.Errorf("output length distribution %q: %s", s, usage)
}

func (d OutputLenDist) String() string {
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	switch d.Kind {
	case OutputLenFixed:
		return "fixed:" + f(d.A)
	case OutputLenUniform:
		return "uniform:" + f(d.A) + ":" + f(d.B)
	case OutputLenLognormal:
		return "lognormal:" + f(d.A) + ":" + f(d.B)
	}
	return string(OutputLenMax)
}

// outputLen decides how many tokens a request generates. limit is the most
// it may generate (max_tokens, or what is left of the context window),
// minTokens what it must generate. It reports whether the request stops by
// reaching its limit (finish_reason "length") rather than at EOS ("stop").
func (d OutputLenDist) outputLen(rng *rand.Rand, limit, minTokens int, ignoreEOS, unlimited bool) (n int, hitLimit bool) {
	if ignoreEOS {
		return limit, true
	}
	switch d.Kind {
	case OutputLenFixed:
		n = int(d.A)
	case OutputLenUniform:
		n = int(d.A) + rng.IntN(int(d.B)-int(d.A)+1)
	case OutputLenLognormal:
		mu := math.Log(d.A) - d.B*d.B/2
		n = int(math.Round(math.Exp(mu + d.B*rng.NormFloat64())))
	default:
		if !unlimited {
			return limit, true
		}
		n = DefaultUnlimitedOutput
	}
	n = max(n, minTokens, 1)
	if n >= limit {
		return limit, true
	}
	return n, false
}
