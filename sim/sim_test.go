package sim

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/servebench/servebench/internal/golden"

	"github.com/google/go-cmp/cmp"

	"github.com/servebench/servebench/engine"
	"github.com/servebench/servebench/metrics"
	"github.com/servebench/servebench/perf"
	"github.com/servebench/servebench/workload"
)

// linearModel: fixed + per-token + per-KV-entry costs, a stand-in for perf's
// roofline with realistic magnitudes (≈10 ms decode steps for an 8B model).
type linearModel struct{ fixed, perToken, perKV time.Duration }

func (m linearModel) StepTime(s perf.StepShape) time.Duration {
	return m.fixed + time.Duration(s.Tokens())*m.perToken + time.Duration(s.KVTokens)*m.perKV
}

var simpleModel = linearModel{fixed: 10 * time.Millisecond, perToken: 100 * time.Microsecond}

func engineConfig(v engine.Version) engine.Config {
	return engine.Config{Version: v, BlockSize: 16, NumGPUBlocks: 2000, NumCPUBlocks: 500, MaxNumSeqs: 256,
		MaxNumBatchedTokens: 2048, MaxModelLen: 2048, EnablePrefixCaching: v == engine.V1}
}

func collect(t *testing.T, cfg Config, reqs []workload.Request) (*Result, []*metrics.Record) {
	t.Helper()
	var recs []*metrics.Record
	res, err := Run(context.Background(), cfg, reqs, func(r *metrics.Record) error {
		recs = append(recs, r)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return res, recs
}

func TestRunHandWorked(t *testing.T) {
	ms := time.Millisecond
	us := time.Microsecond
	// r0 alone: prefill 100 tokens (20 ms), then decodes of 1 token
	// (10.1 ms). r1 arrives at 25 ms, during r0's first decode; V1 runs its
	// prefill (50 tokens) in a batch with r0's decode at 30.1 ms.
	reqs := []workload.Request{
		{Index: 0, PromptLen: 100, MaxTokens: 3},
		{Index: 1, PromptLen: 50, MaxTokens: 2, Arrival: 25 * ms},
	}
	cfg := Config{Engine: engineConfig(engine.V1), Model: simpleModel}
	res, recs := collect(t, cfg, reqs)
	step2 := 10*ms + 51*100*us // r0 decode + r1 prefill
	want := []*metrics.Record{
		{Index: 0, TTFT: 20 * ms, Latency: 20*ms + 10100*us + step2,
			ITL: []time.Duration{10100 * us, step2}, PromptLen: 100, OutputLen: 3, MaxTokens: 3, Success: true},
		{Index: 1, Scheduled: 25 * ms, Dispatched: 25 * ms, Start: 25 * ms,
			TTFT: 30100*us + step2 - 25*ms, Latency: 30100*us + step2 + 10100*us - 25*ms,
			ITL: []time.Duration{10100 * us}, PromptLen: 50, OutputLen: 2, MaxTokens: 2, Success: true},
	}
	if diff := cmp.Diff(want, recs); diff != "" {
		t.Fatalf("records (-want +got):\n%s", diff)
	}
	if res.Steps != 4 || res.Duration != recs[1].End() || res.Err != nil {
		t.Fatalf("result %+v", res)
	}
	if wantGap := (10100*us + step2 + 10100*us) / 3; res.MeanStepGap != wantGap {
		t.Fatalf("MeanStepGap %v, want %v", res.MeanStepGap, wantGap)
	}
}

func randomWorkload(seed uint64, n int, rate float64) []workload.Request {
	rng := rand.New(rand.NewPCG(seed, 1))
	reqs := make([]workload.Request, n)
	var at time.Duration
	for i := range reqs {
		if rate > 0 {
			at += time.Duration(rng.ExpFloat64() / rate * float64(time.Second))
		}
		reqs[i] = workload.Request{Index: i, PromptLen: 1 + rng.IntN(600), MaxTokens: 1 + rng.IntN(300), Arrival: at}
	}
	return reqs
}

// Golden records and samples for a seeded workload in each engine mode:
// same input, byte-identical output.
func TestRunGolden(t *testing.T) {
	modes := []struct {
		name string
		cfg  engine.Config
	}{
		{"v1", engineConfig(engine.V1)},
		{"v0", engineConfig(engine.V0)},
		{"v0_chunked_swap", func() engine.Config {
			c := engineConfig(engine.V0)
			c.EnableChunkedPrefill, c.PreemptionMode, c.MaxNumBatchedTokens = true, engine.PreemptSwap, 512
			c.NumGPUBlocks = 300
			return c
		}()},
	}
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			cfg := Config{Engine: m.cfg, Model: linearModel{fixed: 8 * time.Millisecond, perToken: 50 * time.Microsecond, perKV: 100 * time.Nanosecond},
				StatsInterval: 2 * time.Second}
			render := func() string {
				res, recs := collect(t, cfg, randomWorkload(3, 200, 20))
				var b strings.Builder
				for _, r := range recs {
					line, err := json.Marshal(r)
					if err != nil {
						t.Fatal(err)
					}
					b.Write(line)
					b.WriteByte('\n')
				}
				for _, s := range res.Samples {
					fmt.Fprintf(&b, "sample %v: prompt %.1f tok/s, generation %.1f tok/s, running %d, waiting %d, swapped %d, KV %.1f%%, prefix hit %.1f%%\n",
						s.At, s.PromptThroughput, s.GenerationThroughput, s.Running, s.Waiting, s.Swapped, 100*s.KVUsage, 100*s.PrefixHitRate)
				}
				fmt.Fprintln(&b, ThroughputLine(res, len(recs), 0))
				fmt.Fprintf(&b, "preemptions %d, engine %+v, err %v\n", res.Preemptions, res.Engine, res.Err)
				return b.String()
			}
			got := render()
			if again := render(); again != got {
				t.Fatal("two runs of the same input differ")
			}
			golden.CheckFile(t, filepath.Join("testdata", "run_"+m.name+".golden"), []byte(got))
		})
	}
}

