package sweep

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
)

func TestParseSLA(t *testing.T) {
	tests := []struct {
		in, want, err string
	}{
		{in: "p99_ttft_ms<=500,p99_tpot_ms<=50", want: "p99_ttft_ms<=500,p99_tpot_ms<=50"},
		{in: " p99_e2el_ms < 800 , request_throughput>=4.5 ", want: "p99_e2el_ms<800,request_throughput>=4.5"},
		{in: "request_goodput:>2", want: "request_goodput:>2"},
		{in: "", err: "no terms"},
		{in: "p99_ttft_ms=500", err: "needs KEY<=N"},
		{in: "<=500", err: "needs KEY<=N"},
		{in: "p99_ttft_ms<=fast", err: "not a finite number"},
		{in: "p99_ttft_ms<=inf", err: "not a finite number"},
		{in: "p99 ttft<=5", err: "not a result key"},
	}
	for _, tt := range tests {
		sla, err := ParseSLA(tt.in)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("ParseSLA(%q) err = %v, want %q", tt.in, err, tt.err)
			}
			continue
		}
		if err != nil || sla.String() != tt.want {
			t.Errorf("ParseSLA(%q) = %q, %v; want %q", tt.in, sla, err, tt.want)
		}
	}
}

func TestEvaluateMargins(t *testing.T) {
	sla, err := ParseSLA("p99_ttft_ms<=500,request_goodput>=2,p99_tpot_ms<50")
	if err != nil {
		t.Fatal(err)
	}
	// vLLM 0.8 spells the goodput key with a trailing colon.
	margins, err := sla.Evaluate(map[string]any{"p99_ttft_ms": json.Number("400"), "request_goodput:": 1.5, "p99_tpot_ms": "50"})
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		value, margin float64
		met           bool
	}{{400, 0.2, true}, {1.5, -0.25, false}, {50, 0, false}}
	for i, w := range want {
		m := margins[i]
		if m.Value != w.value || math.Abs(m.Margin-w.margin) > 1e-12 || m.Met != w.met {
			t.Errorf("term %s: %+v, want %+v", m.Term, m, w)
		}
	}
	if allMet(margins) {
		t.Error("allMet with violated terms")
	}
	if _, err := sla.Evaluate(map[string]any{"p99_ttft_ms": 1}); err == nil || !strings.Contains(err.Error(), `"request_goodput"`) {
		t.Errorf("missing key: %v", err)
	}
}

// queueModel is a deterministic stand-in for a server of capacity mu
// req/s: p99 TTFT grows like an M/M/1 queue's, k·λ/(μ−λ) over a base, and
// an all-at-once run saturates at 0.98·μ with a TTFT far past any SLA.
type queueModel struct {
	mu, base, k float64
	runs        atomic.Int32
}

func (q *queueModel) metricsAt(rate float64) map[string]any {
	ttft := q.base + q.k*50
	throughput := 0.98 * q.mu
	if rate < q.mu {
		ttft = q.base + q.k*rate/(q.mu-rate)
		throughput = rate
	}
	m := map[string]any{
		"request_throughput": throughput, "p99_ttft_ms": ttft,
		"p99_tpot_ms": 10 + 20*math.Min(rate/q.mu, 1), "completed": 200,
	}
	if math.IsInf(rate, 1) {
		m["request_rate"] = "inf"
	} else {
		m["request_rate"] = rate
	}
	return m
}

func (q *queueModel) runner() argsFunc {
	return func(ctx context.Context, args []string, path string) (map[string]any, error) {
		q.runs.Add(1)
		v, _ := flagValue(args, "request-rate")
		rate, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return nil, err
		}
		return q.metricsAt(rate), nil
	}
}

// boundary is the exact highest rate with p99 TTFT <= limit.
func (q *queueModel) boundary(limit float64) float64 {
	a := limit - q.base
	return a * q.mu / (q.k + a)
}

// stepDown replays vLLM auto_tune: an inf probe, then 1 req/s steps down
// from int(throughput)+1 until the SLA holds. It returns the runs needed.
func (q *queueModel) stepDown(sla SLA) int {
	probe := q.metricsAt(math.Inf(1))
	runs := 1
	margins, _ := sla.Evaluate(probe)
	if allMet(margins) {
		return runs
	}
	for rate := math.Floor(probe["request_throughput"].(float64)) + 1; rate > 0; rate-- {
		runs++
		margins, _ := sla.Evaluate(q.metricsAt(rate))
		if allMet(margins) {
			return runs
		}
	}
	return runs
}

