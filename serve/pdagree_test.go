package serve

import (
	"context"
	"math"
	"net/http"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/servebench/servebench/metrics"
	"github.com/servebench/servebench/perf"
	"github.com/servebench/servebench/sim"
	"github.com/servebench/servebench/workload"
)

// pdAgreementEnv turns on the strict sim-vs-serve agreement check (5% on
// median TTFT and TPOT, more requests). CI runs a looser bound: two shared
// cores delay the emulator's wall-clock steps by more than 5% of a 15 ms
// TTFT at times.
const pdAgreementEnv = "SERVEBENCH_PD_AGREEMENT"

// pdLoopbackHop is one proxy hop on loopback (an HTTP round trip through
// the PD proxy, JSON re-encoding, no tokenization of token-ID prompts), the
// sim's KVTransfer.HopCost for this scenario.
const pdLoopbackHop = 400 * time.Microsecond

// The same 1P1D scenario, simulated and served for real (two serve
// instances, the PD proxy, real HTTP and a real KV socket paced to the tcp
// link preset), agrees on median TTFT and median TPOT.
func TestPDSimAgreesWithServe(t *testing.T) {
	if raceDetector {
		t.Skip("timing agreement is not measurable under the race detector")
	}
	strict := os.Getenv(pdAgreementEnv) != ""
	// TTFT runs loose in CI: the real path has legs the sim's two hop costs
	// do not count (client to proxy, the first chunk back) and loopback
	// copies a few MiB of KV at ~3 GB/s on a loaded host, not the tcp
	// preset's 9 GB/s (measured: +15% at 200 requests, about 2.6 ms).
	n, tolTTFT, tolTPOT := 40, 0.50, 0.10
	if strict {
		n, tolTTFT, tolTPOT = 200, 0.05, 0.05
	}
	model := linearModel{fixed: 4 * time.Millisecond, perToken: 20 * time.Microsecond}
	ec := testEngineConfig()
	ec.EnablePrefixCaching = false
	link, err := perf.LookupKVLink("tcp")
	if err != nil {
		t.Fatal(err)
	}
	const promptLen, outLen = 256, 32
	interval := 50 * time.Millisecond // 20 requests/s
	reqs := make([]workload.Request, n)
	for i := range reqs {
		ids := testPrompt(i, promptLen)
		p := make([]int32, len(ids))
		for k, id := range ids {
			p[k] = int32(id)
		}
		reqs[i] = workload.Request{Index: i, PromptIDs: p, PromptLen: promptLen, MaxTokens: outLen, Arrival: time.Duration(i) * interval}
	}

	pool := sim.Pool{Instances: 1, Engine: ec, Model: model, GPUs: 1}
	cfg := sim.TopologyConfig{Kind: sim.Disaggregated, Router: sim.RouteRoundRobin, Prefill: pool, Decode: pool,
		Transfer: sim.KVTransfer{Link: link, BytesPerToken: testKVBytesPerToken, Ranks: 1, Handoff: sim.HandoffSequential,
			HopCost: pdLoopbackHop, Overflow: sim.OverflowSpill}}
	var simTTFT, simTPOT []float64
	if _, err := sim.RunTopology(context.Background(), cfg, reqs, func(r *metrics.Record) error {
		simTTFT = append(simTTFT, ms(r.TTFT))
		simTPOT = append(simTPOT, ms(r.Latency-r.TTFT)/float64(r.OutputLen-1))
		return nil
	}); err != nil {
		t.Fatal(err)
	}

	f := startPD(t, 1, 1, PDSequential, link, func(c *Config) {
		c.StepModel = model
		c.Engine = ec
	})
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	defer client.CloseIdleConnections()
	// One request first so connections and the KV address are warm.
	completeStream(context.Background(), client, f.proxy.URL, testPrompt(n+1, promptLen), 2)
	time.Sleep(100 * time.Millisecond)
	results := make([]pdResult, n)
	var wg sync.WaitGroup
	start := time.Now()
	for i, r := range reqs {
		time.Sleep(time.Until(start.Add(r.Arrival)))
		wg.Go(func() {
			results[i] = completeStream(context.Background(), client, f.proxy.URL, testPrompt(i, promptLen), outLen)
		})
	}
	wg.Wait()
	var serveTTFT, serveTPOT []float64
	for i, r := range results {
		if r.status != http.StatusOK || r.tokens != outLen {
			t.Fatalf("request %d: status %d, %d tokens, %v", i, r.status, r.tokens, r.transferErr)
		}
		serveTTFT = append(serveTTFT, ms(r.firstToken.Sub(r.sent)))
		serveTPOT = append(serveTPOT, ms(r.end.Sub(r.firstToken))/float64(outLen-1))
	}
	for _, m := range []struct {
		name              string
		simulated, served []float64
		tolerance         float64
	}{{"TTFT", simTTFT, serveTTFT, tolTTFT}, {"TPOT", simTPOT, serveTPOT, tolTPOT}} {
		slices.Sort(m.simulated)
		slices.Sort(m.served)
		s, v := metrics.Percentile(m.simulated, 50), metrics.Percentile(m.served, 50)
		diff := (v - s) / s
		t.Logf("median %s: sim %.2f ms, serve+proxy %.2f ms (%+.1f%%), %d requests", m.name, s, v, 100*diff, n)
		if math.Abs(diff) > m.tolerance {
			t.Errorf("median %s: serve+proxy %.2f ms is %+.1f%% off sim's %.2f ms (tolerance %.0f%%)", m.name, v, 100*diff, s, 100*m.tolerance)
		}
	}
}
