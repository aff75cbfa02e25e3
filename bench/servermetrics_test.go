package bench

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// A long run at low load can find the server idle at every scrape while
// its token counters show the work: the section is printed then, and the
// "none while requests were in flight" note only when nothing moved, with
// a reason that fits the run's length.
func TestServerMetricsSectionOnLightLoad(t *testing.T) {
	tests := []struct {
		name     string
		summary  ServerSummary
		duration time.Duration
		wantOut  string
		wantNote string
	}{
		{"idle gauges, busy counters", ServerSummary{Samples: 20, GenerationTokens: 30000, PromptTokens: 110000}, 100 * time.Second, "Server Metrics (scraped)", ""},
		{"busy gauges", ServerSummary{Samples: 3, MaxRunning: 4}, time.Second, "Server Metrics (scraped)", ""},
		{"short run, nothing seen", ServerSummary{Samples: 1}, time.Second, "", "shorter than --server-metrics-interval"},
		{"long run, nothing moved", ServerSummary{Samples: 20}, 100 * time.Second, "", "every scrape found the server idle"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errw bytes.Buffer
			if err := WriteServerMetrics(&out, &errw, &tt.summary, 5*time.Second, tt.duration); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(out.String(), tt.wantOut) || (tt.wantOut == "") != (out.Len() == 0) {
				t.Errorf("section %q, want %q", out.String(), tt.wantOut)
			}
			if !strings.Contains(errw.String(), tt.wantNote) || (tt.wantNote == "") != (errw.Len() == 0) {
				t.Errorf("note %q, want %q", errw.String(), tt.wantNote)
			}
		})
	}
}
