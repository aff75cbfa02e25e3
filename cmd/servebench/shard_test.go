package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/servebench/servebench/metrics"
	"github.com/servebench/servebench/report"
	"github.com/servebench/servebench/runspec"
)

// envRunMain makes the test binary act as servebench, so --local can
// re-execute it (os.Executable) as a shard process.
const envRunMain = "SERVEBENCH_TEST_RUN_MAIN"

func init() {
	if os.Getenv(envRunMain) == "1" {
		main()
		os.Exit(0)
	}
}

// recordsOf reads a records file, ordered by global index.
func recordsOf(t *testing.T, path string) []metrics.Record {
	t.Helper()
	fh, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	recs, err := report.DecodeRecords(fh, path)
	if err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(recs, func(a, b metrics.Record) int { return a.Index - b.Index })
	return recs
}

// scheduleOf is what the schedule fixes about each record: index, send
// time, prompt length and max tokens.
func scheduleOf(recs []metrics.Record) [][4]int64 {
	out := make([][4]int64, len(recs))
	for i, r := range recs {
		out[i] = [4]int64{int64(r.Index), int64(r.Scheduled), int64(r.PromptLen), int64(r.MaxTokens)}
	}
	return out
}

var shardWorkload = []string{"--num-prompts", "200", "--request-rate", "400", "--random-input-len", "64", "--random-output-len", "8", "--seed", "5", "--skip-test-request"}

