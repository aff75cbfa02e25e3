package tpe

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// estimatorCases are Parzen estimators over every numeric kind of
// domain, with observations at the ends, repeated and spread, under each
// combination of the settings that shape widths.
func estimatorCases() []struct {
	name   string
	d      Domain
	values []float64
	s      Settings
} {
	domains := []struct {
		name   string
		d      Domain
		values []float64
	}{
		{"float", Domain{Low: -2, High: 3}, []float64{-2, -1.9, 0.5, 0.5, 0.5, 3}},
		{"log float", Domain{Low: 1e-3, High: 10, Log: true}, []float64{1e-3, 0.01, 0.011, 9.99}},
		{"int", Domain{Low: 8, High: 20, Integer: true}, []float64{8, 8, 13, 20}},
		{"log int", Domain{Low: 8, High: 512, Integer: true, Log: true}, []float64{8, 9, 500, 512, 64}},
		{"one value", Domain{Low: 4, High: 4, Integer: true}, []float64{4}},
		{"one observation", Domain{Low: 0, High: 1}, []float64{0.999}},
		{"no observation", Domain{Low: 0, High: 1}, nil},
	}
	var out []struct {
		name   string
		d      Domain
		values []float64
		s      Settings
	}
	for _, dom := range domains {
		for _, clip := range []bool{true, false} {
			for _, ends := range []bool{true, false} {
				for _, prior := range []float64{1, 0} {
					s := DefaultSettings()
					s.MagicClip, s.Endpoints, s.PriorWeight = clip, ends, prior
					out = append(out, struct {
						name   string
						d      Domain
						values []float64
						s      Settings
					}{fmt.Sprintf("%s clip=%v endpoints=%v prior=%g", dom.name, clip, ends, prior), dom.d, dom.values, s})
				}
			}
		}
	}
	return out
}

func buildParzen(d Domain, values []float64, s Settings) *parzen {
	sp := spanOf(d)
	return newParzen(sp, onScale(sp, values), DefaultWeights(len(values)), s.PriorWeight, s)
}

// A Parzen estimator is a probability density over its domain: its
// density integrates to 1 between the bounds, on the sampling scale (the
// logarithm for log domains; half a step beyond each end for whole
// numbers, whose values own equal slices).
func TestParzenIntegratesToOneOverTheBounds(t *testing.T) {
	for _, tc := range estimatorCases() {
		t.Run(tc.name, func(t *testing.T) {
			p := buildParzen(tc.d, tc.values, tc.s)
			integral := integrate(p)
			if math.Abs(integral-1) > 1e-4 {
				t.Errorf("density integrates to %.6f over [%g, %g]", integral, p.lo, p.hi)
			}
		})
	}
}

// integrate is the trapezoid rule for p's density over its span, on a
// grid that is fine everywhere and finer still around each component's
// centre, at that component's own width (some are 1e-12 of the span).
func integrate(p *parzen) float64 {
	grid := []float64{}
	for i := 0; i <= 10_000; i++ {
		grid = append(grid, p.lo+p.width()*float64(i)/10_000)
	}
	for i, m := range p.means {
		for j := -2000; j <= 2000; j++ {
			if y := m + p.widths[i]*float64(j)/100; y > p.lo && y < p.hi {
				grid = append(grid, y)
			}
		}
	}
	slices.Sort(grid)
	grid = slices.Compact(grid)
	total := 0.0
	for i := 1; i < len(grid); i++ {
		total += 0.5 * (math.Exp(p.logDensity(grid[i-1])) + math.Exp(p.logDensity(grid[i]))) * (grid[i] - grid[i-1])
	}
	return total
}

// sliceMass is p's probability mass in [a, b] on the sampling scale.
func sliceMass(p *parzen, a, b float64) float64 {
	mass := 0.0
	for i, m := range p.means {
		w := p.widths[i]
		mass += p.weights[i] * (normalCDF((b-m)/w) - normalCDF((a-m)/w)) / p.truncated[i]
	}
	return mass
}

