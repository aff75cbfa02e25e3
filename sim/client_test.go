package sim

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/servebench/servebench/engine"
	"github.com/servebench/servebench/metrics"
	"github.com/servebench/servebench/workload"
)

func TestApplyClient(t *testing.T) {
	ms := time.Millisecond
	type obs struct {
		ttft, latency time.Duration
		itl           []time.Duration
	}
	tests := []struct {
		name string
		cost ClientCost
		recs []metrics.Record
		want []obs
	}{{
		name: "zero cost leaves the server's timeline",
		recs: []metrics.Record{{Start: 0, TTFT: 10 * ms, Latency: 20 * ms, ITL: []time.Duration{5 * ms, 5 * ms}}},
		want: []obs{{ttft: 10 * ms, latency: 20 * ms, itl: []time.Duration{5 * ms, 5 * ms}}},
	}, {
		// send 0→1; chunks at 10, 15, 20 each take 1 ms with the client idle.
		name: "an idle client adds its own cost to each chunk",
		cost: ClientCost{PerRequest: ms, PerChunk: ms},
		recs: []metrics.Record{{Start: 0, TTFT: 10 * ms, Latency: 20 * ms, ITL: []time.Duration{5 * ms, 5 * ms}}},
		want: []obs{{ttft: 11 * ms, latency: 21 * ms, itl: []time.Duration{5 * ms, 5 * ms}}},
	}, {
		// sends 0→2 and 2→4; first chunks (server at 1 ms) 4→5, 5→6;
		// second chunks (server at 2 ms) 6→7, 7→8.
		name: "a busy client queues chunks behind sends",
		cost: ClientCost{PerRequest: 2 * ms, PerChunk: ms},
		recs: []metrics.Record{
			{Start: 0, TTFT: ms, Latency: 2 * ms, ITL: []time.Duration{ms}},
			{Start: 0, TTFT: ms, Latency: 2 * ms, ITL: []time.Duration{ms}},
		},
		want: []obs{
			{ttft: 5 * ms, latency: 7 * ms, itl: []time.Duration{2 * ms}},
			{ttft: 6 * ms, latency: 8 * ms, itl: []time.Duration{2 * ms}},
		},
	}, {
		// first request: send 0→1, chunk (server at 2 ms) 2→4; the second's
		// send (at 3 ms) waits, runs 4→5; its chunk (server at 4 ms) 5→7.
		name: "a later send waits for an earlier chunk",
		cost: ClientCost{PerRequest: ms, PerChunk: 2 * ms},
		recs: []metrics.Record{
			{Start: 0, TTFT: 2 * ms, Latency: 2 * ms},
			{Start: 3 * ms, TTFT: ms, Latency: ms},
		},
		want: []obs{
			{ttft: 4 * ms, latency: 4 * ms},
			{ttft: 4 * ms, latency: 4 * ms},
		},
	}, {
		name: "a failed request (no first token) is left alone and costs nothing",
		cost: ClientCost{PerRequest: ms, PerChunk: ms},
		recs: []metrics.Record{
			{Start: 0},
			{Start: 0, TTFT: 3 * ms, Latency: 3 * ms},
		},
		want: []obs{{}, {ttft: 4 * ms, latency: 4 * ms}},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			recs := make([]*metrics.Record, len(tt.recs))
			for i := range tt.recs {
				r := tt.recs[i]
				r.ITL = slices.Clone(r.ITL)
				recs[i] = &r
			}
			ApplyClient(recs, tt.cost)
			for i, w := range tt.want {
				got := obs{ttft: recs[i].TTFT, latency: recs[i].Latency, itl: recs[i].ITL}
				if got.ttft != w.ttft || got.latency != w.latency || !slices.Equal(got.itl, w.itl) {
					t.Errorf("request %d: got TTFT %v latency %v ITL %v, want %v %v %v",
						i, got.ttft, got.latency, got.itl, w.ttft, w.latency, w.itl)
				}
			}
		})
	}
}

