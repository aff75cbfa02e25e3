package sim

import (
	"context"
	"encoding/json"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"

	gocmp "github.com/google/go-cmp/cmp"
	"github.com/servebench/servebench/engine"
	"github.com/servebench/servebench/metrics"
	"github.com/servebench/servebench/perf"
	"github.com/servebench/servebench/workload"
)

func runTopology(t *testing.T, cfg TopologyConfig, reqs []workload.Request) (*TopologyResult, []*metrics.Record) {
	t.Helper()
	return runTopologyStream(t, cfg, workload.StreamOf(reqs))
}

func runTopologyStream(t *testing.T, cfg TopologyConfig, reqs *workload.Stream) (*TopologyResult, []*metrics.Record) {
	t.Helper()
	var recs []*metrics.Record
	res, err := RunTopologyStream(context.Background(), cfg, reqs, func(r *metrics.Record) error {
		recs = append(recs, r)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return res, recs
}

// testLink: 1 GB/s and 1 ms setup, so transfer times are easy to add up.
var testLink = perf.KVLink{Name: "test", NICs: 1, NICBandwidth: 1e9, Setup: time.Millisecond}

func pdConfig(p, d int, link perf.KVLink) TopologyConfig {
	pool := func(n int) Pool {
		return Pool{Instances: n, Engine: engineConfig(engine.V1), Model: simpleModel, GPUs: 1}
	}
	return TopologyConfig{Kind: Disaggregated, Router: RouteRoundRobin, Prefill: pool(p), Decode: pool(d),
		Transfer: KVTransfer{Link: link, BytesPerToken: 1000, Ranks: 1, Handoff: HandoffSequential,
			HopCost: 2 * time.Millisecond, Layers: 10, Overflow: OverflowSpill, SpillBandwidth: 1e8}}
}

// One colocated replica is the single-engine simulator: same records,
// with and without a concurrency cap, with batches in flight on a
// pipeline, with the OpenAI server's request latencies (Ingest and
// Delivery; with a cap, a slot frees when the last chunk is received),
// with V0's async output processing (tokens one step late, the drain
// step when none follows; with PP it changes nothing), and with a timed
// client thread holding the slots under a cap.
func TestColocatedOneReplicaMatchesRun(t *testing.T) {
	for _, v := range []engine.Version{engine.V0, engine.V1} {
		for _, stages := range []int{1, 2} {
			for _, limit := range []int{0, 8} {
				// Ingest, Delivery and IngestSpacing (near the mean gap
				// between arrivals, so that close ones queue).
				for _, lat := range [][3]time.Duration{{0, 0, 0}, {9 * time.Millisecond, 2 * time.Millisecond, 0},
					{9 * time.Millisecond, 2 * time.Millisecond, 20*time.Millisecond + 7}} {
					for _, c := range []struct {
						lag    bool
						client ClientCost
						// loop: the API server's event loop takes 1 ms a
						// chunk, a step's worth at ten chunks, so it queues.
						loop bool
					}{{}, {lag: true}, {client: ClientCost{PerRequest: 3 * time.Millisecond, PerChunk: 400 * time.Microsecond}},
						{loop: true}, {lag: true, loop: true}, {loop: true, client: ClientCost{PerRequest: 3 * time.Millisecond, PerChunk: 400 * time.Microsecond}}} {
						lag := c.lag
						if lag && v != engine.V0 || c.client != (ClientCost{}) && (limit == 0 || lat[2] > 0) {
							continue // the client's thread times slots only under a cap
						}
						if c.loop && lat[1] == 0 {
							continue // no Delivery: no API server on the chunks' way
						}
						var simpleModel perf.StepModel = simpleModel
						if c.loop {
							simpleModel = outputLoopModel{simpleModel.(linearModel), time.Millisecond}
						}
						reqs := randomWorkload(7, 300, 20)
						ec := engineConfig(v)
						ec.PipelineParallel = stages
						_, want := collect(t, Config{Engine: ec, Model: simpleModel, MaxConcurrency: limit, Ingest: lat[0], Delivery: lat[1], IngestSpacing: lat[2], AsyncOutputLag: lag, Client: c.client}, reqs)
						cfg := TopologyConfig{Kind: Colocated, Router: RouteLeastLoaded, MaxConcurrency: limit, Ingest: lat[0], Delivery: lat[1], IngestSpacing: lat[2], Client: c.client,
							Replicas: Pool{Instances: 1, Engine: ec, Model: simpleModel, AsyncOutputLag: lag}}
						_, got := runTopology(t, cfg, reqs)
						// reflect.DeepEqual first: go-cmp's diff of 300 records
						// with their gaps was nearly all of this test's time.
						if !reflect.DeepEqual(want, got) {
							t.Fatalf("%s, pp %d, max concurrency %d, ingest %v, delivery %v, spacing %v, async output %v, client %v: records differ from Run (-Run +topology):\n%s",
								v, stages, limit, lat[0], lat[1], lat[2], lag, c.client, gocmp.Diff(want, got))
						}
						if lat[2] > 0 && !lag && stages == 1 && limit == 0 {
							if _, unspaced := collect(t, Config{Engine: ec, Model: simpleModel, MaxConcurrency: limit, Ingest: lat[0], Delivery: lat[1]}, reqs); reflect.DeepEqual(unspaced, want) {
								t.Fatalf("%s, pp %d, max concurrency %d: the spacing moved no record", v, stages, limit)
							}
						}
						if c.client != (ClientCost{}) && stages == 1 {
							// The client's thread must move Run's records.
							if _, untimed := collect(t, Config{Engine: ec, Model: simpleModel, MaxConcurrency: limit, Ingest: lat[0], Delivery: lat[1], IngestSpacing: lat[2]}, reqs); reflect.DeepEqual(untimed, want) {
								t.Fatalf("%s, max concurrency %d: the client's thread moved no record", v, limit)
							}
						}
						if c.loop && stages == 1 {
							// The loop must move Run's records.
							if _, unlooped := collect(t, Config{Engine: ec, Model: simpleModel.(outputLoopModel).linearModel, MaxConcurrency: limit, Ingest: lat[0], Delivery: lat[1], IngestSpacing: lat[2], AsyncOutputLag: lag, Client: c.client}, reqs); reflect.DeepEqual(unlooped, want) {
								t.Fatalf("%s, max concurrency %d: the API server's loop moved no record", v, limit)
							}
						}
						if lag && stages == 1 && limit == 0 {
							// The lag must move Run's records, or the
							// comparison says nothing about it.
							if _, unlagged := collect(t, Config{Engine: ec, Model: simpleModel, MaxConcurrency: limit, Ingest: lat[0], Delivery: lat[1], IngestSpacing: lat[2]}, reqs); reflect.DeepEqual(unlagged, want) {
								t.Fatalf("pp 1, max concurrency %d: async output processing moved no record", limit)
							}
						}
					}
				}
			}
		}
	}
}

// A lone request's TTFT, worked by hand: hop, prefill of 100 tokens
// (10 ms + 100×0.1 ms), setup 1 ms + 100 kB at 1 GB/s (0.1 ms), then the
// decode instance's first step: the prompt's last token only (10.1 ms).
// The KV is there 1.1 ms after the prefill; the sequential proxy's second
// hop takes 2 ms, so sequential decode waits for the hop, concurrent not.
func TestPDHandWorked(t *testing.T) {
	us := time.Microsecond
	reqs := []workload.Request{{Index: 0, PromptLen: 100, MaxTokens: 3}}
	for _, tt := range []struct {
		handoff Handoff
		ready   time.Duration // prefill done → decode admitted
	}{
		{HandoffSequential, 2000 * us},
		{HandoffConcurrent, 1100 * us},
	} {
		cfg := pdConfig(1, 1, testLink)
		cfg.Transfer.Handoff = tt.handoff
		var traces []TransferTrace
		cfg.OnTransfer = func(tr TransferTrace) { traces = append(traces, tr) }
		_, recs := runTopology(t, cfg, reqs)
		prefillDone := 2000*us + 20000*us
		wantTTFT := prefillDone + tt.ready + 10100*us
		if recs[0].TTFT != wantTTFT || !recs[0].Success || recs[0].OutputLen != 3 {
			t.Errorf("%s: TTFT %v, want %v; record %+v", tt.handoff, recs[0].TTFT, wantTTFT, recs[0])
		}
		tr := traces[0]
		if tr.PrefillDone != prefillDone || tr.KVArrived != prefillDone+1100*us || tr.BytesSent != 100000 {
			t.Errorf("%s: trace %+v", tt.handoff, tr)
		}
	}
}

// Prefill and decode instances run OpenAI servers too: a burst reaches
// the prefill engine IngestSpacing apart instead of in one step, and the
// decode engine admits the proxy's decode requests at least that far
// apart, though their KV arrives together.
func TestPDServersSpaceTheirRequests(t *testing.T) {
	const spacing = time.Millisecond
	var reqs []workload.Request
	for i := range 16 {
		reqs = append(reqs, workload.Request{Index: i, PromptLen: 100, MaxTokens: 3})
	}
	run := func(spacing time.Duration) (prefillSteps int, admitted []time.Duration, meanTTFT time.Duration) {
		cfg := pdConfig(1, 1, testLink)
		cfg.IngestSpacing = spacing
		var traces []TransferTrace
		cfg.OnTransfer = func(tr TransferTrace) { traces = append(traces, tr) }
		_, recs := runTopology(t, cfg, reqs)
		done := map[time.Duration]bool{}
		for _, tr := range traces {
			done[tr.PrefillDone] = true
			admitted = append(admitted, tr.DecodeAdmitted)
		}
		slices.Sort(admitted)
		for _, r := range recs {
			if !r.Success {
				t.Fatalf("spacing %v: request %d failed: %s", spacing, r.Index, r.Error)
			}
			meanTTFT += r.TTFT / time.Duration(len(recs))
		}
		return len(done), admitted, meanTTFT
	}
	steps0, admitted0, ttft0 := run(0)
	steps, admitted, ttft := run(spacing)
	if steps0 != 1 || steps < 2 {
		t.Errorf("prefill steps finishing prompts: %d unspaced, %d spaced; want one, then several", steps0, steps)
	}
	if admitted0[0] != admitted0[len(admitted0)-1] {
		t.Errorf("unspaced: decode admissions %v; want one instant (the KV arrives together)", admitted0)
	}
	for k := 1; k < len(admitted); k++ {
		if gap := admitted[k] - admitted[k-1]; gap < spacing {
			t.Errorf("spaced: decode admissions %v and %v are %v apart, want at least %v", admitted[k-1], admitted[k], gap, spacing)
		}
	}
	if ttft <= ttft0 {
		t.Errorf("mean TTFT %v spaced, %v unspaced: want the spacing to add to it", ttft, ttft0)
	}
}

// Every KV byte sent is received, per request; decode never admits or
// steps a request before its KV has arrived (spilled KV also waits for
// the host-to-GPU copy); with recompute, nothing is sent.
func TestPDConservationAndOrdering(t *testing.T) {
	for _, tt := range []struct {
		name     string
		p, d     int
		buffer   int64
		overflow Overflow
		overlap  bool
	}{
		{"1P1D unbounded", 1, 1, 0, OverflowSpill, false},
		{"2P1D layerwise", 2, 1, 0, OverflowSpill, true},
		{"2P2D spill", 2, 2, 600_000, OverflowSpill, false},
		{"1P2D recompute", 1, 2, 600_000, OverflowRecompute, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg := pdConfig(tt.p, tt.d, testLink)
			cfg.Transfer.BufferBytes = tt.buffer
			cfg.Transfer.Overflow = tt.overflow
			cfg.Transfer.LayerwiseOverlap = tt.overlap
			var traces []TransferTrace
			cfg.OnTransfer = func(tr TransferTrace) { traces = append(traces, tr) }
			reqs := randomWorkload(3, 400, 40)
			res, recs := runTopology(t, cfg, reqs)
			if len(recs) != len(reqs) || len(traces) != len(reqs) {
				t.Fatalf("%d records, %d traces for %d requests", len(recs), len(traces), len(reqs))
			}
			prompt := map[int]int{}
			for _, r := range recs {
				if !r.Success {
					t.Fatalf("request %d failed: %s", r.Index, r.Error)
				}
				prompt[r.Index] = r.PromptLen
			}
			var sent, received int64
			overflowed := 0
			for _, tr := range traces {
				want := int64(1000 * prompt[tr.Index])
				if tr.Recomputed {
					want = 0
					overflowed++
				}
				if tr.Spilled {
					overflowed++
				}
				if tr.BytesSent != want || tr.BytesReceived != tr.BytesSent {
					t.Errorf("request %d: sent %d, received %d, want %d", tr.Index, tr.BytesSent, tr.BytesReceived, want)
				}
				if tr.KVArrived < tr.PrefillDone || tr.DecodeAdmitted < tr.KVArrived || tr.DecodeFirstStepAt < tr.DecodeAdmitted {
					t.Errorf("request %d: prefill done %v, KV arrived %v, admitted %v, first decode step %v",
						tr.Index, tr.PrefillDone, tr.KVArrived, tr.DecodeAdmitted, tr.DecodeFirstStepAt)
				}
				sent += tr.BytesSent
				received += tr.BytesReceived
			}
			if sent != res.Transfers.BytesSent || received != res.Transfers.BytesReceived || sent != received {
				t.Errorf("totals: traces %d/%d, result %+v", sent, received, res.Transfers)
			}
			if tt.buffer > 0 {
				if overflowed == 0 || res.Transfers.MaxBufferBytes > tt.buffer {
					t.Errorf("buffer %d: %d overflows, max used %d", tt.buffer, overflowed, res.Transfers.MaxBufferBytes)
				}
			}
		})
	}
}

// Two requests prefilled in one step share the link: each gets half the
// bandwidth, so both arrive after setup + 2×bytes/bandwidth.
func TestPDConcurrentTransfersShareTheLink(t *testing.T) {
	reqs := []workload.Request{{Index: 0, PromptLen: 1000, MaxTokens: 2}, {Index: 1, PromptLen: 1000, MaxTokens: 2}}
	for _, nics := range []int{1, 2} {
		link := testLink
		link.NICs = nics
		cfg := pdConfig(1, 1, link)
		var traces []TransferTrace
		cfg.OnTransfer = func(tr TransferTrace) { traces = append(traces, tr) }
		runTopology(t, cfg, reqs)
		want := time.Millisecond + 2*time.Millisecond/time.Duration(nics) // 2 MB at nics GB/s
		for _, tr := range traces {
			if got := tr.KVArrived - tr.PrefillDone; got != want {
				t.Errorf("%d NICs: request %d transfer took %v, want %v", nics, tr.Index, got, want)
			}
		}
	}
}

// Layer-wise overlap hides the transfer behind the prefill step, all but
// the last layer.
func TestPDLayerwiseOverlapHidesTransfer(t *testing.T) {
	reqs := []workload.Request{{Index: 0, PromptLen: 1000, MaxTokens: 2}}
	slow := perf.KVLink{Name: "slow", NICs: 1, NICBandwidth: 1e8, Setup: time.Millisecond} // 10 ms of bytes
	transfer := map[bool]time.Duration{}
	for _, overlap := range []bool{false, true} {
		cfg := pdConfig(1, 1, slow)
		cfg.Transfer.LayerwiseOverlap = overlap
		cfg.OnTransfer = func(tr TransferTrace) { transfer[overlap] = tr.KVArrived - tr.PrefillDone }
		runTopology(t, cfg, reqs)
	}
	// The 110 ms prefill step hides everything but one of 10 layers.
	if transfer[false] != 11*time.Millisecond || transfer[true] != time.Millisecond {
		t.Errorf("transfer after prefill: %v without overlap, %v with", transfer[false], transfer[true])
	}
}

func topologyOutput(t *testing.T, cfg TopologyConfig, reqs []workload.Request) string {
	res, recs := runTopology(t, cfg, reqs)
	b, err := json.Marshal(struct {
		R    *TopologyResult
		Recs []*metrics.Record
	}{res, recs})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Same seed, byte-identical output; the random router follows the seed.
func TestTopologyDeterministic(t *testing.T) {
	reqs := randomWorkload(11, 300, 30)
	for _, cfg := range []TopologyConfig{
		{Kind: Colocated, Router: RouteRandom, Seed: 5, Replicas: Pool{Instances: 3, Engine: engineConfig(engine.V1), Model: simpleModel}},
		func() TopologyConfig { c := pdConfig(2, 3, testLink); c.Router = RouteRandom; c.Seed = 5; return c }(),
	} {
		a, b := topologyOutput(t, cfg, reqs), topologyOutput(t, cfg, reqs)
		if a != b {
			t.Fatalf("%s: two runs with one seed differ", cfg)
		}
		cfg.Seed = 6
		if topologyOutput(t, cfg, reqs) == a {
			t.Errorf("%s: seeds 5 and 6 route identically", cfg)
		}
	}
}

func TestRouterPolicies(t *testing.T) {
	reqs := randomWorkload(2, 200, 50)
	for _, p := range RouterPolicies() {
		policy, err := ParseRouterPolicy(p)
		if err != nil {
			t.Fatal(err)
		}
		cfg := TopologyConfig{Kind: Colocated, Router: policy, Replicas: Pool{Instances: 4, Engine: engineConfig(engine.V1), Model: simpleModel}}
		res, recs := runTopology(t, cfg, reqs)
		total := 0
		for _, in := range res.Instances {
			total += in.Requests
			if in.Requests == 0 {
				t.Errorf("%s: replica %d got no requests", p, in.Index)
			}
		}
		if total != len(reqs) || len(recs) != len(reqs) {
			t.Errorf("%s: routed %d, recorded %d of %d", p, total, len(recs), len(reqs))
		}
		if p == string(RouteRoundRobin) && res.Instances[0].Requests != 50 {
			t.Errorf("rr: replica 0 got %d of 200", res.Instances[0].Requests)
		}
	}
	if _, err := ParseRouterPolicy("fastest"); err == nil {
		t.Error("unknown policy accepted")
	}
}

// prefixWorkload is vLLM's prefix_repetition shape: prompts share one of
// numPrefixes prefixes, shuffled.
func prefixWorkload(seed uint64, n, numPrefixes, prefixLen, suffixLen int, rate float64) []workload.Request {
	rng := rand.New(rand.NewPCG(seed, 2))
	prefixes := make([][]int32, numPrefixes)
	for i := range prefixes {
		prefixes[i] = make([]int32, prefixLen)
		for j := range prefixes[i] {
			prefixes[i][j] = rng.Int32N(100000)
		}
	}
	reqs := make([]workload.Request, n)
	var at time.Duration
	for i := range reqs {
		ids := append([]int32(nil), prefixes[i%numPrefixes]...)
		for range suffixLen {
			ids = append(ids, rng.Int32N(100000))
		}
		reqs[i] = workload.Request{PromptIDs: ids, PromptLen: len(ids), MaxTokens: 32}
	}
	rng.Shuffle(n, func(i, j int) { reqs[i], reqs[j] = reqs[j], reqs[i] })
	for i := range reqs {
		at += time.Duration(rng.ExpFloat64() / rate * float64(time.Second))
		reqs[i].Index, reqs[i].Arrival = i, at
	}
	return reqs
}

// Prefix-aware routing keeps each prefix on one replica, so the fleet's
// prefix-cache hit rate rises over round-robin, which spreads every
// prefix over every replica (each replica's KV holds only part of them).
func TestPrefixAwareRaisesHitRate(t *testing.T) {
	reqs := prefixWorkload(1, 800, 16, 512, 64, 20)
	ec := engineConfig(engine.V1)
	ec.NumGPUBlocks = 400 // ≈ 11 prefixes' worth per replica: rr thrashes
	rate := map[RouterPolicy]float64{}
	for _, p := range []RouterPolicy{RouteRoundRobin, RoutePrefixAware} {
		cfg := TopologyConfig{Kind: Colocated, Router: p, Replicas: Pool{Instances: 4, Engine: ec, Model: simpleModel}}
		res, _ := runTopology(t, cfg, reqs)
		rate[p] = float64(res.PrefixHits) / float64(res.PrefixQueries)
	}
	t.Logf("prefix-cache hit rate: rr %.1f%%, prefix-aware %.1f%%", 100*rate[RouteRoundRobin], 100*rate[RoutePrefixAware])
	if rate[RoutePrefixAware] < rate[RouteRoundRobin]+0.1 {
		t.Errorf("hit rate: rr %.3f, prefix-aware %.3f; want prefix-aware ≥ rr + 0.1", rate[RouteRoundRobin], rate[RoutePrefixAware])
	}
}

func TestTopologyConfigErrors(t *testing.T) {
	good := pdConfig(1, 1, testLink)
	for name, mutate := range map[string]func(*TopologyConfig){
		"kind":      func(c *TopologyConfig) { c.Kind = "mesh" },
		"instances": func(c *TopologyConfig) { c.Decode.Instances = 0 },
		"link":      func(c *TopologyConfig) { c.Transfer.Link.NICBandwidth = 0 },
		"handoff":   func(c *TopologyConfig) { c.Transfer.Handoff = "psychic" },
		"overflow":  func(c *TopologyConfig) { c.Transfer.Overflow = "drop" },
		"bytes":     func(c *TopologyConfig) { c.Transfer.BytesPerToken = 0 },
	} {
		c := good
		mutate(&c)
		if _, err := RunTopology(context.Background(), c, randomWorkload(1, 3, 1), nil); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// The cap holds across a P/D fleet: at no instant are more requests in
// flight (from Start to Start+Latency) than MaxConcurrency.
func TestPDMaxConcurrency(t *testing.T) {
	cfg := pdConfig(2, 2, testLink)
	cfg.MaxConcurrency = 4
	_, recs := runTopology(t, cfg, randomWorkload(5, 200, 50))
	queued := 0
	for _, r := range recs {
		if r.Start > r.Scheduled {
			queued++
		}
	}
	if peak := peakInFlight(t, recs); peak != 4 || queued == 0 {
		t.Errorf("peak in flight %d (cap 4), %d requests queued by the cap", peak, queued)
	}
}

// Seeded random fleets and workloads: every request is recorded once,
// successfully, with its output complete; every transfer conserves its
// bytes and precedes the decode; decode never runs ahead of its KV.
func TestTopologyInvariantsRandomFleets(t *testing.T) {
	rng := rand.New(rand.NewPCG(42, 42))
	for trial := range 40 {
		ec := engineConfig([]engine.Version{engine.V0, engine.V1}[rng.IntN(2)])
		ec.EnableChunkedPrefill = rng.IntN(2) == 0
		ec.MaxNumSeqs = 4 + rng.IntN(64)
		ec.NumGPUBlocks = 300 + rng.IntN(2000) // small enough to preempt sometimes
		var cfg TopologyConfig
		if rng.IntN(3) == 0 {
			cfg = TopologyConfig{Kind: Colocated, Replicas: Pool{Instances: 1 + rng.IntN(4), Engine: ec, Model: simpleModel}}
		} else {
			cfg = pdConfig(1+rng.IntN(3), 1+rng.IntN(3), perf.KVLink{Name: "r", NICs: 1 + rng.IntN(2),
				NICBandwidth: float64(1+rng.IntN(20)) * 1e8, Setup: time.Duration(rng.IntN(3)) * time.Millisecond})
			cfg.Prefill.Engine, cfg.Decode.Engine = ec, ec
			cfg.Transfer.Handoff = []Handoff{HandoffSequential, HandoffConcurrent}[rng.IntN(2)]
			cfg.Transfer.LayerwiseOverlap = rng.IntN(2) == 0
			cfg.Transfer.BufferBytes = int64(rng.IntN(3)) * 300_000
			cfg.Transfer.Overflow = []Overflow{OverflowSpill, OverflowRecompute}[rng.IntN(2)]
		}
		cfg.Router = []RouterPolicy{RouteRoundRobin, RouteLeastLoaded, RoutePrefixAware, RouteRandom}[rng.IntN(4)]
		cfg.Seed = rng.Uint64()
		cfg.MaxConcurrency = []int{0, 0, 16}[rng.IntN(3)]
		var traces []TransferTrace
		cfg.OnTransfer = func(tr TransferTrace) { traces = append(traces, tr) }
		reqs := randomWorkload(rng.Uint64(), 150, float64(5+rng.IntN(60)))
		res, recs := runTopology(t, cfg, reqs)
		seen := map[int]bool{}
		for _, r := range recs {
			if seen[r.Index] || !r.Success || r.OutputLen != r.MaxTokens || len(r.ITL) != r.MaxTokens-1 || r.TTFT <= 0 {
				t.Fatalf("trial %d (%s): record %+v (seen before: %v)", trial, cfg, r, seen[r.Index])
			}
			seen[r.Index] = true
		}
		if len(recs) != len(reqs) {
			t.Fatalf("trial %d (%s): %d records for %d requests", trial, cfg, len(recs), len(reqs))
		}
		if cfg.Kind == Colocated {
			continue
		}
		for _, tr := range traces {
			if tr.BytesReceived != tr.BytesSent || tr.KVArrived < tr.PrefillDone || tr.DecodeFirstStepAt < tr.KVArrived {
				t.Fatalf("trial %d (%s): trace %+v", trial, cfg, tr)
			}
		}
		if len(traces) != len(reqs) || res.Transfers.BytesSent != res.Transfers.BytesReceived {
			t.Fatalf("trial %d (%s): %d traces, transfers %+v", trial, cfg, len(traces), res.Transfers)
		}
	}
}

// TestRunTopologyStreamMatchesRunTopology: a fleet fed one generated
// request at a time gives the built workload's records and result, for a
// colocated fleet with prefix-aware routing and a P/D fleet, while the
// prompt buffers it gives back are built into again (a buffer given back
// too early would change a later record).
func TestRunTopologyStreamMatchesRunTopology(t *testing.T) {
	spec := workload.DefaultSpec()
	spec.NumPrompts, spec.Seed = 600, 9
	spec.Random.InputLen, spec.Random.OutputLen, spec.Random.RangeRatio, spec.Random.PrefixLen = 120, 30, 0.5, 48
	colocated := TopologyConfig{Kind: Colocated, Router: RoutePrefixAware, Seed: 3,
		Replicas: Pool{Instances: 3, Engine: engineConfig(engine.V1), Model: simpleModel}}
	colocated.Replicas.Engine.EnablePrefixCaching = true
	pd := pdConfig(2, 2, testLink)
	pd.Router = RouteRandom
	pd.Prefill.Engine.EnablePrefixCaching = true
	for _, fleet := range []struct {
		name string
		cfg  TopologyConfig
	}{{"colocated", colocated}, {"pd", pd}} {
		name, cfg := fleet.name, fleet.cfg
		for _, rate := range []float64{math.Inf(1), 30} {
			arrivals := workload.Arrivals{Rate: rate, Burstiness: 1, Seed: 2}
			reqs := scheduledWorkload(t, spec, arrivals)
			wantRes, want := runTopology(t, cfg, reqs)
			stream, err := workload.NewStream(context.Background(), spec, arrivals, true)
			if err != nil {
				t.Fatal(err)
			}
			gotRes, got := runTopologyStream(t, cfg, stream)
			if diff := gocmp.Diff(want, got); diff != "" {
				t.Fatalf("%s at rate %v: records differ (-built +streamed):\n%s", name, rate, diff)
			}
			if diff := gocmp.Diff(wantRes, gotRes); diff != "" {
				t.Fatalf("%s at rate %v: results differ (-built +streamed):\n%s", name, rate, diff)
			}
		}
	}
}

// TestFlightWindow: the fleet's window finds every request in flight,
// forgets finished ones, and stays the size of the span in flight.
func TestFlightWindow(t *testing.T) {
	var w flightWindow
	var live []int // requests in flight
	flights := map[int]*flight{}
	rng := rand.New(rand.NewPCG(2, 2))
	for i := range 20000 {
		f := &flight{}
		w.add(f)
		live, flights[i] = append(live, i), f
		if len(live) > 50 || rng.IntN(3) == 0 {
			k := rng.IntN(len(live))
			w.remove(live[k])
			delete(flights, live[k])
			live = slices.Delete(live, k, k+1)
		}
		for _, k := range live {
			if w.at(k) != flights[k] {
				t.Fatalf("request %d: lost while in flight", k)
			}
		}
		if w.at(i+1) != nil || w.at(w.base-1) != nil {
			t.Fatalf("after request %d: found a request outside the window", i)
		}
	}
	if cap(w.live) > 1<<14 {
		t.Fatalf("window grew to %d slots for at most ~50 requests in flight", cap(w.live))
	}
}
