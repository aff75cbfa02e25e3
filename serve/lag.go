package serve

import (
	"math/bits"
	"sync/atomic"
	"time"
)

// lagHistogram is a lock-free log-linear histogram of non-negative
// durations at microsecond resolution: exact below 1,024 µs, then 64
// sub-buckets per power of two (≤1.6% relative error). Thousands of stream
// goroutines record into it concurrently, so it is a flat array of atomics
// rather than a mutex-guarded sample list.
type lagHistogram struct {
	// The count is the buckets' sum, not a counter of its own: every
	// shared counter is one more cache line the writing cores contend for.
	buckets [lagBuckets]atomic.Uint64
	sumNs   atomic.Int64
	maxNs   atomic.Int64
}

const (
	lagLinear    = 1024 // µs recorded exactly
	lagSubBits   = 6
	lagExponents = 32 // up to 2^(10+32) µs: far beyond any run
	lagBuckets   = lagLinear + lagExponents<<lagSubBits
)

func lagBucket(us uint64) int {
	if us < lagLinear {
		return int(us)
	}
	exp := bits.Len64(us) - 1 // ≥ 10
	sub := (us >> (exp - lagSubBits)) & (1<<lagSubBits - 1)
	i := lagLinear + (exp-10)<<lagSubBits + int(sub)
	return min(i, lagBuckets-1)
}

// lagBucketValue is the midpoint of bucket i in µs.
func lagBucketValue(i int) float64 {
	if i < lagLinear {
		return float64(i) + 0.5
	}
	exp := (i-lagLinear)>>lagSubBits + 10
	sub := uint64((i - lagLinear) & (1<<lagSubBits - 1))
	lo := uint64(1)<<exp | sub<<(exp-lagSubBits)
	width := uint64(1) << (exp - lagSubBits)
	return float64(lo) + float64(width)/2
}

// record adds n samples of d (n tokens written together).
func (h *lagHistogram) record(d time.Duration, n int) {
	if n <= 0 {
		return
	}
	if d < 0 {
		d = 0
	}
	h.buckets[lagBucket(uint64(d/time.Microsecond))].Add(uint64(n))
	h.sumNs.Add(int64(d) * int64(n))
	for {
		m := h.maxNs.Load()
		if int64(d) <= m || h.maxNs.CompareAndSwap(m, int64(d)) {
			break
		}
	}
}

// LagStats summarizes the write lag of streamed tokens: how long after the
// instant the engine model said a token was due it was written to the
// client's connection.
type LagStats struct {
	Tokens             int64
	Mean, P50, P90     time.Duration
	P99, P999, Max     time.Duration
	OverOneMillisecond float64 // fraction of tokens written more than 1 ms late
}

func (h *lagHistogram) stats() LagStats {
	var counts [lagBuckets]uint64
	var total uint64
	for i := range counts {
		counts[i] = h.buckets[i].Load()
		total += counts[i]
	}
	s := LagStats{Tokens: int64(total), Max: time.Duration(h.maxNs.Load())}
	if total == 0 {
		return s
	}
	s.Mean = time.Duration(h.sumNs.Load() / int64(total))
	quantile := func(q float64) time.Duration {
		rank := uint64(q * float64(total-1))
		var seen uint64
		for i, c := range counts {
			seen += c
			if seen > rank {
				return min(time.Duration(lagBucketValue(i)*float64(time.Microsecond)), s.Max)
			}
		}
		return s.Max
	}
	s.P50, s.P90, s.P99, s.P999 = quantile(0.50), quantile(0.90), quantile(0.99), quantile(0.999)
	var over uint64
	for i := lagBucket(1000) + 1; i < lagBuckets; i++ {
		over += counts[i]
	}
	s.OverOneMillisecond = float64(over) / float64(total)
	return s
}
