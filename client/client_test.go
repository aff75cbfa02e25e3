package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"

	"github.com/servebench/servebench/internal/golden"
	"github.com/servebench/servebench/internal/jsonenc"
	"github.com/servebench/servebench/metrics"
	"github.com/servebench/servebench/workload"
)

func TestMain(m *testing.M) {
	if os.Getenv(holdServerEnv) != "" {
		runHoldServer()
		return
	}
	goleak.VerifyTestMain(m)
}

func newTestClient(t *testing.T, cfg Config) *Client {
	t.Helper()
	c, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(c.CloseIdleConnections)
	return c
}

// sseHandler streams the given raw SSE events, flushing after each.
func sseHandler(events ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		rc := http.NewResponseController(w)
		for _, ev := range events {
			_, _ = io.WriteString(w, ev)
			_ = rc.Flush()
		}
	}
}

// splitEvents splits a captured stream into its events, blank line kept.
func splitEvents(raw string) []string {
	var out []string
	for _, ev := range strings.SplitAfter(raw, "\n\n") {
		if strings.TrimSpace(ev) != "" {
			out = append(out, ev)
		}
	}
	return out
}

func TestNewValidation(t *testing.T) {
	tests := []struct {
		cfg  Config
		want string
	}{
		{Config{}, "base_url is empty"},
		{Config{BaseURL: "127.0.0.1:8000"}, "must start with http:// or https://"},
		{Config{BaseURL: "ftp://127.0.0.1"}, "must start with http:// or https://"},
		{Config{BaseURL: "http://"}, "has no host"},
		{Config{BaseURL: "http://127.0.0.1:8000/v1"}, "includes the API path"},
		{Config{BaseURL: "http://127.0.0.1:8000/v1/completions"}, "includes the API path"},
		{Config{BaseURL: "http://127.0.0.1:8000?x=1"}, "query or fragment"},
		{Config{BaseURL: "http://[::1"}, "is not a valid URL"},
		{Config{BaseURL: "http://127.0.0.1:8000", Endpoint: "v1/completions"}, "must be a path starting with '/'"},
		{Config{BaseURL: "http://127.0.0.1:8000", Timeout: -time.Second}, "request timeout -1s is negative"},
		{Config{BaseURL: "http://127.0.0.1:8000", FirstByteTimeout: -time.Second}, "first-byte timeout -1s is negative"},
		{Config{BaseURL: "http://127.0.0.1:8000", ChunkTimeout: -time.Second}, "chunk timeout -1s is negative"},
		{Config{BaseURL: "http://127.0.0.1:8000", Header: http.Header{"Bad Name": {"x"}}}, "header name"},
		{Config{BaseURL: "http://127.0.0.1:8000", ExtraBody: map[string]any{"prompt": 1}}, "extra_body key"},
	}
	for _, tc := range tests {
		_, err := New(tc.cfg)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("New(%+v) = %v, want error containing %q", tc.cfg, err, tc.want)
			continue
		}
		if strings.Contains(err.Error(), "\n") {
			t.Errorf("New(%+v) error spans lines: %q", tc.cfg, err)
		}
	}
	c, err := New(Config{BaseURL: "http://127.0.0.1:8000/", Endpoint: "/v1/chat/completions"})
	if err != nil {
		t.Fatal(err)
	}
	if got := c.endpoint.String(); got != "http://127.0.0.1:8000/v1/chat/completions" {
		t.Errorf("endpoint = %s", got)
	}
	if !c.body.chat || c.modelsURL != "http://127.0.0.1:8000/v1/models" {
		t.Errorf("chat = %v, models URL = %s", c.body.chat, c.modelsURL)
	}
	c, err = New(Config{BaseURL: "https://gw.example/prefix", Endpoint: "/openai/v1/completions"})
	if err != nil {
		t.Fatal(err)
	}
	if c.endpoint.String() != "https://gw.example/prefix/openai/v1/completions" || c.modelsURL != "https://gw.example/prefix/openai/v1/models" || c.body.chat {
		t.Errorf("endpoint %s, models %s, chat %v", c.endpoint, c.modelsURL, c.body.chat)
	}
}

