package serve

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/servebench/servebench/engine"
	"github.com/servebench/servebench/metrics"
	"github.com/servebench/servebench/perf"
	"github.com/servebench/servebench/sim"
	"github.com/servebench/servebench/workload"
)

// timingWorkload is a seeded open-loop workload with shared prompt prefixes
// (prefix-cache hits) that overloads a small KV cache (queueing and
// preemption). Arrivals are whole milliseconds plus a distinct nanosecond
// offset per request, and step times are whole microseconds, so no arrival
// coincides with a step boundary (where the order of simultaneous events
// would be arbitrary).
func timingWorkload(n int) []workload.Request {
	rng := rand.New(rand.NewPCG(11, 12))
	shared := make([]int32, 256)
	for i := range shared {
		shared[i] = 1000 + rng.Int32N(20000)
	}
	reqs := make([]workload.Request, n)
	var at time.Duration
	for i := range reqs {
		at += time.Duration(1+rng.IntN(6)) * time.Millisecond
		plen := 20 + rng.IntN(400)
		ids := make([]int32, plen)
		for j := range ids {
			if j < len(shared) && i%3 == 0 {
				ids[j] = shared[j]
			} else {
				ids[j] = 1000 + rng.Int32N(20000)
			}
		}
		reqs[i] = workload.Request{Index: i, PromptIDs: ids, PromptLen: plen,
			MaxTokens: 2 + rng.IntN(60), Arrival: at + time.Duration(i+1)}
	}
	return reqs
}

type observed struct {
	sent time.Duration // when the client sent it (later than its arrival under a concurrency cap)
	ttft time.Duration
	e2e  time.Duration
	itl  []time.Duration
	out  int
	lag  time.Duration // the largest gap between a token's due instant and its hand-off
}

