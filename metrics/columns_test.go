package metrics

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"
	"time"
)

// TestAccumulatorColumnsExact: the distributions from the packed columns
// equal, bit for bit, what one float64 sample per request gives (vLLM's
// definitions, the summary before the columns), and the peak concurrency
// equals the event sweep's; with and without client queueing (without,
// E2EL with queue time is E2EL's).
func TestAccumulatorColumnsExact(t *testing.T) {
	for _, queueing := range []bool{true, false} {
		t.Run(fmt.Sprintf("queueing=%v", queueing), func(t *testing.T) { testAccumulatorColumnsExact(t, queueing) })
	}
}

func testAccumulatorColumnsExact(t *testing.T, queueing bool) {
	rng := rand.New(rand.NewPCG(7, 8))
	acc := NewAccumulator(Options{Percentiles: []float64{0, 25, 50, 90, 99, 100}})
	var ttft, tpot, e2el, queue, e2elQueue, lag, tokPerSec sample
	var intervals [][2]int64
	for i := range 20000 {
		start := time.Duration(rng.Int64N(int64(time.Hour)))
		r := &Record{Index: i, Scheduled: start, Dispatched: start + time.Duration(rng.IntN(3))*time.Millisecond,
			TTFT: time.Duration(rng.Int64N(int64(time.Minute))), OutputLen: rng.IntN(300), Success: rng.IntN(20) != 0}
		r.Start = r.Dispatched
		if queueing {
			r.Start += time.Duration(rng.IntN(2)) * time.Duration(rng.Int64N(int64(time.Second)))
		}
		r.Latency = r.TTFT + time.Duration(rng.Int64N(int64(10*time.Minute)))
		if rng.IntN(50) == 0 {
			r.Latency, r.TTFT = 0, 0
		}
		acc.Add(r)
		lag = append(lag, ms(r.SendLag()))
		if !r.Success {
			continue
		}
		ttft, e2el = append(ttft, ms(r.TTFT)), append(e2el, ms(r.Latency))
		queue, e2elQueue = append(queue, ms(r.QueueTime())), append(e2elQueue, ms(r.QueueTime()+r.Latency))
		if r.Latency > 0 {
			tokPerSec = append(tokPerSec, float64(r.OutputLen)/r.Latency.Seconds())
		}
		if d, ok := r.TPOT(); ok {
			tpot = append(tpot, ms(d))
		}
		intervals = append(intervals, [2]int64{int64(r.Start), int64(r.Start + r.Latency)})
	}
	p := acc.opts.Percentiles
	// The default budget sorts every metric at once; the small ones make
	// the summary split the keys into ranges (queue times and send lags
	// repeat a few values thousands of times, so some ranges hold one).
	for _, budget := range []int{sortBudget, 3000, 200} {
		acc.sortBudget = budget
		got := acc.Summary(time.Hour)
		for _, c := range []struct {
			name      string
			got, want Distribution
		}{
			{"ttft", got.TTFT, ttft.distribution(p)},
			{"tpot", got.TPOT, tpot.distribution(p)},
			{"e2el", got.E2EL, e2el.distribution(p)},
			{"queue", got.ClientQueue, queue.distribution(p)},
			{"e2el with queue", got.E2ELWithQueue, e2elQueue.distribution(p)},
			{"tokens per second", got.TokensPerSecond, tokPerSec.distribution(p)},
			{"send lag", got.SendLag, lag.distribution(uniquePercentiles(append([]float64{50, 99}, p...)))},
		} {
			if c.got.Count != c.want.Count || c.got.Mean != c.want.Mean || c.got.Std != c.want.Std || c.got.Median != c.want.Median ||
				c.got.Max != c.want.Max || !slices.Equal(c.got.Percentiles, c.want.Percentiles) {
				t.Errorf("budget %d, %s:\n got %+v\nwant %+v", budget, c.name, c.got, c.want)
			}
		}
		if want := eventSweepPeak(intervals); got.MaxConcurrentRequests != want {
			t.Errorf("budget %d: peak concurrency %d, want %d", budget, got.MaxConcurrentRequests, want)
		}
	}
}

// eventSweepPeak is the plain event sweep, departures before arrivals.
func eventSweepPeak(intervals [][2]int64) int {
	type event struct {
		t     int64
		delta int
	}
	var events []event
	for _, iv := range intervals {
		events = append(events, event{iv[0], +1}, event{iv[1], -1})
	}
	slices.SortFunc(events, func(a, b event) int {
		if a.t != b.t {
			return int(min(max(a.t-b.t, -1), 1))
		}
		return a.delta - b.delta
	})
	cur, peak := 0, 0
	for _, e := range events {
		cur += e.delta
		peak = max(peak, cur)
	}
	return peak
}

// TestMultisetLevelsExact: however many levels the runs were merged from,
// the multiset holds every value with its count.
func TestMultisetLevelsExact(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	var m multiset
	want := map[int64]int64{}
	for range 10 * multisetFlushAt {
		v := rng.Int64N(1<<50) - 1<<49
		m.add(v)
		want[v]++
	}
	got := map[int64]int64{}
	prev, first := int64(0), true
	m.each(func(v, n int64) {
		if !first && v <= prev {
			t.Fatalf("values out of order: %d after %d", v, prev)
		}
		prev, first = v, false
		got[v] = n
	})
	if len(got) != len(want) {
		t.Fatalf("%d distinct values, want %d", len(got), len(want))
	}
	for v, n := range want {
		if got[v] != n {
			t.Fatalf("value %d: count %d, want %d", v, got[v], n)
		}
	}
}

