package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/servebench/servebench/internal/fixture"
	"github.com/servebench/servebench/internal/textline"
	"github.com/servebench/servebench/runspec"
	"github.com/servebench/servebench/serve"
)

// defaultEmbeddedModel is what bench emulates when no server is given.
const defaultEmbeddedModel = runspec.DefaultEmulatedModel

// runCLI runs servebench in-process with args, as main does.
func runCLI(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	root := newRootCmd()
	var out, errb bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errb)
	root.SetArgs(cliArgs(args))
	err = root.ExecuteContext(t.Context())
	return out.String(), errb.String(), err
}

// emulator starts the built-in emulated vLLM server on a loopback port.
func emulator(t *testing.T) (baseURL, host, port string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	target, err := serve.StartEmulatedModel(ctx, defaultEmbeddedModel, runspec.DefaultEmulatedGPU, runspec.Env{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = target.Close(); cancel() })
	u, err := url.Parse(target.URL())
	if err != nil {
		t.Fatal(err)
	}
	host, port, _ = net.SplitHostPort(u.Host)
	return target.URL(), host, port
}

// sonnetFile writes the sonnet text four times over, as sonnet_4x.txt in
// vLLM's instructions.
func sonnetFile(t *testing.T) string {
	t.Helper()
	return fixture.SonnetFile(t, 4)
}

func TestPublishedCommandsRunUnchanged(t *testing.T) {
	baseURL, host, port := emulator(t)
	t.Run("random via --base-url", func(t *testing.T) {
		out, _, err := runCLI(t, "bench", "--backend", "vllm", "--base-url", baseURL, "--endpoint", "/v1/completions",
			"--model", defaultEmbeddedModel, "--dataset-name", "random", "--random-input-len", "1024", "--random-output-len", "1024",
			"--num-prompts", "10", "--records", "none")
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"Successful requests:                     10        \n", "Total input tokens:                      10240     \n", "Total generated tokens:                  10240     \n", "Mean TPOT (ms):"} {
			if !strings.Contains(out, want) {
				t.Errorf("output lacks %q:\n%s", want, out)
			}
		}
	})
	t.Run("sonnet via --port with saved result", func(t *testing.T) {
		dir := t.TempDir()
		// The published command, with --num-prompts 200 --request-rate 2
		// scaled to 20 prompts at 20 req/s so the test takes a second, not 100.
		out, _, err := runCLI(t, "bench", "--backend", "vllm", "--model", defaultEmbeddedModel, "--dataset-name", "sonnet",
			"--dataset-path", sonnetFile(t), "--sonnet-input-len", "1024", "--sonnet-output-len", "6", "--sonnet-prefix-len", "50",
			"--num-prompts", "20", "--host", host, "--port", port, "--save-result", "--result-dir", dir, "--result-filename", "x.json",
			"--request-rate", "20")
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(out, "Request rate configured (RPS):           20.00") {
			t.Errorf("no configured-rate row:\n%s", out)
		}
		raw, err := os.ReadFile(filepath.Join(dir, "x.json"))
		if err != nil {
			t.Fatal(err)
		}
		var res map[string]any
		if err := json.Unmarshal(raw, &res); err != nil {
			t.Fatalf("result JSON: %v", err)
		}
		if res["completed"] != 20.0 || res["request_rate"] != 20.0 || res["backend"] != "vllm" || res["total_output_tokens"] != 120.0 {
			t.Errorf("result JSON: completed=%v request_rate=%v backend=%v total_output_tokens=%v", res["completed"], res["request_rate"], res["backend"], res["total_output_tokens"])
		}
		records, err := os.ReadFile(filepath.Join(dir, "x.records.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		if n := bytes.Count(records, []byte("\n")); n != 20 {
			t.Errorf("records file has %d lines, want 20", n)
		}
	})
	t.Run("chat, goodput, percentiles, metadata, summary json", func(t *testing.T) {
		dir := t.TempDir()
		out, _, err := runCLI(t, "bench", "--backend", "openai-chat", "--base-url", baseURL, "--num-prompts", "8",
			"--random-input-len", "64", "--random-output-len", "16", "--goodput", "ttft:5000", "tpot:500",
			"--percentile-metrics", "ttft,tpot,itl,e2el", "--metric-percentiles", "50,90,99", "--save-result", "--save-detailed",
			"--result-dir", dir, "--metadata", "gpu=H100", "tp=1", "--label", "emu", "--summary-json", filepath.Join(dir, "s.json"))
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"Request goodput (req/s):", "P90 E2EL (ms):", "----------------End-to-end Latency----------------"} {
			if !strings.Contains(out, want) {
				t.Errorf("output lacks %q", want)
			}
		}
		matches, _ := filepath.Glob(filepath.Join(dir, "emu-infqps-*.json"))
		if len(matches) != 1 {
			t.Fatalf("result files %v, want one emu-infqps-*.json", matches)
		}
		raw, _ := os.ReadFile(matches[0])
		var res map[string]any
		if err := json.Unmarshal(raw, &res); err != nil {
			t.Fatal(err)
		}
		if res["gpu"] != "H100" || res["tp"] != "1" || res["label"] != "emu" || res["p90_e2el_ms"] == nil || len(res["ttfts"].([]any)) != 8 {
			t.Errorf("result JSON misses metadata, label, percentiles or detail: %v", res)
		}
		if res["request_goodput"].(float64) <= 0 {
			t.Errorf("goodput %v", res["request_goodput"])
		}
		sum, err := os.ReadFile(filepath.Join(dir, "s.json"))
		if err != nil || !bytes.Contains(sum, []byte(`"requests_per_second"`)) || !bytes.Contains(sum, []byte(`"p95"`)) {
			t.Errorf("summary JSON %s, %v", sum, err)
		}
	})
}