func TestSearchFindsTheBoundaryInFarFewerRunsThanAStepDown(t *testing.T) {
	tests := []struct {
		name        string
		mu, base, k float64
		sla         string
	}{
		{"small server", 10, 40, 60, "p99_ttft_ms<=500"},
		{"mid server, two terms", 40, 50, 100, "p99_ttft_ms<=500,p99_tpot_ms<=50"},
		{"large server", 100, 50, 200, "p99_ttft_ms<=600"},
		{"large server, tight SLA", 100, 50, 200, "p99_ttft_ms<=120"},
		{"large server, TPOT bound", 120, 30, 100, "p99_ttft_ms<=2000,p99_tpot_ms<=20"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sla, err := ParseSLA(tt.sla)
			if err != nil {
				t.Fatal(err)
			}
			model := &queueModel{mu: tt.mu, base: tt.base, k: tt.k}
			// Bracket to 1 req/s, the step-down's own resolution, so the
			// run counts compare like with like.
			res, _, err := Search(t.Context(), SearchConfig{Dir: t.TempDir(), SLA: sla, Run: specRunner(model.runner()), AbsTolerance: 1, Tolerance: 1e-9})
			if err != nil {
				t.Fatal(err)
			}
			if res.Best == nil || !res.Best.Met {
				t.Fatalf("no boundary found: %+v", res)
			}
			truth := model.boundary(sla[0].Limit)
			if len(sla) > 1 && sla[1].Key == "p99_tpot_ms" {
				truth = math.Min(truth, (sla[1].Limit-10)/20*tt.mu)
			}
			tol := 1.0
			if res.Best.Value > truth || truth-res.Best.Value > tol {
				t.Errorf("best %v, true boundary %v (tolerance %v)", res.Best.Value, truth, tol)
			}
			stepDown := model.stepDown(sla)
			if int(model.runs.Load()) != res.Runs || len(res.Trials) != res.Runs {
				t.Errorf("runner called %d times, result says %d", model.runs.Load(), res.Runs)
			}
			// Where the boundary sits a few req/s under the throughput a
			// step-down is short too; elsewhere it is several times longer.
			if res.Runs > 8 || res.Runs > stepDown+2 || stepDown >= 20 && res.Runs*3 > stepDown {
				t.Errorf("search took %d runs, step-down %d", res.Runs, stepDown)
			}
			if res.StepDownRuns > stepDown || res.StepDownRuns < 2 {
				t.Errorf("StepDownRuns estimate %d, replayed step-down took %d", res.StepDownRuns, stepDown)
			}
			t.Logf("boundary %.2f req/s (true %.2f): %d runs; 1 req/s step-down: %d runs (estimated %d)", res.Best.Value, truth, res.Runs, stepDown, res.StepDownRuns)
		})
	}
}

func TestSearchOverConcurrency(t *testing.T) {
	var runs atomic.Int32
	// p99 TTFT rises linearly with concurrency: 50 + 10·c, so c ≤ 45.
	runner := func(ctx context.Context, args []string, path string) (map[string]any, error) {
		runs.Add(1)
		v, _ := flagValue(args, "max-concurrency")
		c, err := strconv.Atoi(v)
		if err != nil {
			t.Errorf("concurrency %q is not an integer", v)
			return nil, err
		}
		return map[string]any{"p99_ttft_ms": 50 + 10*float64(c)}, nil
	}
	sla, _ := ParseSLA("p99_ttft_ms<=500")
	res, _, err := Search(t.Context(), SearchConfig{Dir: t.TempDir(), SLA: sla, Variable: VariableMaxConcurrency, Run: specRunner(runner)})
	if err != nil {
		t.Fatal(err)
	}
	if res.Best == nil || res.Best.Value != 45 || res.Upper != 46 {
		t.Fatalf("best %+v upper %v, want 45 and 46", res.Best, res.Upper)
	}
	if res.Runs > 11 {
		t.Errorf("%d runs", res.Runs)
	}
	t.Logf("concurrency 45 found in %d runs: %s", res.Runs, res.Stopped)
}

