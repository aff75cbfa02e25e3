package tpe

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
)

// Domain is the range of one parameter.
type Domain struct {
	// Low and High bound a numeric range, both included.
	Low, High float64
	// Log spreads the estimators' Gaussians on the logarithm of the
	// value (Low must be > 0).
	Log bool
	// Integer restricts the range to whole numbers (Low and High must be
	// whole).
	Integer bool
	// Choices, when above 0, makes the parameter an unordered choice
	// among 0..Choices-1; the numeric fields are then ignored. Choices
	// that have an order (32 < 48 < 64) are better given as an Integer
	// range of their indices, so that the estimators can exploit it.
	Choices int
}

func (d Domain) check() error {
	if d.Choices > 0 {
		return nil
	}
	switch {
	case d.Choices < 0:
		return fmt.Errorf("tpe: %d choices; give at least one", d.Choices)
	case math.IsNaN(d.Low) || math.IsNaN(d.High) || math.IsInf(d.Low, 0) || math.IsInf(d.High, 0) || d.Low > d.High:
		return fmt.Errorf("tpe: domain [%g, %g] needs finite bounds, low <= high", d.Low, d.High)
	case d.Log && d.Low <= 0:
		return fmt.Errorf("tpe: log domain [%g, %g] needs low > 0", d.Low, d.High)
	case d.Integer && (d.Low != math.Trunc(d.Low) || d.High != math.Trunc(d.High)):
		return fmt.Errorf("tpe: integer domain [%g, %g] needs whole bounds", d.Low, d.High)
	}
	return nil
}

// contains reports whether v is a value the domain can take.
func (d Domain) contains(v float64) bool {
	if d.Choices > 0 {
		return v == math.Trunc(v) && v >= 0 && v < float64(d.Choices)
	}
	return v >= d.Low && v <= d.High && (!d.Integer || v == math.Trunc(v))
}

// Observation is one finished trial's value of the parameter and the
// trial's score; higher scores are better.
type Observation struct {
	Value, Score float64
}

// Settings are the sampler's constants; DefaultSettings gives Optuna's
// documented defaults.
type Settings struct {
	// StartupTrials: below this many observations a parameter is drawn
	// uniformly at random.
	StartupTrials int
	// Candidates is how many values are drawn from the good density to
	// pick the best ratio from.
	Candidates int
	// PriorWeight is the prior component's weight, against a weight of
	// at most 1 for each observation (0: no prior).
	PriorWeight float64
	// MagicClip floors each Gaussian's width at the domain's width over
	// min(100, 1 + components).
	MagicClip bool
	// Endpoints counts the domain's ends as neighbours when the outermost
	// observations' widths are set.
	Endpoints bool
	// Gamma is how many of n observations form the good group.
	Gamma func(n int) int
	// Weights are the weights of a group's n observations, oldest first.
	Weights func(n int) []float64
}

// DefaultSettings are the defaults Optuna documents for its TPESampler.
func DefaultSettings() Settings {
	return Settings{StartupTrials: 10, Candidates: 24, PriorWeight: 1, MagicClip: true,
		Gamma: DefaultGamma, Weights: DefaultWeights}
}

// Sampler proposes values for parameters from the history of their
// trials. It is safe for concurrent use; its draws come from its own
// seeded source, so their order decides what each call returns.
type Sampler struct {
	settings Settings
	mu       sync.Mutex
	rng      *rand.Rand
}

// New returns a sampler drawing from seed.
func New(seed int64, s Settings) (*Sampler, error) {
	switch {
	case s.StartupTrials < 0:
		return nil, fmt.Errorf("tpe: %d startup trials; give 0 or more", s.StartupTrials)
	case s.Candidates < 1:
		return nil, fmt.Errorf("tpe: %d candidates; give at least 1", s.Candidates)
	case !(s.PriorWeight >= 0) || math.IsInf(s.PriorWeight, 1):
		return nil, fmt.Errorf("tpe: prior weight %g; give a finite weight >= 0", s.PriorWeight)
	case s.Gamma == nil || s.Weights == nil:
		return nil, errors.New("tpe: settings need Gamma and Weights; start from DefaultSettings")
	}
	return &Sampler{settings: s, rng: rand.New(rand.NewPCG(uint64(seed), 0x7be))}, nil
}

// estimator is a density that can be sampled: over the sampling scale
// of a numeric domain, or over the indices of a choice.
type estimator interface {
	logDensity(y float64) float64
	draw(rng *rand.Rand) float64
}

// Suggest proposes a value in d given the parameter's history, oldest
// trial first. Values outside d are left out of the history (a trial
// from an earlier, wider domain); a history shorter than StartupTrials
// gives a uniform draw.
func (s *Sampler) Suggest(d Domain, history []Observation) (float64, error) {
	if err := d.check(); err != nil {
		return 0, err
	}
	var kept []Observation
	for _, o := range history {
		if d.contains(o.Value) {
			kept = append(kept, o)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(kept) == 0 || len(kept) < s.settings.StartupTrials {
		return s.uniform(d), nil
	}
	good, bad := split(kept, s.settings.Gamma(len(kept)), s.settings.Weights)
	for _, g := range []group{good, bad} {
		if err := checkWeights(g); err != nil {
			return 0, err
		}
	}
	var l, g estimator
	var sp span
	if d.Choices > 0 {
		l = newCategorical(d.Choices, good.values, good.weights, s.settings.PriorWeight)
		g = newCategorical(d.Choices, bad.values, bad.weights, s.settings.PriorWeight)
	} else {
		sp = spanOf(d)
		l = newParzen(sp, onScale(sp, good.values), good.weights, s.settings.PriorWeight, s.settings)
		g = newParzen(sp, onScale(sp, bad.values), bad.weights, s.settings.PriorWeight, s.settings)
	}
	// Candidates are compared where they were drawn, before a whole
	// number is rounded: the ratio then varies inside a value's bin, so
	// an asked-again study does not get the same value every time
	// (tune's trial counts in TestSearchQualityOnSim improved with it).
	best, bestRatio := 0.0, math.Inf(-1)
	for i := range s.settings.Candidates {
		y := l.draw(s.rng)
		if ratio := l.logDensity(y) - g.logDensity(y); i == 0 || ratio > bestRatio {
			best, bestRatio = y, ratio
		}
	}
	if d.Choices > 0 {
		return best, nil
	}
	return sp.fromScale(best, d), nil
}

// uniform draws from d's prior: uniform on the sampling scale.
func (s *Sampler) uniform(d Domain) float64 {
	switch {
	case d.Choices > 0:
		return float64(s.rng.IntN(d.Choices))
	case d.Integer && !d.Log:
		return d.Low + float64(s.rng.IntN(int(d.High-d.Low)+1))
	}
	sp := spanOf(d)
	return sp.fromScale(sp.lo+s.rng.Float64()*sp.width(), d)
}

func onScale(sp span, values []float64) []float64 {
	out := make([]float64, len(values))
	for i, v := range values {
		out[i] = sp.toScale(v)
	}
	return out
}

func checkWeights(g group) error {
	if len(g.weights) != len(g.values) {
		return fmt.Errorf("tpe: Weights(%d) returned %d weights", len(g.values), len(g.weights))
	}
	for _, w := range g.weights {
		if !(w > 0) || math.IsInf(w, 1) {
			return fmt.Errorf("tpe: Weights(%d) returned the weight %g; weights must be finite and > 0", len(g.values), w)
		}
	}
	return nil
}