func TestAPIKeyIsSentButNeverWritten(t *testing.T) {
	var mu sync.Mutex
	var gotAuth []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/completions" { // the /v1/models vocabulary probe
			http.NotFound(w, r)
			return
		}
		mu.Lock()
		gotAuth = append(gotAuth, r.Header.Get("Authorization"))
		mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write([]byte("data: {\"choices\":[{\"text\":\"hi\"}]}\n\ndata: {\"choices\":[],\"usage\":{\"prompt_tokens\":4,\"completion_tokens\":1}}\n\ndata: [DONE]\n\n"))
	}))
	defer srv.Close()
	t.Setenv("OPENAI_API_KEY", "sk-secret-123")
	dir := t.TempDir()
	_, _, err := runCLI(t, "bench", "--base-url", srv.URL, "--model", "m", "--num-prompts", "3", "--random-input-len", "4",
		"--random-output-len", "1", "--save-result", "--save-detailed", "--result-dir", dir, "--skip-tokenizer-init", "--server-metrics-interval", "0")
	if err != nil {
		t.Fatal(err)
	}
	// The initial test request and the three measured ones.
	if len(gotAuth) != 4 || gotAuth[0] != "Bearer sk-secret-123" {
		t.Fatalf("server saw Authorization %q", gotAuth)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*"))
	if len(files) != 2 {
		t.Fatalf("files written: %v", files)
	}
	for _, f := range files {
		b, _ := os.ReadFile(f)
		if bytes.Contains(b, []byte("sk-secret")) {
			t.Errorf("%s contains the API key", f)
		}
	}
}

func TestBenchBadInputIsOneLineError(t *testing.T) {
	baseURL, _, _ := emulator(t)
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"missing dataset file", []string{"--dataset-name", "sharegpt", "--dataset-path", "/nonexistent/x.json"}, `"/nonexistent/x.json"`},
		{"bad range ratio", []string{"--random-range-ratio", "1.5"}, "--random-range-ratio"},
		{"bad backend", []string{"--backend", "nope"}, "--backend"},
		{"detailed without save", []string{"--save-detailed"}, "--save-result"},
		{"bad goodput key", []string{"--goodput", "foo:1"}, "--goodput"},
		{"bad percentile", []string{"--metric-percentiles", "101"}, "--metric-percentiles"},
		{"ramp-up with a rate", []string{"--ramp-up-strategy", "linear", "--ramp-up-start-rps", "1", "--ramp-up-end-rps", "5", "--request-rate", "3"}, "ramp"},
		{"bad extra body", []string{"--extra-body", "{"}, "--extra-body"},
		{"bad metadata", []string{"--metadata", "novalue"}, "--metadata"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"bench", "--base-url", baseURL, "--num-prompts", "2", "--records", "none"}, tt.args...)
			_, _, err := runCLI(t, args...)
			if err == nil {
				t.Fatalf("accepted %v", tt.args)
			}
			msg := err.Error()
			if !strings.Contains(msg, tt.want) || strings.Contains(textline.OneLine(msg, 0), "\n") {
				t.Fatalf("error %q should name %q on one line", msg, tt.want)
			}
		})
	}
}

