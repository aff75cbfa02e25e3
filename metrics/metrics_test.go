package metrics

import (
	"math"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"strconv"
	"testing"
	"time"
)

func TestPercentileMatchesNumpyType7(t *testing.T) {
	oneToTen := []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	tests := []struct {
		name   string
		sorted []float64
		p      float64
		want   float64
	}{
		// Values from numpy.percentile(np.arange(1, 11), p).
		{"median of 1..10", oneToTen, 50, 5.5},
		{"p99 of 1..10", oneToTen, 99, 9.91},
		{"p0", oneToTen, 0, 1},
		{"p100", oneToTen, 100, 10},
		{"p25", oneToTen, 25, 3.25},
		{"p99.9", oneToTen, 99.9, 9.991},
		{"single value", []float64{7}, 99, 7},
		{"empty gives zero like vLLM", nil, 99, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Percentile(tt.sorted, tt.p); math.Abs(got-tt.want) > 1e-9 {
				t.Fatalf("Percentile(%v, %v) = %v, want %v", tt.sorted, tt.p, got, tt.want)
			}
		})
	}
}

func TestDistributionStdIsPopulationStd(t *testing.T) {
	d := sample{2, 4, 4, 4, 5, 5, 7, 9}.distribution([]float64{99})
	if d.Mean != 5 || d.Std != 2 || d.Median != 4.5 || d.Max != 9 {
		t.Fatalf("got mean %v std %v median %v max %v; want 5, 2 (ddof 0), 4.5, 9", d.Mean, d.Std, d.Median, d.Max)
	}
}

// The multiset must give exactly what a plain sorted sample gives, however
// often it compacts and whatever the mix of repeated and distinct values.
func TestMultisetMatchesSample(t *testing.T) {
	for _, tc := range []struct {
		name     string
		n        int
		distinct int64
	}{
		{"few distinct values, many compactions", 3*multisetFlushAt + 17, 5},
		{"all distinct", 2*multisetFlushAt + 3, 1 << 40},
		{"tiny", 3, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, 2))
			var m multiset
			var plain sample
			for range tc.n {
				v := rng.Int64N(tc.distinct) * 1000
				if rng.IntN(10) == 0 {
					m.addN(v, 3)
					plain = append(plain, float64(v)*1e-6, float64(v)*1e-6, float64(v)*1e-6)
					continue
				}
				m.add(v)
				plain = append(plain, float64(v)*1e-6)
			}
			ps := []float64{0, 1, 50, 90, 99, 99.9, 100}
			got, want := m.distribution(ps, 1e-6), plain.distribution(ps)
			if got.Count != want.Count {
				t.Fatalf("count %d, want %d", got.Count, want.Count)
			}
			close := func(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }
			if !close(got.Mean, want.Mean) || !close(got.Std, want.Std) || !close(got.Median, want.Median) || !close(got.Max, want.Max) {
				t.Fatalf("got %+v\nwant %+v", got, want)
			}
			for i := range ps {
				if !close(got.Percentiles[i].Value, want.Percentiles[i].Value) {
					t.Fatalf("p%v = %v, want %v", ps[i], got.Percentiles[i].Value, want.Percentiles[i].Value)
				}
			}
		})
	}
}

func rec(start, ttft time.Duration, itl []time.Duration, in, out int) *Record {
	lat := ttft
	for _, g := range itl {
		lat += g
	}
	return &Record{Start: start, Dispatched: start, Scheduled: start, TTFT: ttft, Latency: lat, ITL: itl, PromptLen: in, OutputLen: out, Success: true, OutputLenSource: "usage"}
}

