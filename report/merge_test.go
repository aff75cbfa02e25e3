package report_test

import (
	"bytes"
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/servebench/servebench/engine"
	"github.com/servebench/servebench/metrics"
	"github.com/servebench/servebench/perf"
	"github.com/servebench/servebench/report"
	"github.com/servebench/servebench/sim"
	"github.com/servebench/servebench/workload"
)

// stepModel takes 8 ms per step plus 40 µs per token.
type stepModel struct{}

func (stepModel) StepTime(s perf.StepShape) time.Duration {
	return 8*time.Millisecond + time.Duration(s.Tokens())*40*time.Microsecond
}

var shardZero = time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)

// simRun simulates a seeded Poisson workload and returns its schedule,
// every record, and the unsharded result as sim prints it.
func simRun(t testing.TB, n int) ([]workload.Request, []metrics.Record, *report.Result) {
	t.Helper()
	spec := workload.DefaultSpec()
	spec.NumPrompts, spec.Seed = n, 11
	spec.Random.InputLen, spec.Random.OutputLen, spec.Random.RangeRatio = 200, 40, 0.5
	reqs, err := workload.Build(context.Background(), spec, nil)
	if err != nil {
		t.Fatal(err)
	}
	offsets, err := workload.Schedule(len(reqs), workload.Arrivals{Rate: 40, Burstiness: 1, Seed: 11})
	if err != nil {
		t.Fatal(err)
	}
	workload.Assign(reqs, offsets)
	opts := metrics.Options{Percentiles: []float64{50, 95, 99, 90}, Goodput: map[string]float64{"ttft": 60, "tpot": 20}}
	rec := metrics.NewRecorder(opts, nil, metrics.KeepFull)
	cfg := sim.Config{
		Engine: engine.Config{Version: engine.V1, BlockSize: 16, NumGPUBlocks: 600, MaxNumSeqs: 32,
			MaxNumBatchedTokens: 1024, MaxModelLen: 4096, EnablePrefixCaching: true},
		Model: stepModel{}, ReuseRecords: true,
	}
	if _, err := sim.Run(context.Background(), cfg, reqs, func(r *metrics.Record) error { return rec.Add(r) }); err != nil {
		t.Fatal(err)
	}
	info := report.RunInfo{Date: shardZero, Backend: "sim", EndpointType: "sim", ModelID: "m", NumPrompts: n, RequestRate: 40, Burstiness: 1,
		PercentileMetrics: []string{"ttft", "tpot", "itl", "e2el"}, Percentiles: []float64{90, 99}, Goodput: true}
	return reqs, rec.Records(), &report.Result{Info: info, Summary: rec.Summary(rec.LastEnd()), Records: rec.Records()}
}

// writeShards splits recs by global index into count shards in dir, as
// count shard processes would write them; edit may change a manifest.
func writeShards(t testing.TB, dir string, reqs []workload.Request, recs []metrics.Record, unsharded *report.Result, count int, edit func(m *report.ShardManifest)) {
	t.Helper()
	hash := workload.ScheduleHash(reqs)
	for i := range count {
		sh := workload.Shard{Index: i, Count: count}
		name := "shard-" + strconv.Itoa(i) + "-of-" + strconv.Itoa(count) + ".records.jsonl"
		var buf bytes.Buffer
		w := metrics.NewJSONLWriter(&buf)
		var lastEnd time.Duration
		n := 0
		for k := range recs {
			if sh.Owns(recs[k].Index) {
				if err := w.Add(&recs[k]); err != nil {
					t.Fatal(err)
				}
				lastEnd = max(lastEnd, recs[k].End())
				n++
			}
		}
		m := &report.ShardManifest{
			Format: report.ShardFormat, ScheduleHash: hash, Shard: i, Shards: count, TotalRequests: len(reqs), ShardRequests: n,
			Records: name, Started: shardZero, Duration: lastEnd, Run: report.NewShardRunInfo(&unsharded.Info),
			Summary: report.ShardOptions{Percentiles: []float64{50, 95, 99, 90}, Goodput: map[string]float64{"ttft": 60, "tpot": 20}},
		}
		m.Clock.Source = "adjtimex"
		if edit != nil {
			edit(m)
		}
		js, err := report.MarshalShardManifest(m)
		if err != nil {
			t.Fatal(err)
		}
		mustWrite(t, filepath.Join(dir, name), buf.Bytes())
		mustWrite(t, filepath.Join(dir, report.ShardManifestPath(name)), js)
	}
}

