package serve

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// TestLagHistogramQuantiles compares the histogram's quantiles with exact
// ones on seeded log-normal samples spanning µs to seconds.
func TestLagHistogramQuantiles(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	var h lagHistogram
	samples := make([]time.Duration, 0, 50000)
	for range 50000 {
		d := time.Duration(math.Exp(rng.NormFloat64()*2 + math.Log(500e3))) // median 500 µs
		samples = append(samples, d)
		h.record(d, 1)
	}
	slices.Sort(samples)
	exact := func(q float64) time.Duration { return samples[int(q*float64(len(samples)-1))] }
	s := h.stats()
	if s.Tokens != int64(len(samples)) || s.Max != samples[len(samples)-1] {
		t.Fatalf("count %d max %v, want %d %v", s.Tokens, s.Max, len(samples), samples[len(samples)-1])
	}
	for _, c := range []struct {
		name string
		got  time.Duration
		q    float64
	}{{"p50", s.P50, 0.5}, {"p90", s.P90, 0.9}, {"p99", s.P99, 0.99}, {"p99.9", s.P999, 0.999}} {
		want := exact(c.q)
		if rel := math.Abs(float64(c.got-want)) / float64(want); rel > 0.02 && math.Abs(float64(c.got-want)) > float64(2*time.Microsecond) {
			t.Errorf("%s = %v, exact %v (%.1f%% off)", c.name, c.got, want, rel*100)
		}
	}
	over := 0
	for _, d := range samples {
		if d > time.Millisecond {
			over++
		}
	}
	if got, want := s.OverOneMillisecond, float64(over)/float64(len(samples)); math.Abs(got-want) > 0.005 {
		t.Errorf("over 1 ms: %.4f, want %.4f", got, want)
	}
}

func TestLagHistogramEdges(t *testing.T) {
	var h lagHistogram
	if s := h.stats(); s.Tokens != 0 || s.P99 != 0 {
		t.Fatalf("empty histogram: %+v", s)
	}
	h.record(-time.Second, 3) // early writes count as zero lag
	h.record(time.Hour*24*365, 1)
	h.record(time.Millisecond, 0)
	s := h.stats()
	if s.Tokens != 4 || s.P50 != 500*time.Nanosecond || s.Max != time.Hour*24*365 {
		t.Errorf("stats %+v", s)
	}
	for i := range lagBuckets {
		lo := lagBucketValue(i)
		if lagBucket(uint64(lo)) != i {
			t.Fatalf("bucket %d midpoint %v maps to %d", i, lo, lagBucket(uint64(lo)))
		}
	}
}
