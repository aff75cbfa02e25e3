package serve_test

import (
	"bufio"
	"context"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/servebench/servebench/bench"
	"github.com/servebench/servebench/client"
	"github.com/servebench/servebench/engine"
	"github.com/servebench/servebench/metrics"
	"github.com/servebench/servebench/perf"
	"github.com/servebench/servebench/serve"
	"github.com/servebench/servebench/sim"
	"github.com/servebench/servebench/tokenizer"
	"github.com/servebench/servebench/workload"
)

// deployment is Qwen2-7B on one H100 with vLLM V1's defaults (4K context),
// timed by the roofline model: ~7 ms decode steps, as on real hardware.
func deployment(tb testing.TB) (engine.Config, perf.StepModel) {
	tb.Helper()
	m, err := perf.LookupModel("Qwen2-7B")
	if err != nil {
		tb.Fatal(err)
	}
	g, err := perf.LookupGPU("H100")
	if err != nil {
		tb.Fatal(err)
	}
	d := perf.DefaultDeployment(m, g)
	d.SwapSpaceGiB, d.MaxModelLen = 0, 4096
	r, err := d.Resolve()
	if err != nil {
		tb.Fatal(err)
	}
	c, err := r.Capacity()
	if err != nil {
		tb.Fatal(err)
	}
	roof, err := perf.NewRoofline(r)
	if err != nil {
		tb.Fatal(err)
	}
	return engine.Config{Version: engine.V1, BlockSize: r.BlockSize, NumGPUBlocks: c.GPUBlocks, MaxNumSeqs: r.MaxNumSeqs,
		MaxNumBatchedTokens: r.MaxNumBatchedTokens, MaxModelLen: r.MaxModelLen, EnableChunkedPrefill: true, EnablePrefixCaching: true}, roof
}

// poissonWorkload: token-ID prompts (exact lengths on both sides), seeded
// Poisson arrivals.
func poissonWorkload(n int, rate float64) []workload.Request {
	rng := rand.New(rand.NewPCG(21, 22))
	reqs := make([]workload.Request, n)
	var at float64
	for i := range reqs {
		at += rng.ExpFloat64() / rate
		ids := make([]int32, 100+rng.IntN(400))
		for j := range ids {
			ids[j] = 1000 + rng.Int32N(50000)
		}
		reqs[i] = workload.Request{Index: i, PromptIDs: ids, PromptLen: len(ids), MaxTokens: 20 + rng.IntN(80),
			Arrival: time.Duration(at * float64(time.Second))}
	}
	return reqs
}

type comparison struct {
	bench, sim metrics.Summary
	// serverTTFT is the mean TTFT the server itself recorded (first token
	// due on the engine clock minus arrival), in ms.
	serverTTFT float64
}

// serverMeanTTFT reads vllm:time_to_first_token_seconds from /metrics.
func serverMeanTTFT(tb testing.TB, base string) float64 {
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	var sum, count float64
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if v, ok := strings.CutPrefix(line, "vllm:time_to_first_token_seconds_sum{"); ok {
			sum, _ = strconv.ParseFloat(v[strings.LastIndexByte(v, ' ')+1:], 64)
		}
		if v, ok := strings.CutPrefix(line, "vllm:time_to_first_token_seconds_count{"); ok {
			count, _ = strconv.ParseFloat(v[strings.LastIndexByte(v, ' ')+1:], 64)
		}
	}
	if count == 0 {
		tb.Fatal("no TTFT samples on /metrics")
	}
	return 1000 * sum / count
}