// Every record is consistent with itself and the workload, and records are
// emitted as requests finish (in completion order), not at the end.
func TestRunRecordInvariants(t *testing.T) {
	for _, c := range []struct {
		v                      engine.Version
		ingest, delivery, chat time.Duration
		name                   string
		lag                    bool
		// loop: an API server whose loop takes 400 µs a chunk, so that
		// it falls behind (perf.OutputLoop).
		loop bool
	}{{engine.V0, 0, 0, 0, "v0", false, false}, {engine.V1, 0, 0, 0, "v1", false, false}, {engine.V0, 9 * time.Millisecond, 2 * time.Millisecond, 0, "v0-latencies", false, false},
		{engine.V1, 9 * time.Millisecond, 2 * time.Millisecond, 0, "v1-latencies", false, false}, {engine.V0, 0, 0, 0, "v0-async-output", true, false},
		{engine.V0, 9 * time.Millisecond, 2 * time.Millisecond, 0, "v0-async-output-latencies", true, false},
		{engine.V1, 9 * time.Millisecond, 2 * time.Millisecond, 30 * time.Millisecond, "v1-chat", false, false},
		{engine.V1, 9 * time.Millisecond, 2 * time.Millisecond, 0, "v1-latencies-loop", false, true},
		{engine.V0, 9 * time.Millisecond, 2 * time.Millisecond, 0, "v0-async-output-latencies-loop", true, true},
		{engine.V1, 9 * time.Millisecond, 2 * time.Millisecond, 30 * time.Millisecond, "v1-chat-loop", false, true}} {
		v := c.v
		t.Run(c.name, func(t *testing.T) {
			reqs := randomWorkload(9, 400, 40)
			var model perf.StepModel = simpleModel
			if c.loop {
				model = outputLoopModel{simpleModel, 400 * time.Microsecond}
			}
			cfg := Config{Engine: engineConfig(v), Model: model, Ingest: c.ingest, Delivery: c.delivery, ChatPrepare: c.chat, AsyncOutputLag: c.lag}
			cfg.Engine.NumGPUBlocks = 400 // force preemptions
			res, recs := collect(t, cfg, reqs)
			if len(recs) != len(reqs) {
				t.Fatalf("%d records for %d requests", len(recs), len(reqs))
			}
			if res.Preemptions == 0 {
				t.Fatal("workload did not preempt; the test needs pressure")
			}
			seen := make(map[int]bool)
			var lastEnd time.Duration
			for _, r := range recs {
				w := reqs[r.Index]
				if seen[r.Index] {
					t.Fatalf("record %d emitted twice", r.Index)
				}
				seen[r.Index] = true
				if !r.Success || r.OutputLen != w.MaxTokens || r.PromptLen != w.PromptLen || r.MaxTokens != w.MaxTokens {
					t.Fatalf("record %d: %+v for request %+v", r.Index, r, w)
				}
				if r.Start != w.Arrival {
					t.Fatalf("record %d starts at %v, arrived at %v", r.Index, r.Start, w.Arrival)
				}
				checkTokenTimes(t, r)
				if r.End() < lastEnd {
					t.Fatalf("record %d ends at %v before the previous record (%v)", r.Index, r.End(), lastEnd)
				}
				lastEnd = r.End()
			}
			if res.Duration != lastEnd-reqs[0].Arrival {
				t.Fatalf("duration %v, last end %v", res.Duration, lastEnd)
			}
		})
	}
}

// checkTokenTimes: one ITL gap per output token after the first, each
// positive, adding up with TTFT to the latency.
func checkTokenTimes(t *testing.T, r *metrics.Record) {
	t.Helper()
	if r.TTFT <= 0 || r.Latency < r.TTFT || len(r.ITL) != r.OutputLen-1 {
		t.Fatalf("record %d timing: TTFT %v, latency %v, %d gaps for %d tokens", r.Index, r.TTFT, r.Latency, len(r.ITL), r.OutputLen)
	}
	sum := r.TTFT
	for _, g := range r.ITL {
		if g <= 0 {
			t.Fatalf("record %d has ITL gap %v", r.Index, g)
		}
		sum += g
	}
	if sum != r.Latency {
		t.Fatalf("record %d: TTFT+ΣITL = %v, latency %v", r.Index, sum, r.Latency)
	}
}

