package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// sseServer answers every completion with tokens chunks, each after gap,
// and counts the requests it got. A request canceled by the client ends
// its stream.
func sseServer(t *testing.T, tokens int, gap time.Duration) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var calls atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/models" {
			_, _ = w.Write([]byte(`{"data":[{"id":"m"}]}`))
			return
		}
		calls.Add(1)
		w.Header().Set("Content-Type", "text/event-stream")
		rc := http.NewResponseController(w)
		for range tokens {
			select {
			case <-r.Context().Done():
				return
			case <-time.After(gap):
			}
			_, _ = w.Write([]byte("data: {\"choices\":[{\"text\":\"x\"}]}\n\n"))
			_ = rc.Flush()
		}
		_, _ = w.Write([]byte("data: {\"choices\":[],\"usage\":{\"prompt_tokens\":4,\"completion_tokens\":" + itoa(tokens) + "}}\n\ndata: [DONE]\n\n"))
	}))
	t.Cleanup(srv.Close)
	return srv, &calls
}

// runCLIInterrupted runs servebench in-process and sends it a Ctrl-C
// (cancels its context) after the given time.
func runCLIInterrupted(t *testing.T, after time.Duration, args ...string) error {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	time.AfterFunc(after, cancel)
	root := newRootCmd()
	root.SetOut(&bytes.Buffer{})
	root.SetErr(&bytes.Buffer{})
	root.SetArgs(cliArgs(args))
	return root.ExecuteContext(ctx)
}

// readResultJSON reads a saved result as a generic map.
func readResultJSON(t *testing.T, path string) map[string]any {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var res map[string]any
	if err := json.Unmarshal(raw, &res); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return res
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

func listDir(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

var quickBench = []string{"--model", "m", "--num-prompts", "3", "--random-input-len", "4", "--random-output-len", "2",
	"--skip-tokenizer-init", "--server-metrics-interval", "0"}

// As in vLLM, files are written only when asked for.
func TestFilesOnlyWhenAsked(t *testing.T) {
	srv, _ := sseServer(t, 2, 0)
	tests := []struct {
		name string
		args []string
		want []string // file name patterns in the working directory
	}{
		{"bench without output flags", []string{"bench", "--base-url", srv.URL}, nil},
		{"sim without output flags", []string{"sim", "--model", defaultEmbeddedModel, "--num-prompts", "3"}, nil},
		{"--result-dir streams records only", []string{"bench", "--base-url", srv.URL, "--result-dir", "out"}, []string{"out/openai-infqps-m-*.records.jsonl"}},
		{"--save-result", []string{"bench", "--base-url", srv.URL, "--save-result"}, []string{"openai-infqps-m-*.json", "openai-infqps-m-*.records.jsonl"}},
		{"--records alone", []string{"bench", "--base-url", srv.URL, "--records", "r.jsonl"}, []string{"r.jsonl"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			t.Chdir(dir)
			args := tt.args
			if args[0] == "bench" {
				args = append(args, quickBench...)
			}
			if _, _, err := runCLI(t, args...); err != nil {
				t.Fatal(err)
			}
			var all []string
			_ = filepath.WalkDir(".", func(path string, d fs.DirEntry, _ error) error {
				if !d.IsDir() {
					all = append(all, path)
				}
				return nil
			})
			if len(all) != len(tt.want) {
				t.Fatalf("files written: %v, want %v", all, tt.want)
			}
			for _, pattern := range tt.want {
				if m, _ := filepath.Glob(pattern); len(m) != 1 {
					t.Errorf("no file matches %s among %v", pattern, all)
				}
			}
		})
	}
}

// An unwritable destination fails before any request is sent.
func TestOutputPathsCheckedBeforeSending(t *testing.T) {
	srv, calls := sseServer(t, 2, 0)
	dir := t.TempDir()
	blocker := filepath.Join(dir, "file")
	if err := os.WriteFile(blocker, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	existing := filepath.Join(dir, "taken.jsonl")
	if err := os.WriteFile(existing, []byte("another run's records\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, want string
		args       []string
	}{
		{"result dir under a file", "--result-dir", []string{"--save-result", "--result-dir", filepath.Join(blocker, "sub")}},
		{"summary json under a file", "--summary-json", []string{"--summary-json", filepath.Join(blocker, "s.json")}},
		{"records under a file", "--records", []string{"--records", filepath.Join(blocker, "r.jsonl")}},
		{"records file of another run", "already exists", []string{"--records", existing}},
		{"explicit result name taken", "already exists", []string{"--save-result", "--result-dir", dir, "--result-filename", "taken.jsonl"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := runCLI(t, append(append([]string{"bench", "--base-url", srv.URL}, quickBench...), tt.args...)...)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want one naming %q", err, tt.want)
			}
			if n := calls.Load(); n != 0 {
				t.Fatalf("%d requests sent before the output check failed", n)
			}
			if names := listDir(t, dir); len(names) != 2 {
				t.Fatalf("a failed check left files: %v", names)
			}
		})
	}
	if b, _ := os.ReadFile(existing); string(b) != "another run's records\n" {
		t.Fatalf("another run's records file changed: %q", b)
	}
}

// Results are written whole or not at all: through a temporary file moved
// into place, leaving no temporary behind, and never over another file.

// The initial test request stops a misconfigured run with the server's
// reason, before anything is measured or written.
func TestInitialTestRequestStopsWithTheReason(t *testing.T) {
	var calls atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost { // not the GET /v1/models vocabulary probe
			calls.Add(1)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(`{"object":"error","message":"The model 'nope' does not exist.","type":"NotFoundError","code":404}`))
	}))
	defer srv.Close()
	dir := t.TempDir()
	out, _, err := runCLI(t, append([]string{"bench", "--base-url", srv.URL, "--save-result", "--result-dir", dir}, quickBench...)...)
	if err == nil || !strings.Contains(err.Error(), "HTTP 404") || !strings.Contains(err.Error(), "The model 'nope' does not exist.") {
		t.Fatalf("err = %v, want the server's 404 reason", err)
	}
	if !strings.Contains(out, "Starting initial single prompt test run...") || calls.Load() != 1 {
		t.Fatalf("%d requests, output:\n%s", calls.Load(), out)
	}
	if names := listDir(t, dir); len(names) != 0 {
		t.Fatalf("a run stopped before it started left %v", names)
	}
}