// goldenRecord is the part of a Record that does not depend on timing.
type goldenRecord struct {
	Success          bool   `json:"success"`
	Error            string `json:"error,omitempty"`
	Status           int    `json:"status"`
	PromptLen        int    `json:"prompt_len"`
	OutputLen        int    `json:"output_len"`
	OutputLenSource  string `json:"output_len_source,omitempty"`
	CachedTokens     int    `json:"cached_tokens"`
	MaxTokens        int    `json:"max_tokens"`
	ITLEntries       int    `json:"itl_entries"`
	FirstChunkTokens int    `json:"first_chunk_tokens,omitempty"`
	GeneratedText    string `json:"generated_text"`
}

func toGolden(r *metrics.Record) goldenRecord {
	return goldenRecord{
		Success: r.Success, Error: r.Error, Status: r.Status, PromptLen: r.PromptLen, OutputLen: r.OutputLen,
		OutputLenSource: r.OutputLenSource, CachedTokens: r.CachedTokens, MaxTokens: r.MaxTokens,
		ITLEntries: len(r.ITL), FirstChunkTokens: r.FirstChunkTokens, GeneratedText: r.GeneratedText,
	}
}

// checkTimings asserts the invariants every successful record keeps.
func checkTimings(t *testing.T, r *metrics.Record) {
	t.Helper()
	if r.Start < 0 || r.TTFT <= 0 || r.Latency < r.TTFT {
		t.Errorf("timings out of order: start %v ttft %v latency %v", r.Start, r.TTFT, r.Latency)
	}
	var sum time.Duration
	for _, g := range r.ITL {
		if g < 0 {
			t.Errorf("negative ITL gap %v", g)
		}
		sum += g
	}
	if sum != r.Latency-r.TTFT {
		t.Errorf("ITL sums to %v, want latency-ttft = %v", sum, r.Latency-r.TTFT)
	}
}

// TestCapturedStreams replays real server output captured from llama.cpp
// and a vLLM emulator and compares the records with golden files.
func TestCapturedStreams(t *testing.T) {
	tests := []struct {
		file     string
		endpoint string
		noStream bool
		json     bool
	}{
		{file: "llamacpp-completions-stream.txt", endpoint: "/v1/completions"},
		{file: "llamacpp-chat-stream.txt", endpoint: "/v1/chat/completions"},
		{file: "llmd-vllm-emulated-completions-stream.txt", endpoint: "/v1/completions"},
		{file: "llmd-vllm-emulated-chat-stream.txt", endpoint: "/v1/chat/completions"},
		{file: "llamacpp-completions-nostream.json", endpoint: "/v1/completions", noStream: true, json: true},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			raw, err := os.ReadFile(filepath.Join("testdata", "sse", tc.file))
			if err != nil {
				t.Fatalf("captured stream missing (copy it from shared/examples/sse): %v", err)
			}
			var h http.HandlerFunc
			if tc.json {
				h = func(w http.ResponseWriter, r *http.Request) {
					w.Header().Set("Content-Type", "application/json")
					_, _ = w.Write(raw)
				}
			} else {
				h = sseHandler(splitEvents(string(raw))...)
			}
			srv := httptest.NewServer(h)
			defer srv.Close()
			c := newTestClient(t, Config{BaseURL: srv.URL, Endpoint: tc.endpoint, Model: "tiny", NoStream: tc.noStream})
			var rec metrics.Record
			c.Do(context.Background(), &workload.Request{Index: 3, Prompt: "hello", PromptLen: 99, MaxTokens: 8}, "bench-3", time.Now(), &rec)
			if rec.Index != 3 || rec.RequestID != "bench-3" {
				t.Errorf("index %d request id %q", rec.Index, rec.RequestID)
			}
			if rec.Success {
				checkTimings(t, &rec)
			}
			if tc.noStream && (rec.TTFT != rec.Latency || len(rec.ITL) != 0) {
				t.Errorf("non-streamed: ttft %v latency %v itl %v", rec.TTFT, rec.Latency, rec.ITL)
			}
			got, err := json.MarshalIndent(toGolden(&rec), "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			golden.CheckFile(t, filepath.Join("testdata", "golden", strings.TrimSuffix(strings.TrimSuffix(tc.file, ".txt"), ".json")+".json"), append(got, '\n'))
		})
	}
}