// TestClientStage: without a cost a record reaches the sink as it comes;
// with one the stage holds them, and Flush passes every record on, timed
// through the client, returning the sink's first error.
func TestClientStage(t *testing.T) {
	const ms = time.Millisecond
	var got []*metrics.Record
	sink := func(rec *metrics.Record) error {
		got = append(got, rec)
		if len(got) == 1 {
			return errors.New("disk full")
		}
		return nil
	}
	direct := NewClientStage(ClientCost{}, sink)
	if direct.Holds() || direct.Add(&metrics.Record{TTFT: ms}) == nil || len(got) != 1 {
		t.Fatalf("zero cost: holds %v, %d records passed", direct.Holds(), len(got))
	}
	got = nil
	held := NewClientStage(ClientCost{PerChunk: ms}, sink)
	a := &metrics.Record{Start: 0, TTFT: 10 * ms, Latency: 10 * ms}
	b := &metrics.Record{Start: 0, TTFT: 10 * ms, Latency: 10 * ms}
	for _, r := range []*metrics.Record{a, b} {
		if err := held.Add(r); err != nil {
			t.Fatal(err)
		}
	}
	if !held.Holds() || len(got) != 0 {
		t.Fatalf("with a cost: holds %v, %d records passed before Flush", held.Holds(), len(got))
	}
	if err := held.Flush(); err == nil || len(got) != 2 || got[0] != a || got[1] != b {
		t.Fatalf("Flush: %v, %d records", err, len(got))
	}
	// Both first chunks arrive at 10 ms; the one thread takes 1 ms each.
	if a.TTFT != 11*ms || b.TTFT != 12*ms {
		t.Errorf("TTFT %v and %v, want 11ms and 12ms", a.TTFT, b.TTFT)
	}
}

// A replayed reply whose client recorded no first token is reported that
// way, held or passed at once; the others keep what the client timed.
func TestClientStageNoFirstToken(t *testing.T) {
	const ms = time.Millisecond
	lengths := []workload.RequestLengths{{Input: 5, Output: 0, NoFirstToken: true}, {Input: 5, Output: 3}, {Input: 5, Output: 0}}
	for _, cost := range []ClientCost{{}, {PerChunk: ms}} {
		var got []*metrics.Record
		stage := NewClientStage(cost, func(rec *metrics.Record) error { got = append(got, rec); return nil })
		stage.NoFirstTokenFrom(lengths)
		for i := range lengths {
			rec := &metrics.Record{Index: i, Success: true, TTFT: 10 * ms, Latency: 15 * ms, OutputLen: 1, FirstChunkTokens: 1,
				ITL: []time.Duration{5 * ms}, GeneratedText: "x"}
			if err := stage.Add(rec); err != nil {
				t.Fatal(err)
			}
		}
		if err := stage.Flush(); err != nil {
			t.Fatal(err)
		}
		if len(got) != 3 {
			t.Fatalf("cost %+v: %d records", cost, len(got))
		}
		if r := got[0]; r.TTFT != 0 || r.OutputLen != 0 || r.ITL != nil || r.FirstChunkTokens != 0 || r.GeneratedText != "" || r.Latency < 15*ms {
			t.Errorf("cost %+v: reply with no first token %+v, want TTFT 0, no output, its latency kept", cost, r)
		}
		for _, r := range got[1:] {
			if r.TTFT < 10*ms || r.OutputLen != 1 || len(r.ITL) != 1 {
				t.Errorf("cost %+v: request %d %+v changed", cost, r.Index, r)
			}
		}
	}
}