// TestMultisetEachMergesWithoutCompacting: each reads the levels merged on
// the fly, summing a value's counts across levels, and leaves the levels
// as they were (compacting would copy the largest at the summary's peak).
func TestMultisetEachMergesWithoutCompacting(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	var m multiset
	want := map[int64]int64{}
	for range 20 * multisetFlushAt {
		v := rng.Int64N(3 * multisetFlushAt) // repeats in every level
		m.add(v)
		want[v]++
	}
	m.flush()
	levels := len(m.levels)
	if levels < 2 {
		t.Fatalf("%d levels; the test needs several", levels)
	}
	got := map[int64]int64{}
	prev := int64(-1)
	m.each(func(v, n int64) {
		if v <= prev {
			t.Fatalf("values out of order: %d after %d", v, prev)
		}
		prev = v
		got[v] = n
	})
	if len(m.levels) != levels {
		t.Fatalf("each compacted %d levels into %d", levels, len(m.levels))
	}
	if len(got) != len(want) {
		t.Fatalf("%d distinct values, want %d", len(got), len(want))
	}
	for v, n := range want {
		if got[v] != n {
			t.Fatalf("value %d: count %d, want %d", v, got[v], n)
		}
	}
}

// TestSummaryAllocationIsBoundedBySortBudget: past its sort budget the
// summary allocates less than a byte more for each further request, where
// sorting a whole metric at once took 8 (one int64 key a request), because
// it sorts one range of keys at a time.
func TestSummaryAllocationIsBoundedBySortBudget(t *testing.T) {
	const budget = 1 << 14
	summaryAlloc := func(n int) uint64 {
		rng := rand.New(rand.NewPCG(9, 10))
		acc := NewAccumulator(Options{Percentiles: []float64{50, 90, 99}})
		acc.sortBudget = budget
		for i := range n {
			start := time.Duration(i) * 20 * time.Millisecond
			acc.Add(&Record{Index: i, Scheduled: start, Dispatched: start, Start: start, Success: true, OutputLen: 200,
				TTFT:    time.Duration(rng.Int64N(int64(50 * time.Millisecond))),
				Latency: 2*time.Second + time.Duration(rng.Int64N(int64(time.Second)))})
		}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		acc.Summary(time.Hour)
		runtime.ReadMemStats(&after)
		return after.TotalAlloc - before.TotalAlloc
	}
	// Whole multiples of the token-time table's size leave it empty, so
	// both summaries start from the same state of it.
	small, large := 3*multisetFlushAt, 9*multisetFlushAt
	smallAlloc, largeAlloc := summaryAlloc(small), summaryAlloc(large)
	t.Logf("summary allocated %d bytes for %d requests, %d for %d", smallAlloc, small, largeAlloc, large)
	if perRequest := (float64(largeAlloc) - float64(smallAlloc)) / float64(large-small); perRequest >= 1 {
		t.Errorf("summary allocated %.2f bytes more for each further request (%d for %d requests, %d for %d); want under 1",
			perRequest, smallAlloc, small, largeAlloc, large)
	}
}

// TestPackedStreamRoundTrip: every value reads back exactly, whatever its
// spread, across blocks, chunks and the unpacked tail, read in any slice
// sizes; and a stream costs the bits of its values' spread, not of their
// size (nothing for a constant field).
func TestPackedStreamRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	for _, c := range []struct {
		name    string
		n       int
		value   func(i int) int64
		maxBits int // most bits a value may take in the blocks' words
	}{
		{"empty", 0, func(int) int64 { return 0 }, 0},
		{"zeros", 1000, func(int) int64 { return 0 }, 0},
		{"constant output length", 1000, func(int) int64 { return 200 }, 0},
		{"one short block", 127, func(i int) int64 { return int64(i) }, 0},
		{"durations near 2 s, 20-bit spread", 5000, func(int) int64 { return 2e9 + rng.Int64N(1<<20) }, 20},
		{"signed gaps", 3000, func(int) int64 { return rng.Int64N(1<<30) - 1<<29 }, 30},
		{"full range", 2000, func(int) int64 { return int64(rng.Uint64()) }, 64},
		{"extremes", 300, func(i int) int64 { return []int64{math.MinInt64, math.MaxInt64, 0}[i%3] }, 64},
	} {
		t.Run(c.name, func(t *testing.T) {
			var s packedStream
			want := make([]int64, c.n)
			for i := range want {
				want[i] = c.value(i)
				s.add(want[i])
			}
			for _, step := range []int{1, 7, packBlock, scanBlock, c.n + 1} {
				r := s.reader()
				got := make([]int64, 0, c.n)
				for len(got) < c.n {
					part := make([]int64, min(step, c.n-len(got)))
					r.read(part)
					got = append(got, part...)
				}
				if !slices.Equal(got, want) {
					t.Fatalf("read %d at a time: values differ", step)
				}
			}
			words := 0
			for _, w := range s.words {
				words += len(w)
			}
			if blocks := c.n / packBlock; words*64 > blocks*packBlock*c.maxBits {
				t.Errorf("%d words for %d blocks, want at most %d bits a value", words, blocks, c.maxBits)
			}
		})
	}
}