func chunk(text string) string {
	return `data: {"id":"c","object":"text_completion","choices":[{"index":0,"text":` + string(jsonenc.AppendString(nil, text)) + `,"finish_reason":null}]}` + "\n\n"
}

const (
	finishChunk = `data: {"id":"c","object":"text_completion","choices":[{"index":0,"text":"","finish_reason":"length"}]}` + "\n\n"
	usageChunk  = `data: {"id":"c","choices":[],"usage":{"prompt_tokens":5,"completion_tokens":2,"prompt_tokens_details":{"cached_tokens":4}}}` + "\n\n"
	doneEvent   = "data: [DONE]\n\n"
)

func TestStreamOutcomes(t *testing.T) {
	longBody := strings.Repeat("é", 400) // 800 bytes, cut inside a rune at 300
	tests := []struct {
		name    string
		handler http.HandlerFunc
		cfg     Config
		want    goldenRecord
		wantErr string // substring of rec.Error
	}{
		{
			name:    "vLLM stream with usage chunk",
			handler: sseHandler(chunk("a"), chunk("b"), finishChunk, usageChunk, doneEvent),
			want:    goldenRecord{Success: true, Status: 200, PromptLen: 5, OutputLen: 2, OutputLenSource: "usage", CachedTokens: 4, MaxTokens: 8, ITLEntries: 2, GeneratedText: "ab"},
		},
		{
			name:    "no usage: output counted in text chunks",
			handler: sseHandler(chunk("a"), chunk(""), chunk("b"), doneEvent),
			want:    goldenRecord{Success: true, Status: 200, PromptLen: 7, OutputLen: 2, OutputLenSource: "chunks", MaxTokens: 8, ITLEntries: 2, GeneratedText: "ab"},
		},
		{
			name:    "finish_reason without [DONE] is a clean end",
			handler: sseHandler(chunk("a"), finishChunk),
			want:    goldenRecord{Success: true, Status: 200, PromptLen: 7, OutputLen: 1, OutputLenSource: "chunks", MaxTokens: 8, ITLEntries: 1, GeneratedText: "a"},
		},
		{
			name: "reasoning counts as output, duplicated reasoning once",
			cfg:  Config{Endpoint: "/v1/chat/completions"},
			handler: sseHandler(
				`data: {"choices":[{"delta":{"role":"assistant"}}]}`+"\n\n",
				`data: {"choices":[{"delta":{"reasoning_content":"think ","reasoning":"think "}}]}`+"\n\n",
				`data: {"choices":[{"delta":{"reasoning":"more "}}]}`+"\n\n",
				`data: {"choices":[{"delta":{"content":"answer"},"finish_reason":"stop"}]}`+"\n\n", doneEvent),
			want: goldenRecord{Success: true, Status: 200, PromptLen: 7, OutputLen: 3, OutputLenSource: "chunks", MaxTokens: 8, ITLEntries: 3, GeneratedText: "think more answer"},
		},
		{
			name: "continuous usage splits multi-token chunks",
			cfg:  Config{ContinuousUsage: true},
			handler: sseHandler(
				`data: {"choices":[{"text":"ab"}],"usage":{"prompt_tokens":5,"completion_tokens":2}}`+"\n\n",
				`data: {"choices":[{"text":"cde"}],"usage":{"prompt_tokens":5,"completion_tokens":5}}`+"\n\n",
				`data: {"choices":[{"text":"f","finish_reason":"length"}],"usage":{"prompt_tokens":5,"completion_tokens":6}}`+"\n\n",
				`data: {"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":6}}`+"\n\n", doneEvent),
			want: goldenRecord{Success: true, Status: 200, PromptLen: 5, OutputLen: 6, OutputLenSource: "usage", MaxTokens: 8, ITLEntries: 4, FirstChunkTokens: 2, GeneratedText: "abcdef"},
		},
		{
			name: "server ignores stream and answers JSON",
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				_, _ = io.WriteString(w, `{"choices":[{"text":"xyz","finish_reason":"stop"}],"usage":{"completion_tokens":3,"prompt_tokens":2}}`)
			},
			// All three tokens arrived with the first (only) chunk.
			want: goldenRecord{Success: true, Status: 200, PromptLen: 2, OutputLen: 3, OutputLenSource: "usage", MaxTokens: 8, FirstChunkTokens: 3, GeneratedText: "xyz"},
		},
		{
			name: "no content type: SSE sniffed",
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.Header()["Content-Type"] = nil
				_, _ = io.WriteString(w, chunk("a")+finishChunk+doneEvent)
			},
			want: goldenRecord{Success: true, Status: 200, PromptLen: 7, OutputLen: 1, OutputLenSource: "chunks", MaxTokens: 8, ITLEntries: 1, GeneratedText: "a"},
		},
		{
			name: "no content type: JSON sniffed",
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.Header()["Content-Type"] = nil
				_, _ = io.WriteString(w, "\n"+`{"choices":[{"message":{"content":"hi"}}]}`)
			},
			want: goldenRecord{Success: true, Status: 200, PromptLen: 7, OutputLen: 1, OutputLenSource: "chunks", MaxTokens: 8, GeneratedText: "hi"},
		},
		{
			name:    "HTTP 503 with a long multi-line body",
			handler: func(w http.ResponseWriter, r *http.Request) { http.Error(w, "overloaded\nretry later\t"+longBody, 503) },
			wantErr: "HTTP 503: overloaded retry later éé",
		},
		{
			name: "HTTP 404 from the emulator (captured body)",
			handler: func(w http.ResponseWriter, r *http.Request) {
				raw, err := os.ReadFile("testdata/sse/llmd-vllm-emulated-error-unknown-model.txt")
				if err != nil {
					http.Error(w, "test data missing: "+err.Error(), 599)
					return
				}
				w.WriteHeader(404)
				_, _ = io.WriteString(w, strings.SplitN(string(raw), "\n", 2)[0]) // line 2 notes the status
			},
			wantErr: "HTTP 404: {\"error\":{\"message\":\"The model `nope` does not exist.\"",
		},
		{
			name:    "HTTP 500 with empty body",
			handler: func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(500) },
			wantErr: "HTTP 500 Internal Server Error",
		},
		{
			name:    "malformed JSON chunk",
			handler: sseHandler(chunk("a"), "data: {\"choices\":[{\"text\":\"b\"}\n\n", doneEvent),
			wantErr: `malformed JSON in SSE chunk 2: unexpected end of JSON in array at byte 24 (data starts "{\"choices\"`,
		},
		{
			name:    "error object mid-stream",
			handler: sseHandler(chunk("a"), `data: {"error":{"object":"error","message":"KV cache\nexhausted","code":500}}`+"\n\n", doneEvent),
			wantErr: "server error at chunk 2: KV cache exhausted",
		},
		{
			name:    "old vLLM error body as an event",
			handler: sseHandler(`data: {"object":"error","message":"bad","code":400}` + "\n\n"),
			wantErr: "server error at chunk 1: bad",
		},
		{
			name:    "error event",
			handler: sseHandler(chunk("a"), "event: error\ndata: {\"error\":{\"message\":\"boom\"}}\n\n"),
			wantErr: "server sent an error event at chunk 2: boom",
		},
		{
			name:    "stream ends without [DONE] or finish_reason",
			handler: sseHandler(chunk("a"), chunk("b")),
			wantErr: "stream closed before [DONE] or a finish_reason (after 2 chunks)",
		},
		{
			name:    "no choices chunk at all",
			handler: sseHandler(usageChunk, doneEvent),
			wantErr: "Never received a valid chunk to calculate TTFT.",
		},
		{
			name:    "empty 200 body",
			handler: func(w http.ResponseWriter, r *http.Request) { w.Header().Set("Content-Type", "text/event-stream") },
			wantErr: "Never received a valid chunk to calculate TTFT.",
		},
		{
			name:    "non-JSON data",
			handler: sseHandler("data: hello\n\n"),
			wantErr: `malformed JSON in SSE chunk 1: JSON is not an object at byte 0 (data starts "hello")`,
		},
		{
			name: "server closes mid-stream",
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				_, _ = io.WriteString(w, chunk("a")+chunk("b"))
				_ = http.NewResponseController(w).Flush()
				conn, _, err := http.NewResponseController(w).Hijack()
				if err == nil {
					_ = conn.Close()
				}
			},
			wantErr: "server closed the connection while streaming (after 2 chunks)",
		},
		{
			name:    "chat request with token IDs only",
			cfg:     Config{Endpoint: "/v1/chat/completions"},
			handler: sseHandler(chunk("a"), doneEvent),
			wantErr: "the chat endpoint needs a text prompt",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(tc.handler)
			defer srv.Close()
			cfg := tc.cfg
			cfg.BaseURL = srv.URL
			c := newTestClient(t, cfg)
			req := &workload.Request{Prompt: "hello", PromptLen: 7, MaxTokens: 8}
			if strings.Contains(tc.name, "token IDs") {
				req = &workload.Request{PromptIDs: []int32{1, 2}, PromptLen: 2, MaxTokens: 8}
			}
			var rec metrics.Record
			c.Do(context.Background(), req, "", time.Now(), &rec)
			if tc.wantErr != "" {
				if rec.Success || !strings.Contains(rec.Error, tc.wantErr) {
					t.Fatalf("success %v error %q, want failure containing %q", rec.Success, rec.Error, tc.wantErr)
				}
				if strings.ContainsAny(rec.Error, "\n\r") || len(rec.Error) > 500 {
					t.Errorf("error is not one short line: %q", rec.Error)
				}
				if rec.OutputLen != 0 || rec.Latency < 0 {
					t.Errorf("failed record: output %d latency %v", rec.OutputLen, rec.Latency)
				}
				return
			}
			if d := cmp.Diff(tc.want, toGolden(&rec)); d != "" {
				t.Errorf("record (-want +got):\n%s", d)
			}
			checkTimings(t, &rec)
		})
	}
}