func TestSearchEdgeCases(t *testing.T) {
	model := &queueModel{mu: 20, base: 50, k: 100}
	tests := []struct {
		name        string
		sla         string
		min, max    float64
		wantBest    string
		wantStopped string
		maxRuns     int
	}{
		{name: "met even all at once", sla: "p99_ttft_ms<=100000", wantBest: "inf", wantStopped: "every request sent at once"},
		{name: "never met", sla: "p99_ttft_ms<=10", wantStopped: "fails even at"},
		{name: "met at the given max", sla: "p99_ttft_ms<=500", max: 5, wantBest: "5", wantStopped: "raise --sla-max"},
		{name: "fails at the given min", sla: "p99_ttft_ms<=60", min: 10, max: 19, wantStopped: "fails even at request-rate 10"},
		{name: "bounded by min and max", sla: "p99_ttft_ms<=500", min: 2, max: 19, wantBest: "16.", wantStopped: "bracketed"},
		{name: "run budget", sla: "p99_ttft_ms<=500", maxRuns: 3, wantStopped: "run budget of 3 spent"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sla, err := ParseSLA(tt.sla)
			if err != nil {
				t.Fatal(err)
			}
			res, _, err := Search(t.Context(), SearchConfig{Dir: t.TempDir(), SLA: sla, Min: tt.min, Max: tt.max, MaxRuns: tt.maxRuns, Run: specRunner(model.runner())})
			if err != nil {
				t.Fatal(err)
			}
			best := ""
			if res.Best != nil {
				best = res.Best.Text
			}
			if tt.wantBest != "" && !strings.HasPrefix(best, tt.wantBest) || tt.wantBest == "" && tt.maxRuns == 0 && best != "" {
				t.Errorf("best %q, want %q", best, tt.wantBest)
			}
			if !strings.Contains(res.Stopped, tt.wantStopped) {
				t.Errorf("stopped: %q, want %q", res.Stopped, tt.wantStopped)
			}
			if tt.maxRuns > 0 && res.Runs != tt.maxRuns {
				t.Errorf("%d runs with a budget of %d", res.Runs, tt.maxRuns)
			}
		})
	}
}

// TestSearchStopsAtTheProbeThroughputWhenItMeets covers a short run that
// keeps its latency even at the saturated rate (as a simulation of a few
// hundred prompts does): two runs, like the step-down's best case.
func TestSearchStopsAtTheProbeThroughputWhenItMeets(t *testing.T) {
	runs := 0
	runner := func(ctx context.Context, args []string, path string) (map[string]any, error) {
		runs++
		if v, _ := flagValue(args, "request-rate"); v == "inf" {
			return map[string]any{"p99_ttft_ms": 7000.0, "request_throughput": 55.15}, nil
		}
		return map[string]any{"p99_ttft_ms": 160.0, "request_throughput": 48.0}, nil
	}
	sla, _ := ParseSLA("p99_ttft_ms<=500")
	res, _, err := Search(t.Context(), SearchConfig{Dir: t.TempDir(), SLA: sla, Run: specRunner(runner)})
	if err != nil {
		t.Fatal(err)
	}
	if res.Best == nil || res.Best.Text != "55.15" || runs != 2 || !strings.Contains(res.Stopped, "throughput the server sustained") {
		t.Errorf("best %+v after %d runs: %s", res.Best, runs, res.Stopped)
	}
}

