package metrics

import (
	"math"
	"math/bits"
	"slices"
	"sort"
)

// sortBudget is how many int64 keys the summary sorts at once (16 MiB).
// vLLM's statistics are sums in ascending order, so the summary must visit
// a metric's values sorted; a day of simulated traffic has ten million of
// them, and sorting them in one buffer would cost 8 bytes a request on top
// of the columns. Beyond the budget, orderedKeys sorts one slice of the
// key range at a time, at the cost of one pass over the column per slice.
const sortBudget = 1 << 21

// histogramBuckets is how finely one pass splits a key range too large to
// sort at once.
const histogramBuckets = 1 << 12

// orderedKeys yields the keys that scan produces in ascending order, as
// runs of equal keys, holding at most budget keys at once. It first plans
// key ranges of at most budget keys each (or of a single repeated key),
// with histogram passes; reading a range then takes one pass that collects
// and sorts its keys. When every key fits the budget, one pass collects
// them all and the reads reuse the sorted buffer.
type orderedKeys struct {
	// scan calls yield with every key, in blocks, in any order; each call
	// is one pass.
	scan    func(yield func(keys []int64))
	budget  int
	rows    int // an upper bound on the keys scan yields
	n       int64
	ranges  []keyRange
	planned bool

	// buf is *store's buffer, handed on from one metric to the next so
	// the summary reuses it rather than leaving one a metric as garbage.
	store    *[]int64
	buf      []int64
	scratch  *[]int64 // sort's second buffer, shared like store
	bufRange int      // the range whose keys buf holds sorted, or -1
}

// keyRange holds the n keys in [lo, hi].
type keyRange struct {
	lo, hi int64
	n      int64
}

func newOrderedKeys(rows, budget int, store, scratch *[]int64, scan func(yield func(keys []int64))) *orderedKeys {
	return &orderedKeys{scan: scan, budget: budget, rows: rows, store: store, scratch: scratch, bufRange: -1}
}

// buffer returns *store emptied, grown to hold any range's keys.
func (o *orderedKeys) buffer() []int64 {
	if n := min(o.rows, o.budget); cap(*o.store) < n {
		*o.store = make([]int64, 0, n)
	}
	return (*o.store)[:0]
}

// count is how many keys there are.
func (o *orderedKeys) count() int64 {
	o.plan()
	return o.n
}

func (o *orderedKeys) plan() {
	if o.planned {
		return
	}
	o.planned = true
	if o.rows <= o.budget {
		o.buf = o.buffer()
		o.scan(func(keys []int64) { o.buf = append(o.buf, keys...) })
		if len(o.buf) > 0 {
			lo, hi := o.buf[0], o.buf[0]
			for _, k := range o.buf {
				lo, hi = min(lo, k), max(hi, k)
			}
			o.sort(lo, hi)
		}
		o.n = int64(len(o.buf))
		if o.n > 0 {
			o.ranges = []keyRange{{o.buf[0], o.buf[len(o.buf)-1], o.n}}
			o.bufRange = 0
		}
		return
	}
	whole := keyRange{lo: math.MaxInt64, hi: math.MinInt64}
	o.scan(func(keys []int64) {
		whole.n += int64(len(keys))
		for _, k := range keys {
			whole.lo = min(whole.lo, k)
			whole.hi = max(whole.hi, k)
		}
	})
	o.n = whole.n
	if o.n == 0 {
		return
	}
	o.ranges = []keyRange{whole}
	for o.split() {
	}
}

// oversized says whether r must be split before it can be read.
func (o *orderedKeys) oversized(r keyRange) bool { return r.n > int64(o.budget) && r.lo < r.hi }

// split divides every oversized range into histogramBuckets equal slices
// of its key span, counted in one pass, and regroups consecutive slices
// into ranges of at most budget keys. It reports whether it did anything;
// each round narrows the spans 4096-fold, so a handful of rounds end it.
func (o *orderedKeys) split() bool {
	var big []int // indexes into o.ranges
	for i, r := range o.ranges {
		if o.oversized(r) {
			big = append(big, i)
		}
	}
	if len(big) == 0 {
		return false
	}
	hist := make([]int64, len(big)*histogramBuckets)
	width := make([]uint64, len(big))
	for j, i := range big {
		width[j] = (uint64(o.ranges[i].hi)-uint64(o.ranges[i].lo))/histogramBuckets + 1
	}
	o.scan(func(keys []int64) {
		for _, k := range keys {
			j := sort.Search(len(big), func(j int) bool { return o.ranges[big[j]].hi >= k })
			if j == len(big) || k < o.ranges[big[j]].lo {
				continue
			}
			hist[j*histogramBuckets+int((uint64(k)-uint64(o.ranges[big[j]].lo))/width[j])]++
		}
	})
	out := make([]keyRange, 0, len(o.ranges)+len(big)*8)
	next := 0
	for i, r := range o.ranges {
		if next == len(big) || big[next] != i {
			out = append(out, r)
			continue
		}
		j := next
		next++
		span := uint64(r.hi) - uint64(r.lo)
		var cur keyRange
		for b, c := range hist[j*histogramBuckets : (j+1)*histogramBuckets] {
			if c == 0 {
				continue
			}
			from := uint64(b) * width[j]
			to := span
			if width[j]-1 <= span-from {
				to = from + width[j] - 1
			}
			lo, hi := int64(uint64(r.lo)+from), int64(uint64(r.lo)+to)
			if cur.n > 0 && cur.n+c > int64(o.budget) {
				out = append(out, cur)
				cur.n = 0
			}
			if cur.n == 0 {
				cur.lo = lo
			}
			cur.hi = hi
			cur.n += c
		}
		out = append(out, cur)
	}
	o.ranges = out
	return true
}