func mustWrite(t testing.TB, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func mergeDir(t testing.TB, paths ...string) (*report.Merged, error) {
	t.Helper()
	shards, err := report.LoadShards(paths...)
	if err != nil {
		return nil, err
	}
	return report.MergeShards(shards)
}

// TestMergeOfSimShardsIsExact: the unsharded simulation's records, split
// into shards by global index and merged, print the same text block and
// the same result report.JSON, byte for byte, for several shard counts.
func TestMergeOfSimShardsIsExact(t *testing.T) {
	reqs, recs, unsharded := simRun(t, 300)
	var wantText bytes.Buffer
	if err := report.WriteText(&wantText, unsharded); err != nil {
		t.Fatal(err)
	}
	// The per-request lists of the report.JSON (latencies, queue times, and the
	// detailed ones) follow the records' order: completion order in a run,
	// global index order after a merge, the only order shards agree on.
	byIndex := slices.Clone(recs)
	slices.SortFunc(byIndex, func(a, b metrics.Record) int { return a.Index - b.Index })
	inIndexOrder := &report.Result{Info: unsharded.Info, Summary: unsharded.Summary, Records: byIndex}
	wantJSON, err := report.JSON(inIndexOrder, false)
	if err != nil {
		t.Fatal(err)
	}
	wantDetailed, err := report.JSON(inIndexOrder, true)
	if err != nil {
		t.Fatal(err)
	}
	for _, count := range []int{1, 2, 4, 7, 16} {
		t.Run(strconv.Itoa(count)+" shards", func(t *testing.T) {
			dir := t.TempDir()
			writeShards(t, dir, reqs, recs, unsharded, count, nil)
			m, err := mergeDir(t, dir)
			if err != nil {
				t.Fatal(err)
			}
			got := *m.Result
			got.Extra = nil // the shards section is the merge's addition
			var text bytes.Buffer
			if err := report.WriteText(&text, &got); err != nil {
				t.Fatal(err)
			}
			if text.String() != wantText.String() {
				t.Errorf("text differs:\n got:\n%s\nwant:\n%s", text.String(), wantText.String())
			}
			js, _ := report.JSON(&got, false)
			if !bytes.Equal(js, wantJSON) {
				t.Errorf("result report.JSON differs from the unsharded one:\n got: %.2000s\nwant: %.2000s", js, wantJSON)
			}
			detailed, _ := report.JSON(&got, true)
			if !bytes.Equal(detailed, wantDetailed) {
				t.Error("detailed result report.JSON differs from the unsharded one in index order")
			}
			if len(m.Shards) != count {
				t.Fatalf("%d shard reports, want %d", len(m.Shards), count)
			}
		})
	}
}

// TestMergeRefusesMismatchedShards covers every way shards can fail to be
// one complete run: each is refused with one line naming the problem.
func TestMergeRefusesMismatchedShards(t *testing.T) {
	reqs, recs, unsharded := simRun(t, 40)
	other := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name    string
		setup   func(t *testing.T, dir string) []string // returns the paths to merge
		wantErr string
	}{
		{
			name: "different schedule hash",
			setup: func(t *testing.T, dir string) []string {
				writeShards(t, dir, reqs, recs, unsharded, 2, func(m *report.ShardManifest) {
					if m.Shard == 1 {
						m.ScheduleHash = "sha256:other"
					}
				})
				return []string{dir}
			},
			wantErr: "schedule hash sha256:other",
		},
		{
			name: "different shard counts",
			setup: func(t *testing.T, dir string) []string {
				writeShards(t, filepath.Join(dir), reqs, recs, unsharded, 2, nil)
				sub := filepath.Join(dir, "three")
				os.Mkdir(sub, 0o755)
				writeShards(t, sub, reqs, recs, unsharded, 3, nil)
				return []string{filepath.Join(dir, "shard-0-of-2.shard.json"), filepath.Join(sub, "shard-1-of-3.shard.json")}
			},
			wantErr: "has shard count 3",
		},
		{
			name: "shard given twice",
			setup: func(t *testing.T, dir string) []string {
				writeShards(t, dir, reqs, recs, unsharded, 2, nil)
				copyFile(t, filepath.Join(dir, "shard-0-of-2.records.jsonl"), filepath.Join(dir, "copy.records.jsonl"))
				js, _ := os.ReadFile(filepath.Join(dir, "shard-0-of-2.shard.json"))
				mustWrite(t, filepath.Join(dir, "copy.shard.json"), bytes.Replace(js, []byte("shard-0-of-2.records.jsonl"), []byte("copy.records.jsonl"), 1))
				return []string{dir}
			},
			wantErr: "shard 0/2 given twice",
		},
		{
			name: "missing shards",
			setup: func(t *testing.T, dir string) []string {
				writeShards(t, dir, reqs, recs, unsharded, 4, nil)
				return []string{filepath.Join(dir, "shard-1-of-4.shard.json"), filepath.Join(dir, "shard-3-of-4.records.jsonl")}
			},
			wantErr: "missing shards 0/4, 2/4: have 2 of 4",
		},
		{
			name: "request recorded twice",
			setup: func(t *testing.T, dir string) []string {
				writeShards(t, dir, reqs, recs, unsharded, 2, nil)
				path := filepath.Join(dir, "shard-1-of-2.records.jsonl")
				data, _ := os.ReadFile(path)
				firstLine, _, _ := bytes.Cut(data, []byte("\n"))
				mustWrite(t, path, append(data, append(firstLine, '\n')...))
				return []string{dir}
			},
			wantErr: "recorded twice",
		},
		{
			name: "record in the wrong shard",
			setup: func(t *testing.T, dir string) []string {
				writeShards(t, dir, reqs, recs, unsharded, 2, nil)
				a, b := filepath.Join(dir, "shard-0-of-2.records.jsonl"), filepath.Join(dir, "shard-1-of-2.records.jsonl")
				da, _ := os.ReadFile(a)
				db, _ := os.ReadFile(b)
				mustWrite(t, a, db)
				mustWrite(t, b, da)
				return []string{dir}
			},
			wantErr: "belongs to shard 1/2, not 0/2",
		},
		{
			name: "interrupted shard lost requests",
			setup: func(t *testing.T, dir string) []string {
				writeShards(t, dir, reqs, recs, unsharded, 2, func(m *report.ShardManifest) {
					if m.Shard == 1 {
						m.Interrupted, m.NotSent = true, 3
					}
				})
				path := filepath.Join(dir, "shard-1-of-2.records.jsonl")
				data, _ := os.ReadFile(path)
				lines := bytes.SplitAfter(data, []byte("\n"))
				mustWrite(t, path, bytes.Join(lines[:len(lines)-4], nil))
				return []string{dir}
			},
			wantErr: "shard 1/2 interrupted, 3 never sent",
		},
		{
			name: "different start-at",
			setup: func(t *testing.T, dir string) []string {
				writeShards(t, dir, reqs, recs, unsharded, 2, func(m *report.ShardManifest) {
					at := shardZero
					if m.Shard == 1 {
						at = other
					}
					m.StartAt = &at
				})
				return []string{dir}
			},
			wantErr: "has start_at 2026-01-01T00:00:00Z",
		},
		{
			name: "different percentiles",
			setup: func(t *testing.T, dir string) []string {
				writeShards(t, dir, reqs, recs, unsharded, 2, func(m *report.ShardManifest) {
					if m.Shard == 1 {
						m.Summary.Percentiles = []float64{50}
					}
				})
				return []string{dir}
			},
			wantErr: "summary options",
		},
		{
			name: "total far beyond the records",
			setup: func(t *testing.T, dir string) []string {
				writeShards(t, dir, reqs, recs, unsharded, 1, func(m *report.ShardManifest) { m.TotalRequests = 1 << 40 })
				return []string{dir}
			},
			wantErr: "1099511627736 requests of the schedule have no record (40, 41, 42, 43, 44, …): shard 0/1 has 40 of its 1099511627776",
		},
		{
			name: "absurd shard count",
			setup: func(t *testing.T, dir string) []string {
				writeShards(t, dir, reqs, recs, unsharded, 1, func(m *report.ShardManifest) { m.Shards = 1 << 40 })
				return []string{dir}
			},
			wantErr: "shards 1099511627776: must be from 1 to 65536",
		},
		{
			name:    "empty directory",
			setup:   func(t *testing.T, dir string) []string { return []string{dir} },
			wantErr: "holds no *.shard.json manifests",
		},
		{
			name: "empty records without a manifest",
			setup: func(t *testing.T, dir string) []string {
				mustWrite(t, filepath.Join(dir, "run.records.jsonl"), nil)
				return []string{filepath.Join(dir, "run.records.jsonl")}
			},
			wantErr: "hold no measured request",
		},
		{
			name: "unknown manifest format",
			setup: func(t *testing.T, dir string) []string {
				writeShards(t, dir, reqs, recs, unsharded, 1, func(m *report.ShardManifest) { m.Format = "servebench-shard/9" })
				return []string{dir}
			},
			wantErr: `format "servebench-shard/9"`,
		},
		{
			name: "cut records line",
			setup: func(t *testing.T, dir string) []string {
				writeShards(t, dir, reqs, recs, unsharded, 1, nil)
				path := filepath.Join(dir, "shard-0-of-1.records.jsonl")
				data, _ := os.ReadFile(path)
				mustWrite(t, path, data[:len(data)-20])
				return []string{dir}
			},
			wantErr: "cut short",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			_, err := mergeDir(t, tc.setup(t, dir)...)
			if err == nil {
				t.Fatalf("merged; want an error containing %q", tc.wantErr)
			}
			if msg := err.Error(); !strings.Contains(msg, tc.wantErr) || strings.Contains(msg, "\n") {
				t.Fatalf("error %q: want one line containing %q", msg, tc.wantErr)
			}
		})
	}
}