// TestDriverMatchesSim runs the real-time driver inside a synctest bubble
// (a fake clock, so timer latency is zero) and checks that every request's
// TTFT and every inter-token gap equal, to the nanosecond, what sim computes
// on its virtual clock for the same engine, step model and arrivals: the
// wall-clock driver adds nothing to the model's timeline.
func TestDriverMatchesSim(t *testing.T) {
	for _, tc := range []struct {
		name    string
		version engine.Version
		mode    engine.PreemptionMode
		chunked bool
		stages  int // pipeline_parallel_size: batches in flight
		// lat adds the server's request latencies (Config.Ingest,
		// Delivery), with odd nanoseconds so that no shifted event
		// coincides with a step boundary.
		lat bool
		// maxConcurrency caps the requests in flight as bench does: a
		// request holds its slot until its last chunk is received.
		maxConcurrency int
		// lag: V0's async output processing (Config.AsyncOutputLag),
		// tokens out one step late; with PP it must change nothing.
		lag bool
		// chat: the server prepares chat requests one at a time
		// (Config.ChatPrepare; then ChatIngest), and the requests are chat requests
		// ("chat") or completions, which keep their place in its loop
		// but prepare nothing ("completions": timed as without it).
		chat string
		// loop: the API server's event loop takes this long a chunk
		// (perf.OutputLoop), more than a step's worth of the test's
		// batches, so it falls behind.
		loop time.Duration
	}{
		{"v1", engine.V1, "", true, 1, false, 0, false, "", 0},
		{"v0", engine.V0, "", false, 1, false, 0, false, "", 0},
		{"v0-chunked", engine.V0, "", true, 1, false, 0, false, "", 0},
		{"v0-swap", engine.V0, engine.PreemptSwap, false, 1, false, 0, false, "", 0},
		{"v1-pp2", engine.V1, "", true, 2, false, 0, false, "", 0},
		{"v0-pp2", engine.V0, "", false, 2, false, 0, false, "", 0},
		{"v0-chunked-pp3", engine.V0, "", true, 3, false, 0, false, "", 0},
		{"v1-latencies", engine.V1, "", true, 1, true, 0, false, "", 0},
		{"v0-latencies", engine.V0, "", false, 1, true, 0, false, "", 0},
		{"v0-chunked-pp3-latencies", engine.V0, "", true, 3, true, 0, false, "", 0},
		{"v1-latencies-cap", engine.V1, "", true, 1, true, 24, false, "", 0},
		{"v0-latencies-cap", engine.V0, "", false, 1, true, 24, false, "", 0},
		{"v0-async-output", engine.V0, "", false, 1, false, 0, true, "", 0},
		{"v0-chunked-swap-async-output", engine.V0, engine.PreemptSwap, true, 1, false, 0, true, "", 0},
		{"v0-async-output-latencies-cap", engine.V0, "", false, 1, true, 24, true, "", 0},
		{"v0-pp2-async-output", engine.V0, "", false, 2, false, 0, true, "", 0},
		{"v1-chat-latencies", engine.V1, "", true, 1, true, 0, false, "chat", 0},
		{"v0-chat-latencies-cap", engine.V0, "", false, 1, true, 24, false, "chat", 0},
		{"v0-chunked-pp3-chat", engine.V0, "", true, 3, false, 0, false, "chat", 0},
		{"v1-latencies-completions-to-chat-server", engine.V1, "", true, 1, true, 0, false, "completions", 0},
		{"v1-latencies-loop", engine.V1, "", true, 1, true, 0, false, "", 120*time.Microsecond + 1},
		{"v1-latencies-cap-loop", engine.V1, "", true, 1, true, 24, false, "", 120*time.Microsecond + 1},
		{"v0-async-output-latencies-cap-loop", engine.V0, "", false, 1, true, 24, true, "", 120*time.Microsecond + 1},
		{"v1-pp2-latencies-loop", engine.V1, "", true, 2, true, 0, false, "", 120*time.Microsecond + 1},
		{"v1-chat-latencies-loop", engine.V1, "", true, 1, true, 0, false, "chat", 120*time.Microsecond + 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ec := testEngineConfig()
			ec.Version = tc.version
			ec.NumGPUBlocks = 160
			ec.MaxNumSeqs = 32
			if tc.version == engine.V0 {
				ec.EnablePrefixCaching = false
				ec.EnableChunkedPrefill = tc.chunked
				ec.PreemptionMode = tc.mode
				ec.MaxNumBatchedTokens = 4096
				if tc.chunked {
					ec.MaxNumBatchedTokens = 512
				}
				ec.NumGPUBlocks = 72
				ec.NumCPUBlocks = 256
				ec.Watermark = 0.01
			}
			ec.PipelineParallel = tc.stages
			if tc.stages > 1 && tc.version == engine.V0 {
				ec.NumGPUBlocks *= tc.stages // each virtual engine gets its share
			}
			var model perf.StepModel = linearModel{fixed: 3 * time.Millisecond, perToken: 7 * time.Microsecond}
			if tc.loop > 0 {
				model = loopLinearModel{model.(linearModel), tc.loop}
			}
			reqs := timingWorkload(120)

			var ingest, delivery, chat, chatIngest time.Duration
			if tc.lat {
				ingest, delivery = 9300*time.Microsecond+17, 1850*time.Microsecond+3
			}
			if tc.chat != "" {
				// Above the mean gap between arrivals, so the loop queues.
				chat = 4*time.Millisecond + 13
				chatIngest = 2*time.Millisecond + 7
			}
			simChat, simChatIngest := chat, chatIngest
			if tc.chat == "completions" {
				simChat, simChatIngest = 0, 0
			}
			want := map[int]*metrics.Record{}
			simCfg := sim.Config{Engine: ec, Model: model, Ingest: ingest, Delivery: delivery, ChatPrepare: simChat, ChatIngest: simChatIngest, MaxConcurrency: tc.maxConcurrency, AsyncOutputLag: tc.lag}
			_, err := sim.Run(context.Background(), simCfg, reqs, func(r *metrics.Record) error {
				want[r.Index] = r
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if tc.loop > 0 {
				unlooped := simCfg
				unlooped.Model = model.(loopLinearModel).linearModel
				moved := false
				for i, r := range simRecords(t, unlooped, reqs) {
					moved = moved || r.TTFT != want[i].TTFT
				}
				if !moved {
					t.Fatal("the API server's loop moved no TTFT in sim")
				}
			}

			cfg := testConfig(t)
			cfg.Engine, cfg.StepModel, cfg.Ingest, cfg.Delivery, cfg.AsyncOutputLag = ec, model, ingest, delivery, tc.lag
			cfg.ChatPrepare, cfg.ChatIngest = chat, chatIngest
			got, snap := runInBubble(t, cfg, reqs, tc.maxConcurrency, tc.chat == "chat")
			if snap.Engine.Preemptions == 0 {
				t.Errorf("the workload caused no preemption; make the KV cache smaller")
			}
			for i, w := range want {
				g := got[i]
				if !w.Success {
					t.Fatalf("sim failed request %d: %s", i, w.Error)
				}
				if g.out != w.OutputLen || g.ttft != w.TTFT || g.e2e != w.Latency {
					t.Errorf("request %d: serve TTFT %v, E2E %v, %d tokens; sim TTFT %v, E2E %v, %d tokens", i, g.ttft, g.e2e, g.out, w.TTFT, w.Latency, w.OutputLen)
				}
				if g.sent != w.Start {
					t.Errorf("request %d: serve sent it at %v, sim at %v", i, g.sent, w.Start)
				}
				if diff := cmp.Diff(w.ITL, g.itl); diff != "" {
					t.Errorf("request %d ITL (-sim +serve):\n%s", i, diff)
				}
				if g.lag != 0 {
					t.Errorf("request %d: tokens handed over %v after due under a fake clock", i, g.lag)
				}
			}
			if len(got) != len(want) {
				t.Errorf("serve finished %d requests, sim %d", len(got), len(want))
			}
		})
	}
}

// TestDriverMatchesSimIngestSpacing: bursts of completions requests, which
// the server hands on one at a time (Config.IngestSpacing), are timed by
// serve as sim times them, to the nanosecond, on V0 and V1, with a
// concurrency cap and with completions sent to a server that prepares
// chat requests; and the spacing changes sim's timeline, so the
// comparison is not vacuous.
func TestDriverMatchesSimIngestSpacing(t *testing.T) {
	base := timingWorkload(60)
	reqs := make([]workload.Request, len(base))
	for i := range base {
		reqs[i] = base[i]
		// Bursts of six, 150 ms apart, each request a few ns after the
		// one before it.
		reqs[i].Arrival = time.Duration(i/6)*150*time.Millisecond + time.Duration(i%6+1)
	}
	for _, tc := range []struct {
		name           string
		version        engine.Version
		maxConcurrency int
		chatServer     bool
	}{
		{"v0", engine.V0, 0, false},
		{"v1-cap", engine.V1, 4, false},
		{"v1", engine.V1, 0, false},
		{"v0-completions-to-chat-server", engine.V0, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ec := testEngineConfig()
			ec.Version = tc.version
			ec.MaxNumSeqs = 32
			if tc.version == engine.V0 {
				ec.EnablePrefixCaching = false
				ec.EnableChunkedPrefill = false
				ec.MaxNumBatchedTokens = 4096
			}
			model := linearModel{fixed: 3 * time.Millisecond, perToken: 7 * time.Microsecond}
			// A spacing near the step time, so that the hand-offs it delays
			// cross step boundaries.
			ingest, delivery, spacing := 9300*time.Microsecond+17, 1850*time.Microsecond+3, 2*time.Millisecond+11
			simCfg := sim.Config{Engine: ec, Model: model, Ingest: ingest, Delivery: delivery, IngestSpacing: spacing, MaxConcurrency: tc.maxConcurrency}
			want := simRecords(t, simCfg, reqs)
			unspaced, moved := simCfg, false
			unspaced.IngestSpacing = 0
			if _, err := sim.Run(context.Background(), unspaced, reqs, func(r *metrics.Record) error {
				moved = moved || r.TTFT != want[r.Index].TTFT
				return nil
			}); err != nil || !moved {
				t.Fatalf("the spacing moved no request's TTFT (%v)", err)
			}

			cfg := testConfig(t)
			cfg.Engine, cfg.StepModel, cfg.Ingest, cfg.Delivery, cfg.IngestSpacing = ec, model, ingest, delivery, spacing
			if tc.chatServer {
				cfg.ChatPrepare, cfg.ChatIngest = 4*time.Millisecond+13, 2*time.Millisecond+7
			}
			got, _ := runInBubble(t, cfg, reqs, tc.maxConcurrency, false)
			checkServeMatchesSim(t, got, want)
		})
	}
}