func TestSummaryFollowsVLLMDefinitions(t *testing.T) {
	ms := time.Millisecond
	a := NewAccumulator(Options{Percentiles: []float64{50, 99}, Goodput: map[string]float64{"ttft": 150, "tpot": 30}})
	a.Add(rec(0, 100*ms, []time.Duration{20 * ms, 20 * ms, 20 * ms}, 10, 4)) // TPOT 20, good
	a.Add(rec(50*ms, 200*ms, []time.Duration{40 * ms}, 20, 2))               // TPOT 40, TTFT too slow
	a.Add(rec(100*ms, 120*ms, nil, 30, 1))                                   // no TPOT; counts 0 for goodput
	a.Add(&Record{Start: 10 * ms, Success: false, Error: "HTTP 500: boom", PromptLen: 99})
	a.Add(&Record{Warmup: true, Success: true, OutputLen: 1000})
	s := a.Summary(2 * time.Second)

	if s.Completed != 3 || s.Failed != 1 {
		t.Fatalf("completed/failed = %d/%d, want 3/1", s.Completed, s.Failed)
	}
	if s.TotalInput != 60 || s.TotalOutput != 7 {
		t.Fatalf("totals in/out = %d/%d, want 60/7 (failed and warmup requests excluded)", s.TotalInput, s.TotalOutput)
	}
	if s.RequestThroughput != 1.5 || s.OutputThroughput != 3.5 || s.TotalTokenThroughput != 33.5 {
		t.Fatalf("throughputs = %v %v %v", s.RequestThroughput, s.OutputThroughput, s.TotalTokenThroughput)
	}
	if s.RequestGoodput == nil || *s.RequestGoodput != 1.0 || s.GoodRequests != 2 {
		t.Fatalf("goodput = %v (%d good), want 1.0 req/s from 2 good requests", s.RequestGoodput, s.GoodRequests)
	}
	if s.TPOT.Count != 2 || s.TPOT.Mean != 30 {
		t.Fatalf("TPOT count %d mean %v, want 2 and 30 ms", s.TPOT.Count, s.TPOT.Mean)
	}
	if s.ITL.Count != 4 || s.ITL.Mean != 25 {
		t.Fatalf("ITL count %d mean %v, want 4 pooled gaps averaging 25 ms", s.ITL.Count, s.ITL.Mean)
	}
	if s.TTFT.Median != 120 {
		t.Fatalf("median TTFT %v, want 120", s.TTFT.Median)
	}
	if s.MaxConcurrentRequests != 3 {
		t.Fatalf("peak concurrency %d, want 3", s.MaxConcurrentRequests)
	}
	if s.MaxOutputTokensPerS != 7 {
		t.Fatalf("peak output tok/s %v, want 7 (all tokens in the first second)", s.MaxOutputTokensPerS)
	}
	if s.Errors["HTTP 500: boom"] != 1 {
		t.Fatalf("errors = %v", s.Errors)
	}
}

func TestPeakConcurrencyDeparturesBeforeArrivals(t *testing.T) {
	// Back-to-back requests never overlap: [0,10) then [10,20).
	if got := peakConcurrency([][2]int64{{0, 10}, {10, 20}, {20, 30}}); got != 1 {
		t.Fatalf("got %d, want 1", got)
	}
	if got := peakConcurrency([][2]int64{{0, 10}, {5, 20}, {6, 7}}); got != 3 {
		t.Fatalf("got %d, want 3", got)
	}
	if got := peakConcurrency(nil); got != 0 {
		t.Fatalf("got %d, want 0", got)
	}
}

func TestPeakTokensCountsTokensNotChunks(t *testing.T) {
	ms := time.Millisecond
	a := NewAccumulator(Options{})
	r := rec(0, 100*ms, []time.Duration{10 * ms, 10 * ms, 10 * ms, 10 * ms}, 1, 8)
	r.FirstChunkTokens = 4 // first chunk carried 4 tokens, then 4 more one by one
	a.Add(r)
	a.Add(rec(1500*ms, 100*ms, []time.Duration{900 * ms}, 1, 2)) // tokens at 1.6 s and 2.5 s
	s := a.Summary(3 * time.Second)
	if s.MaxOutputTokensPerS != 8 {
		t.Fatalf("peak = %v, want 8", s.MaxOutputTokensPerS)
	}
}

