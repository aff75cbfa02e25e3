package sim

import (
	"context"
	"math"
	"math/rand/v2"
	"os"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/servebench/servebench/engine"
	"github.com/servebench/servebench/metrics"
	"github.com/servebench/servebench/workload"
)

// TestRunStreamMatchesRun: a workload streamed one request at a time gives
// the same records, in the same order, and the same result as the built
// workload with its schedule.
func TestRunStreamMatchesRun(t *testing.T) {
	spec := workload.DefaultSpec()
	spec.NumPrompts, spec.Seed = 1500, 4
	spec.Random.InputLen, spec.Random.OutputLen, spec.Random.RangeRatio, spec.Random.PrefixLen = 120, 60, 0.5, 32
	for _, rate := range []float64{math.Inf(1), 40} {
		arrivals := workload.Arrivals{Rate: rate, Burstiness: 1, Seed: 4}
		reqs := scheduledWorkload(t, spec, arrivals)
		cfg := Config{Engine: engineConfig(engine.V1), Model: llama8BH100, StatsInterval: time.Second}
		cfg.Engine.EnablePrefixCaching = true
		wantRes, want := collect(t, cfg, reqs)
		stream, err := workload.NewStream(context.Background(), spec, arrivals, true)
		if err != nil {
			t.Fatal(err)
		}
		var got []*metrics.Record
		gotRes, err := RunStream(context.Background(), cfg, stream, func(r *metrics.Record) error { got = append(got, r); return nil })
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("rate %v: records differ (-run +stream):\n%s", rate, diff)
		}
		if diff := cmp.Diff(wantRes, gotRes); diff != "" {
			t.Fatalf("rate %v: results differ (-run +stream):\n%s", rate, diff)
		}
	}
}

// TestFlightsWindow: the window finds every request in flight, forgets
// finished ones, and slides instead of growing while the oldest finish.
func TestFlightsWindow(t *testing.T) {
	var f flights
	recOf := func(id uint64) *metrics.Record {
		if fl := f.at(id); fl != nil {
			return fl.rec
		}
		return nil
	}
	live := map[uint64]*metrics.Record{}
	rng := rand.New(rand.NewPCG(1, 1))
	for id := uint64(0); id < 20000; id++ {
		if rng.IntN(7) != 0 { // some IDs are refused by the engine and never put
			rec := &metrics.Record{Index: int(id)}
			f.put(id, flightEntry{live: true, rec: rec, prompt: []int32{int32(id)}})
			live[id] = rec
		}
		for old := range live {
			if len(live) > 50 || rng.IntN(4) == 0 {
				if p := f.drop(old); len(p) != 1 || p[0] != int32(old) {
					t.Fatalf("id %d: drop gave back prompt %v", old, p)
				}
				delete(live, old)
			}
			break
		}
		for k, rec := range live {
			if recOf(k) != rec {
				t.Fatalf("id %d: lost while in flight", k)
			}
		}
		if recOf(id+1) != nil {
			t.Fatalf("id %d: found before it was put", id+1)
		}
	}
	if cap(f.entries) > 1<<14 {
		t.Fatalf("window grew to %d slots for at most ~50 requests in flight", cap(f.entries))
	}
}

// BenchmarkSimStream runs the streamed random workload (200/200 tokens,
// prefix caching) at 50 req/s through the simulator and a metrics
// Recorder, as the CLI does, and reports the peak live heap per request:
// SERVEBENCH_SIM_REQUESTS sets the count (default 100,000).
func BenchmarkSimStream(b *testing.B) {
	n := 100000
	if v, ok := lookupInt("SERVEBENCH_SIM_REQUESTS"); ok {
		n = v
	}
	spec := workload.DefaultSpec()
	spec.NumPrompts = n
	spec.Random.InputLen, spec.Random.OutputLen = 200, 200
	arrivals := workload.Arrivals{Rate: 50, Burstiness: 1}
	cfg := Config{Engine: benchEngine(engine.V1, true), Model: llama8BH100, ReuseRecords: true}
	for range b.N {
		stream, err := workload.NewStream(context.Background(), spec, arrivals, true)
		if err != nil {
			b.Fatal(err)
		}
		rec := metrics.NewRecorder(metrics.Options{}, nil, metrics.KeepNone)
		var peak uint64
		var ms runtime.MemStats
		emitted := 0
		cpu := processCPUTime()
		if _, err := RunStream(context.Background(), cfg, stream, func(r *metrics.Record) error {
			if emitted++; emitted%(n/20+1) == 0 {
				runtime.ReadMemStats(&ms)
				peak = max(peak, ms.HeapAlloc)
			}
			return rec.Add(r)
		}); err != nil {
			b.Fatal(err)
		}
		s := rec.Summary(rec.LastEnd())
		if s.Completed != n {
			b.Fatalf("%d completed of %d", s.Completed, n)
		}
		b.ReportMetric((processCPUTime() - cpu).Seconds(), "cpu-s/op")
		b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MB")
		b.ReportMetric(float64(peak)/float64(n), "heap-B/request")
	}
}

func lookupInt(name string) (int, bool) {
	v, err := strconv.Atoi(os.Getenv(name))
	return v, err == nil && v > 0
}

// scheduledWorkload is spec's requests, built whole, with arrivals'
// schedule: what a stream of the same spec must reproduce.
func scheduledWorkload(t *testing.T, spec workload.Spec, arrivals workload.Arrivals) []workload.Request {
	t.Helper()
	reqs, err := workload.Build(context.Background(), spec, nil)
	if err != nil {
		t.Fatal(err)
	}
	offsets, err := workload.Schedule(len(reqs), arrivals)
	if err != nil {
		t.Fatal(err)
	}
	workload.Assign(reqs, offsets)
	return reqs
}