// A ramp-up run prints its ramp, not "Traffic request rate: inf"; a run
// without --save-result that is interrupted does not claim to have saved.
func TestRampPreambleAndHonestInterruptMessage(t *testing.T) {
	srv, _ := sseServer(t, 2, 0)
	out, _, err := runCLI(t, append([]string{"bench", "--base-url", srv.URL, "--ramp-up-strategy", "linear",
		"--ramp-up-start-rps", "50", "--ramp-up-end-rps", "100"}, quickBench...)...)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out, "Traffic request rate: inf") || !strings.Contains(out, "Traffic ramp-up strategy: linear.\nWill increase RPS from 50 to 100 RPS over the duration of the benchmark.\nBurstiness factor") {
		t.Fatalf("preamble:\n%s", out)
	}

	slow, _ := sseServer(t, 5, 20*time.Millisecond)
	err = runCLIInterrupted(t, 300*time.Millisecond, "bench", "--base-url", slow.URL, "--request-rate", "20", "--skip-test-request",
		"--model", "m", "--num-prompts", "1000", "--skip-tokenizer-init", "--server-metrics-interval", "0")
	if err == nil || strings.Contains(err.Error(), "saved") || !strings.Contains(err.Error(), "interrupted: partial results printed (") {
		t.Fatalf("err = %v, want an interrupt message that claims no file", err)
	}
}

// A second Ctrl-C ends the run at once instead of waiting out the grace
// period, with every request's record flushed and the result saved.
func TestSecondInterruptExitsAtOnce(t *testing.T) {
	srv, _ := sseServer(t, 1000, 20*time.Millisecond) // 20 s per request
	dir := t.TempDir()
	ctx, interrupt, stop := withInterrupts(t.Context())
	defer stop()
	time.AfterFunc(500*time.Millisecond, interrupt)
	time.AfterFunc(800*time.Millisecond, interrupt)
	root := newRootCmd()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&bytes.Buffer{})
	root.SetArgs(cliArgs([]string{"bench", "--base-url", srv.URL, "--model", "m", "--num-prompts", "100", "--request-rate", "20",
		"--random-input-len", "4", "--skip-tokenizer-init", "--server-metrics-interval", "0", "--skip-test-request",
		"--save-result", "--result-dir", dir, "--result-filename", "r.json", "--interrupt-grace", "60s"}))
	start := time.Now()
	err := root.ExecuteContext(ctx)
	// Bounded, not timed: a first Ctrl-C alone would wait the 60 s grace.
	if took := time.Since(start); took > 30*time.Second {
		t.Fatalf("run took %v after the second interrupt", took)
	}
	if exitCode(err) != 130 {
		t.Fatalf("err = %v, want exit code 130", err)
	}
	res := readResultJSON(t, filepath.Join(dir, "r.json"))
	records, _ := os.ReadFile(filepath.Join(dir, "r.records.jsonl"))
	measured := res["completed"].(float64) + res["failed"].(float64)
	if n := bytes.Count(records, []byte("\n")); measured == 0 || float64(n) != measured {
		t.Fatalf("records file has %d lines, result measured %v requests", n, measured)
	}
}

