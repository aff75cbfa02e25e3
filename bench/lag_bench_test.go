package bench

import (
	"context"
	"testing"
	"time"

	"github.com/servebench/servebench/metrics"
	"github.com/servebench/servebench/workload"
)

// instantDoer answers at once: the benchmark measures only the dispatcher.
type instantDoer struct{}

func (instantDoer) Do(_ context.Context, req *workload.Request, _ string, base time.Time, rec *metrics.Record) {
	rec.Start = time.Since(base)
	rec.TTFT, rec.Latency = time.Microsecond, time.Microsecond
	rec.OutputLen, rec.PromptLen, rec.Success = 1, req.PromptLen, true
}

// BenchmarkSendLag1000 releases 3,000 requests at 1,000 req/s (Poisson and
// constant) and reports the pacer's send lag against the schedule.
func BenchmarkSendLag1000(b *testing.B) {
	for _, tc := range []struct {
		name       string
		burstiness float64
	}{{"poisson", 1}, {"constant", 1e9}} {
		b.Run(tc.name, func(b *testing.B) {
			reqs := make([]workload.Request, 3000)
			for i := range reqs {
				reqs[i] = workload.Request{Index: i, PromptLen: 1, MaxTokens: 1}
			}
			offsets, err := workload.Schedule(len(reqs), workload.Arrivals{Rate: 1000, Burstiness: tc.burstiness, Seed: 1})
			if err != nil {
				b.Fatal(err)
			}
			workload.Assign(reqs, offsets)
			var p50, p99, worst float64
			for b.Loop() {
				res, err := Run(b.Context(), Config{Client: instantDoer{}, Requests: reqs})
				if err != nil {
					b.Fatal(err)
				}
				l := res.Summary.SendLag
				v50, _ := l.At(50)
				v99, _ := l.At(99)
				p50, p99, worst = max(p50, v50), max(p99, v99), max(worst, l.Max)
			}
			b.ReportMetric(p50*1000, "lag-p50-µs")
			b.ReportMetric(p99*1000, "lag-p99-µs")
			b.ReportMetric(worst*1000, "lag-max-µs")
		})
	}
}
