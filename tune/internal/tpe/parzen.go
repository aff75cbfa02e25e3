package tpe

import (
	"math"
	"math/rand/v2"
	"slices"
)

// span is a numeric domain as the estimators see it: an interval of the
// sampling scale (the logarithm for log domains). A whole-number domain
// widens each end by half a step, so every integer owns an equal slice
// of the line, its bin.
type span struct {
	lo, hi  float64
	log     bool
	integer bool
}

func spanOf(d Domain) span {
	lo, hi := d.Low, d.High
	if d.Integer {
		lo, hi = lo-0.5, hi+0.5
	}
	if d.Log {
		lo, hi = math.Log(lo), math.Log(hi)
	}
	return span{lo: lo, hi: hi, log: d.Log, integer: d.Integer}
}

func (s span) width() float64 { return s.hi - s.lo }

// toScale maps a value of the domain onto the sampling scale.
func (s span) toScale(x float64) float64 {
	if s.log {
		return math.Log(x)
	}
	return x
}

// fromScale maps a point of the sampling scale back to the domain,
// rounding whole-number domains.
func (s span) fromScale(y float64, d Domain) float64 {
	x := y
	if s.log {
		x = math.Exp(y)
	}
	if s.integer {
		x = math.Round(x)
	}
	return math.Min(math.Max(x, d.Low), d.High)
}

// parzen is the adaptive Parzen estimator of §4 of the paper: a weighted
// mixture of Gaussians truncated to the span, one per observation plus
// one for the prior.
type parzen struct {
	span
	means, widths, weights []float64
	// truncated is each component's probability mass inside the span, by
	// which its density is divided so the mixture integrates to 1.
	truncated []float64
}

// newParzen builds the estimator of values (on the sampling scale) with
// their weights. The prior is a component centred on the span, as wide
// as the span, with weight prior (none when 0). Each observation's
// width is the larger of the gaps to its neighbours among all the
// component centres (and the span's ends, with endpoints), clipped to
// the span's width and, with magicClip, from below to width/min(100, 1+m)
// for m components: without that floor, repeated values would give
// spikes that starve the rest of the domain.
func newParzen(sp span, values, weights []float64, prior float64, s Settings) *parzen {
	p := &parzen{span: sp}
	centre, wide := (sp.lo+sp.hi)/2, sp.width()
	p.means = append(p.means, values...)
	p.weights = append(p.weights, weights...)
	if prior > 0 || len(values) == 0 {
		p.means = append(p.means, centre)
		p.weights = append(p.weights, max(prior, 1))
	}
	order := make([]int, len(p.means))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		switch {
		case p.means[a] < p.means[b]:
			return -1
		case p.means[a] > p.means[b]:
			return 1
		}
		return 0
	})
	floor := wide * 1e-12
	if s.MagicClip {
		floor = wide / math.Min(100, 1+float64(len(p.means)))
	}
	p.widths = make([]float64, len(p.means))
	for rank, i := range order {
		gap := 0.0
		neighbours := 0
		if rank > 0 {
			gap, neighbours = p.means[i]-p.means[order[rank-1]], 1
		} else if s.Endpoints {
			gap, neighbours = p.means[i]-sp.lo, 1
		}
		if rank < len(order)-1 {
			gap, neighbours = math.Max(gap, p.means[order[rank+1]]-p.means[i]), neighbours+1
		} else if s.Endpoints {
			gap, neighbours = math.Max(gap, sp.hi-p.means[i]), neighbours+1
		}
		if neighbours == 0 {
			gap = wide
		}
		p.widths[i] = math.Min(math.Max(gap, floor), wide)
	}
	if prior > 0 || len(values) == 0 {
		p.widths[len(p.widths)-1] = wide
	}
	total := 0.0
	for _, w := range p.weights {
		total += w
	}
	p.truncated = make([]float64, len(p.means))
	for i := range p.weights {
		p.weights[i] /= total
		p.truncated[i] = normalCDF((sp.hi-p.means[i])/p.widths[i]) - normalCDF((sp.lo-p.means[i])/p.widths[i])
	}
	return p
}

// logDensity is the log of the mixture's density at y on the sampling
// scale.
func (p *parzen) logDensity(y float64) float64 {
	terms := make([]float64, len(p.means))
	for i := range p.means {
		z := (y - p.means[i]) / p.widths[i]
		terms[i] = math.Log(p.weights[i]) - 0.5*z*z - math.Log(p.widths[i]*math.Sqrt(2*math.Pi)*p.truncated[i])
	}
	return logSumExp(terms)
}

// draw samples the mixture: a component by weight, then a point of its
// truncated Gaussian by inverting the normal CDF between the span's
// ends. Every centre lies inside the span, so that interval holds the
// CDF's middle and the inversion keeps its precision.
func (p *parzen) draw(rng *rand.Rand) float64 {
	i := pick(rng, p.weights)
	m, w := p.means[i], p.widths[i]
	a, b := normalCDF((p.lo-m)/w), normalCDF((p.hi-m)/w)
	y := m + w*normalQuantile(a+rng.Float64()*(b-a))
	return math.Min(math.Max(y, p.lo), p.hi)
}

func normalCDF(z float64) float64 { return 0.5 * math.Erfc(-z/math.Sqrt2) }

func normalQuantile(q float64) float64 { return -math.Sqrt2 * math.Erfcinv(2*q) }

// pick draws an index with probability proportional to weights.
func pick(rng *rand.Rand, weights []float64) int {
	total := 0.0
	for _, w := range weights {
		total += w
	}
	u := rng.Float64() * total
	for i, w := range weights {
		if u < w {
			return i
		}
		u -= w
	}
	return len(weights) - 1
}

func logSumExp(terms []float64) float64 {
	top := math.Inf(-1)
	for _, t := range terms {
		top = math.Max(top, t)
	}
	if math.IsInf(top, -1) {
		return top
	}
	sum := 0.0
	for _, t := range terms {
		sum += math.Exp(t - top)
	}
	return top + math.Log(sum)
}