func TestConnectionFailures(t *testing.T) {
	t.Run("connection refused", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		_ = ln.Close()
		c := newTestClient(t, Config{BaseURL: "http://" + addr})
		var rec metrics.Record
		c.Do(context.Background(), &workload.Request{Prompt: "x", MaxTokens: 1}, "", time.Now(), &rec)
		want := "connection refused by " + addr
		if rec.Success || rec.Status != 0 || !strings.HasPrefix(rec.Error, want) {
			t.Errorf("success %v status %d error %q, want prefix %q", rec.Success, rec.Status, rec.Error, want)
		}
	})
	t.Run("DNS failure", func(t *testing.T) {
		// A resolver that fails locally: the test must not send DNS traffic.
		resolver := &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, address string) (net.Conn, error) {
			return nil, errors.New("no DNS in tests")
		}}
		transport := &http.Transport{DialContext: (&net.Dialer{Resolver: resolver}).DialContext}
		c := newTestClient(t, Config{BaseURL: "http://nonexistent.invalid:8000", Transport: transport})
		var rec metrics.Record
		c.Do(context.Background(), &workload.Request{Prompt: "x", MaxTokens: 1}, "", time.Now(), &rec)
		if rec.Success || !strings.HasPrefix(rec.Error, `DNS lookup of "nonexistent.invalid" failed`) {
			t.Errorf("success %v error %q", rec.Success, rec.Error)
		}
	})
}