// peakInFlight is the "Peak concurrent requests" the records report.
func peakInFlight(t *testing.T, recs []*metrics.Record) int {
	t.Helper()
	r := metrics.NewRecorder(metrics.Options{}, nil, metrics.KeepNone)
	for _, rec := range recs {
		if err := r.Add(rec); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	return r.Summary(r.LastEnd()).MaxConcurrentRequests
}

// A capped client that is slower than the server holds each slot until
// its one thread has read the request's last chunk, as vLLM's benchmark
// client leaves its semaphore only after timing the reply: the requests
// in flight as the client observes them never exceed the cap, and reach
// it. Every way the engine hands out tokens is covered (chunks one step
// late, multi-step groups, virtual engines, the chat role chunk), and the
// fleets too.
func TestTimedClientKeepsItsConcurrencyCap(t *testing.T) {
	const limit = 8
	ms := time.Millisecond
	slow := ClientCost{PerRequest: 3 * ms, PerChunk: 400 * time.Microsecond}
	lat := func(c Config) Config {
		c.Ingest, c.Delivery = 9*ms, 2*ms
		return c
	}
	v0, v1 := engineConfig(engine.V0), engineConfig(engine.V1)
	pp := engineConfig(engine.V0)
	pp.PipelineParallel = 2
	reqs := randomWorkload(11, 300, 200)
	// run simulates with the client's thread timing the slots (client) or
	// not, under the cap.
	type run func(ctx context.Context, client ClientCost, emit func(*metrics.Record) error) error
	single := func(c Config) run {
		return func(ctx context.Context, client ClientCost, emit func(*metrics.Record) error) error {
			c.Model, c.MaxConcurrency, c.Client = simpleModel, limit, client
			_, err := Run(ctx, c, reqs, emit)
			return err
		}
	}
	fleet := func(c TopologyConfig) run {
		return func(ctx context.Context, client ClientCost, emit func(*metrics.Record) error) error {
			c.MaxConcurrency, c.Client = limit, client
			_, err := RunTopology(ctx, c, reqs, emit)
			return err
		}
	}
	tests := []struct {
		name string
		run  run
	}{
		{"v1", single(Config{Engine: v1})},
		{"v1 with request latencies", single(lat(Config{Engine: v1}))},
		{"v1 chat", single(lat(Config{Engine: v1, ChatStream: true, ChatPrepare: 2 * ms}))},
		{"v0 async output", single(lat(Config{Engine: v0, AsyncOutputLag: true}))},
		{"v0 multi-step", single(lat(Config{Engine: v0, SchedulerSteps: 4, AsyncOutputLag: true, MultiStepStream: true}))},
		{"v0 virtual engines", single(lat(Config{Engine: pp}))},
		{"colocated fleet", fleet(TopologyConfig{Kind: Colocated, Router: RouteLeastLoaded, Ingest: 9 * ms, Delivery: 2 * ms,
			Replicas: Pool{Instances: 2, Engine: v1, Model: simpleModel}})},
		{"pd fleet", fleet(pdConfig(1, 2, testLink))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// The records as the client observes them, with the slots timed
			// by its thread (timed) or by the server's last chunk.
			observed := func(timed bool) []*metrics.Record {
				var recs []*metrics.Record
				stage := NewClientStage(slow, func(r *metrics.Record) error { recs = append(recs, r); return nil })
				var slots ClientCost
				if timed {
					slots = slow
				}
				if err := tt.run(t.Context(), slots, stage.Add); err != nil {
					t.Fatal(err)
				}
				if err := stage.Flush(); err != nil {
					t.Fatal(err)
				}
				return recs
			}
			if peak := peakInFlight(t, observed(true)); peak != limit {
				t.Errorf("peak in flight as the client observes it %d, cap %d", peak, limit)
			}
			// The client's cost must bind, or the cap says nothing.
			if peak := peakInFlight(t, observed(false)); peak <= limit {
				t.Errorf("slots freed at the server's last chunk peak at %d, within the cap %d: the test cannot fail", peak, limit)
			}
		})
	}
}

// With a cap of one, the next request goes out the moment the client's
// thread has read the last chunk of the one before: its start is that
// request's end as the client observed it, to the nanosecond, and later
// than the server's last chunk.
func TestTimedClientFreesTheSlotWhenItHasReadTheReply(t *testing.T) {
	ms := time.Millisecond
	cost := ClientCost{PerRequest: 3 * ms, PerChunk: 2 * ms}
	reqs := []workload.Request{
		{Index: 0, PromptLen: 16, MaxTokens: 3},
		{Index: 1, PromptLen: 16, MaxTokens: 3},
		{Index: 2, PromptLen: 16, MaxTokens: 1},
	}
	cfg := Config{Engine: engineConfig(engine.V1), Model: simpleModel, MaxConcurrency: 1, Delivery: 2 * ms, Client: cost}
	var server, observed []*metrics.Record
	stage := NewClientStage(cost, func(r *metrics.Record) error { observed = append(observed, r); return nil })
	if _, err := Run(t.Context(), cfg, reqs, func(r *metrics.Record) error {
		c := *r
		server = append(server, &c)
		return stage.Add(r)
	}); err != nil {
		t.Fatal(err)
	}
	if err := stage.Flush(); err != nil {
		t.Fatal(err)
	}
	if len(observed) != 3 {
		t.Fatalf("%d records", len(observed))
	}
	// Request 0: sent 0→3 ms; steps end at 11.6 (prefill of 16 tokens),
	// 21.7 and 31.8 ms; its chunks reach the client 2 ms later and take
	// it 13.6→15.6, 23.7→25.7 and 33.8→35.8 ms.
	if got, want := observed[1].Start, 35800*time.Microsecond; got != want {
		t.Errorf("request 1 starts at %v, want %v", got, want)
	}
	for i := 1; i < 3; i++ {
		prev := observed[i-1]
		if got, want := observed[i].Start, prev.Start+prev.Latency; got != want {
			t.Errorf("request %d starts at %v, want %v (request %d's end as the client read it)", i, got, want, i-1)
		}
		if serverEnd := server[i-1].Start + server[i-1].Latency; observed[i].Start <= serverEnd {
			t.Errorf("request %d starts at %v, not after request %d's last chunk left the server at %v", i, observed[i].Start, i-1, serverEnd)
		}
	}
}
