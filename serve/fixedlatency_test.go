package serve

import (
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/servebench/servebench/engine"
	names "github.com/servebench/servebench/metrics"
	"github.com/servebench/servebench/perf"
)

func fixedModel(t *testing.T, f FixedLatency) perf.StepModel {
	t.Helper()
	m, err := f.StepModel()
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// runFixed submits requests of outLen tokens at the given offsets to a
// server in a synctest bubble and returns what each stream saw and the
// /metrics page afterwards.
func runFixed(t *testing.T, cfg Config, arrivals []time.Duration, outLen int) ([]observed, string) {
	t.Helper()
	got := make([]observed, len(arrivals))
	var page string
	synctest.Test(t, func(t *testing.T) {
		streams := make([]*stream, len(arrivals))
		submit := func(s *Server, i int) {
			req := engine.Request{ID: uint64(i) + 1, Prompt: []int32{500, 501, 502, int32(600 + i)}, PromptLen: 4, MaxTokens: outLen, Arrival: s.now()}
			streams[i] = newStream(req, outLen, true, 0)
			if err := s.submit(streams[i]); err != nil {
				t.Fatal(err)
			}
		}
		// Requests due at 0 are queued before the loop starts, so its
		// first step sees them all (otherwise which of them the first
		// drain catches depends on goroutine order).
		s, stop := startLoop(t, cfg, func(s *Server) {
			for i, at := range arrivals {
				if at == 0 {
					submit(s, i)
				}
			}
		})
		for i, at := range arrivals {
			if at > 0 {
				time.Sleep(at - s.now())
				submit(s, i)
			}
		}
		done := make(chan struct{})
		for i, st := range streams {
			go func() { got[i] = consume(s, st, st.req.Arrival); done <- struct{}{} }()
		}
		for range streams {
			<-done
		}
		rec := httptest.NewRecorder()
		s.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
		page = rec.Body.String()
		stop()
	})
	return got, page
}

// TestFixedLatencyLowLoad: requests that never overlap see exactly the
// configured TTFT and ITL, and /metrics reports those achieved times.
func TestFixedLatencyLowLoad(t *testing.T) {
	for _, tc := range []struct {
		name      string
		ttft, itl time.Duration
	}{
		{"50ms/10ms", 50 * time.Millisecond, 10 * time.Millisecond},
		{"zero latency", 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig(t)
			cfg.StepModel = fixedModel(t, FixedLatency{TimeToFirstToken: tc.ttft, InterTokenLatency: tc.itl, Seed: 1})
			const outLen = 20
			got, page := runFixed(t, cfg, []time.Duration{0, time.Second, 2 * time.Second}, outLen)
			for i, o := range got {
				if o.ttft != tc.ttft || o.out != outLen {
					t.Errorf("request %d: TTFT %v, %d tokens; want %v, %d", i, o.ttft, o.out, tc.ttft, outLen)
				}
				for k, gap := range o.itl {
					if gap != tc.itl {
						t.Errorf("request %d gap %d: %v, want %v", i, k, gap, tc.itl)
						break
					}
				}
			}
			parser := expfmt.NewTextParser(model.LegacyValidation)
			fams, err := parser.TextToMetricFamilies(strings.NewReader(page))
			if err != nil {
				t.Fatal(err)
			}
			checked := 0
			for name, want := range map[string]time.Duration{
				names.VLLMTTFT: tc.ttft,
				names.VLLMTPOT: tc.itl,
				names.VLLMITL:  tc.itl,
			} {
				fam, ok := fams[name]
				if !ok {
					continue // a release has one of the ITL names
				}
				checked++
				h := fam.GetMetric()[0].GetHistogram()
				if h.GetSampleCount() == 0 || math.Abs(h.GetSampleSum()/float64(h.GetSampleCount())-want.Seconds()) > 1e-9 {
					t.Errorf("%s: mean %g s over %d samples, want %g", name, h.GetSampleSum()/float64(h.GetSampleCount()), h.GetSampleCount(), want.Seconds())
				}
			}
			if checked < 2 {
				t.Errorf("/metrics has %d of the TTFT and ITL histograms, want both", checked)
			}
		})
	}
}

