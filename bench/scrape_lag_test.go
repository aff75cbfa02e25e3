package bench

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	names "github.com/servebench/servebench/metrics"
)

// lagPage is a page with servebench serve's lag metrics: counts[i] steps
// in the buckets ≤1 ms, 1–5 ms and 5–10 ms.
func lagPage(counts [3]int, behind float64) string {
	total := counts[0] + counts[1] + counts[2]
	return fmt.Sprintf(`# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{model_name="m"} 1
# TYPE %[1]s histogram
%[1]s_bucket{model_name="m",le="0.001"} %[2]d
%[1]s_bucket{model_name="m",le="0.005"} %[3]d
%[1]s_bucket{model_name="m",le="0.01"} %[4]d
%[1]s_bucket{model_name="m",le="+Inf"} %[4]d
%[1]s_sum{model_name="m"} 0
%[1]s_count{model_name="m"} %[4]d
# TYPE %[5]s counter
%[5]s{model_name="m"} %[6]g
`, names.StepLoopLag, counts[0], counts[0]+counts[1], total, names.StepLoopBehind, behind)
}

// TestSummarizeEmulatorLag checks the lag taken over a run from two
// scrapes: only the steps and seconds behind between them count, p99 is
// interpolated as histogram_quantile does, and the warning follows the
// 5 ms / 1% limits.
func TestSummarizeEmulatorLag(t *testing.T) {
	for _, tc := range []struct {
		name          string
		before, after [3]int
		behindBefore  float64
		behindAfter   float64
		wantP99       float64
		wantBehindPct float64
		warn          bool
	}{
		// 1000 new steps all ≤1 ms: p99 inside the first bucket.
		{"on time", [3]int{500, 0, 0}, [3]int{1500, 0, 0}, 0, 0, 0.00099, 0, false},
		// 1000 new steps, 20 of them 5–10 ms: 2% over the limit.
		{"late steps", [3]int{0, 0, 0}, [3]int{900, 80, 20}, 0, 0, 0.0075, 0, true},
		// on time at p99, but 0.5 s behind over a 10 s run (5%).
		{"behind", [3]int{0, 0, 0}, [3]int{1000, 0, 0}, 1, 1.5, 0.00099, 5, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			first, err := parseMetrics(strings.NewReader(lagPage(tc.before, tc.behindBefore)))
			if err != nil {
				t.Fatal(err)
			}
			last, err := parseMetrics(strings.NewReader(lagPage(tc.after, tc.behindAfter)))
			if err != nil {
				t.Fatal(err)
			}
			a, b := sampleFrom(first), sampleFrom(last)
			a.At, b.At = 0, 10*time.Second
			lag := SummarizeServer([]ServerSample{a, b}).EmulatorLag
			if lag == nil {
				t.Fatal("no emulator lag in the summary")
			}
			if lag.Steps != 1000 || math.Abs(lag.P99Seconds-tc.wantP99) > 1e-9 || math.Abs(100*lag.BehindShare-tc.wantBehindPct) > 1e-9 {
				t.Errorf("lag %+v, want 1000 steps, p99 %g s, %g%% behind", lag, tc.wantP99, tc.wantBehindPct)
			}
			if warning := lag.Warning(); (warning != "") != tc.warn {
				t.Errorf("warning %q, want one: %v", warning, tc.warn)
			}
			if rows := lag.Rows(); len(rows) != 2 || !strings.Contains(rows[0][0], "lag p99") {
				t.Errorf("rows %q", rows)
			}
		})
	}
	// A real vLLM has no lag metrics: no lag in the summary.
	fams, err := parseMetrics(strings.NewReader(vllmV1Page))
	if err != nil {
		t.Fatal(err)
	}
	if lag := SummarizeServer([]ServerSample{sampleFrom(fams)}).EmulatorLag; lag != nil {
		t.Errorf("vLLM page: lag %+v, want none", lag)
	}
}
