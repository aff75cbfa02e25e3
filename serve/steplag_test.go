package serve

import (
	"bytes"
	"context"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/servebench/servebench/engine"
	names "github.com/servebench/servebench/metrics"
)

// TestStepLoopLag runs the step loop on a fake clock, once on an idle host
// and once on a host that stalls every step by 6 ms (the model's steps
// last 2 ms), and checks what the emulator reports about falling behind:
// the per-step lag histogram and the seconds behind on /metrics, the p99
// on the stats line, and a warning only for the slow host.
func TestStepLoopLag(t *testing.T) {
	for _, tc := range []struct {
		name  string
		stall time.Duration
		slow  bool
	}{
		{"idle host", 0, false},
		{"slow host", 6 * time.Millisecond, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig(t)
			cfg.StatsInterval = time.Second
			// Read only after the bubble has ended, when no goroutine writes.
			var logs bytes.Buffer
			cfg.Logger = slog.New(NewLogHandler(&logs, slog.LevelInfo))
			var page string
			var lag LagStats
			var snap Snapshot
			synctest.Test(t, func(t *testing.T) {
				s, stop := startLoop(t, cfg, func(s *Server) {
					if tc.stall > 0 {
						s.slowHost = func() { time.Sleep(tc.stall) }
					}
				})
				st := newStream(engine.Request{ID: 1, Prompt: []int32{500, 501, 502}, PromptLen: 3, MaxTokens: 300, Arrival: s.now()}, 300, true, 0)
				if err := s.submit(st); err != nil {
					t.Fatal(err)
				}
				consume(s, st, st.req.Arrival)
				time.Sleep(2 * time.Second) // one more stats line
				rec := httptest.NewRecorder()
				s.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
				page = rec.Body.String()
				lag = s.StepLag()
				var err error
				if snap, err = s.Snapshot(context.Background()); err != nil {
					t.Fatal(err)
				}
				stop()
			})
			parser := expfmt.NewTextParser(model.LegacyValidation)
			fams, err := parser.TextToMetricFamilies(strings.NewReader(page))
			if err != nil {
				t.Fatal(err)
			}
			hist := fams[names.StepLoopLag].GetMetric()[0].GetHistogram()
			behind := fams[names.StepLoopBehind].GetMetric()[0].GetCounter().GetValue()
			if int64(hist.GetSampleCount()) != lag.Tokens || lag.Tokens < 300 {
				t.Errorf("/metrics counts %d steps, StepLag %d; want the same, at least 300", hist.GetSampleCount(), lag.Tokens)
			}
			if math.Abs(behind-snap.Behind.Seconds()) > 1e-6 {
				t.Errorf("/metrics says %g s behind, Snapshot %v", behind, snap.Behind)
			}
			warned := strings.Contains(logs.String(), "WARNING") && strings.Contains(logs.String(), "fell behind the engine model")
			line := regexp.MustCompile(`step_lag_p50_ms=([0-9.]+) step_lag_p99_ms=([0-9.]+) step_lag_max_ms=([0-9.]+)`).FindStringSubmatch(logs.String())
			var p99 []string
			if line != nil {
				p99 = line[1:3]
			}
			switch {
			case line == nil:
				t.Errorf("no step_lag_p50_ms, step_lag_p99_ms and step_lag_max_ms on the stats line:\n%s", logs.String())
			case tc.slow && (line[1] == "0.00" || line[3] == "0.00"):
				t.Errorf("slow host: stats line step lag p50 %s ms, max %s ms; want them to show the stall", line[1], line[3])
			case warned != tc.slow:
				t.Errorf("warned %v, want %v:\n%s", warned, tc.slow, logs.String())
			case !tc.slow && (lag.P99 != 0 || behind != 0 || hist.GetSampleSum() != 0):
				t.Errorf("idle host: lag p99 %v, %g s behind, sum %g; want all zero", lag.P99, behind, hist.GetSampleSum())
			case tc.slow && (lag.P99 < tc.stall || behind <= 0 || p99[1] == "0.00"):
				t.Errorf("slow host: lag p99 %v (stall %v), %g s behind, stats p99 %s ms; want them to show the stall", lag.P99, tc.stall, behind, p99[1])
			}
		})
	}
}
