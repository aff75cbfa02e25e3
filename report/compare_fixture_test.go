package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/servebench/servebench/metrics"
)

// syntheticRun describes a run whose records come from a small queueing
// model, so fixtures look like real load curves: latency grows with load.
type syntheticRun struct {
	label     string  // the run's --label; may be empty
	file      string  // file name without .json; defaults to label
	rate      float64 // req/s
	capacity  float64 // req/s the fake server sustains
	requests  int
	outputLen int
	seed      uint64
	detailed  bool // write records.jsonl beside the result
	server    bool // add server_metrics samples
}

// records simulates a single-queue server with capacity c: each request
// waits for the previous ones (FIFO with c parallel slots approximated by
// a service rate), which is enough for monotone, noisy latency curves.
func (s syntheticRun) records() []metrics.Record {
	rng := rand.New(rand.NewPCG(s.seed, 7))
	var recs []metrics.Record
	var at time.Duration
	busyUntil := time.Duration(0)
	service := time.Duration(float64(time.Second) / s.capacity)
	for i := range s.requests {
		at += time.Duration(rng.ExpFloat64() / s.rate * float64(time.Second))
		start := at
		queued := max(busyUntil-start, 0)
		busyUntil = max(busyUntil, start) + service
		prefill := 30*time.Millisecond + time.Duration(rng.Float64()*10*float64(time.Millisecond))
		ttft := queued + prefill
		utilisation := math.Min(s.rate/s.capacity, 0.98)
		var itl []time.Duration
		var decode time.Duration
		for range s.outputLen - 1 {
			gap := time.Duration((6 + 6*utilisation + rng.NormFloat64()*0.8) * float64(time.Millisecond))
			gap = max(gap, time.Millisecond)
			itl = append(itl, gap)
			decode += gap
		}
		recs = append(recs, metrics.Record{
			Index: i, Scheduled: start, Dispatched: start, Start: start,
			TTFT: ttft, Latency: ttft + decode, ITL: itl,
			PromptLen: 128, OutputLen: s.outputLen, MaxTokens: s.outputLen,
			OutputLenSource: "usage", Success: true,
		})
	}
	return recs
}