// ITL gaps are read back from the log of completion instants, which is
// trimmed every 16,384 completions while preempted requests, stalled in
// the waiting queue, still need its older entries: runs long enough to
// trim it many times must still give every request its exact gaps.
func TestITLAcrossCompletionLogTrims(t *testing.T) {
	tests := []struct {
		name string
		pp   int
	}{
		{"one batch in flight", 1},
		{"pipeline of two", 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reqs := randomWorkload(11, 1000, 0)
			cfg := Config{Engine: engineConfig(engine.V1), Model: simpleModel, ReuseRecords: true}
			cfg.Engine.MaxNumSeqs = 2
			cfg.Engine.NumGPUBlocks = 70 // two long requests do not fit: preemptions
			cfg.Engine.PipelineParallel = tt.pp
			var n int
			res, err := Run(context.Background(), cfg, reqs, func(r *metrics.Record) error {
				n++
				if !r.Success || r.OutputLen != reqs[r.Index].MaxTokens {
					t.Fatalf("record %d: success %t, %d of %d tokens", r.Index, r.Success, r.OutputLen, reqs[r.Index].MaxTokens)
				}
				checkTokenTimes(t, r)
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if n != len(reqs) || res.Preemptions == 0 || res.Steps < 4<<14 {
				t.Fatalf("%d records, %d preemptions, %d steps: the test needs every request, preemptions and several trims",
					n, res.Preemptions, res.Steps)
			}
		})
	}
}

func TestRunUnsortedArrivalsMatchSorted(t *testing.T) {
	reqs := randomWorkload(5, 100, 30)
	shuffled := append([]workload.Request(nil), reqs...)
	rand.New(rand.NewPCG(1, 2)).Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	cfg := Config{Engine: engineConfig(engine.V1), Model: simpleModel}
	_, a := collect(t, cfg, reqs)
	_, b := collect(t, cfg, shuffled)
	if diff := cmp.Diff(a, b); diff != "" {
		t.Fatalf("shuffled input gave different records (-sorted +shuffled):\n%s", diff)
	}
}

func TestRunFailures(t *testing.T) {
	t.Run("rejected by the API and by the block manager", func(t *testing.T) {
		cfg := Config{Engine: engineConfig(engine.V0), Model: simpleModel}
		cfg.Engine.NumGPUBlocks = 10 // 160 tokens
		reqs := []workload.Request{
			{Index: 0, PromptLen: 2000, MaxTokens: 100},
			{Index: 1, PromptLen: 500, MaxTokens: 10},
			{Index: 2, PromptLen: 100, MaxTokens: 10},
		}
		_, recs := collect(t, cfg, reqs)
		errs := map[int]string{}
		for _, r := range recs {
			errs[r.Index] = r.Error
			if (r.Error == "") != r.Success {
				t.Fatalf("record %d: success %t with error %q", r.Index, r.Success, r.Error)
			}
		}
		want := map[int]string{
			0: "This model's maximum context length is 2048 tokens. However, you requested 2100 tokens (2000 in the messages, 100 in the completion). Please reduce the length of the messages or completion.",
			1: "Input prompt (500 tokens) is too long and exceeds the capacity of block_manager",
			2: "",
		}
		if diff := cmp.Diff(want, errs); diff != "" {
			t.Fatalf("errors (-want +got):\n%s", diff)
		}
	})
	t.Run("swap space exhausted", func(t *testing.T) {
		cfg := Config{Engine: engineConfig(engine.V0), Model: simpleModel}
		cfg.Engine.NumGPUBlocks, cfg.Engine.NumCPUBlocks, cfg.Engine.PreemptionMode = 100, 2, engine.PreemptSwap
		res, recs := collect(t, cfg, randomWorkload(2, 50, 0))
		if !errors.Is(res.Err, engine.ErrNoSwapSpace) {
			t.Fatalf("Result.Err = %v, want ErrNoSwapSpace", res.Err)
		}
		failed := 0
		for _, r := range recs {
			if r.Error == engine.ErrNoSwapSpace.Error() {
				failed++
			}
		}
		if len(recs) != 50 || failed == 0 {
			t.Fatalf("%d records, %d failed with the swap error", len(recs), failed)
		}
	})
	t.Run("emit error stops the run", func(t *testing.T) {
		cfg := Config{Engine: engineConfig(engine.V1), Model: simpleModel}
		stop := errors.New("disk full")
		_, err := Run(context.Background(), cfg, randomWorkload(1, 10, 0), func(*metrics.Record) error { return stop })
		if !errors.Is(err, stop) {
			t.Fatalf("got %v, want the emit error", err)
		}
	})
	t.Run("bad config", func(t *testing.T) {
		cfg := Config{Engine: engineConfig(engine.V1), Model: simpleModel}
		cfg.Engine.MaxNumSeqs = 0
		if _, err := Run(context.Background(), cfg, nil, nil); err == nil || !strings.Contains(err.Error(), "max_num_seqs (0)") {
			t.Fatalf("got %v", err)
		}
		cfg = Config{Engine: engineConfig(engine.V1)}
		if _, err := Run(context.Background(), cfg, nil, nil); err == nil || !strings.Contains(err.Error(), "Model is nil") {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("canceled", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		cfg := Config{Engine: engineConfig(engine.V1), Model: simpleModel}
		if _, err := Run(ctx, cfg, randomWorkload(1, 10, 0), nil); !errors.Is(err, context.Canceled) {
			t.Fatalf("got %v, want context.Canceled", err)
		}
	})
	t.Run("empty workload", func(t *testing.T) {
		res, recs := collect(t, Config{Engine: engineConfig(engine.V1), Model: simpleModel}, nil)
		if len(recs) != 0 || res.Duration != 0 || res.Steps != 0 {
			t.Fatalf("%+v %v", res, recs)
		}
	})
}

func TestStatsSamples(t *testing.T) {
	// One request decoding for ~3 s at 10.1 ms per token; samples every
	// second see ~99 generated tokens per second. It arrives at 2.5 s, so
	// the first interval is half a second long.
	reqs := []workload.Request{{PromptLen: 10, MaxTokens: 300, Arrival: 2500 * time.Millisecond}}
	var called []StatsSample
	cfg := Config{Engine: engineConfig(engine.V0), Model: simpleModel, StatsInterval: time.Second,
		OnStats: func(s StatsSample) { called = append(called, s) }}
	res, _ := collect(t, cfg, reqs)
	if len(res.Samples) != 3 || len(called) != 3 {
		t.Fatalf("%d samples kept, %d reported; want 3", len(res.Samples), len(called))
	}
	for i, s := range res.Samples {
		if s.At != time.Duration(i+3)*time.Second {
			t.Fatalf("sample %d at %v, want %v", i, s.At, time.Duration(i+3)*time.Second)
		}
		if s.Running != 1 || s.GenerationThroughput < 95 || s.GenerationThroughput > 100 || s.KVUsage <= 0 {
			t.Fatalf("sample %d: %+v", i, s)
		}
	}
	if res.Samples[0].PromptThroughput != 20 || res.Samples[1].PromptThroughput != 0 {
		t.Fatalf("prompt throughput %v then %v, want 20 (10 tokens in 0.5 s) then 0",
			res.Samples[0].PromptThroughput, res.Samples[1].PromptThroughput)
	}

	// Many more samples than the cap: the kept ones thin out evenly.
	cfg = Config{Engine: engineConfig(engine.V1), Model: simpleModel, StatsInterval: time.Millisecond}
	res, _ = collect(t, cfg, []workload.Request{{PromptLen: 10, MaxTokens: 1500}})
	if len(res.Samples) > maxSamples || len(res.Samples) < maxSamples/2 {
		t.Fatalf("%d samples kept", len(res.Samples))
	}
	step := res.Samples[1].At - res.Samples[0].At
	for i := 1; i < len(res.Samples); i++ {
		if res.Samples[i].At-res.Samples[i-1].At != step {
			t.Fatalf("uneven spacing at sample %d", i)
		}
	}
}

func TestPrefixCachingFromText(t *testing.T) {
	system := strings.Repeat("You are a helpful assistant that answers questions about the sonnets. ", 12)
	reqs := []workload.Request{
		{Index: 0, Prompt: system + "Which sonnet mentions a summer's day?", PromptLen: 240, MaxTokens: 4},
		{Index: 1, Prompt: system + "Who is the fair youth?", PromptLen: 230, MaxTokens: 4, Arrival: time.Second},
		{Index: 2, Prompt: "Completely different text " + system, PromptLen: 240, MaxTokens: 4, Arrival: 2 * time.Second},
	}
	cfg := Config{Engine: engineConfig(engine.V1), Model: simpleModel}
	_, recs := collect(t, cfg, reqs)
	cached := map[int]int{}
	for _, r := range recs {
		cached[r.Index] = r.CachedTokens
	}
	if cached[0] != 0 || cached[2] != 0 || cached[1] < 160 {
		t.Fatalf("cached tokens %v: want 0 for the first and the unrelated prompt, ≥160 for the shared system prompt", cached)
	}
	cfg.Engine.EnablePrefixCaching = false
	_, recs = collect(t, cfg, reqs)
	for _, r := range recs {
		if r.CachedTokens != 0 {
			t.Fatalf("prefix caching off, yet record %d has %d cached tokens", r.Index, r.CachedTokens)
		}
	}
}

func TestThroughputLine(t *testing.T) {
	res := &Result{Duration: 2 * time.Second, MeanStepGap: 12345 * time.Microsecond, Steps: 77}
	got := ThroughputLine(res, 100, 5000)
	want := "Throughput: 50.0000 requests/s, 2500.0000 tokens/s, Delay 12.3450 ms, n_step: 77"
	if got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
	if got := ThroughputLine(&Result{}, 0, 0); got != "Throughput: 0.0000 requests/s, 0.0000 tokens/s, Delay 0.0000 ms, n_step: 0" {
		t.Fatalf("zero result: %q", got)
	}
}

func TestMaxConcurrencyQueuesInTheClient(t *testing.T) {
	// Four requests arrive together; two run at a time. Each takes exactly
	// its steps, so the second pair starts when the first pair finishes and
	// waits that long in the client queue.
	reqs := make([]workload.Request, 4)
	for i := range reqs {
		reqs[i] = workload.Request{Index: i, PromptLen: 16, MaxTokens: 3}
	}
	cfg := Config{
		Engine: engine.Config{Version: engine.V1, BlockSize: 16, NumGPUBlocks: 100, MaxNumSeqs: 8, MaxNumBatchedTokens: 64, MaxModelLen: 64, EnableChunkedPrefill: true},
		Model:  linearModel{fixed: 10 * time.Millisecond}, MaxConcurrency: 2,
	}
	var recs []metrics.Record
	if _, err := Run(t.Context(), cfg, reqs, func(r *metrics.Record) error { recs = append(recs, *r); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(recs) != 4 {
		t.Fatalf("%d records", len(recs))
	}
	for _, r := range recs {
		wantStart := time.Duration(0)
		if r.Index >= 2 {
			wantStart = 30 * time.Millisecond // 3 steps: prefill+first token, then 2 decodes
		}
		if r.Start != wantStart || r.Dispatched != 0 || r.QueueTime() != wantStart {
			t.Errorf("request %d: start %v dispatched %v queue %v, want start %v", r.Index, r.Start, r.Dispatched, r.QueueTime(), wantStart)
		}
		if !r.Success || r.Latency != 30*time.Millisecond {
			t.Errorf("request %d: success %v latency %v", r.Index, r.Success, r.Latency)
		}
	}
}

// Recycling records must not change a single field of any record: emit
// deep-copies with and without ReuseRecords and the two lists must match.
func TestReuseRecordsChangesNothing(t *testing.T) {
	reqs := make([]workload.Request, 300)
	for i := range reqs {
		reqs[i] = workload.Request{Index: i, PromptLen: 20 + i%50, MaxTokens: 1 + i%40, Arrival: time.Duration(i) * 3 * time.Millisecond}
	}
	run := func(reuse bool) []metrics.Record {
		cfg := Config{
			Engine: engine.Config{Version: engine.V1, BlockSize: 16, NumGPUBlocks: 60, MaxNumSeqs: 32, MaxNumBatchedTokens: 256, MaxModelLen: 256, EnableChunkedPrefill: true},
			Model:  linearModel{fixed: 5 * time.Millisecond, perToken: 10 * time.Microsecond}, ReuseRecords: reuse,
		}
		var out []metrics.Record
		if _, err := Run(t.Context(), cfg, reqs, func(r *metrics.Record) error {
			c := *r
			c.ITL = slices.Clone(r.ITL)
			out = append(out, c)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		return out
	}
	fresh, reused := run(false), run(true)
	if len(fresh) != len(reqs) || len(reused) != len(reqs) {
		t.Fatalf("%d and %d records for %d requests", len(fresh), len(reused), len(reqs))
	}
	for i := range fresh {
		if !reflect.DeepEqual(fresh[i], reused[i]) {
			t.Fatalf("record %d differs with reuse:\n%+v\n%+v", i, fresh[i], reused[i])
		}
	}
}

// A burst shorter than the stats interval: the samples see nothing, the
// maxima see the whole burst, and they agree with a sample taken at every
// millisecond.
func TestMaximaAreExactOnShortRuns(t *testing.T) {
	reqs := make([]workload.Request, 600)
	for i := range reqs {
		reqs[i] = workload.Request{Index: i, PromptLen: 100, MaxTokens: 20}
	}
	ec := engineConfig(engine.V1)
	ec.MaxNumSeqs = 256
	res, _ := collect(t, Config{Engine: ec, Model: simpleModel, StatsInterval: time.Hour}, reqs)
	if len(res.Samples) != 0 {
		t.Fatalf("%d samples on a run shorter than the interval", len(res.Samples))
	}
	if res.Max.Running != 256 || res.Max.Waiting < 600-256 || res.Max.KVUsage <= 0 {
		t.Fatalf("maxima %+v: want 256 running, ≥344 waiting, some KV", res.Max)
	}
	fine, _ := collect(t, Config{Engine: ec, Model: simpleModel, StatsInterval: time.Millisecond}, reqs)
	var sampled Maxima
	for _, s := range fine.Samples {
		sampled.Running, sampled.Waiting = max(sampled.Running, s.Running), max(sampled.Waiting, s.Waiting)
		sampled.KVUsage = max(sampled.KVUsage, s.KVUsage)
	}
	if sampled.Running > res.Max.Running || sampled.Waiting > res.Max.Waiting || sampled.KVUsage > res.Max.KVUsage {
		t.Fatalf("a 1 ms sample saw %+v, above the exact maxima %+v", sampled, res.Max)
	}
}

// Multi-step scheduling, worked by hand with 10 ms steps and groups of 4:
// a request arriving mid-group waits for the group's end, each group's
// tokens reach the client as one chunk at its end (one ITL entry), a
// request finishing mid-group finishes at the group's end, and a group
// whose requests all finish early ends then.
func TestMultiStepGroups(t *testing.T) {
	ms := time.Millisecond
	tests := []struct {
		name  string
		steps int
		reqs  []workload.Request
		// want per request: TTFT, latency, ITL.
		want [][3]any
	}{
		{
			name:  "arrival waits for the group",
			steps: 4,
			reqs: []workload.Request{
				{Index: 0, PromptLen: 16, MaxTokens: 9},
				{Index: 1, PromptLen: 16, MaxTokens: 3, Arrival: 15 * ms},
			},
			// A: prefill 0–10; group 10–50 (tokens 2–5); B's prefill
			// 50–60; group 60–100 (A's 6–9, B's 2–3).
			want: [][3]any{
				{10 * ms, 100 * ms, []time.Duration{40 * ms, 50 * ms}},
				{45 * ms, 85 * ms, []time.Duration{40 * ms}},
			},
		},
		{
			name:  "group ends when its requests do",
			steps: 4,
			reqs: []workload.Request{
				{Index: 0, PromptLen: 16, MaxTokens: 3},
				{Index: 1, PromptLen: 16, MaxTokens: 2, Arrival: 25 * ms},
			},
			// A: prefill 0–10, tokens 2–3 at 20 and 30, the group ends
			// there; B's prefill 30–40, its group 40–50.
			want: [][3]any{
				{10 * ms, 30 * ms, []time.Duration{20 * ms}},
				{15 * ms, 25 * ms, []time.Duration{10 * ms}},
			},
		},
		{
			name:  "single step",
			steps: 1,
			reqs: []workload.Request{
				{Index: 0, PromptLen: 16, MaxTokens: 9},
				{Index: 1, PromptLen: 16, MaxTokens: 3, Arrival: 15 * ms},
			},
			// B joins after A's decode 10–20: prefill 20–30, decodes to 50.
			want: [][3]any{
				{10 * ms, 100 * ms, []time.Duration{10 * ms, 20 * ms, 10 * ms, 10 * ms, 10 * ms, 10 * ms, 10 * ms, 10 * ms}},
				{15 * ms, 35 * ms, []time.Duration{10 * ms, 10 * ms}},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := Config{Engine: engineConfig(engine.V0), Model: linearModel{fixed: 10 * ms}, SchedulerSteps: tt.steps}
			checkTimelines(t, cfg, tt.reqs, tt.want)
		})
	}
}

// hostBoundSteps is linearModel with every step host-bound.
type hostBoundSteps struct{ linearModel }

func (m hostBoundSteps) StepTimeHost(s perf.StepShape) (time.Duration, bool) {
	return m.StepTime(s), true
}

// launching is linearModel whose host works launch on a step before an
// engine loop that does not wait for the GPU gets control back.
type launching struct {
	linearModel
	launch time.Duration
}

func (m launching) LaunchTime(perf.StepShape) time.Duration { return m.launch }

// Multi-step groups with async output processing (vLLM 0.6, PR #8050),
// worked by hand with 10 ms steps and groups of 4: every step's outputs
// are processed inside the next step's callback and go out when that step
// returns to the engine loop, at once after its launch for a group's
// intermediate step (which does not wait for the GPU), when the GPU
// finishes it for a prefill or a group's last step (which block). A's
// prefill (0–10) goes out when the group's first step is launched (10, or
// 12 with 2 ms of launch work); a group's chunk at the end of the prefill
// that follows it (B's, 50–60: B was sent at 15 and waited for the
// group). B finishes in the second step of its group (70–80): GPU-bound,
// its tokens wait for the group's chunk (100); host-bound, the GPU had
// finished that step when the next one's callback looked, so B goes out
// when the third step is launched (80); streaming hands on every step's
// tokens. Nothing follows A's last step (90–100): its chunk goes out then.
func TestMultiStepAsyncOutputs(t *testing.T) {
	ms := time.Millisecond
	reqs := []workload.Request{
		{Index: 0, PromptLen: 16, MaxTokens: 9},
		{Index: 1, PromptLen: 16, MaxTokens: 3, Arrival: 15 * ms},
	}
	tests := []struct {
		name   string
		model  perf.StepModel
		stream bool
		// want per request: TTFT, latency, ITL.
		want [][3]any
	}{
		{
			name:  "GPU-bound: chunks at the group's end or the prefill after it",
			model: linearModel{fixed: 10 * ms},
			want: [][3]any{
				{10 * ms, 100 * ms, []time.Duration{50 * ms, 40 * ms}},
				{45 * ms, 85 * ms, []time.Duration{40 * ms}},
			},
		},
		{
			name:  "launch work delays what intermediate steps hand on",
			model: launching{linearModel{fixed: 10 * ms}, 2 * ms},
			want: [][3]any{
				{12 * ms, 100 * ms, []time.Duration{48 * ms, 40 * ms}},
				{47 * ms, 85 * ms, []time.Duration{38 * ms}},
			},
		},
		{
			name:  "host-bound: a finished request goes out early",
			model: hostBoundSteps{linearModel{fixed: 10 * ms}},
			want: [][3]any{
				{10 * ms, 100 * ms, []time.Duration{50 * ms, 40 * ms}},
				{45 * ms, 65 * ms, []time.Duration{20 * ms}},
			},
		},
		{
			name:   "streaming: every step as it is processed",
			model:  linearModel{fixed: 10 * ms},
			stream: true,
			want: [][3]any{
				{10 * ms, 100 * ms, []time.Duration{10 * ms, 10 * ms, 20 * ms, 10 * ms, 10 * ms, 10 * ms, 20 * ms, 0}},
				{45 * ms, 65 * ms, []time.Duration{10 * ms, 10 * ms}},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := Config{Engine: engineConfig(engine.V0), Model: tt.model, SchedulerSteps: 4,
				AsyncOutputLag: true, MultiStepStream: tt.stream}
			checkTimelines(t, cfg, reqs, tt.want)
		})
	}
}

// A group's last step pythonises the whole group and processes its
// earlier steps, so a request that finished inside it goes out when the
// GPU finishes that step, while the others' chunk waits for the step
// after it. Worked by hand as TestMultiStepAsyncOutputs: A and C prefill
// 0–10 (out at 10, as the group starts); A finishes in the group's second
// step (20–30) and goes out at its end (50); D, sent at 15, prefills 50–60
// and C's chunk goes out then; D's only token goes out as the next group
// starts (60); C's last chunk when nothing follows its group (100).
func TestMultiStepGroupEndHandsOnFinished(t *testing.T) {
	ms := time.Millisecond
	reqs := []workload.Request{
		{Index: 0, PromptLen: 16, MaxTokens: 3},
		{Index: 1, PromptLen: 16, MaxTokens: 9},
		{Index: 2, PromptLen: 16, MaxTokens: 1, Arrival: 15 * ms},
	}
	want := [][3]any{
		{10 * ms, 50 * ms, []time.Duration{40 * ms}},
		{10 * ms, 100 * ms, []time.Duration{50 * ms, 40 * ms}},
		{45 * ms, 45 * ms, []time.Duration(nil)},
	}
	cfg := Config{Engine: engineConfig(engine.V0), Model: linearModel{fixed: 10 * ms}, SchedulerSteps: 4, AsyncOutputLag: true}
	checkTimelines(t, cfg, reqs, want)
}

// checkTimelines runs reqs through cfg and requires each request, in
// index order, to finish with all its tokens at want's TTFT, latency and
// ITL.
func checkTimelines(t *testing.T, cfg Config, reqs []workload.Request, want [][3]any) {
	t.Helper()
	recs := recordsInOrder(t, cfg, reqs, len(want))
	for i, w := range want {
		r := recs[i]
		if !r.Success || r.OutputLen != reqs[i].MaxTokens {
			t.Errorf("request %d: success %v, %d tokens; want %d", i, r.Success, r.OutputLen, reqs[i].MaxTokens)
		}
		if r.TTFT != w[0] || r.Latency != w[1] || !slices.Equal(r.ITL, w[2].([]time.Duration)) {
			t.Errorf("request %d: TTFT %v, latency %v, ITL %v; want %v, %v, %v", i, r.TTFT, r.Latency, r.ITL, w[0], w[1], w[2])
		}
	}
}

// Request latencies, worked by hand with 10 ms steps, Ingest 5 ms and
// Delivery 2 ms: a request reaches the engine 5 ms after it is sent, its
// tokens the client 2 ms after their step, and under a concurrency cap
// the next request is sent only when the last token is received.
func TestRequestLatencies(t *testing.T) {
	ms := time.Millisecond
	type want struct {
		start, ttft, latency time.Duration
		itl                  []time.Duration
	}
	tests := []struct {
		name         string
		cap          int
		reqs         []workload.Request
		want         []want
		wantDuration time.Duration
	}{
		{
			name: "one request",
			reqs: []workload.Request{{Index: 0, PromptLen: 16, MaxTokens: 3}},
			// In the engine at 5: prefill 5–15, decodes to 35.
			want:         []want{{0, 17 * ms, 37 * ms, []time.Duration{10 * ms, 10 * ms}}},
			wantDuration: 37 * ms,
		},
		{
			name: "cap of one",
			cap:  1,
			reqs: []workload.Request{{Index: 0, PromptLen: 16, MaxTokens: 3}, {Index: 1, PromptLen: 16, MaxTokens: 3}},
			// B is sent when A's last token arrives (37), in the engine at 42.
			want: []want{
				{0, 17 * ms, 37 * ms, []time.Duration{10 * ms, 10 * ms}},
				{37 * ms, 17 * ms, 37 * ms, []time.Duration{10 * ms, 10 * ms}},
			},
			wantDuration: 74 * ms,
		},
		{
			name: "overlapping",
			reqs: []workload.Request{{Index: 0, PromptLen: 16, MaxTokens: 3}, {Index: 1, PromptLen: 16, MaxTokens: 3, Arrival: 3 * ms}},
			// A in at 5, B at 8: prefills 5–15 and 15–25, decodes to 45.
			want: []want{
				{0, 17 * ms, 47 * ms, []time.Duration{20 * ms, 10 * ms}},
				{3 * ms, 24 * ms, 44 * ms, []time.Duration{10 * ms, 10 * ms}},
			},
			wantDuration: 47 * ms,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := Config{Engine: engineConfig(engine.V0), Model: linearModel{fixed: 10 * ms},
				MaxConcurrency: tt.cap, Ingest: 5 * ms, Delivery: 2 * ms}
			res, recs := collect(t, cfg, tt.reqs)
			slices.SortFunc(recs, func(a, b *metrics.Record) int { return a.Index - b.Index })
			if len(recs) != len(tt.want) {
				t.Fatalf("%d records, want %d", len(recs), len(tt.want))
			}
			for i, w := range tt.want {
				r := recs[i]
				got := want{r.Start, r.TTFT, r.Latency, r.ITL}
				if !r.Success || !reflect.DeepEqual(got, w) {
					t.Errorf("request %d: success %v, %+v; want %+v", i, r.Success, got, w)
				}
			}
			if res.Duration != tt.wantDuration {
				t.Errorf("duration %v, want %v", res.Duration, tt.wantDuration)
			}
		})
	}
}

// The server's hand-off of requests to the engine, worked by hand with 10
// ms steps, Ingest 5 ms and Delivery 2 ms.
//
// Completions, with a spacing of 1 ms: the server's event loop hands a
// burst's requests on one at a time, so they reach the engine at 5, 6 and
// 7 and the idle engine prefills the first alone (5–15), the other two
// together (15–25); a request sent well after another is not delayed.
//
// Chat, with ChatPrepare 4 ms: the loop prepares the requests in arrival
// order and hands each on only after the preparations queued before its
// own finished, so a burst reaches the engine together. ChatIngest (3 ms)
// only delays each request's entry into the engine.
func TestServerHandOff(t *testing.T) {
	ms := time.Millisecond
	one := oneTokenRequest
	tests := []struct {
		name       string
		spacing    time.Duration
		chat       bool
		chatIngest time.Duration
		reqs       []workload.Request
		wantTTFT   []time.Duration
	}{
		{"burst", ms, false, 0, []workload.Request{one(0, 0), one(1, 0), one(2, 0)}, []time.Duration{17 * ms, 27 * ms, 27 * ms}},
		{"burst without spacing", 0, false, 0, []workload.Request{one(0, 0), one(1, 0), one(2, 0)}, []time.Duration{17 * ms, 17 * ms, 17 * ms}},
		{"apart", ms, false, 0, []workload.Request{one(0, 0), one(1, 20*ms)}, []time.Duration{17 * ms, 17 * ms}},
		// B is sent 0.5 ms after A and handed on 1 ms after A's hand-off.
		{"closer than the spacing", ms, false, 0, []workload.Request{one(0, 0), one(1, ms/2)}, []time.Duration{17 * ms, 26500 * time.Microsecond}},
		// Prepared at 4, handed on at once, in the engine at 9, its
		// step 9–19, received at 21.
		{"chat alone", 0, true, 0, []workload.Request{one(0, 0)}, []time.Duration{21 * ms}},
		// Prepared at 4, 8 and 12: every hand-off waits behind all three
		// preparations, so all reach the engine at 17 and share a step.
		{"chat burst", 0, true, 0, []workload.Request{one(0, 0), one(1, 0), one(2, 0)}, []time.Duration{29 * ms, 29 * ms, 29 * ms}},
		// The second arrives after the first was handed on: 4 ms each.
		{"chat spaced", 0, true, 0, []workload.Request{one(0, 0), one(1, 20*ms)}, []time.Duration{21 * ms, 21 * ms}},
		// The second arrives (2) before the first's preparation ends (4):
		// the first's hand-off waits for the second's preparation (8).
		{"chat overlapping", 0, true, 0, []workload.Request{one(0, 0), one(1, 2*ms)}, []time.Duration{25 * ms, 23 * ms}},
		// ChatIngest follows Ingest and holds no hand-off back: every
		// request reaches the engine 3 ms later than above, no more.
		{"chat alone, chat ingest", 0, true, 3 * ms, []workload.Request{one(0, 0)}, []time.Duration{24 * ms}},
		{"chat burst, chat ingest", 0, true, 3 * ms, []workload.Request{one(0, 0), one(1, 0), one(2, 0)}, []time.Duration{32 * ms, 32 * ms, 32 * ms}},
		{"chat spaced, chat ingest", 0, true, 3 * ms, []workload.Request{one(0, 0), one(1, 20*ms)}, []time.Duration{24 * ms, 24 * ms}},
		{"chat overlapping, chat ingest", 0, true, 3 * ms, []workload.Request{one(0, 0), one(1, 2*ms)}, []time.Duration{28 * ms, 26 * ms}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := Config{Engine: engineConfig(engine.V0), Model: linearModel{fixed: 10 * ms},
				Ingest: 5 * ms, Delivery: 2 * ms, IngestSpacing: tt.spacing}
			if tt.chat {
				cfg.ChatPrepare, cfg.ChatIngest = 4*ms, tt.chatIngest
			}
			checkTTFTs(t, cfg, tt.reqs, tt.wantTTFT)
		})
	}
}

// oneTokenRequest is request i of a 16-token prompt and one output token,
// sent at at.
func oneTokenRequest(i int, at time.Duration) workload.Request {
	return workload.Request{Index: i, PromptLen: 16, MaxTokens: 1, Arrival: at}
}

// recordsInOrder runs reqs through cfg and returns its n records in
// request order.
func recordsInOrder(t *testing.T, cfg Config, reqs []workload.Request, n int) []*metrics.Record {
	t.Helper()
	_, recs := collect(t, cfg, reqs)
	slices.SortFunc(recs, func(a, b *metrics.Record) int { return a.Index - b.Index })
	if len(recs) != n {
		t.Fatalf("%d records, want %d", len(recs), n)
	}
	return recs
}

// checkTTFTs runs reqs through cfg and requires each request, in index
// order, to succeed with want's TTFT.
func checkTTFTs(t *testing.T, cfg Config, reqs []workload.Request, want []time.Duration) {
	t.Helper()
	recs := recordsInOrder(t, cfg, reqs, len(want))
	for i, w := range want {
		if r := recs[i]; !r.Success || r.TTFT != w {
			t.Errorf("request %d: success %v, TTFT %v; want %v", i, r.Success, r.TTFT, w)
		}
	}
}

// A burst of n chat requests reaches the engine only after n
// preparations, whatever the engine: no first token comes sooner.
func TestChatPrepareBurstFloor(t *testing.T) {
	const n, prep = 200, 3 * time.Millisecond
	reqs := randomWorkload(5, n, 0)
	for i := range reqs {
		reqs[i].Arrival = 0
	}
	for _, v := range []engine.Version{engine.V0, engine.V1} {
		_, recs := collect(t, Config{Engine: engineConfig(v), Model: simpleModel, ChatPrepare: prep}, reqs)
		for _, r := range recs {
			if r.TTFT <= n*prep {
				t.Fatalf("%s: request %d's first token at %v, before the %d preparations end (%v)", v, r.Index, r.TTFT, n, n*prep)
			}
		}
	}
}

// V0's async output processing: each step's tokens reach the client when
// the next step ends, and after the last step vLLM decodes the finished
// sequence once more before returning its final token. One request of 5
// tokens on a 10 ms + 0.1 ms/token model: prefill 20 ms, decodes 10.1 ms.
func TestAsyncOutputLag(t *testing.T) {
	const ms = time.Millisecond
	reqs := []workload.Request{{Index: 0, PromptLen: 100, MaxTokens: 5}}
	for _, c := range []struct {
		lag           bool
		ttft, latency time.Duration
	}{
		{false, 20 * ms, 20*ms + 4*10100*time.Microsecond},
		{true, 20*ms + 10100*time.Microsecond, 20*ms + 5*10100*time.Microsecond},
	} {
		_, recs := collect(t, Config{Engine: engineConfig(engine.V0), Model: simpleModel, AsyncOutputLag: c.lag}, reqs)
		if len(recs) != 1 {
			t.Fatalf("lag %v: %d records", c.lag, len(recs))
		}
		r := recs[0]
		if r.TTFT != c.ttft || r.Latency != c.latency || len(r.ITL) != 4 {
			t.Errorf("lag %v: TTFT %v, latency %v, %d gaps; want %v, %v, 4", c.lag, r.TTFT, r.Latency, len(r.ITL), c.ttft, c.latency)
		}
		for _, g := range r.ITL {
			if g != 10100*time.Microsecond {
				t.Errorf("lag %v: gaps %v, want every one a decode step (10.1ms)", c.lag, r.ITL)
				break
			}
		}
	}
}

// A chat stream opens with vLLM's role chunk, sent with the first token:
// the client times the first token at it, so the first token's own chunk
// adds a zero gap and a record has one gap per output token. Nothing else
// moves: TTFT, latency and the other gaps are those of the completions
// stream, so TPOT is too.
func TestChatStreamRoleChunk(t *testing.T) {
	for _, maxTokens := range []int{1, 2, 5} {
		reqs := []workload.Request{{Index: 0, PromptLen: 100, MaxTokens: maxTokens}}
		cfg := Config{Engine: engineConfig(engine.V1), Model: simpleModel}
		_, plain := collect(t, cfg, reqs)
		cfg.ChatStream = true
		_, chat := collect(t, cfg, reqs)
		if len(plain) != 1 || len(chat) != 1 {
			t.Fatalf("max tokens %d: %d and %d records", maxTokens, len(plain), len(chat))
		}
		p, c := plain[0], chat[0]
		want := append([]time.Duration{0}, p.ITL...)
		if c.TTFT != p.TTFT || c.Latency != p.Latency || c.OutputLen != p.OutputLen || !slices.Equal(c.ITL, want) {
			t.Errorf("max tokens %d: chat TTFT %v, latency %v, %d tokens, gaps %v; want %v, %v, %d, %v",
				maxTokens, c.TTFT, c.Latency, c.OutputLen, c.ITL, p.TTFT, p.Latency, p.OutputLen, want)
		}
	}
}

// outputLoopModel is linearModel whose release streams from an API server
// of its own, working perChunk on each sampled token's chunk.
type outputLoopModel struct {
	linearModel
	perChunk time.Duration
}

func (m outputLoopModel) OutputLoopTime(s perf.StepShape) (all, firstTokens time.Duration) {
	return time.Duration(s.Decodes+s.PrefillsDone) * m.perChunk, time.Duration(s.PrefillsDone) * m.perChunk
}

// The API server's event loop, worked by hand with 10 ms steps, Ingest 5
// ms and Delivery 2 ms on V1. A is in the engine at 5 and prefills 5–15; B,
// sent at 8, is in at 13 and prefills with A's decode 15–25; A finishes
// 25–35 and B 35–45. The loop takes a step's chunks when it is through the
// earlier ones; the running requests' go out halfway through their work,
// a first token once the loop is through theirs and half of its own.
func TestOutputLoop(t *testing.T) {
	ms := time.Millisecond
	us := time.Microsecond
	reqs := []workload.Request{{Index: 0, PromptLen: 16, MaxTokens: 3}, {Index: 1, PromptLen: 16, MaxTokens: 3, Arrival: 8 * ms}}
	tests := []struct {
		name     string
		perChunk time.Duration
		want     [][3]any
	}{{
		// Loop 15–18 (A's first token out at 16.5), 25–31 (A's chunk at
		// 26.5, B's first token at 29.5), 35–41 (at 38), 45–48 (at 46.5).
		name: "keeps up", perChunk: 3 * ms,
		want: [][3]any{
			{18500 * us, 40 * ms, []time.Duration{10 * ms, 11500 * us}},
			{23500 * us, 40500 * us, []time.Duration{8500 * us, 8500 * us}},
		},
	}, {
		// Loop 15–21 (first token at 18), 25–37 (28; B's first at 34),
		// 37–49 (43), then 49–55 (52), four ms after B's last step
		// ended: the loop fell behind.
		name: "falls behind", perChunk: 6 * ms,
		want: [][3]any{
			{20 * ms, 45 * ms, []time.Duration{10 * ms, 15 * ms}},
			{28 * ms, 46 * ms, []time.Duration{9 * ms, 9 * ms}},
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			model := outputLoopModel{linearModel{fixed: 10 * ms}, tt.perChunk}
			checkTimelines(t, Config{Engine: engineConfig(engine.V1), Model: model, Ingest: 5 * ms, Delivery: 2 * ms}, reqs, tt.want)
		})
	}
	t.Run("one token", func(t *testing.T) {
		// C, sent with B, finishes on its first token: its last chunk goes
		// out with the first tokens, after A's (loop 25–34: A's chunk at
		// 26.5, halfway through its 3 ms; B's and C's first tokens at 31,
		// halfway through their 6).
		one := append(slices.Clone(reqs), workload.Request{Index: 2, PromptLen: 16, MaxTokens: 1, Arrival: 8 * ms})
		recs := recordsInOrder(t, Config{Engine: engineConfig(engine.V1), Model: outputLoopModel{linearModel{fixed: 10 * ms}, 3 * ms}, Ingest: 5 * ms, Delivery: 2 * ms}, one, 3)
		c := recs[2]
		if want := 31*ms + 2*ms - 8*ms; c.TTFT != want || c.Latency != want || c.OutputLen != 1 {
			t.Fatalf("one-token request: TTFT %v, latency %v, %d tokens; want %v for both", c.TTFT, c.Latency, c.OutputLen, want)
		}
		if recs[1].TTFT != c.TTFT {
			t.Fatalf("B's first token went out at %v after its send, C's at %v: the same step's", recs[1].TTFT, c.TTFT)
		}
	})
	t.Run("offline", func(t *testing.T) {
		// Without request latencies there is no API server to wait for.
		plain := linearModel{fixed: 10 * ms}
		_, want := collect(t, Config{Engine: engineConfig(engine.V1), Model: plain}, reqs)
		_, got := collect(t, Config{Engine: engineConfig(engine.V1), Model: outputLoopModel{plain, 3 * ms}}, reqs)
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("records (-without the loop +with it):\n%s", diff)
		}
	})
}