// TestStallAndCancel uses a real loopback server that blocks until the test
// ends; the assertions are about the outcome, not about how long it took.
func TestStallAndCancel(t *testing.T) {
	release := make(chan struct{})
	firstSent := make(chan struct{}, 2)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, chunk("a"))
		_ = http.NewResponseController(w).Flush()
		firstSent <- struct{}{}
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)

	t.Run("stall beyond timeout", func(t *testing.T) {
		c := newTestClient(t, Config{BaseURL: srv.URL, Timeout: 300 * time.Millisecond})
		var rec metrics.Record
		c.Do(context.Background(), &workload.Request{Prompt: "x", MaxTokens: 4}, "", time.Now(), &rec)
		<-firstSent
		if want := "request timeout: not finished within 300ms"; rec.Success || rec.Error != want {
			t.Errorf("success %v error %q, want %q", rec.Success, rec.Error, want)
		}
		if rec.Status != 200 || rec.TTFT <= 0 || rec.Latency < 300*time.Millisecond {
			t.Errorf("status %d ttft %v latency %v: the failure should be seen after the timeout", rec.Status, rec.TTFT, rec.Latency)
		}
	})
	t.Run("context canceled", func(t *testing.T) {
		c := newTestClient(t, Config{BaseURL: srv.URL})
		ctx, cancel := context.WithCancel(context.Background())
		go func() {
			<-firstSent
			cancel()
		}()
		var rec metrics.Record
		c.Do(ctx, &workload.Request{Prompt: "x", MaxTokens: 4}, "", time.Now(), &rec)
		if rec.Success || rec.Error != "canceled" {
			t.Errorf("success %v error %q, want canceled", rec.Success, rec.Error)
		}
	})
	t.Run("canceled before sending", func(t *testing.T) {
		c := newTestClient(t, Config{BaseURL: srv.URL})
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		var rec metrics.Record
		c.Do(ctx, &workload.Request{Prompt: "x", MaxTokens: 4}, "", time.Now(), &rec)
		if rec.Success || rec.Error != "canceled" || rec.Status != 0 {
			t.Errorf("success %v status %d error %q, want canceled", rec.Success, rec.Status, rec.Error)
		}
	})
}