// runInBubble drives a Server in a synctest bubble as a client would: each
// request is sent at its arrival offset (or, under maxConcurrency, once a
// slot is free) and consumed as its client receives its chunks.
func runInBubble(t *testing.T, cfg Config, reqs []workload.Request, maxConcurrency int, chat bool) (map[int]observed, Snapshot) {
	t.Helper()
	results := map[int]observed{}
	var snap Snapshot
	synctest.Test(t, func(t *testing.T) {
		s, stop := startLoop(t, cfg, nil)
		var slots chan struct{}
		if maxConcurrency > 0 {
			slots = make(chan struct{}, maxConcurrency)
		}
		var mu sync.Mutex
		var wg sync.WaitGroup
		for _, w := range reqs {
			time.Sleep(w.Arrival - s.now())
			if slots != nil {
				slots <- struct{}{}
			}
			sent := s.now()
			req := engine.Request{ID: uint64(w.Index) + 1, Prompt: w.PromptIDs, PromptLen: len(w.PromptIDs), MaxTokens: w.MaxTokens, Arrival: sent}
			st := newStream(req, w.MaxTokens, true, 0)
			st.chat = chat
			if err := s.submit(st); err != nil {
				t.Fatal(err)
			}
			wg.Go(func() {
				o := consume(s, st, sent)
				if slots != nil {
					<-slots
				}
				mu.Lock()
				results[w.Index] = o
				mu.Unlock()
			})
		}
		wg.Wait()
		var err error
		snap, err = s.Snapshot(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if !snap.Idle || snap.Engine.GPUBlocksUsed != 0 && !cfg.Engine.EnablePrefixCaching || snap.Requests != 0 {
			t.Errorf("after all requests: %+v", snap)
		}
		stop()
	})
	return results, snap
}

// consume reads a request's stream as its handler does and times each
// token by when the model says its client receives it (its step's end plus
// Delivery); lag is how much later the hand-off really came.
func consume(s *Server, st *stream, sent time.Duration) observed {
	o := observed{sent: sent}
	rcv := newReceiver(s, st)
	var last time.Duration
	for {
		rcv.wait()
		batches, _, done, err := rcv.take()
		now := s.now()
		for _, b := range batches {
			// A batch is one chunk (V0's RequestOutput of a step or a
			// multi-step group), timed as vLLM's client times chunks.
			received := b.due + rcv.delivery
			if o.out == 0 {
				o.ttft = received - sent
			} else {
				o.itl = append(o.itl, received-last)
			}
			o.out += b.n
			last = received
			o.lag = max(o.lag, now-received)
		}
		if done {
			if err != nil {
				panic(fmt.Sprintf("request %d failed: %v", st.req.ID, err))
			}
			o.e2e = last - sent
			return o
		}
	}
}

// hostLinearModel is linearModel with vllm.HostStepModel's two extra
// answers: steps of more than hostAbove sequences are host-bound, and a
// step's launch takes launch plus perSeq per sequence.
type hostLinearModel struct {
	linearModel
	hostAbove      int
	launch, perSeq time.Duration
}

func (m hostLinearModel) StepTimeHost(s perf.StepShape) (time.Duration, bool) {
	return m.StepTime(s), s.Prefills+s.Decodes > m.hostAbove
}

func (m hostLinearModel) LaunchTime(s perf.StepShape) time.Duration {
	return m.launch + time.Duration(s.Prefills+s.Decodes)*m.perSeq
}

// loopLinearModel and loopLaunchingModel stream through an API server
// whose event loop takes perChunk a sampled token's chunk
// (perf.OutputLoopModel).
type loopLinearModel struct {
	linearModel
	perChunk time.Duration
}

func (m loopLinearModel) OutputLoopTime(s perf.StepShape) (all, firstTokens time.Duration) {
	return chunkWork(s, m.perChunk)
}

type loopLaunchingModel struct {
	hostLinearModel
	perChunk time.Duration
}

func (m loopLaunchingModel) OutputLoopTime(s perf.StepShape) (all, firstTokens time.Duration) {
	return chunkWork(s, m.perChunk)
}

func chunkWork(s perf.StepShape, perChunk time.Duration) (all, firstTokens time.Duration) {
	return time.Duration(s.Decodes+s.PrefillsDone) * perChunk, time.Duration(s.PrefillsDone) * perChunk
}

// TestDriverMatchesSimMultiStep: V0's multi-step groups
// (Config.SchedulerSteps) are served as sim times them, to the
// nanosecond: groups that admit nothing until they end and whose tokens
// go out together; with async output processing, lagged outputs handed on
// as a group's intermediate step is launched, finished requests early
// when that step is host-bound, and every step streamed
// (MultiStepStream); with chunked prefill and with request latencies and
// a concurrency cap. Groups must change sim's timeline, so the
// comparison is not vacuous.
func TestDriverMatchesSimMultiStep(t *testing.T) {
	reqs := timingWorkload(80)
	base := linearModel{fixed: 3 * time.Millisecond, perToken: 7 * time.Microsecond}
	launching := hostLinearModel{linearModel: base, hostAbove: 6, launch: 400*time.Microsecond + 3, perSeq: 90*time.Microsecond + 1}
	for _, tc := range []struct {
		name           string
		model          perf.StepModel
		lag, stream    bool
		chunked, lat   bool
		maxConcurrency int
	}{
		{"groups", base, false, false, false, false, 0},
		{"groups-async-output", base, true, false, false, false, 0},
		{"groups-async-output-launch-host-bound", launching, true, false, false, false, 0},
		{"groups-async-output-stream", launching, true, true, false, false, 0},
		{"groups-chunked-async-output", launching, true, false, true, false, 0},
		{"groups-latencies-cap", base, false, false, false, true, 12},
		{"groups-async-output-latencies-cap", launching, true, false, false, true, 12},
		{"groups-latencies-cap-loop", loopLinearModel{base, 120*time.Microsecond + 1}, false, false, false, true, 12},
		{"groups-async-output-latencies-cap-loop", loopLaunchingModel{launching, 120*time.Microsecond + 1}, true, false, false, true, 12},
		{"groups-async-output-stream-latencies-loop", loopLaunchingModel{launching, 120*time.Microsecond + 1}, true, true, false, true, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ec := testEngineConfig()
			ec.Version = engine.V0
			ec.MaxNumSeqs = 32
			ec.EnablePrefixCaching = false
			ec.EnableChunkedPrefill = tc.chunked
			ec.MaxNumBatchedTokens = 4096
			if tc.chunked {
				ec.MaxNumBatchedTokens = 512
			}
			var ingest, delivery time.Duration
			if tc.lat {
				ingest, delivery = 9300*time.Microsecond+17, 1850*time.Microsecond+3
			}
			const steps = 4
			simCfg := sim.Config{Engine: ec, Model: tc.model, SchedulerSteps: steps, Ingest: ingest, Delivery: delivery,
				MaxConcurrency: tc.maxConcurrency, AsyncOutputLag: tc.lag, MultiStepStream: tc.stream}
			want := simRecords(t, simCfg, reqs)
			single, moved := simCfg, false
			single.SchedulerSteps = 1
			if _, err := sim.Run(context.Background(), single, reqs, func(r *metrics.Record) error {
				moved = moved || !slices.Equal(r.ITL, want[r.Index].ITL)
				return nil
			}); err != nil || !moved {
				t.Fatalf("multi-step groups moved no request's ITLs (%v)", err)
			}

			cfg := testConfig(t)
			cfg.Engine, cfg.StepModel, cfg.Ingest, cfg.Delivery = ec, tc.model, ingest, delivery
			cfg.SchedulerSteps, cfg.AsyncOutputLag, cfg.MultiStepStream = steps, tc.lag, tc.stream
			got, _ := runInBubble(t, cfg, reqs, tc.maxConcurrency, false)
			checkServeMatchesSim(t, got, want)
		})
	}
}