// cursor returns a function yielding the keys' runs in ascending order (ok
// false at the end). Only one cursor of an orderedKeys may be in use.
func (o *orderedKeys) cursor() func() (k, n int64, ok bool) {
	o.plan()
	ri, pos := 0, 0
	inBuf := false
	return func() (int64, int64, bool) {
		for !inBuf || pos == len(o.buf) {
			if inBuf {
				ri++
				inBuf = false
			}
			if ri == len(o.ranges) {
				return 0, 0, false
			}
			r := o.ranges[ri]
			if r.lo == r.hi {
				ri++
				return r.lo, r.n, true
			}
			o.load(ri)
			inBuf, pos = true, 0
		}
		k := o.buf[pos]
		end := pos + 1
		for end < len(o.buf) && o.buf[end] == k {
			end++
		}
		n := end - pos
		pos = end
		return k, int64(n), true
	}
}

// load leaves range i's keys sorted in buf.
func (o *orderedKeys) load(i int) {
	if o.bufRange == i {
		return
	}
	r := o.ranges[i]
	o.buf = o.buffer()
	o.scan(func(keys []int64) {
		for _, k := range keys {
			if k >= r.lo && k <= r.hi {
				o.buf = append(o.buf, k)
			}
		}
	})
	o.sort(r.lo, r.hi)
	o.bufRange = i
}

// sort sorts buf, whose keys lie in [lo, hi]: by radix (LSD, 11 bits a
// pass over the keys' offsets from lo) when it is large, which is several
// times faster than a comparison sort and matters because the summary
// sorts every key twice.
func (o *orderedKeys) sort(lo, hi int64) {
	const digitBits = 11
	passes := (bits.Len64(uint64(hi)-uint64(lo)) + digitBits - 1) / digitBits
	if len(o.buf) < 1<<12 {
		slices.Sort(o.buf)
		return
	}
	if cap(*o.scratch) < len(o.buf) {
		*o.scratch = make([]int64, 0, cap(o.buf))
	}
	src, dst := o.buf, (*o.scratch)[:len(o.buf)]
	var count [1 << digitBits]int
	for p := range passes {
		shift := uint(p * digitBits)
		clear(count[:])
		for _, k := range src {
			count[(uint64(k)-uint64(lo))>>shift&(1<<digitBits-1)]++
		}
		sum := 0
		for d, c := range count {
			count[d] = sum
			sum += c
		}
		for _, k := range src {
			d := (uint64(k) - uint64(lo)) >> shift & (1<<digitBits - 1)
			dst[count[d]] = k
			count[d]++
		}
		src, dst = dst, src
	}
	if passes%2 == 1 {
		copy(o.buf, src)
	}
}

// each calls f with every run of equal keys in ascending order.
func (o *orderedKeys) each(f func(k, n int64)) {
	next := o.cursor()
	for k, n, ok := next(); ok; k, n, ok = next() {
		f(k, n)
	}
}

// keyDistribution is sample.distribution over the keys of o: value maps a
// key to the metric (milliseconds from nanoseconds, or a float's bits),
// and must be nondecreasing in the key, so ascending keys give ascending
// values, summed in the order numpy's statistics see them in a sorted
// sample, and every statistic comes out bit for bit as
// sample.distribution's.
func keyDistribution(o *orderedKeys, percentiles []float64, value func(int64) float64) Distribution {
	n := o.count()
	d := Distribution{Count: n, Percentiles: make([]PercentileValue, len(percentiles))}
	for i, p := range percentiles {
		d.Percentiles[i].P = p
	}
	if n == 0 {
		return d
	}
	// The ranks that the median, the maximum and the percentiles read,
	// picked up during the first pass.
	need := []int64{n - 1}
	for _, p := range append([]float64{50}, percentiles...) {
		lo := min(max(int64(math.Floor(float64(n-1)*p/100)), 0), n-1)
		need = append(need, lo, min(lo+1, n-1))
	}
	slices.Sort(need)
	need = slices.Compact(need)
	at := make([]float64, len(need))

	var sum float64
	var seen int64
	j := 0
	o.each(func(k, c int64) {
		v := value(k)
		for range c {
			sum += v
		}
		for j < len(need) && need[j] < seen+c {
			at[j] = v
			j++
		}
		seen += c
	})
	d.Mean = sum / float64(n)
	var sq float64
	o.each(func(k, c int64) {
		dv := value(k) - d.Mean
		for range c {
			sq += dv * dv
		}
	})
	d.Std = math.Sqrt(sq / float64(n))
	valueAt := func(r int64) float64 {
		i, _ := slices.BinarySearch(need, r)
		return at[i]
	}
	pct := func(p float64) float64 {
		h := float64(n-1) * p / 100
		lo := int64(math.Floor(h))
		if lo < 0 {
			return valueAt(0)
		}
		if lo >= n-1 {
			return valueAt(n - 1)
		}
		a, b := valueAt(lo), valueAt(lo+1)
		return a + (h-float64(lo))*(b-a)
	}
	d.Median = pct(50)
	d.Max = valueAt(n - 1)
	for i, p := range percentiles {
		d.Percentiles[i].Value = pct(p)
	}
	return d
}
