package tune

import (
	"errors"
	"math"
	"math/rand/v2"
	"sync"

	"github.com/c-bata/goptuna"
)

// uniformSampler replaces goptuna v0.9.0's RandomSampler, which draws
// categorical values from the unseeded global source (so a seeded study
// is not reproducible) and IntUniform values with rng.Intn(high-low) +
// low (so the upper bound is never drawn: an ordinal choice's last value
// was unreachable). It is the random sampler, and CMA-ES's during its
// startup trials.
type uniformSampler struct {
	mu  sync.Mutex
	rng *rand.Rand
}

func newUniformSampler(seed int64) *uniformSampler {
	return &uniformSampler{rng: rand.New(rand.NewPCG(uint64(seed), 0x5eed))}
}

func (s *uniformSampler) Sample(_ *goptuna.Study, _ goptuna.FrozenTrial, _ string, distribution any) (float64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch d := distribution.(type) {
	case goptuna.UniformDistribution:
		return d.Low + s.rng.Float64()*(d.High-d.Low), nil
	case goptuna.LogUniformDistribution:
		lo, hi := math.Log(d.Low), math.Log(d.High)
		return math.Min(math.Exp(lo+s.rng.Float64()*(hi-lo)), d.High), nil
	case goptuna.IntUniformDistribution:
		return float64(d.Low + s.rng.IntN(d.High-d.Low+1)), nil
	case goptuna.CategoricalDistribution:
		return float64(s.rng.IntN(len(d.Choices))), nil
	}
	return 0, errors.New("tune: unsupported distribution")
}
