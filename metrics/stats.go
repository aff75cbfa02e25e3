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
// repeated value); when it fills, its distinct values are sorted and kept
// as varint-encoded runs (runList), merged level by level like a
// log-structured merge tree so that each value is copied O(log n) times.
// Memory is bounded by the number of distinct values (2–4 bytes each) and
// every statistic stays exact.
type multiset struct {
	// slots is the table: a value and its count side by side, so a probe
	// touches one cache line; a slot is empty when its count is 0.
	slots []run
	used  int
	// levels are sorted runs, each at least twice as large as the next.
	levels []runList
	pool   chunkPool
	fresh  []run // the table's runs being sorted, reused
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
	if m.slots == nil {
		m.slots = make([]run, multisetSlots)
	}
	m.n += n
	// Fibonacci hashing spreads nearby durations across the table.
	i := int(uint64(v) * 0x9E3779B97F4A7C15 >> (64 - 15))
	for {
		switch {
		case m.slots[i].n == 0:
			m.slots[i] = run{v, n}
			m.used++
			if m.used >= multisetFlushAt {
				m.flush()
			}
			return
		case m.slots[i].v == v:
			m.slots[i].n += n
			return
		}
		i = (i + 1) & (multisetSlots - 1)
	}
}

// flush moves the table's values into a new level of runs.
func (m *multiset) flush() {
	if m.used == 0 {
		return
	}
	if m.fresh == nil {
		m.fresh = make([]run, 0, multisetFlushAt)
	}
	fresh := m.fresh[:0]
	for _, r := range m.slots {
		if r.n != 0 {
			fresh = append(fresh, r)
		}
	}
	m.fresh = fresh
	clear(m.slots)
	m.used = 0
	slices.SortFunc(fresh, func(a, b run) int { return cmp.Compare(a.v, b.v) })
	var level runList
	prev := int64(math.MinInt64)
	for _, r := range fresh {
		level.append(&m.pool, &prev, r.v, r.n)
	}
	m.levels = append(m.levels, level)
	for k := len(m.levels); k >= 2 && m.levels[k-2].distinct <= 2*m.levels[k-1].distinct; k-- {
		m.levels[k-2] = mergeRunLists(m.levels[k-2], m.levels[k-1], &m.pool)
		m.levels = m.levels[:k-1]
	}
}

// compact leaves every value in one level.
func (m *multiset) compact() {
	m.flush()
	for k := len(m.levels); k >= 2; k-- {
		m.levels[k-2] = mergeRunLists(m.levels[k-2], m.levels[k-1], &m.pool)
		m.levels = m.levels[:k-1]
	}
}

// each calls f for every distinct value in ascending order with its count.
// It merges the levels as it reads them rather than compacting first: the
// final merge would copy the largest level, which in a 10M-request
// simulation is about a hundred megabytes of token times.
func (m *multiset) each(f func(v, n int64)) {
	m.flush()
	if len(m.levels) == 1 {
		m.levels[0].each(func(v, n int64) bool { f(v, n); return true })
		return
	}
	type head struct {
		next func() (v, n int64, ok bool)
		v, n int64
	}
	heads := make([]head, 0, len(m.levels))
	for _, l := range m.levels {
		c := l.cursor()
		if v, n, ok := c(); ok {
			heads = append(heads, head{c, v, n})
		}
	}
	for len(heads) > 0 {
		least := heads[0].v
		for _, h := range heads[1:] {
			least = min(least, h.v)
		}
		var total int64
		for i := 0; i < len(heads); {
			h := &heads[i]
			if h.v != least {
				i++
				continue
			}
			total += h.n
			if v, n, ok := h.next(); ok {
				h.v, h.n = v, n
				i++
			} else {
				heads = append(heads[:i], heads[i+1:]...)
			}
		}
		f(least, total)
	}
}

// kth returns the k-th smallest value (0-based); m must hold more than k.
func (m *multiset) kth(k int64) int64 {
	var seen, found int64
	m.levels[0].each(func(v, n int64) bool {
		seen += n
		found = v
		return k >= seen
	})
	return found
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
	var maxV int64
	m.each(func(v, n int64) {
		sum += float64(v) * scale * float64(n)
		maxV = v
	})
	d.Mean = sum / float64(m.n)
	var sq float64
	m.each(func(v, n int64) {
		dv := float64(v)*scale - d.Mean
		sq += dv * dv * float64(n)
	})
	d.Std = math.Sqrt(sq / float64(m.n))
	d.Max = float64(maxV) * scale
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
