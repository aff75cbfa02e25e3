package main

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
)

// syncBuffer is a bytes.Buffer safe for a writer and a concurrent reader.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestServeRejectsBeforeListening(t *testing.T) {
	_, _, err := runCLI(t, "serve", "--engine", "v0", "--max-model-len", "4096", "--max-num-batched-tokens", "2048", "--port", "0")
	want := "max_num_batched_tokens (2048) is smaller than max_model_len (4096). This effectively limits the maximum sequence length to max_num_batched_tokens and makes vLLM reject longer sequences. Please increase max_num_batched_tokens or decrease max_model_len."
	if err == nil || err.Error() != want {
		t.Errorf("err = %v, want %q", err, want)
	}
	for _, args := range [][]string{
		{"serve", "--output-len-dist", "normal:3", "--port", "0"},
		{"serve", "--failure-types", "418", "--port", "0"},
		{"serve", "--failure-rate", "2", "--port", "0"},
		{"serve", "Qwen2-7B", "--model", "Qwen2-0.5B", "--port", "0"},
		{"serve", "--port", "70000"},
	} {
		if _, _, err := runCLI(t, args...); err == nil {
			t.Errorf("%q accepted", args)
		}
	}
}

// TestServeCommand starts `servebench serve` with a positional model and
// vLLM's -tp flag, checks its vLLM startup lines and that it serves, then
// stops it by cancelling the context (as SIGINT does).
func TestServeCommand(t *testing.T) {
	base, stderr, stop := startCommand(t, `Starting vLLM API server on (http://127\.0\.0\.1:\d+)`,
		"serve", "Qwen/Qwen2-0.5B-Instruct", "-tp", "2", "--port", "0", "--served-model-name", "tiny,tiny-alias", "--stats-interval", "0", "--vllm-version", "0.9.2")
	logs := stderr.String()
	for _, want := range []string{
		"[serve] GPU KV cache size: ",
		"[serve] Maximum concurrency for 32,768 tokens per request: ",
		"with Qwen2-0.5B-Instruct on H100-SXM (TP 2, PP 1)",
	} {
		if !strings.Contains(logs, want) {
			t.Errorf("stderr lacks %q:\n%s", want, logs)
		}
	}
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr}
	resp, err := c.Post(base+"/v1/completions", "application/json", strings.NewReader(`{"model":"tiny-alias","prompt":"hi","max_tokens":3}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), `"completion_tokens":3`) || !strings.Contains(string(body), `"model":"tiny-alias"`) {
		t.Errorf("completion: %d %s", resp.StatusCode, body)
	}
	resp, err = c.Get(base + "/version")
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if want := `{"version":"0.9.2"}`; strings.TrimSpace(string(body)) != want {
		t.Errorf("/version answered %s, want the emulated release %s", body, want)
	}
	stop()
}

// vLLM reads its API key from VLLM_API_KEY when --api-key is not given.
func TestServeTakesTheAPIKeyFromTheEnvironment(t *testing.T) {
	t.Setenv("VLLM_API_KEY", "sekrit")
	base, _, stop := startCommand(t, `Starting vLLM API server on (http://127\.0\.0\.1:\d+)`,
		"serve", "--model", "Qwen2-0.5B", "--port", "0", "--stats-interval", "0")
	defer stop()
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr}
	for _, tc := range []struct {
		auth string
		want int
	}{{"", http.StatusUnauthorized}, {"Bearer wrong", http.StatusUnauthorized}, {"Bearer sekrit", http.StatusOK}} {
		req, _ := http.NewRequest(http.MethodGet, base+"/v1/models", nil)
		if tc.auth != "" {
			req.Header.Set("Authorization", tc.auth)
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("Authorization %q: %d, want %d", tc.auth, resp.StatusCode, tc.want)
		}
	}
}
