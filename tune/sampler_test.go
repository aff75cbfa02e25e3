package tune

import (
	"context"
	"slices"
	"testing"

	"github.com/c-bata/goptuna"
)

// goptuna v0.9.0 draws TPE's mixture components and categorical values
// from math/rand's randomly seeded global source; the vendored TPE and
// uniformSampler must make a seeded study repeat itself exactly.
func TestSeededStudiesRepeatThemselves(t *testing.T) {
	for _, kind := range []string{SamplerRandom, SamplerTPE} {
		t.Run(kind, func(t *testing.T) {
			var runs [2][]string
			for i := range runs {
				store := openTestStorage(t)
				cfg := syntheticConfig(store, 16)
				cfg.Space.Params = append(cfg.Space.Params,
					Param{Name: "block_size", Kind: KindChoice, Choices: []string{"8", "16", "32"}},
					Param{Name: "enable_prefix_caching", Kind: KindBool})
				cfg.Sampler, cfg.Seed = kind, 7
				if err := Optimize(context.Background(), cfg); err != nil {
					t.Fatal(err)
				}
				trials, _ := store.Trials(context.Background(), "shared")
				for _, tr := range trials {
					runs[i] = append(runs[i], tr.Params.String(cfg.Space))
				}
			}
			if !slices.Equal(runs[0], runs[1]) {
				t.Errorf("same seed, different trials:\n%v\n%v", runs[0], runs[1])
			}
		})
	}
}

// goptuna's RandomSampler draws IntUniform with Intn(high-low)+low and
// never reaches high: the last of a choice's values was unreachable.
func TestUniformSamplerReachesBothBounds(t *testing.T) {
	s := newUniformSampler(1)
	seen := map[float64]bool{}
	for range 200 {
		v, err := s.Sample(nil, goptuna.FrozenTrial{}, "x", goptuna.IntUniformDistribution{Low: 0, High: 2})
		if err != nil {
			t.Fatal(err)
		}
		seen[v] = true
	}
	if len(seen) != 3 {
		t.Errorf("drew %v from {0, 1, 2}", seen)
	}
}

func TestCMAESNeedsNumericSpace(t *testing.T) {
	numeric := &Space{Params: []Param{{Name: "a", Kind: KindInt, Low: 1, High: 9}, {Name: "b", Kind: KindChoice, Choices: []string{"8", "16"}}}}
	if _, err := newSampler(SamplerCMAES, numeric, 1, 3); err != nil {
		t.Errorf("int + ordinal choices: %v", err)
	}
	mixed := &Space{Params: []Param{{Name: "a", Kind: KindInt, Low: 1, High: 9}, {Name: "b", Kind: KindChoice, Choices: []string{"swap", "recompute"}}}}
	if _, err := newSampler(SamplerCMAES, mixed, 1, 3); err == nil {
		t.Error("CMA-ES accepted a categorical parameter")
	}
	store := openTestStorage(t)
	cfg := syntheticConfig(store, 12)
	cfg.Space = numeric
	cfg.Sampler = SamplerCMAES
	cfg.Validate = func(context.Context, Point) (*Capacity, error) { return nil, nil }
	if err := Optimize(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
}