// simRecords runs sim on reqs and returns its records by request index.
func simRecords(t *testing.T, cfg sim.Config, reqs []workload.Request) map[int]*metrics.Record {
	t.Helper()
	want := map[int]*metrics.Record{}
	if _, err := sim.Run(context.Background(), cfg, reqs, func(r *metrics.Record) error {
		want[r.Index] = r
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return want
}

// checkServeMatchesSim requires every request serve finished to have been
// sent, timed and sized as sim's record of it says, to the nanosecond.
func checkServeMatchesSim(t *testing.T, got map[int]observed, want map[int]*metrics.Record) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("serve finished %d requests, sim %d", len(got), len(want))
	}
	for i, w := range want {
		g := got[i]
		if !w.Success {
			t.Fatalf("sim failed request %d: %s", i, w.Error)
		}
		if g.out != w.OutputLen || g.ttft != w.TTFT || g.e2e != w.Latency || g.sent != w.Start {
			t.Errorf("request %d: serve sent %v, TTFT %v, E2E %v, %d tokens; sim %v, %v, %v, %d", i, g.sent, g.ttft, g.e2e, g.out, w.Start, w.TTFT, w.Latency, w.OutputLen)
		}
		if diff := cmp.Diff(w.ITL, g.itl); diff != "" {
			t.Errorf("request %d ITL (-sim +serve):\n%s", i, diff)
		}
	}
}