func TestRequestOnTheWire(t *testing.T) {
	const secret = "sk-test-secret-token"
	type seen struct {
		method, path, requestID, auth, custom, contentType, accept string
		body                                                       map[string]any
	}
	got := make(chan seen, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body map[string]any
		_ = json.NewDecoder(r.Body).Decode(&body)
		got <- seen{r.Method, r.URL.Path, r.Header.Get("X-Request-Id"), r.Header.Get("Authorization"), r.Header.Get("X-Custom"), r.Header.Get("Content-Type"), r.Header.Get("Accept-Encoding"), body}
		http.Error(w, "nope", http.StatusUnauthorized)
	}))
	defer srv.Close()
	c := newTestClient(t, Config{
		BaseURL: srv.URL, Model: "m", IgnoreEOS: true,
		Header: http.Header{"Authorization": {"Bearer " + secret}, "x-custom": {"v"}},
	})
	var rec metrics.Record
	c.Do(context.Background(), &workload.Request{Prompt: "p", MaxTokens: 3}, "bench-abc-7", time.Now(), &rec)
	s := <-got
	want := seen{"POST", "/v1/completions", "bench-abc-7", "Bearer " + secret, "v", "application/json", "", map[string]any{
		"model": "m", "prompt": "p", "max_tokens": 3.0, "stream": true, "stream_options": map[string]any{"include_usage": true}, "ignore_eos": true,
	}}
	if d := cmp.Diff(want, s, cmp.AllowUnexported(seen{})); d != "" {
		t.Errorf("request (-want +got):\n%s", d)
	}
	if rec.Status != 401 || rec.Error != "HTTP 401: nope" {
		t.Errorf("status %d error %q", rec.Status, rec.Error)
	}
	out, _ := json.Marshal(rec)
	if strings.Contains(string(out), secret) {
		t.Errorf("the Authorization header leaked into the record: %s", out)
	}
}

