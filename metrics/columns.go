package metrics

import (
	"encoding/binary"
	"math"
	"slices"
	"time"
)

// varintColumns holds a fixed number of int64 fields per row, each stored
// as a zigzag varint, in chunks that never move once written. A simulated
// day of traffic has ten million rows: a field costs 1 byte when small (a
// zero queue time) and 4–5 bytes for a duration in nanoseconds, against 8
// for an int64 and 16 for a slice grown by doubling, and every value stays
// exact.
type varintColumns struct {
	fields int
	chunks [][]byte
	rows   int
}

const columnChunk = 1 << 20

func (c *varintColumns) add(row ...int64) {
	if len(c.chunks) == 0 || cap(c.chunks[len(c.chunks)-1])-len(c.chunks[len(c.chunks)-1]) < len(row)*binary.MaxVarintLen64 {
		c.chunks = append(c.chunks, make([]byte, 0, columnChunk))
	}
	last := &c.chunks[len(c.chunks)-1]
	for _, v := range row {
		*last = binary.AppendVarint(*last, v)
	}
	c.rows++
}

// each calls f with every row in the order added; row is reused.
func (c *varintColumns) each(f func(row []int64)) {
	row := make([]int64, c.fields)
	for _, chunk := range c.chunks {
		for len(chunk) > 0 {
			for i := range row {
				v, k := binary.Varint(chunk)
				row[i] = v
				chunk = chunk[k:]
			}
			f(row)
		}
	}
}

// intDistribution is sample.distribution over values kept as int64 keys:
// value maps a key to the metric (milliseconds from nanoseconds, or a
// float's bits), and must be nondecreasing in the key, so sorting the keys
// sorts the values and every statistic comes out bit for bit as
// sample.distribution's. keys is sorted in place.
func intDistribution(keys []int64, percentiles []float64, value func(int64) float64) Distribution {
	slices.Sort(keys)
	d := Distribution{Count: int64(len(keys)), Percentiles: make([]PercentileValue, len(percentiles))}
	for i, p := range percentiles {
		d.Percentiles[i].P = p
	}
	if len(keys) == 0 {
		return d
	}
	var sum float64
	for _, k := range keys {
		sum += value(k)
	}
	d.Mean = sum / float64(len(keys))
	var sq float64
	for _, k := range keys {
		v := value(k)
		sq += (v - d.Mean) * (v - d.Mean)
	}
	d.Std = math.Sqrt(sq / float64(len(keys)))
	pct := func(p float64) float64 {
		n := len(keys)
		h := float64(n-1) * p / 100
		lo := int(math.Floor(h))
		if lo < 0 {
			return value(keys[0])
		}
		if lo >= n-1 {
			return value(keys[n-1])
		}
		a, b := value(keys[lo]), value(keys[lo+1])
		return a + (h-float64(lo))*(b-a)
	}
	d.Median = pct(50)
	d.Max = value(keys[len(keys)-1])
	for i, p := range percentiles {
		d.Percentiles[i].Value = pct(p)
	}
	return d
}

func nsToMS(ns int64) float64 { return ms(time.Duration(ns)) }

// floatKey orders non-negative floats as int64s (IEEE 754 bit patterns of
// non-negative numbers sort as the numbers do).
func floatKey(f float64) int64 { return int64(math.Float64bits(f)) }

func keyFloat(k int64) float64 { return math.Float64frombits(uint64(k)) }

// peakConcurrencySorted is the most requests in flight at once, from the
// sorted starts and a cursor over the sorted ends (a runList's): after the
// departures at an instant and then its arrivals (intervals are [start,
// end)), the number in flight is the starts so far less the ends so far.
func peakConcurrencySorted(starts []int64, ends func() (v, n int64, ok bool)) int {
	peak, j := 0, 0
	ev, en, eok := ends()
	for i, s := range starts {
		for eok && ev <= s {
			j += int(en)
			ev, en, eok = ends()
		}
		if i+1 == len(starts) || starts[i+1] != s {
			peak = max(peak, i+1-j)
		}
	}
	return peak
}

// runList is a multiset's sorted (value, count) runs, varint-encoded as
// the gap from the previous value and the count: 2–4 bytes a distinct
// value where a run struct takes 16.
type runList struct {
	data     []byte
	distinct int
}

func (l *runList) append(prev *int64, v, n int64) {
	l.data = binary.AppendUvarint(l.data, uint64(v)-uint64(*prev))
	l.data = binary.AppendUvarint(l.data, uint64(n))
	*prev = v
	l.distinct++
}

func (l runList) each(f func(v, n int64) bool) {
	var v int64 = math.MinInt64
	for data := l.data; len(data) > 0; {
		gap, k := binary.Uvarint(data)
		count, k2 := binary.Uvarint(data[k:])
		data = data[k+k2:]
		v = int64(uint64(v) + gap)
		if !f(v, int64(count)) {
			return
		}
	}
}

// cursor returns a function yielding l's runs one at a time (ok false at the
// end), for merging.
func (l runList) cursor() func() (v, n int64, ok bool) {
	data := l.data
	var v int64 = math.MinInt64
	return func() (int64, int64, bool) {
		if len(data) == 0 {
			return 0, 0, false
		}
		gap, k := binary.Uvarint(data)
		count, k2 := binary.Uvarint(data[k:])
		data = data[k+k2:]
		v = int64(uint64(v) + gap)
		return v, int64(count), true
	}
}

func mergeRunLists(a, b runList) runList {
	out := runList{data: make([]byte, 0, len(a.data)+len(b.data))}
	prev := int64(math.MinInt64)
	na, nb := a.cursor(), b.cursor()
	av, an, aok := na()
	bv, bn, bok := nb()
	for aok || bok {
		switch {
		case aok && (!bok || av < bv):
			out.append(&prev, av, an)
			av, an, aok = na()
		case bok && (!aok || bv < av):
			out.append(&prev, bv, bn)
			bv, bn, bok = nb()
		default:
			out.append(&prev, av, an+bn)
			av, an, aok = na()
			bv, bn, bok = nb()
		}
	}
	return out
}