// write stores the run with the lead's vLLM JSON writer (so the reader is
// tested against what servebench really writes) and returns the path.
func (s syntheticRun) write(t testing.TB, dir string) string {
	t.Helper()
	recs := s.records()
	acc := metrics.NewAccumulator(metrics.Options{Percentiles: []float64{50, 90, 99}})
	var end time.Duration
	for i := range recs {
		acc.Add(&recs[i])
		end = max(end, recs[i].End())
	}
	res := &Result{
		Info: RunInfo{
			Date: time.Date(2026, 11, 22, 6, 0, 0, 0, time.UTC), Backend: "openai", EndpointType: "openai",
			Label: s.label, ModelID: "tiny", TokenizerID: "tiny", NumPrompts: s.requests,
			RequestRate: s.rate, Burstiness: 1,
			PercentileMetrics: []string{"ttft", "tpot", "itl", "e2el"}, Percentiles: []float64{50, 90, 99},
		},
		Summary: acc.Summary(end),
	}
	if s.server {
		res.Extra = append(res.Extra, Section{Key: "server_metrics", Value: serverSamples(recs, end)})
	}
	data, err := JSON(res, false)
	if err != nil {
		t.Fatalf("writing fixture %s: %v", s.label, err)
	}
	file := s.file
	if file == "" {
		file = s.label
	}
	path := filepath.Join(dir, file+".json")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if s.detailed {
		var b bytes.Buffer
		for _, r := range recs {
			line, err := json.Marshal(r)
			if err != nil {
				t.Fatal(err)
			}
			b.Write(line)
			b.WriteByte('\n')
		}
		if err := os.WriteFile(RecordsFilename(path), b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return path
}

func serverSamples(recs []metrics.Record, end time.Duration) map[string]any {
	var samples []map[string]any
	for at := time.Duration(0); at <= end; at += 250 * time.Millisecond {
		running := 0
		for _, r := range recs {
			if r.Start <= at && at < r.End() {
				running++
			}
		}
		samples = append(samples, map[string]any{
			"t": at.Seconds(), "running": running, "waiting": max(running-8, 0),
			"kv_cache_usage": math.Min(float64(running)/16, 1), "prefix_hit_rate": 0.25,
		})
	}
	return map[string]any{"summary": map[string]any{"samples": len(samples)}, "samples": samples}
}

// writeSweepFixture writes a request-rate sweep as package sweep lays it
// out: a manifest plus one result per point directory.
func writeSweepFixture(t testing.TB, dir, label string, capacity float64, rates []float64, detailed bool) {
	t.Helper()
	type point struct {
		Name   string  `json:"name"`
		Params []Param `json:"params"`
		Status string  `json:"status"`
		Result string  `json:"result"`
	}
	var points []point
	for i, rate := range rates {
		name := fmt.Sprintf("%03d-request-rate=%g", i, rate)
		pointDir := filepath.Join(dir, name)
		if err := os.MkdirAll(pointDir, 0o755); err != nil {
			t.Fatal(err)
		}
		run := syntheticRun{file: "result", rate: rate, capacity: capacity, requests: 200, outputLen: 32, seed: uint64(i + 1), detailed: detailed, server: detailed && i == len(rates)-1}
		run.write(t, pointDir)
		points = append(points, point{Name: name, Params: []Param{{"request-rate", fmt.Sprint(rate)}}, Status: "done", Result: name + "/result.json"})
	}
	manifest, err := json.MarshalIndent(map[string]any{"kind": manifestKind, "label": label, "points": points}, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "manifest.json"), manifest, 0o644); err != nil {
		t.Fatal(err)
	}
}

// sweepAxis is one swept flag and its values, as a sweep's manifest lists
// them.
type sweepAxis struct {
	flag   string
	values []string
}

// sweepFixture lays out a sweep over any axes as package sweep does: a
// manifest plus one result per point (and per repeat). The request-rate
// axis sets each run's rate (default 4); every other axis lowers the fake
// server's capacity with each later value, so runs that differ in it
// measure differently.
type sweepFixture struct {
	label    string
	capacity float64
	axes     []sweepAxis
	repeat   int
	detailed bool // records beside every result
	server   bool // server metrics in every result
}

func (s sweepFixture) write(t testing.TB, dir string) {
	t.Helper()
	type point struct {
		Name   string  `json:"name"`
		Params []Param `json:"params"`
		Repeat int     `json:"repeat"`
		Status string  `json:"status"`
		Result string  `json:"result"`
	}
	combos := [][]Param{nil}
	for _, a := range s.axes {
		var next [][]Param
		for _, c := range combos {
			for _, v := range a.values {
				next = append(next, append(slices.Clone(c), Param{a.flag, v}))
			}
		}
		combos = next
	}
	var points []point
	for _, params := range combos {
		for rep := 1; rep <= max(s.repeat, 1); rep++ {
			rate, capacity := 4.0, s.capacity
			var parts []string
			for _, p := range params {
				parts = append(parts, p.Flag+"="+p.Value)
				if p.Flag == "request-rate" {
					rate, _ = strconv.ParseFloat(p.Value, 64)
					continue
				}
				for _, a := range s.axes {
					if a.flag == p.Flag {
						capacity /= 1 + 0.5*float64(slices.Index(a.values, p.Value))
					}
				}
			}
			name := fmt.Sprintf("%03d-%s", len(points), strings.Join(parts, "_"))
			if s.repeat > 1 {
				name += fmt.Sprintf("-r%d", rep)
			}
			pointDir := filepath.Join(dir, name)
			if err := os.MkdirAll(pointDir, 0o755); err != nil {
				t.Fatal(err)
			}
			run := syntheticRun{file: "result", rate: rate, capacity: capacity, requests: 60, outputLen: 12,
				seed: uint64(len(points) + 1), detailed: s.detailed, server: s.server}
			run.write(t, pointDir)
			points = append(points, point{Name: name, Params: params, Repeat: rep, Status: "done", Result: name + "/result.json"})
		}
	}
	manifest, err := json.MarshalIndent(map[string]any{"kind": manifestKind, "label": s.label, "points": points}, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "manifest.json"), manifest, 0o644); err != nil {
		t.Fatal(err)
	}
}