// TestFixedLatencyQueuesAtMaxNumSeqs: fixed latencies replace the step
// model only, so the third and fourth of four simultaneous requests wait
// for a free slot when max-num-seqs is 2.
func TestFixedLatencyQueuesAtMaxNumSeqs(t *testing.T) {
	cfg := testConfig(t)
	cfg.Engine.MaxNumSeqs = 2
	const ttft, itl, outLen = 50 * time.Millisecond, 10 * time.Millisecond, 10
	cfg.StepModel = fixedModel(t, FixedLatency{TimeToFirstToken: ttft, InterTokenLatency: itl})
	got, _ := runFixed(t, cfg, []time.Duration{0, 0, 0, 0}, outLen)
	firstDone := ttft + (outLen-1)*itl
	for i, o := range got {
		want := ttft
		if i >= 2 {
			want = firstDone + ttft // admitted when the first two finish
		}
		if o.ttft != want {
			t.Errorf("request %d: TTFT %v, want %v", i, o.ttft, want)
		}
	}
}

// TestFixedLatencyJitter: with a std-dev the step times are normal around
// the configured mean (clamped to ±70% as llm-d-inference-sim does),
// scaled by the load factor, and reproducible from the seed.
func TestFixedLatencyJitter(t *testing.T) {
	const n = 40000
	for _, tc := range []struct {
		name        string
		shape       perf.StepShape
		mean, stdev time.Duration
		factor      float64
		wantMean    time.Duration
	}{
		{"decode", perf.StepShape{Decodes: 1}, 10 * time.Millisecond, 2 * time.Millisecond, 0, 10 * time.Millisecond},
		{"first token", perf.StepShape{Prefills: 1, PrefillsDone: 1, PrefillTokens: 5}, 100 * time.Millisecond, 30 * time.Millisecond, 0, 100 * time.Millisecond},
		// 11 running of max 11 at factor 3 → ×3.
		{"decode under full load", perf.StepShape{Decodes: 11}, 10 * time.Millisecond, 0, 3, 30 * time.Millisecond},
		// 6 running of 11 → 1 + 2·5/10 = ×2.
		{"decode under half load", perf.StepShape{Decodes: 6}, 10 * time.Millisecond, 0, 3, 20 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := FixedLatency{TimeFactorUnderLoad: tc.factor, MaxNumSeqs: 11, Seed: 42}
			if tc.shape.PrefillsDone > 0 {
				f.TimeToFirstToken, f.TimeToFirstTokenStdDev = tc.mean, tc.stdev
			} else {
				f.InterTokenLatency, f.InterTokenLatencyStdDev = tc.mean, tc.stdev
			}
			a, b := fixedModel(t, f), fixedModel(t, f)
			var sum, sq float64
			for range n {
				d := a.StepTime(tc.shape)
				if d != b.StepTime(tc.shape) {
					t.Fatal("two models with one seed drew different times")
				}
				if d < tc.wantMean*3/10 || d > tc.wantMean*17/10 {
					t.Fatalf("drew %v, outside [0.3, 1.7]×%v", d, tc.wantMean)
				}
				sum += float64(d)
				sq += float64(d) * float64(d)
			}
			mean := sum / n
			std := math.Sqrt(sq/n - mean*mean)
			// The clamp at ±3.33σ (30% share) trims the std by under 1%.
			if math.Abs(mean-float64(tc.wantMean)) > 0.01*float64(tc.wantMean) {
				t.Errorf("mean %v, want %v", time.Duration(mean), tc.wantMean)
			}
			if math.Abs(std-float64(tc.stdev)) > 0.03*float64(tc.stdev)+1 {
				t.Errorf("std %v, want %v", time.Duration(std), tc.stdev)
			}
		})
	}
}

func TestFixedLatencyValidate(t *testing.T) {
	for _, tc := range []struct {
		f    FixedLatency
		want string // "" → valid
	}{
		{FixedLatency{}, ""},
		{FixedLatency{TimeToFirstToken: 100 * time.Millisecond, TimeToFirstTokenStdDev: 30 * time.Millisecond, TimeFactorUnderLoad: 1}, ""},
		{FixedLatency{TimeToFirstToken: -time.Millisecond}, "--time-to-first-token -1ms is negative"},
		{FixedLatency{InterTokenLatency: 10 * time.Millisecond, InterTokenLatencyStdDev: 4 * time.Millisecond}, "--inter-token-latency-std-dev 4ms must be between 0 and 30%"},
		{FixedLatency{TimeFactorUnderLoad: 0.5}, "--time-factor-under-load 0.5 must be at least 1.0"},
		{FixedLatency{KVCacheTransferLatency: 50 * time.Millisecond, KVCacheTransferLatencyStdDev: 20 * time.Millisecond}, "--kv-cache-transfer-latency-std-dev 20ms must be between 0 and 30%"},
		{FixedLatency{KVCacheTransferLatency: -time.Millisecond}, "--kv-cache-transfer-latency -1ms is negative"},
	} {
		err := tc.f.Validate()
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%+v: error %v, want %q", tc.f, err, tc.want)
		}
	}
}