// --stats-interval 0 disables the periodic samples in sim, as it does in
// serve; unset, sim samples at vLLM's cadence.
func TestSimStatsIntervalZeroDisables(t *testing.T) {
	samples := func(args ...string) int {
		t.Helper()
		dir := t.TempDir()
		_, _, err := runCLI(t, append([]string{"sim", "--model", defaultEmbeddedModel, "--num-prompts", "200", "--request-rate", "10",
			"--save-result", "--result-dir", dir, "--result-filename", "r.json", "--records", "none"}, args...)...)
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := os.ReadFile(filepath.Join(dir, "r.json"))
		var res struct {
			Engine struct {
				Samples []any `json:"samples"`
			} `json:"engine"`
		}
		if err := json.Unmarshal(raw, &res); err != nil {
			t.Fatal(err)
		}
		return len(res.Engine.Samples)
	}
	if n := samples(); n == 0 {
		t.Fatal("no samples at the default interval")
	}
	if n := samples("--stats-interval", "0"); n != 0 {
		t.Fatalf("%d samples with --stats-interval 0, want none", n)
	}
}

// A burst far shorter than the stats interval still shows its exact
// maxima, and requests rejected for length are broken down by reason.
func TestSimPrintsExactMaximaAndRejections(t *testing.T) {
	out, _, err := runCLI(t, "sim", "--model", defaultEmbeddedModel, "--num-prompts", "300", "--random-input-len", "100",
		"--random-output-len", "10", "--max-model-len", "100")
	if err == nil || !strings.Contains(err.Error(), "no request succeeded") {
		t.Fatalf("err = %v, want a non-zero exit when every request was rejected", err)
	}
	if !strings.Contains(out, "Failed Requests by Reason") || !strings.Contains(out, "This model's maximum context length is 100 tokens. However, you requested 110 tokens") {
		t.Fatalf("no breakdown of the rejections:\n%s", out)
	}
	out, _, err = runCLI(t, "sim", "--model", defaultEmbeddedModel, "--num-prompts", "300", "--random-input-len", "100", "--random-output-len", "10")
	if err != nil {
		t.Fatal(err)
	}
	// The burst is admitted in one step (max-num-seqs 1024) and finishes
	// in well under the 10 s stats interval.
	if !strings.Contains(out, "Max running / waiting / swapped:         300 / ") {
		t.Fatalf("maxima of a 300-request burst:\n%s", out)
	}
}

// A full disk for the records stops sending, lets in-flight requests
// finish, and still prints and saves the summary; the exit is non-zero.
func TestFullDiskKeepsTheSummary(t *testing.T) {
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Skip("no /dev/full")
	}
	srv, calls := sseServer(t, 3, 10*time.Millisecond)
	dir := t.TempDir()
	out, _, err := runCLI(t, "bench", "--base-url", srv.URL, "--model", "m", "--num-prompts", "200", "--request-rate", "100",
		"--random-input-len", "4", "--skip-tokenizer-init", "--server-metrics-interval", "0", "--skip-test-request",
		"--records", "/dev/full", "--save-result", "--result-dir", dir, "--result-filename", "r.json")
	if err == nil || !strings.Contains(err.Error(), "no space left on device") || !strings.Contains(err.Error(), "saved to "+filepath.Join(dir, "r.json")+";") {
		t.Fatalf("err = %v, want the records error and where the result went", err)
	}
	if !strings.Contains(out, "Serving Benchmark Result") {
		t.Fatalf("no result block:\n%s", out)
	}
	res := readResultJSON(t, filepath.Join(dir, "r.json"))
	sent := calls.Load()
	if sent >= 200 || res["completed"].(float64) != float64(sent) {
		t.Fatalf("%d of 200 sent, %v completed: want sending stopped and every sent request summarised", sent, res["completed"])
	}
	// The run did not finish: the saved result says so, and the message
	// says how much of it the records file kept and how much was never sent.
	if res["interrupted"] != true || !strings.Contains(out, "Run interrupted") {
		t.Errorf("saved interrupted = %v: a run stopped early must say so", res["interrupted"])
	}
	if want := fmt.Sprintf("/dev/full kept 0 of the %d requests measured, and %d were never sent", sent, 200-sent); !strings.Contains(err.Error(), want) {
		t.Errorf("err = %v, want %q", err, want)
	}
}