func TestMissingShardsErrorIsTyped(t *testing.T) {
	reqs, recs, unsharded := simRun(t, 12)
	dir := t.TempDir()
	writeShards(t, dir, reqs, recs, unsharded, 3, nil)
	_, err := mergeDir(t, filepath.Join(dir, "shard-2-of-3.shard.json"))
	var missing *report.MissingShardsError
	if !errors.As(err, &missing) || !slices.Equal(missing.Missing, []int{0, 1}) {
		t.Fatalf("error %v, want report.MissingShardsError for shards 0 and 1", err)
	}
}

// TestMergeShiftsLateShardsOntoOneTimeline: without --start-at a shard
// that started later has its records moved by the difference, so its
// lateness shows as send lag and the run lasts until its end.
func TestMergeShiftsLateShardsOntoOneTimeline(t *testing.T) {
	reqs, recs, unsharded := simRun(t, 40)
	dir := t.TempDir()
	const late = 1500 * time.Millisecond
	writeShards(t, dir, reqs, recs, unsharded, 2, func(m *report.ShardManifest) {
		if m.Shard == 1 {
			m.Started = m.Started.Add(late)
		}
	})
	m, err := mergeDir(t, dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := m.Shards[1].Shift; got != late {
		t.Fatalf("shard 1 shift %v, want %v", got, late)
	}
	if m.Shards[1].SendLag.Mean != durationMS(late) || m.Shards[0].SendLag.Mean != 0 {
		t.Fatalf("send lag means %v / %v ms, want 0 / %v", m.Shards[0].SendLag.Mean, m.Shards[1].SendLag.Mean, durationMS(late))
	}
	var lastEnd1 time.Duration
	for _, r := range recs {
		if r.Index%2 == 1 {
			lastEnd1 = max(lastEnd1, r.End())
		}
	}
	if want := max(unsharded.Summary.Duration, lastEnd1+late); m.Result.Summary.Duration != want {
		t.Fatalf("merged duration %v, want %v", m.Result.Summary.Duration, want)
	}
	if !m.Result.Info.Date.Equal(shardZero) {
		t.Fatalf("merged date %v, want the earliest shard's start %v", m.Result.Info.Date, shardZero)
	}
	if math.IsNaN(m.Result.Info.RequestRate) || m.Result.Info.RequestRate != 40 {
		t.Fatalf("request rate %v did not survive the manifest", m.Result.Info.RequestRate)
	}
}

func copyFile(t testing.TB, from, to string) {
	t.Helper()
	data, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	mustWrite(t, to, data)
}

// durationMS is a duration in milliseconds, as merge reports lags.
func durationMS(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
