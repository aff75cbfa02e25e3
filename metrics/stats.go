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
// step shares one timestamp and most gaps equal a handful of step times.
// New values are counted in a small open-addressing table (one probe for a
// repeated value); when it fills, its distinct values are sorted and merged
// into the (value, count) runs. Memory is bounded by the number of distinct
// values and every statistic stays exact.
type multiset struct {
	keys   []int64 // table slots; a slot is empty when its count is 0
	counts []int64
	used   int
	runs   []run // sorted by value, values distinct
	n      int64
}

type run struct {
	v int64
	n int64
}

const (
	multisetSlots   = 1 << 15 // 512 KiB of table: stays in cache
	multisetFlushAt = multisetSlots / 2
)

func (m *multiset) add(v int64) { m.addN(v, 1) }

func (m *multiset) addN(v int64, n int64) {
	if n <= 0 {
		return
	}
	if m.keys == nil {
		m.keys = make([]int64, multisetSlots)
		m.counts = make([]int64, multisetSlots)
	}
	m.n += n
	// Fibonacci hashing spreads nearby durations across the table.
	i := int(uint64(v) * 0x9E3779B97F4A7C15 >> (64 - 15))
	for {
		switch {
		case m.counts[i] == 0:
			m.keys[i], m.counts[i] = v, n
			m.used++
			if m.used >= multisetFlushAt {
				m.compact()
			}
			return
		case m.keys[i] == v:
			m.counts[i] += n
			return
		}
		i = (i + 1) & (multisetSlots - 1)
	}
}

// compact moves the table's values into the sorted runs.
func (m *multiset) compact() {
	if m.used == 0 {
		return
	}
	fresh := make([]run, 0, m.used)
	for i, c := range m.counts {
		if c != 0 {
			fresh = append(fresh, run{m.keys[i], c})
		}
	}
	clear(m.counts)
	m.used = 0
	slices.SortFunc(fresh, func(a, b run) int { return cmp.Compare(a.v, b.v) })
	m.runs = mergeRuns(m.runs, fresh)
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
