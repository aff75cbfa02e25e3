package metrics

import (
	"cmp"
	"math"
	"slices"
)

// Percentile returns numpy's default percentile (linear interpolation,
// "type 7") of sorted values: h=(n-1)p; x[lo]+(h-lo)(x[lo+1]-x[lo]).
// p is in percent (99 means the 99th percentile). An empty slice gives 0,
// as vLLM reports for a metric with no samples.
func Percentile(sorted []float64, p float64) float64 {
	n := len(sorted)
	if n == 0 {
		return 0
	}
	h := float64(n-1) * p / 100
	lo := int(math.Floor(h))
	if lo < 0 {
		return sorted[0]
	}
	if lo >= n-1 {
		return sorted[n-1]
	}
	return sorted[lo] + (h-float64(lo))*(sorted[lo+1]-sorted[lo])
}

// Distribution is the summary of one metric in milliseconds, with the same
// statistics vLLM reports: np.mean, np.std (ddof 0), np.median and
// np.percentile for each requested percentile.
type Distribution struct {
	Count       int64
	Mean        float64
	Median      float64
	Std         float64
	Max         float64
	Percentiles []PercentileValue
}

// PercentileValue is one requested percentile of a Distribution.
type PercentileValue struct {
	P     float64
	Value float64
}

// At returns the value of percentile p, and whether it was computed.
func (d Distribution) At(p float64) (float64, bool) {
	for _, pv := range d.Percentiles {
		if pv.P == p {
			return pv.Value, true
		}
	}
	return 0, false
}

// sample collects float64 values (milliseconds) one per request.
type sample []float64

func (s sample) distribution(percentiles []float64) Distribution {
	sorted := slices.Clone([]float64(s))
	slices.Sort(sorted)
	d := Distribution{Count: int64(len(sorted))}
	if len(sorted) == 0 {
		d.Percentiles = make([]PercentileValue, len(percentiles))
		for i, p := range percentiles {
			d.Percentiles[i] = PercentileValue{P: p}
		}
		return d
	}
	var sum float64
	for _, v := range sorted {
		sum += v
	}
	d.Mean = sum / float64(len(sorted))
	var sq float64
	for _, v := range sorted {
		sq += (v - d.Mean) * (v - d.Mean)
	}
	d.Std = math.Sqrt(sq / float64(len(sorted)))
	d.Median = Percentile(sorted, 50)
	d.Max = sorted[len(sorted)-1]
	d.Percentiles = make([]PercentileValue, len(percentiles))
	for i, p := range percentiles {
		d.Percentiles[i] = PercentileValue{P: p, Value: Percentile(sorted, p)}
	}
	return d
}

// multiset is an exact multiset of int64 values that stays small when values
// repeat. Pooled ITL and token timestamps have one entry per output token,
// which is tens of millions in a long simulation; there, every token of a
// step shares one timestamp and most gaps equal a handful of step times, so
// periodic sort-and-merge into (value, count) runs keeps memory bounded by
// the number of distinct values while every statistic stays exact.
type multiset struct {
	pending     []int64 // unsorted single values
	pendingRuns []run   // unsorted values with counts
	runs        []run   // sorted by value, values distinct
	n           int64
}

type run struct {
	v int64
	n int64
}

const multisetCompactAt = 1 << 16

func (m *multiset) add(v int64) {
	m.pending = append(m.pending, v)
	m.n++
	if len(m.pending) >= multisetCompactAt {
		m.compact()
	}
}

func (m *multiset) addN(v int64, n int64) {
	if n <= 0 {
		return
	}
	m.pendingRuns = append(m.pendingRuns, run{v, n})
	m.n += n
	if len(m.pendingRuns) >= multisetCompactAt {
		m.compact()
	}
}

func (m *multiset) compact() {
	if len(m.pending) == 0 && len(m.pendingRuns) == 0 {
		return
	}
	slices.Sort(m.pending)
	fresh := make([]run, 0, 16)
	for _, v := range m.pending {
		if k := len(fresh); k > 0 && fresh[k-1].v == v {
			fresh[k-1].n++
			continue
		}
		fresh = append(fresh, run{v, 1})
	}
	m.pending = m.pending[:0]
	m.runs = mergeRuns(m.runs, fresh)
	if len(m.pendingRuns) > 0 {
		slices.SortFunc(m.pendingRuns, func(a, b run) int { return cmp.Compare(a.v, b.v) })
		fresh = fresh[:0:0]
		for _, r := range m.pendingRuns {
			if k := len(fresh); k > 0 && fresh[k-1].v == r.v {
				fresh[k-1].n += r.n
				continue
			}
			fresh = append(fresh, r)
		}
		m.pendingRuns = m.pendingRuns[:0]
		m.runs = mergeRuns(m.runs, fresh)
	}
}

func mergeRuns(a, b []run) []run {
	if len(a) == 0 {
		return b
	}
	out := make([]run, 0, len(a)+len(b))
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		switch {
		case a[i].v < b[j].v:
			out = append(out, a[i])
			i++
		case a[i].v > b[j].v:
			out = append(out, b[j])
			j++
		default:
			out = append(out, run{a[i].v, a[i].n + b[j].n})
			i++
			j++
		}
	}
	out = append(out, a[i:]...)
	return append(out, b[j:]...)
}

// kth returns the k-th smallest value (0-based); runs must be compacted.
func (m *multiset) kth(k int64) int64 {
	var seen int64
	for _, r := range m.runs {
		seen += r.n
		if k < seen {
			return r.v
		}
	}
	return m.runs[len(m.runs)-1].v
}

// distribution summarises the multiset with values scaled by scale (e.g.
// nanoseconds → milliseconds), with the same numpy semantics as sample.
func (m *multiset) distribution(percentiles []float64, scale float64) Distribution {
	m.compact()
	d := Distribution{Count: m.n, Percentiles: make([]PercentileValue, len(percentiles))}
	for i, p := range percentiles {
		d.Percentiles[i].P = p
	}
	if m.n == 0 {
		return d
	}
	var sum float64
	for _, r := range m.runs {
		sum += float64(r.v) * scale * float64(r.n)
	}
	d.Mean = sum / float64(m.n)
	var sq float64
	for _, r := range m.runs {
		dv := float64(r.v)*scale - d.Mean
		sq += dv * dv * float64(r.n)
	}
	d.Std = math.Sqrt(sq / float64(m.n))
	d.Max = float64(m.runs[len(m.runs)-1].v) * scale
	pct := func(p float64) float64 {
		h := float64(m.n-1) * p / 100
		lo := int64(math.Floor(h))
		if lo >= m.n-1 {
			return d.Max
		}
		a := float64(m.kth(lo)) * scale
		b := float64(m.kth(lo+1)) * scale
		return a + (h-float64(lo))*(b-a)
	}
	d.Median = pct(50)
	for i, p := range percentiles {
		d.Percentiles[i].Value = pct(p)
	}
	return d
}

// each calls f for every distinct value in ascending order with its count.
func (m *multiset) each(f func(v, n int64)) {
	m.compact()
	for _, r := range m.runs {
		f(r.v, r.n)
	}
}