func TestModels(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path != "/v1/models":
			http.NotFound(w, r)
		case r.Header.Get("Authorization") != "Bearer k":
			http.Error(w, `{"error":"missing key"}`, http.StatusUnauthorized)
		default:
			_, _ = io.WriteString(w, `{"object":"list","data":[{"id":"tiny","object":"model"},{"id":"big"}]}`)
		}
	}))
	defer srv.Close()
	c := newTestClient(t, Config{BaseURL: srv.URL, Header: http.Header{"Authorization": {"Bearer k"}}})
	ids, err := c.Models(context.Background())
	if err != nil || !cmp.Equal(ids, []string{"tiny", "big"}) {
		t.Errorf("Models = %v, %v", ids, err)
	}
	noKey := newTestClient(t, Config{BaseURL: srv.URL})
	_, err = noKey.Models(context.Background())
	var se *StatusError
	if !errors.As(err, &se) || se.Code != 401 || !strings.Contains(err.Error(), `HTTP 401: {"error":"missing key"}`) {
		t.Errorf("Models without key: %v", err)
	}
	empty := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, `{"data":[]}`) }))
	defer empty.Close()
	if _, err := newTestClient(t, Config{BaseURL: empty.URL}).Models(context.Background()); err == nil || !strings.Contains(err.Error(), "pass model") {
		t.Errorf("Models on an empty list: %v", err)
	}
}

// TestConnectionReuse checks that sequential streams share one connection:
// the transport tuning and reading streams to the end both matter for it.
func TestConnectionReuse(t *testing.T) {
	conns := make(map[string]bool)
	srv := httptest.NewUnstartedServer(sseHandler(chunk("a"), finishChunk, usageChunk, doneEvent))
	srv.Config.ConnState = func(c net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns[c.RemoteAddr().String()] = true
		}
	}
	srv.Start()
	defer srv.Close()
	c := newTestClient(t, Config{BaseURL: srv.URL})
	for i := range 5 {
		var rec metrics.Record
		c.Do(context.Background(), &workload.Request{Prompt: "x", MaxTokens: 2}, fmt.Sprint(i), time.Now(), &rec)
		if !rec.Success {
			t.Fatalf("request %d: %s", i, rec.Error)
		}
	}
	srv.Close()
	if len(conns) != 1 {
		t.Errorf("5 sequential requests used %d connections, want 1", len(conns))
	}
}

// A 200 with a web page (a proxy's login wall, the wrong port) fails with
// that reason instead of "no valid chunk".
func TestHTMLReplyIsNamed(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write([]byte("<!doctype html><html><body>Sign in</body></html>"))
	}))
	defer srv.Close()
	c, err := New(Config{BaseURL: srv.URL, Endpoint: "/v1/completions", Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	var rec metrics.Record
	c.Do(t.Context(), &workload.Request{Prompt: "hi", MaxTokens: 2}, "req-1", time.Now(), &rec)
	if rec.Success || rec.Error != errHTMLReply {
		t.Fatalf("success %v, error %q; want %q", rec.Success, rec.Error, errHTMLReply)
	}
}
