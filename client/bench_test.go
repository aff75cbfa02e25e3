package client

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/servebench/servebench/metrics"
	"github.com/servebench/servebench/workload"
)

// vllmCompletionStream builds a vLLM-style completions stream of n token
// chunks, a finish chunk, a usage-only chunk and [DONE], one event per
// element.
func vllmCompletionStream(n int) [][]byte {
	events := make([][]byte, 0, n+3)
	for i := range n {
		events = append(events, fmt.Appendf(nil, `data: {"id":"cmpl-8f2c1e4b9a7d4e0c8b1f2a3c4d5e6f70","object":"text_completion","created":1795329665,"model":"meta-llama/Llama-3.1-8B-Instruct","choices":[{"index":0,"text":" tok%d","logprobs":null,"finish_reason":null,"stop_reason":null}],"usage":null}`+"\n\n", i%1000))
	}
	events = append(events,
		[]byte(`data: {"id":"cmpl-8f2c1e4b9a7d4e0c8b1f2a3c4d5e6f70","object":"text_completion","created":1795329665,"model":"meta-llama/Llama-3.1-8B-Instruct","choices":[{"index":0,"text":"","logprobs":null,"finish_reason":"length","stop_reason":null}],"usage":null}`+"\n\n"),
		fmt.Appendf(nil, `data: {"id":"cmpl-8f2c1e4b9a7d4e0c8b1f2a3c4d5e6f70","object":"text_completion","created":1795329665,"model":"meta-llama/Llama-3.1-8B-Instruct","choices":[],"usage":{"prompt_tokens":128,"total_tokens":%d,"completion_tokens":%d,"prompt_tokens_details":null}}`+"\n\n", 128+n, n),
		[]byte("data: [DONE]\n\n"))
	return events
}

// eventBody returns one pre-built event per Read, as a server flushing each
// token would, so per-read costs are paid per chunk.
type eventBody struct {
	events [][]byte
	next   int
	rest   []byte
}

func (b *eventBody) Read(p []byte) (int, error) {
	if len(b.rest) == 0 {
		if b.next == len(b.events) {
			return 0, io.EOF
		}
		b.rest = b.events[b.next]
		b.next++
	}
	n := copy(p, b.rest)
	b.rest = b.rest[n:]
	return n, nil
}

func (b *eventBody) Close() error { return nil }

// memoryTransport answers every request with the same SSE events.
type memoryTransport struct{ events [][]byte }

func (m *memoryTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body != nil {
		_, _ = io.Copy(io.Discard, req.Body)
		_ = req.Body.Close()
	}
	return &http.Response{
		StatusCode: http.StatusOK,
		Header:     http.Header{"Content-Type": []string{"text/event-stream"}},
		Body:       &eventBody{events: m.events},
		Request:    req,
	}, nil
}

// BenchmarkStreamChunk measures client CPU per streamed chunk: request
// building, SSE framing, JSON field extraction, timestamping and recording,
// with the network replaced by memory. ns/op is per request.
//
// The "limits" cases arm the first-byte and chunk limits at the CLI's
// defaults, as every bench run does, so the stall watch's per-read cost
// is counted.
func BenchmarkStreamChunk(b *testing.B) {
	for _, tc := range []struct {
		chunks int
		limits bool
	}{{1000, false}, {100, false}, {1, false}, {1000, true}} {
		chunks := tc.chunks
		name := fmt.Sprintf("chunks=%d", chunks)
		cfg := Config{BaseURL: "http://127.0.0.1:8000", Model: "meta-llama/Llama-3.1-8B-Instruct", Transport: &memoryTransport{events: vllmCompletionStream(chunks)}}
		if tc.limits {
			name += "/limits"
			cfg.FirstByteTimeout, cfg.ChunkTimeout = 30*time.Minute, 5*time.Minute
		}
		b.Run(name, func(b *testing.B) {
			c, err := New(cfg)
			if err != nil {
				b.Fatal(err)
			}
			req := &workload.Request{Prompt: strings.Repeat("hello ", 128), PromptLen: 128, MaxTokens: chunks}
			base := time.Now()
			var rec metrics.Record
			b.ReportAllocs()
			cpu := processCPU()
			for b.Loop() {
				c.Do(context.Background(), req, "bench-1", base, &rec)
				if !rec.Success || len(rec.ITL) != chunks {
					b.Fatalf("request failed: %+v", rec.Error)
				}
			}
			perChunk := float64(b.Elapsed().Nanoseconds()) / float64(b.N*(chunks+1))
			b.ReportMetric(perChunk, "ns/chunk")
			b.ReportMetric(float64(processCPU()-cpu)/float64(b.N*(chunks+1)), "cpu-ns/chunk")
		})
	}
}