// TestLocalShardsMergeToTheUnshardedSchedule runs 4 shard processes
// against one emulated server and checks the merged run sent exactly the
// unsharded run's schedule, each request once.
func TestLocalShardsMergeToTheUnshardedSchedule(t *testing.T) {
	if testing.Short() {
		t.Skip("starts 4 processes")
	}
	t.Setenv(envRunMain, "1")
	baseURL, _, _ := emulator(t)
	dir := t.TempDir()
	args := append([]string{"bench", "--shards", "4", "--local", "--base-url", baseURL, "--model", defaultEmbeddedModel, "--result-dir", filepath.Join(dir, "sharded")}, shardWorkload...)
	out, stderr, err := runCLI(t, args...)
	if err != nil {
		t.Fatalf("%v\n%s\n%s", err, out, stderr)
	}
	for _, want := range []string{"Successful requests:                     200", "Shard 0/4:", "Shard 3/4:", "50 req, start late"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	merged, _ := filepath.Glob(filepath.Join(dir, "sharded", "*.records.jsonl"))
	if len(merged) != 1 {
		t.Fatalf("merged records files %v, want one", merged)
	}
	args = append([]string{"bench", "--base-url", baseURL, "--model", defaultEmbeddedModel, "--records", filepath.Join(dir, "whole.records.jsonl"), "--disable-tqdm"}, shardWorkload...)
	if out, stderr, err := runCLI(t, args...); err != nil {
		t.Fatalf("unsharded run: %v\n%s\n%s", err, out, stderr)
	}
	got, want := scheduleOf(recordsOf(t, merged[0])), scheduleOf(recordsOf(t, filepath.Join(dir, "whole.records.jsonl")))
	if !slices.Equal(got, want) {
		t.Fatalf("merged shards sent a different schedule than the unsharded run:\n got %v\nwant %v", got[:3], want[:3])
	}
	shardFiles, _ := filepath.Glob(filepath.Join(dir, "sharded", "shards-*", "*.shard.json"))
	if len(shardFiles) != 4 {
		t.Fatalf("shard manifests %v, want 4 kept under --result-dir", shardFiles)
	}
}

func TestShardFlagErrors(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name    string
		env     map[string]string
		args    []string
		wantErr string
	}{
		{name: "shard without an output", args: []string{"--shard", "0/2"}, wantErr: "--shard 0/2: give --result-dir DIR"},
		{name: "shard with records none", args: []string{"--shard", "0/2", "--records", "none"}, wantErr: "drop --records none"},
		{name: "index out of range", args: []string{"--shard", "2/2", "--result-dir", dir}, wantErr: `--shard "2/2": shard index 2: must be from 0 to 1`},
		{name: "count without index", env: map[string]string{runspec.EnvShardCount: "4"}, args: []string{"--result-dir", dir}, wantErr: "$SERVEBENCH_SHARDS=4 is set but $JOB_COMPLETION_INDEX is not"},
		{name: "index from the environment", env: map[string]string{runspec.EnvShardCount: "4", runspec.EnvCompletionIndex: "9"}, args: []string{"--result-dir", dir}, wantErr: `$JOB_COMPLETION_INDEX/$SERVEBENCH_SHARDS "9/4"`},
		{name: "start-at alone", args: []string{"--start-at", "2026-11-23T12:00:00Z"}, wantErr: "--start-at needs --shard"},
		{name: "bad start-at", args: []string{"--shard", "0/2", "--result-dir", dir, "--start-at", "noon"}, wantErr: `--start-at "noon": not an RFC3339 instant`},
		{name: "shards without local", args: []string{"--shards", "4"}, wantErr: "--shards 4: add --local"},
		{name: "too many local shards", args: []string{"--shards", "1000", "--local"}, wantErr: "--shards 1000: give 1 to 64"},
		{name: "local with shard", args: []string{"--shards", "2", "--local", "--shard", "0/2"}, wantErr: "drop --shard and --start-at"},
		{name: "more shards than requests", args: []string{"--shard", "5/8", "--num-prompts", "4", "--result-dir", dir, "--skip-test-request"}, wantErr: "the schedule has 4 requests, so this shard has none"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			_, _, err := runCLI(t, append([]string{"bench", "--disable-tqdm"}, tc.args...)...)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
}

func TestMergeCommandRefusesAndReports(t *testing.T) {
	dir := t.TempDir()
	_, _, err := runCLI(t, "merge", dir)
	if err == nil || !strings.Contains(err.Error(), "holds no *.shard.json manifests") {
		t.Fatalf("merge of an empty directory: %v", err)
	}
	_, _, err = runCLI(t, "merge")
	if err == nil {
		t.Fatal("merge with no arguments succeeded")
	}
}

// resultBlock is the vLLM result block of a command's output.
func resultBlock(t *testing.T, out string) string {
	t.Helper()
	start := strings.Index(out, "=== Serving Benchmark Result")
	end := strings.Index(out[max(start, 0):], "\n"+strings.Repeat("=", 50)+"\n")
	if start < 0 || end < 0 {
		t.Fatalf("no result block in:\n%s", out)
	}
	return out[start : start+end]
}

// TestSimShardsMergeExactly: sim --shard I/N simulates the whole schedule
// and keeps shard I's records, so merging every shard prints the
// unsharded simulation's result block byte for byte, and its JSON holds
// the same values. With vLLM's benchmark client under a cap, the client's
// one thread sees every request in each shard as it does in the whole run.
func TestSimShardsMergeExactly(t *testing.T) {
	views := []struct {
		name string
		args []string
	}{
		{"server", nil},
		{"vllm-bench client under a cap", []string{"--client", "vllm-bench", "--max-concurrency", "8"}},
	}
	for _, v := range views {
		t.Run(v.name, func(t *testing.T) {
			dir := t.TempDir()
			common := append([]string{"sim", "--model", "Qwen/Qwen2-0.5B", "--gpu", "H100", "--num-prompts", "120", "--request-rate", "30",
				"--seed", "8", "--random-input-len", "300", "--random-output-len", "40", "--random-range-ratio", "0.5",
				"--percentile-metrics", "ttft,tpot,itl,e2el", "--metric-percentiles", "50,90,99", "--goodput", "ttft:5", "tpot:1"}, v.args...)
			wholeOut, _, err := runCLI(t, append(common, "--save-result", "--result-dir", dir, "--result-filename", "whole.json")...)
			if err != nil {
				t.Fatal(err)
			}
			for i := range 3 {
				if _, stderr, err := runCLI(t, append(common, "--shard", strconv.Itoa(i)+"/3", "--result-dir", filepath.Join(dir, "shards"))...); err != nil {
					t.Fatalf("shard %d: %v\n%s", i, err, stderr)
				}
			}
			mergedOut, _, err := runCLI(t, "merge", filepath.Join(dir, "shards"), "--save-result", "--result-dir", dir, "--result-filename", "merged.json")
			if err != nil {
				t.Fatal(err)
			}
			if got, want := resultBlock(t, mergedOut), resultBlock(t, wholeOut); got != want {
				t.Fatalf("merged result block differs:\n got:\n%s\nwant:\n%s", got, want)
			}
			whole, merged := readJSONObject(t, filepath.Join(dir, "whole.json")), readJSONObject(t, filepath.Join(dir, "merged.json"))
			for key, want := range whole {
				switch key {
				case "date", "engine": // the run's own date; sim's engine statistics are not merged
					continue
				}
				got := merged[key]
				if list, ok := want.([]any); ok {
					// Per-request lists are in completion order in a run and in
					// index order after a merge.
					want, got = sortedStrings(list), sortedStrings(got.([]any))
				}
				if !reflect.DeepEqual(got, want) {
					t.Errorf("%s: merged %v, unsharded %v", key, got, want)
				}
			}
		})
	}
}

func readJSONObject(t *testing.T, path string) map[string]any {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func sortedStrings(list []any) []string {
	out := make([]string, len(list))
	for i, v := range list {
		out[i] = fmt.Sprint(v)
	}
	slices.Sort(out)
	return out
}

// TestLocalShardsInterrupted: a Ctrl-C during a --local run reaches every
// shard once; each stops sending, records what it measured and says it
// was interrupted, and the merge refuses the incomplete run naming them.
func TestLocalShardsInterrupted(t *testing.T) {
	if testing.Short() {
		t.Skip("starts 2 processes")
	}
	t.Setenv(envRunMain, "1")
	baseURL, _, _ := emulator(t)
	dir := t.TempDir()
	ctx, interrupt, stop := withInterrupts(t.Context())
	defer stop()
	root := newRootCmd()
	var out, errb bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errb)
	root.SetArgs([]string{"bench", "--shards", "2", "--local", "--base-url", baseURL, "--model", defaultEmbeddedModel, "--result-dir", dir,
		"--num-prompts", "2000", "--request-rate", "100", "--random-input-len", "16", "--random-output-len", "4", "--skip-test-request"})
	done := make(chan error, 1)
	go func() { done <- root.ExecuteContext(ctx) }()
	// Interrupt once both shards have recorded something.
	deadline := time.Now().Add(30 * time.Second)
	for {
		files, _ := filepath.Glob(filepath.Join(dir, "shards-*", "*.records.jsonl"))
		started := 0
		for _, f := range files {
			if st, err := os.Stat(f); err == nil && st.Size() > 0 {
				started++
			}
		}
		if started == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("shards did not start within 30s:\n%s", errb.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	interrupt()
	var err error
	select {
	case err = <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the local run did not stop within 30s of the interrupt")
	}
	if err == nil || !strings.Contains(err.Error(), "shard 0/2 interrupted") || !strings.Contains(err.Error(), "shard 1/2 interrupted") {
		t.Fatalf("error %v, want the merge to name both interrupted shards", err)
	}
	if exitCode(err) != 130 {
		t.Fatalf("error %v: want exit code 130 for an interrupted run", err)
	}
	for i := range 2 {
		path := filepath.Join(dir, "shards-*", "shard-"+strconv.Itoa(i)+"-of-2.log")
		logs, _ := filepath.Glob(path)
		data, _ := os.ReadFile(logs[0])
		if !strings.Contains(string(data), "interrupted: partial results") {
			t.Errorf("shard %d log does not say it was interrupted:\n%s", i, data)
		}
	}
}