// With no --base-url, --host or --port, bench uses a server answering at
// the default address, else the emulator of --model, and says so.
func TestDefaultTarget(t *testing.T) {
	srv, calls := sseServer(t, 2, 0)
	old := defaultTargetAddr
	t.Cleanup(func() { defaultTargetAddr = old })

	defaultTargetAddr = strings.TrimPrefix(srv.URL, "http://")
	_, stderr, err := runCLI(t, append([]string{"bench"}, quickBench...)...)
	if err != nil {
		t.Fatal(err)
	}
	if calls.Load() != 4 || strings.Contains(stderr, "emulated") || !strings.Contains(stderr, "benchmarking the server answering at "+srv.URL) {
		t.Fatalf("server at the default address got %d requests; stderr:\n%s", calls.Load(), stderr)
	}

	defaultTargetAddr = "127.0.0.1:0"
	out, stderr, err := runCLI(t, "bench", "--model", "Qwen/Qwen2-7B", "--num-prompts", "3", "--random-input-len", "16", "--random-output-len", "4")
	if err != nil {
		t.Fatal(err)
	}
	banner := "No server answered at 127.0.0.1:0: benchmarking the built-in emulated vLLM server at http://127.0.0.1:"
	if !strings.Contains(stderr, banner) || !strings.Contains(stderr, "(model Qwen2-7B, GPU") || !strings.Contains(stderr, "pass --base-url") {
		t.Fatalf("stderr lacks the one-line banner for the given model:\n%s", stderr)
	}
	if !strings.Contains(out, "Successful requests:                     3") {
		t.Fatalf("output:\n%s", out)
	}
	if _, _, err := runCLI(t, "bench", "--model", "gpt-4o", "--num-prompts", "3"); err == nil || !strings.Contains(err.Error(), "--emulated-model") {
		t.Fatalf("err = %v, want the emulator's refusal of an unknown model with the way out", err)
	}
}

// Rerunning under an explicit result name whose records an earlier run
// left (a run killed before its result, --append-result) keeps those
// records and streams the new ones under the next free name; the result
// takes the same name, so it is read with its own records, except with
// --append-result, whose file collects every run.
func TestExplicitNameKeepsEarlierRecords(t *testing.T) {
	srv, _ := sseServer(t, 2, 0)
	dir := t.TempDir()
	for _, tc := range []struct {
		extra  []string
		result string
	}{{nil, "x-2.json"}, {[]string{"--append-result"}, "x.json"}} {
		extra := tc.extra
		stale := filepath.Join(dir, "x.records.jsonl")
		if err := os.WriteFile(stale, []byte("earlier\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		os.Remove(filepath.Join(dir, "x.json"))
		_, stderr, err := runCLI(t, append(append([]string{"bench", "--base-url", srv.URL, "--save-result", "--result-dir", dir, "--result-filename", "x.json"}, quickBench...), extra...)...)
		if err != nil {
			t.Fatal(err)
		}
		if b, _ := os.ReadFile(stale); string(b) != "earlier\n" {
			t.Fatalf("earlier records overwritten: %q", b)
		}
		if !strings.Contains(stderr, "Per-request records: "+filepath.Join(dir, "x-2.records.jsonl")) || !strings.Contains(stderr, "Saved result to "+filepath.Join(dir, tc.result)) {
			t.Fatalf("stderr:\n%s", stderr)
		}
		os.Remove(filepath.Join(dir, "x-2.records.jsonl"))
		os.Remove(filepath.Join(dir, "x-2.json"))
	}
}

// Ctrl-C during the initial test request is an interrupt, not a
// misconfiguration.
func TestInterruptDuringInitialTest(t *testing.T) {
	srv, _ := sseServer(t, 1000, 20*time.Millisecond)
	err := runCLIInterrupted(t, 200*time.Millisecond, append([]string{"bench", "--base-url", srv.URL}, quickBench...)...)
	if exitCode(err) != 130 || !strings.Contains(err.Error(), "interrupted during the initial test request") {
		t.Fatalf("err = %v, want exit 130 for an interrupted test request", err)
	}
}
