package launch

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The test binary doubles as a tiny server for launch templates:
// LAUNCH_TEST_SERVER=PORT:LIFETIME serves /health on 127.0.0.1:PORT and
// exits with status 1 after LIFETIME (a mid-run crash).
func init() {
	spec := os.Getenv("LAUNCH_TEST_SERVER")
	if spec == "" {
		return
	}
	port, life, _ := strings.Cut(spec, ":")
	lifetime, err := time.ParseDuration(life)
	if err != nil {
		os.Exit(2)
	}
	fmt.Println("INFO 11-23 12:00:00 gpu_executor.py:122] # GPU blocks: 2184, # CPU blocks: 512")
	fmt.Println("INFO 11-23 12:00:00 executor_base.py:110] Maximum concurrency for 4096 tokens per request: 8.53x")
	go func() {
		time.Sleep(lifetime)
		fmt.Println("RuntimeError: CUDA error: an illegal memory access was encountered")
		os.Exit(1)
	}()
	mux := http.NewServeMux()
	mux.HandleFunc("/health", func(w http.ResponseWriter, _ *http.Request) {})
	_ = http.ListenAndServe("127.0.0.1:"+port, mux)
	os.Exit(3)
}

func testConfig(t *testing.T, template string) Config {
	t.Helper()
	port, err := FreePort()
	if err != nil {
		t.Fatal(err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return Config{Template: template, Port: port, StartupTimeout: 3 * time.Second, PollEvery: 20 * time.Millisecond,
		StopGrace: 2 * time.Second, Vars: map[string]string{"port": strconv.Itoa(port), "exe": exe}}
}

func TestServerThatExitsAtStartupFailsWithItsLogTail(t *testing.T) {
	cfg := testConfig(t, `echo "loading {port}"; echo "ValueError: max_num_batched_tokens (535) is smaller than max_model_len (32768)." >&2; exit 3`)
	start := time.Now()
	_, err := Start(context.Background(), cfg)
	if err == nil {
		t.Fatal("no error for a server that exited")
	}
	for _, want := range []string{"exited during startup", "exit status 3", "is smaller than max_model_len (32768)"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("took %v to notice an exit", took)
	}
}

func TestServerThatNeverBecomesHealthyIsStoppedAtTheTimeout(t *testing.T) {
	cfg := testConfig(t, `echo "still loading weights"; sleep 60 & sleep 60`)
	cfg.StartupTimeout = 300 * time.Millisecond
	start := time.Now()
	_, err := Start(context.Background(), cfg)
	if err == nil || !strings.Contains(err.Error(), "never became healthy") || !strings.Contains(err.Error(), "still loading weights") {
		t.Fatalf("error = %v", err)
	}
	// Both sleeps are in the process group: Stop must not wait for them.
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("took %v: the process group was not stopped", took)
	}
}

func TestServerThatDiesMidRunIsNoticed(t *testing.T) {
	cfg := testConfig(t, `LAUNCH_TEST_SERVER={port}:400ms exec {exe}`)
	srv, err := Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop()
	st := ParseStartup(srv.Log())
	if st.GPUBlocks != 2184 || st.MaxConcurrency != 8.53 {
		t.Errorf("startup lines parsed as %+v", st)
	}
	select {
	case <-srv.Exited():
	case <-time.After(5 * time.Second):
		t.Fatal("the crash was not noticed")
	}
	if !strings.Contains(srv.ExitError(), "exit status 1") || !strings.Contains(srv.TailLine(), "illegal memory access") {
		t.Errorf("exit %q, tail %q", srv.ExitError(), srv.TailLine())
	}
	if err := srv.Stop(); err != nil {
		t.Fatal(err)
	}
	if !PortFree(srv.addr) {
		t.Error("port still taken after Stop")
	}
}

func TestHealthyServerStopsAndFreesItsPort(t *testing.T) {
	cfg := testConfig(t, `LAUNCH_TEST_SERVER={port}:1h exec {exe}`)
	srv, err := Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Stop(); err != nil {
		t.Fatal(err)
	}
	if !PortFree(srv.addr) {
		t.Error("port still taken after Stop")
	}
	again, err := Start(context.Background(), cfg)
	if err != nil {
		t.Fatalf("relaunch on the same port: %v", err)
	}
	// The relaunched server lives an hour unless stopped; left running it
	// would outlive the test binary.
	if err := again.Stop(); err != nil {
		t.Fatal(err)
	}
}

func TestRenderRejectsUnknownPlaceholders(t *testing.T) {
	got, err := Render("vllm serve {model} --port {port}", map[string]string{"model": "m", "port": "8000"})
	if err != nil || got != "vllm serve m --port 8000" {
		t.Fatalf("Render = %q, %v", got, err)
	}
	if _, err := Render("vllm serve {modle}", map[string]string{"model": "m"}); err == nil || !strings.Contains(err.Error(), "{modle}") || !strings.Contains(err.Error(), "{model}") {
		t.Fatalf("err = %v", err)
	}
}

func TestParseStartup(t *testing.T) {
	tests := []struct {
		name string
		log  string
		want Startup
	}{
		{"V0 0.6", "INFO 10-01 gpu_executor.py:122] # GPU blocks: 27901, # CPU blocks: 2048\nINFO executor_base.py] Maximum concurrency for 32768 tokens per request: 13.62x",
			Startup{GPUBlocks: 27901, MaxConcurrency: 13.62}},
		{"V1", "INFO kv_cache_utils.py:634] GPU KV cache size: 450,688 tokens\nINFO kv_cache_utils.py:637] Maximum concurrency for 4,096 tokens per request: 110.03x\nINFO gpu_worker.py] Available KV cache memory: 24.08 GiB",
			Startup{KVCacheTokens: 450688, MaxConcurrency: 110.03, KVCacheGiB: 24.08}},
		{"memory profile", "the rest of the memory reserved for KV Cache is 19.30GiB.", Startup{KVCacheGiB: 19.30}},
		{"restart logs again", "# GPU blocks: 10, # CPU blocks: 1\n# GPU blocks: 20, # CPU blocks: 1", Startup{GPUBlocks: 20}},
		{"nothing", "Starting vLLM API server on http://0.0.0.0:8000", Startup{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := ParseStartup(tc.log); got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func FuzzParseStartup(f *testing.F) {
	f.Add("# GPU blocks: 1,234, # CPU blocks: 0\nGPU KV cache size: 9 tokens")
	f.Fuzz(func(t *testing.T, log string) {
		s := ParseStartup(log)
		if s.GPUBlocks < 0 || s.KVCacheTokens < 0 {
			t.Fatalf("negative count from %q: %+v", log, s)
		}
	})
}

func TestParseNvidiaSMI(t *testing.T) {
	if got := ParseNvidiaSMI("19344, 46068\n1, 46068\n"); got != "19344MiB / 46068MiB; 1MiB / 46068MiB" {
		t.Errorf("got %q", got)
	}
	if got := ParseNvidiaSMI(""); got != "" {
		t.Errorf("got %q", got)
	}
}