func TestParseFlags(t *testing.T) {
	g, err := ParseGoodput([]string{"ttft:500", "tpot:50.5"})
	if err != nil || g["ttft"] != 500 || g["tpot"] != 50.5 {
		t.Fatalf("ParseGoodput = %v, %v", g, err)
	}
	for _, bad := range [][]string{{"ttft"}, {"itl:5"}, {"ttft:-1"}, {"ttft:abc"}} {
		if _, err := ParseGoodput(bad); err == nil {
			t.Errorf("ParseGoodput(%q) accepted bad input", bad)
		}
	}
	p, err := ParsePercentiles("50,90,99.9")
	if err != nil || !slices.Equal(p, []float64{50, 90, 99.9}) {
		t.Fatalf("ParsePercentiles = %v, %v", p, err)
	}
	for _, bad := range []string{"", "101", "x", "-1"} {
		if _, err := ParsePercentiles(bad); err == nil {
			t.Errorf("ParsePercentiles(%q) accepted bad input", bad)
		}
	}
	m, err := ParsePercentileMetrics("ttft,e2el,ttft")
	if err != nil || !slices.Equal(m, []string{"ttft", "e2el"}) {
		t.Fatalf("ParsePercentileMetrics = %v, %v", m, err)
	}
	if _, err := ParsePercentileMetrics("ttft,foo"); err == nil {
		t.Error("ParsePercentileMetrics accepted an unknown metric")
	}
}

func BenchmarkAccumulatorAdd(b *testing.B) {
	ms := time.Millisecond
	itl := make([]time.Duration, 200)
	for i := range itl {
		itl[i] = 10 * ms
	}
	r := rec(0, 100*ms, itl, 200, 201)
	a := NewAccumulator(Options{})
	b.ReportAllocs()
	for b.Loop() {
		r.Start += ms
		a.Add(r)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/201, "ns/token")
}

func TestSummaryCountsRetriesAndReuseOverEveryRequest(t *testing.T) {
	a := NewAccumulator(Options{})
	recs := []Record{
		{Success: true, OutputLen: 1, Latency: time.Millisecond, Retries: 1, ConnReused: false},
		{Success: true, OutputLen: 1, Latency: time.Millisecond, ConnReused: true},
		{Success: false, Error: "x", Retries: 2, ConnReused: true},
		{Warmup: true, Retries: 5, ConnReused: true},
	}
	for i := range recs {
		a.Add(&recs[i])
	}
	s := a.Summary(time.Second)
	if s.Retries != 3 || s.ConnReused != 2 {
		t.Errorf("retries %d reused %d, want 3 and 2 (failures count, warmups do not)", s.Retries, s.ConnReused)
	}
}

// BenchmarkAccumulatorSummary times the summary of the requests of a long
// 50 req/s run (Poisson starts, TTFT 10–25 ms, latency 1.7–1.9 s, 200
// tokens; no ITL) and reports the heap the records leave:
// SERVEBENCH_SUMMARY_ROWS sets the count (default 1,000,000).
func BenchmarkAccumulatorSummary(b *testing.B) {
	n := 1000000
	if v, err := strconv.Atoi(os.Getenv("SERVEBENCH_SUMMARY_ROWS")); err == nil && v > 0 {
		n = v
	}
	rng := rand.New(rand.NewPCG(1, 2))
	acc := NewAccumulator(Options{})
	var start time.Duration
	for i := range n {
		start += time.Duration(rng.ExpFloat64() * 20e6)
		acc.Add(&Record{Index: i, Scheduled: start, Dispatched: start, Start: start, Success: true, OutputLen: 200,
			TTFT:    10*time.Millisecond + time.Duration(rng.Int64N(int64(15*time.Millisecond))),
			Latency: 1700*time.Millisecond + time.Duration(rng.Int64N(int64(200*time.Millisecond)))})
	}
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	heap := ms.HeapAlloc
	for b.Loop() {
		acc.Summary(time.Hour)
	}
	b.ReportMetric(float64(heap)/float64(n), "heap-B/request")
}