// Nothing listening: the initial test request stops the run with the
// reason; skipped, every request fails, the block breaks the failures down
// by reason, and the exit status is non-zero.
func TestConnectionRefused(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	args := []string{"bench", "--base-url", "http://" + addr, "--model", "m", "--num-prompts", "3",
		"--skip-tokenizer-init", "--server-metrics-interval", "0", "--random-input-len", "8"}
	out, _, err := runCLI(t, args...)
	if err == nil || !strings.Contains(err.Error(), "initial test request failed: connection refused") || strings.Contains(out, "Serving Benchmark Result") {
		t.Fatalf("err = %v, output:\n%s\nwant the run stopped by the test request", err, out)
	}
	out, _, err = runCLI(t, append(args, "--skip-test-request")...)
	if err == nil || !strings.Contains(err.Error(), "no request succeeded") {
		t.Fatalf("err = %v, want a non-zero exit for a run with no success", err)
	}
	for _, want := range []string{"Failed requests:                         3", "Failed Requests by Reason", "is the server running and listening there? 3 "} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// Ctrl-C: sending stops, in-flight requests get the grace period, and the
// partial result is printed, saved marked interrupted, with every finished
// request already in the records file; the exit code is 130.
func TestInterruptSavesPartialResult(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		rc := http.NewResponseController(w)
		for range 5 {
			select {
			case <-r.Context().Done():
				return
			case <-time.After(20 * time.Millisecond):
			}
			_, _ = w.Write([]byte("data: {\"choices\":[{\"text\":\"x\"}]}\n\n"))
			_ = rc.Flush()
		}
		_, _ = w.Write([]byte("data: {\"choices\":[],\"usage\":{\"prompt_tokens\":4,\"completion_tokens\":5}}\n\ndata: [DONE]\n\n"))
	}))
	defer srv.Close()
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(t.Context())
	time.AfterFunc(700*time.Millisecond, cancel)
	root := newRootCmd()
	var out, errb bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errb)
	root.SetArgs(cliArgs([]string{"bench", "--base-url", srv.URL, "--model", "m", "--num-prompts", "1000", "--request-rate", "20",
		"--random-input-len", "4", "--random-output-len", "5", "--skip-tokenizer-init", "--server-metrics-interval", "0",
		"--save-result", "--result-dir", dir, "--result-filename", "r.json", "--interrupt-grace", "2s"}))
	err := root.ExecuteContext(ctx)
	if exitCode(err) != 130 {
		t.Fatalf("err = %v, want exit code 130", err)
	}
	if !strings.Contains(out.String(), "Run interrupted") {
		t.Errorf("output does not say the run was interrupted:\n%s", out.String())
	}
	raw, err := os.ReadFile(filepath.Join(dir, "r.json"))
	if err != nil {
		t.Fatal(err)
	}
	var res map[string]any
	if err := json.Unmarshal(raw, &res); err != nil {
		t.Fatal(err)
	}
	completed := res["completed"].(float64)
	if res["interrupted"] != true || completed < 5 || completed > 20 || res["failed"].(float64) != 0 {
		t.Fatalf("interrupted %v completed %v failed %v: want a partial, clean run", res["interrupted"], completed, res["failed"])
	}
	records, err := os.ReadFile(filepath.Join(dir, "r.records.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(records, []byte("\n")); float64(n) != completed {
		t.Fatalf("records file has %d lines, result says %v completed", n, completed)
	}
}
