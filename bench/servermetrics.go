package bench

import (
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/servebench/servebench/report"
)

func serverMetricsJSON(res *Result) map[string]any {
	samples := make([]map[string]any, 0, len(res.ServerSamples))
	var prevHits, prevQueries float64
	for i, s := range res.ServerSamples {
		hitRate := 0.0
		if i > 0 && s.PrefixQueries > prevQueries {
			hitRate = (s.PrefixHits - prevHits) / (s.PrefixQueries - prevQueries)
		}
		prevHits, prevQueries = s.PrefixHits, s.PrefixQueries
		samples = append(samples, map[string]any{
			"t": s.At.Seconds(), "running": s.Running, "waiting": s.Waiting, "swapped": s.Swapped,
			"kv_cache_usage": s.KVCacheUsage, "prefix_hit_rate": hitRate,
		})
	}
	return map[string]any{"summary": res.Server, "samples": samples}
}

// WriteServerMetrics prints the scraped server section, or says why there
// is none. Gauges are point samples: on a lightly loaded server whose
// requests are much shorter than the scrape interval every sample can find
// it idle even on a long run, while the token counters still show the work
// done; so the section is printed whenever either shows load.
func WriteServerMetrics(out, errw io.Writer, s *ServerSummary, interval, runDuration time.Duration) error {
	if s.EmulatorLag != nil && s.EmulatorLag.Warning() != "" {
		fmt.Fprintln(errw, s.EmulatorLag.Warning())
	}
	if s.MaxRunning > 0 || s.MaxWaiting > 0 || s.MaxKVCacheUsage > 0 || s.GenerationTokens > 0 || s.PromptTokens > 0 {
		return writeServerSection(out, s)
	}
	why := fmt.Sprintf("the run was shorter than --server-metrics-interval %s", interval)
	if runDuration >= interval {
		why = fmt.Sprintf("every scrape found the server idle and its token counters did not move; lower --server-metrics-interval %s to sample short requests", interval)
	}
	fmt.Fprintf(errw, "Server metrics: %d scrapes, none while requests were in flight (%s).\n", s.Samples, why)
	return nil
}

func writeServerSection(w io.Writer, s *ServerSummary) error {
	rows := [][2]string{
		{"Samples:", strconv.Itoa(s.Samples)},
		{"Running requests mean / max:", fmt.Sprintf("%.2f / %.0f", s.MeanRunning, s.MaxRunning)},
		{"Waiting requests mean / max:", fmt.Sprintf("%.2f / %.0f", s.MeanWaiting, s.MaxWaiting)},
		{"KV cache usage mean / max (%):", fmt.Sprintf("%.1f / %.1f", 100*s.MeanKVCacheUsage, 100*s.MaxKVCacheUsage)},
		{"Prefix cache hit rate (%):", fmt.Sprintf("%.1f", 100*s.PrefixCacheHitRate)},
		{"Preemptions:", fmt.Sprintf("%.0f", s.Preemptions)},
	}
	if s.EmulatorLag != nil {
		rows = append(rows, s.EmulatorLag.Rows()...)
	}
	return report.WriteSection(w, "Server Metrics (scraped)", rows)
}