const holdServerEnv = "SERVEBENCH_CLIENT_HOLD_SERVER"

// runHoldServer is the body of the helper process that
// BenchmarkConcurrentStreamMemory starts, so that the server's memory is
// not counted as the client's: it prints its address, sends every request
// one chunk and holds the stream open until the client goes away, and
// exits when its stdin closes.
func runHoldServer() {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println(ln.Addr().String())
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, chunk("first"))
		_ = http.NewResponseController(w).Flush()
		<-r.Context().Done()
	})}
	go func() { _ = srv.Serve(ln) }()
	_, _ = io.Copy(io.Discard, os.Stdin)
	_ = srv.Close()
}

// countingTransport reports each response whose headers have arrived.
type countingTransport struct {
	inner   *http.Transport
	arrived chan struct{}
}

func (c countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := c.inner.RoundTrip(r)
	if err == nil {
		c.arrived <- struct{}{}
	}
	return resp, err
}

func (c countingTransport) CloseIdleConnections() { c.inner.CloseIdleConnections() }

// BenchmarkConcurrentStreamMemory holds 2,000 streams open (or
// $SERVEBENCH_STREAMS, e.g. 10000; mind ulimit -n) against a server in
// another process and reports the client's heap and stack growth per
// in-flight stream (request goroutine, connection, transport goroutines and
// buffers, SSE and JSON state). Run it with -benchtime=1x.
func BenchmarkConcurrentStreamMemory(b *testing.B) {
	streams := 2000
	if v, err := strconv.Atoi(os.Getenv("SERVEBENCH_STREAMS")); err == nil && v > 0 {
		streams = v
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), holdServerEnv+"=1")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() { _ = stdin.Close(); _ = cmd.Wait() }()
	addr, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		b.Fatalf("helper server: %v", err)
	}
	transport := countingTransport{inner: newTransport(false), arrived: make(chan struct{}, streams)}
	c, err := New(Config{BaseURL: "http://" + strings.TrimSpace(addr), Transport: transport})
	if err != nil {
		b.Fatal(err)
	}
	req := &workload.Request{Prompt: strings.Repeat("hello ", 100), PromptLen: 100, MaxTokens: 128}
	var perStream float64
	for b.Loop() {
		recs := make([]metrics.Record, streams)
		var before, during runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		base := time.Now()
		for i := range streams {
			wg.Go(func() { c.Do(ctx, req, "", base, &recs[i]) })
		}
		for range streams {
			<-transport.arrived
		}
		time.Sleep(100 * time.Millisecond) // let every client read its first chunk
		runtime.GC()
		runtime.ReadMemStats(&during)
		cancel()
		wg.Wait()
		c.CloseIdleConnections()
		for i := range recs {
			if recs[i].TTFT == 0 || recs[i].Error != "canceled" {
				b.Fatalf("stream %d: ttft %v error %q, want a first chunk then canceled", i, recs[i].TTFT, recs[i].Error)
			}
		}
		grown := int64(during.HeapInuse+during.StackInuse) - int64(before.HeapInuse+before.StackInuse)
		perStream = float64(grown) / float64(streams)
	}
	b.ReportMetric(perStream, "bytes/stream")
}

// BenchmarkLoopbackStream streams 1,000-chunk responses from an in-process
// loopback server that flushes every chunk separately, as fast as both
// sides can go. chunks/s counts both sides' CPU on a shared machine.
func BenchmarkLoopbackStream(b *testing.B) {
	const chunks = 1000
	events := vllmCompletionStream(chunks)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		rc := http.NewResponseController(w)
		for _, ev := range events {
			_, _ = w.Write(ev)
			_ = rc.Flush()
		}
	}))
	defer srv.Close()
	c, err := New(Config{BaseURL: srv.URL})
	if err != nil {
		b.Fatal(err)
	}
	defer c.CloseIdleConnections()
	req := &workload.Request{Prompt: "hello", PromptLen: 1, MaxTokens: chunks}
	base := time.Now()
	b.ReportAllocs()
	for b.Loop() {
		var rec metrics.Record
		c.Do(context.Background(), req, "", base, &rec)
		if !rec.Success || rec.OutputLen != chunks {
			b.Fatalf("stream failed: %s (output %d)", rec.Error, rec.OutputLen)
		}
	}
	b.ReportMetric(float64(b.N*(chunks+1))/b.Elapsed().Seconds(), "chunks/s")
}