// Widths follow the paper: the larger gap to a neighbour, clipped to
// [span/min(100, 1+m), span] with the magic clip.
func TestParzenWidths(t *testing.T) {
	d := Domain{Low: 0, High: 10}
	values := []float64{1, 2, 2, 6}
	for _, tc := range []struct {
		name       string
		clip, ends bool
		prior      float64
		want       []float64 // observations' widths, then the prior's
	}{
		// Centres sorted: 1 2 2 5(prior) 6. Gaps: 1→1; 2→max(1,0)=1;
		// 2→max(0,3)=3; 6→1 (no right neighbour without endpoints).
		{"no endpoints", false, false, 1, []float64{1, 1, 3, 1, 10}},
		// With endpoints the ends count: 1→max(1,1)=1; 6→max(1,4)=4.
		{"endpoints", false, true, 1, []float64{1, 1, 3, 4, 10}},
		// Magic clip floors at 10/min(100, 1+5) = 10/6.
		{"magic clip", true, false, 1, []float64{10.0 / 6, 10.0 / 6, 3, 10.0 / 6, 10}},
		// No prior: 1→1; 2→1; 2→4 (to 6); 6→4.
		{"no prior", false, false, 0, []float64{1, 1, 4, 4}},
	} {
		s := DefaultSettings()
		s.MagicClip, s.Endpoints, s.PriorWeight = tc.clip, tc.ends, tc.prior
		p := buildParzen(d, values, s)
		if len(p.widths) != len(tc.want) {
			t.Fatalf("%s: %d components, want %d", tc.name, len(p.widths), len(tc.want))
		}
		for i := range tc.want {
			if math.Abs(p.widths[i]-tc.want[i]) > 1e-12 {
				t.Errorf("%s: widths %v, want %v", tc.name, p.widths, tc.want)
				break
			}
		}
	}
}

// Draws follow the density they come from: over 100 equal slices of
// the span, the share of 200,000 draws in each is within 0.5 points of
// the slice's mass, and every draw lies in the span.
func TestParzenDrawsFollowTheDensity(t *testing.T) {
	for _, tc := range estimatorCases() {
		if tc.d.Low == tc.d.High {
			continue
		}
		t.Run(tc.name, func(t *testing.T) {
			p := buildParzen(tc.d, tc.values, tc.s)
			rng := rand.New(rand.NewPCG(1, 2))
			const draws, bins = 200_000, 100
			counts := make([]int, bins)
			for range draws {
				y := p.draw(rng)
				if y < p.lo || y > p.hi {
					t.Fatalf("draw %g outside [%g, %g]", y, p.lo, p.hi)
				}
				counts[min(int((y-p.lo)/p.width()*bins), bins-1)]++
			}
			for i, c := range counts {
				a := p.lo + p.width()*float64(i)/bins
				b := p.lo + p.width()*float64(i+1)/bins
				mass := sliceMass(p, a, b)
				if share := float64(c) / draws; math.Abs(share-mass) > 0.005 {
					t.Errorf("slice %d [%g, %g]: %.4f of the draws, mass %.4f", i, a, b, share, mass)
				}
			}
		})
	}
}

func TestCategoricalIsADistribution(t *testing.T) {
	for _, tc := range []struct {
		name   string
		values []float64
		prior  float64
		want   []float64
	}{
		// Prior 1 spread over 4: 0.25 each; then 2 observations of 1, 1 of 3.
		{"prior", []float64{1, 3, 1}, 1, []float64{0.25 / 4, 2.25 / 4, 0.25 / 4, 1.25 / 4}},
		{"no prior", []float64{1, 3, 1}, 0, []float64{0, 2.0 / 3, 0, 1.0 / 3}},
		{"no observation", nil, 0, []float64{0.25, 0.25, 0.25, 0.25}},
	} {
		c := newCategorical(4, tc.values, DefaultWeights(len(tc.values)), tc.prior)
		sum := 0.0
		for i, p := range c.probs {
			sum += p
			if math.Abs(p-tc.want[i]) > 1e-12 {
				t.Errorf("%s: probabilities %v, want %v", tc.name, c.probs, tc.want)
				break
			}
		}
		if math.Abs(sum-1) > 1e-12 {
			t.Errorf("%s: probabilities add up to %g", tc.name, sum)
		}
	}
}