func TestSearchErrors(t *testing.T) {
	model := &queueModel{mu: 20, base: 50, k: 100}
	sla, _ := ParseSLA("p99_ttft_ms<=500")
	tests := []struct {
		name string
		cfg  SearchConfig
		want string
	}{
		{"variable fixed in args", SearchConfig{Base: baseSpec(t, []string{"--request-rate=4"})}, "remove it from the benchmark flags"},
		{"unknown variable", SearchConfig{Variable: "num-prompts"}, "use request-rate or max-concurrency"},
		{"min above max", SearchConfig{Min: 5, Max: 2}, "need 0 <= min < max"},
		{"SLA key missing", SearchConfig{SLA: SLA{{Key: "p99_e2el_ms", Op: "<=", Limit: 1}}}, `no numeric "p99_e2el_ms"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := tt.cfg
			cfg.Dir, cfg.Run = t.TempDir(), specRunner(model.runner())
			if cfg.SLA == nil {
				cfg.SLA = sla
			}
			if _, _, err := Search(t.Context(), cfg); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want %q", err, tt.want)
			}
		})
	}
	noThroughput := func(ctx context.Context, args []string, path string) (map[string]any, error) {
		return map[string]any{"p99_ttft_ms": 1e6}, nil
	}
	if _, _, err := Search(t.Context(), SearchConfig{Dir: t.TempDir(), SLA: sla, Run: specRunner(noThroughput)}); err == nil || !strings.Contains(err.Error(), "pass sla_max") {
		t.Errorf("probe without throughput: %v", err)
	}
}

func TestInterruptedSearchResumesWithoutRepeatingRuns(t *testing.T) {
	sla, _ := ParseSLA("p99_ttft_ms<=500,p99_tpot_ms<=50")
	reference := &queueModel{mu: 40, base: 50, k: 100}
	want, _, err := Search(t.Context(), SearchConfig{Dir: t.TempDir(), SLA: sla, Run: specRunner(reference.runner())})
	if err != nil {
		t.Fatal(err)
	}

	dir := t.TempDir()
	model := &queueModel{mu: 40, base: 50, k: 100}
	ctx, cancel := context.WithCancel(t.Context())
	inner := model.runner()
	interrupting := func(ctx context.Context, args []string, path string) (map[string]any, error) {
		if model.runs.Load() == 3 {
			cancel()
			return nil, ctx.Err()
		}
		return inner(ctx, args, path)
	}
	cfg := SearchConfig{Dir: dir, SLA: sla, Run: specRunner(interrupting)}
	if _, _, err := Search(ctx, cfg); err == nil || !strings.Contains(err.Error(), "rerun with resume") {
		t.Fatalf("interrupted search: %v", err)
	}
	if _, _, err := Search(t.Context(), cfg); err == nil || !strings.Contains(err.Error(), "pass resume") {
		t.Fatalf("restart without --resume: %v", err)
	}
	model.runs.Store(0)
	cfg.Resume, cfg.Run = true, specRunner(inner)
	got, m, err := Search(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if got.Best.Text != want.Best.Text || got.Runs != want.Runs {
		t.Errorf("resumed search found %s in %d runs, uninterrupted %s in %d", got.Best.Text, got.Runs, want.Best.Text, want.Runs)
	}
	if int(model.runs.Load()) != want.Runs-3 {
		t.Errorf("resume ran %d new runs, want %d", model.runs.Load(), want.Runs-3)
	}
	reused := 0
	for _, tr := range got.Trials {
		if tr.Reused {
			reused++
		}
	}
	if reused != 3 || len(m.Points) != want.Runs {
		t.Errorf("%d reused trials, %d points", reused, len(m.Points))
	}
	onDisk, err := ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	if onDisk.Search == nil || onDisk.Search.Best == nil || onDisk.Search.Best.Text != want.Best.Text {
		t.Errorf("manifest search record: %+v", onDisk.Search)
	}
	cfg.SLA, _ = ParseSLA("p99_ttft_ms<=100")
	if _, _, err := Search(t.Context(), cfg); err == nil || !strings.Contains(err.Error(), "cannot resume") {
		t.Errorf("resume with another SLA: %v", err)
	}
}

func TestSearchManifestIsReadableJSON(t *testing.T) {
	dir := t.TempDir()
	model := &queueModel{mu: 10, base: 40, k: 60}
	sla, _ := ParseSLA("p99_ttft_ms<=500")
	if _, _, err := Search(t.Context(), SearchConfig{Dir: dir, SLA: sla, Run: specRunner(model.runner())}); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(dir, ManifestName))
	if err != nil {
		t.Fatal(err)
	}
	var raw map[string]any
	if err := json.Unmarshal(data, &raw); err != nil {
		t.Fatal(err)
	}
	search := raw["sla_search"].(map[string]any)
	if search["best"].(map[string]any)["value"] == nil || search["trials"].([]any)[0].(map[string]any)["value"] != "inf" {
		t.Errorf("sla_search record: %v", search)
	}
}

func TestStepDownRuns(t *testing.T) {
	tests := []struct {
		throughput, upper float64
		want              int
	}{
		{39.2, 33.3, 9},  // probe + 40..33: 33 may meet as far as the search knows
		{39.2, 32.6, 10}, // probe + 40..32
		{39.2, 33.0, 10}, // 33 itself failed
		{55.15, 0, 2},    // nothing failed: 56 might already meet
		{10.5, 11.2, 2},
	}
	for _, tt := range tests {
		if got := stepDownRuns(tt.throughput, tt.upper); got != tt.want {
			t.Errorf("stepDownRuns(%v, %v) = %d, want %d", tt.throughput, tt.upper, got, tt.want)
		}
	}
}