// benchVsSim runs the workload through bench against an embedded serve, and
// through sim, with the same engine and step model.
func benchVsSim(tb testing.TB, reqs []workload.Request) comparison {
	tb.Helper()
	ec, model := deployment(tb)
	tok, err := tokenizer.New(context.Background(), serve.DefaultTokenizer, tokenizer.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	ctx := context.Background()
	srv, err := serve.Start(ctx, serve.Config{Engine: ec, StepModel: model, Model: "Qwen/Qwen2-7B", Tokenizer: tok}, "")
	if err != nil {
		tb.Fatal(err)
	}
	defer func() {
		if err := srv.Close(); err != nil {
			tb.Error(err)
		}
	}()
	c, err := client.New(client.Config{BaseURL: srv.URL(), Model: "Qwen/Qwen2-7B", IgnoreEOS: true, ContinuousUsage: true})
	if err != nil {
		tb.Fatal(err)
	}
	defer c.CloseIdleConnections()
	res, err := bench.Run(ctx, bench.Config{Client: c, Requests: reqs, Tokenizer: tok, KeepRecords: true})
	if err != nil {
		tb.Fatal(err)
	}
	http.DefaultClient.CloseIdleConnections()
	for _, r := range res.Records {
		w := reqs[r.Index]
		if !r.Success || r.PromptLen != w.PromptLen || r.OutputLen != w.MaxTokens || r.OutputLenSource != "usage" {
			tb.Fatalf("request %d: success %v %q, prompt %d/%d, output %d/%d (%s)", r.Index, r.Success, r.Error,
				r.PromptLen, w.PromptLen, r.OutputLen, w.MaxTokens, r.OutputLenSource)
		}
	}
	acc := metrics.NewAccumulator(metrics.Options{})
	simRes, err := sim.Run(ctx, sim.Config{Engine: ec, Model: model}, reqs, func(r *metrics.Record) error {
		acc.Add(r)
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
	return comparison{bench: res.Summary, sim: acc.Summary(simRes.Duration), serverTTFT: serverMeanTTFT(tb, srv.URL())}
}

// TestBenchAgainstServe drives the emulator with servebench's own benchmark
// client end to end: every request succeeds with exactly the prompt and
// output lengths asked for (from usage), as sim predicts. Timing agreement
// is not asserted here (a wall-clock test would be flaky on a loaded
// machine): TestDriverMatchesSim proves it exactly on a fake clock, and
// BenchmarkBenchVsSim measures it on the real one.
func TestBenchAgainstServe(t *testing.T) {
	cmp := benchVsSim(t, poissonWorkload(60, 30))
	if cmp.bench.Completed != 60 || cmp.bench.Failed != 0 || cmp.sim.Completed != 60 {
		t.Fatalf("bench completed %d failed %d (%v); sim completed %d", cmp.bench.Completed, cmp.bench.Failed, cmp.bench.Errors, cmp.sim.Completed)
	}
	if cmp.bench.TotalOutput != cmp.sim.TotalOutput || cmp.bench.TotalInput != cmp.sim.TotalInput {
		t.Errorf("tokens: bench %d in / %d out, sim %d / %d", cmp.bench.TotalInput, cmp.bench.TotalOutput, cmp.sim.TotalInput, cmp.sim.TotalOutput)
	}
}

// BenchmarkBenchVsSim: 300 requests at 20 req/s (Poisson) through bench
// against serve and through sim, Qwen2-7B on H100, V1 defaults. Reports how
// far bench's mean and median TTFT and TPOT are from sim's, in percent.
//
//	go test -run '^$' -bench BenchVsSim -benchtime 1x ./serve/
func BenchmarkBenchVsSim(b *testing.B) {
	reqs := poissonWorkload(300, 20)
	for b.Loop() {
		cmp := benchVsSim(b, reqs)
		b.ReportMetric(cmp.sim.TTFT.Mean, "sim-ttft-mean-ms")
		b.ReportMetric(cmp.sim.TPOT.Mean, "sim-tpot-mean-ms")
		b.ReportMetric(100*(cmp.bench.TTFT.Mean-cmp.sim.TTFT.Mean)/cmp.sim.TTFT.Mean, "ttft-mean-%")
		b.ReportMetric(100*(cmp.serverTTFT-cmp.sim.TTFT.Mean)/cmp.sim.TTFT.Mean, "server-ttft-mean-%")
		b.ReportMetric(100*(cmp.bench.TTFT.Median-cmp.sim.TTFT.Median)/cmp.sim.TTFT.Median, "ttft-p50-%")
		b.ReportMetric(100*(cmp.bench.TPOT.Mean-cmp.sim.TPOT.Mean)/cmp.sim.TPOT.Mean, "tpot-mean-%")
		b.ReportMetric(100*(cmp.bench.TPOT.Median-cmp.sim.TPOT.Median)/cmp.sim.TPOT.Median, "tpot-p50-%")
	}
}

// fixedStep is a step model where every step takes the same time.
type fixedStep time.Duration

func (f fixedStep) StepTime(s perf.StepShape) time.Duration {
	if s.Tokens() == 0 {
		return 0
	}
	return time.Duration(f)
}

// BenchmarkBenchClient1000: servebench's own bench client sends 1,000
// requests of 1,000 output tokens at once to serve with 10 ms steps (the peer
// comparison: 1,000 concurrent streams at ITL 10 ms). Reports the server's
// write lag, bench's measured TPOT and ITL against the 10 ms the model
// gives, ITL p99 and chunks per token (the bursts a shared CPU causes), and
// bench's output throughput against the model's ideal. Client and server
// share this process's CPU: BenchmarkEmulatorStreams in internal/e2ebench
// is the figure a user sees.
//
//	go test -run '^$' -bench BenchClient1000 -benchtime 1x ./serve/
func BenchmarkBenchClient1000(b *testing.B) {
	const n, out = 1000, 1000
	tok, err := tokenizer.New(context.Background(), serve.DefaultTokenizer, tokenizer.Options{})
	if err != nil {
		b.Fatal(err)
	}
	reqs := make([]workload.Request, n)
	for i := range reqs {
		reqs[i] = workload.Request{Index: i, PromptIDs: []int32{int32(1000 + i), 2000, 3000, 4000}, PromptLen: 4, MaxTokens: out}
	}
	ec := engine.Config{Version: engine.V1, BlockSize: 16, NumGPUBlocks: 60000, MaxNumSeqs: 1024,
		MaxNumBatchedTokens: 8192, MaxModelLen: 4096, EnableChunkedPrefill: true, EnablePrefixCaching: true}
	for b.Loop() {
		ctx := context.Background()
		srv, err := serve.Start(ctx, serve.Config{Engine: ec, StepModel: fixedStep(10 * time.Millisecond), Model: "m", Tokenizer: tok}, "")
		if err != nil {
			b.Fatal(err)
		}
		c, err := client.New(client.Config{BaseURL: srv.URL(), Model: "m", IgnoreEOS: true})
		if err != nil {
			b.Fatal(err)
		}
		res, err := bench.Run(ctx, bench.Config{Client: c, Requests: reqs, Tokenizer: tok, KeepRecords: true,
			Summary: metrics.Options{Percentiles: []float64{99}}})
		c.CloseIdleConnections()
		if err != nil {
			b.Fatal(err)
		}
		snap, err := srv.Snapshot(ctx)
		if err != nil {
			b.Fatal(err)
		}
		lag := srv.WriteLag()
		if err := srv.Close(); err != nil {
			b.Fatal(err)
		}
		s := res.Summary
		if s.Completed != n {
			b.Fatalf("%d of %d completed: %v", s.Completed, n, s.Errors)
		}
		ideal := float64(snap.Engine.GenerationTokens) / snap.ModelTime.Seconds()
		// One ITL entry per chunk after the first (no per-chunk usage):
		// below one chunk per token, late tokens were merged.
		chunks, tokens := 0, 0
		for _, r := range res.Records {
			chunks += len(r.ITL) + 1
			tokens += r.OutputLen
		}
		b.ReportMetric(float64(lag.P50.Microseconds())/1000, "lag-p50-ms")
		b.ReportMetric(float64(lag.P99.Microseconds())/1000, "lag-p99-ms")
		b.ReportMetric(float64(lag.Max.Microseconds())/1000, "lag-max-ms")
		b.ReportMetric(s.TPOT.Mean, "tpot-mean-ms")
		b.ReportMetric(s.ITL.Median, "itl-p50-ms")
		b.ReportMetric(s.ITL.Mean, "itl-mean-ms")
		b.ReportMetric(s.ITL.Percentiles[0].Value, "itl-p99-ms")
		b.ReportMetric(s.ITL.Max, "itl-max-ms")
		b.ReportMetric(float64(chunks)/float64(tokens), "chunks/token")
		b.ReportMetric(s.OutputThroughput/ideal, "output-ideal-frac")
		b.ReportMetric(snap.ModelTime.Seconds()/snap.BusyWall.Seconds(), "loop-ideal-frac")
	}
}
