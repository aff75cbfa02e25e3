package serve

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"github.com/servebench/servebench/engine"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestInjectedErrors(t *testing.T) {
	for _, tc := range []struct {
		typ     FaultType
		status  int
		errType string
	}{
		{FaultRateLimit, 429, "RateLimitError"},
		{FaultInternal, 500, "InternalServerError"},
		{FaultUnavailable, 503, "ServiceUnavailableError"},
	} {
		t.Run(string(tc.typ), func(t *testing.T) {
			cfg := testConfig(t)
			cfg.Faults = Faults{Rate: 1, Types: []FaultType{tc.typ}}
			s, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			rec := postHandler(t, s.Handler(), "/v1/completions", `{"prompt":"hi","stream":true}`)
			if rec.Code != tc.status {
				t.Fatalf("status %d, want %d", rec.Code, tc.status)
			}
			e := decodeError(t, rec)
			if e.Error.Type != tc.errType || e.Error.Code != tc.status || !strings.Contains(e.Error.Message, "injected by servebench serve --failure-rate") {
				t.Errorf("body %+v", e.Error)
			}
		})
	}
}

// TestDropFault: a dropped stream ends without [DONE] (the client sees a
// broken connection), the request leaves the engine, and requests are
// dropped at the rate asked for.
func TestDropFault(t *testing.T) {
	cfg := testConfig(t)
	cfg.Faults = Faults{Rate: 0.5, Types: []FaultType{FaultDrop}}
	r := startServer(t, cfg)
	c := testClient(t)
	dropped := 0
	const n = 40
	for i := range n {
		stream := i%2 == 0
		body := fmt.Sprintf(`{"prompt":"request %d","max_tokens":8,"stream":%v}`, i, stream)
		resp, err := c.Post(r.URL()+"/v1/completions", "application/json", strings.NewReader(body))
		if err != nil {
			dropped++ // non-streaming: dropped before the status line
			continue
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		switch {
		case err != nil:
			if !errors.Is(err, io.ErrUnexpectedEOF) {
				t.Errorf("request %d: read error %v", i, err)
			}
			if strings.Contains(string(b), "[DONE]") {
				t.Errorf("request %d: dropped stream carried [DONE]", i)
			}
			dropped++
		case resp.StatusCode != 200:
			t.Errorf("request %d: status %d %s", i, resp.StatusCode, b)
		case stream && !strings.HasSuffix(string(b), "data: [DONE]\n\n"):
			t.Errorf("request %d: stream without [DONE]: %q", i, b)
		}
	}
	want := 0
	for k := range uint64(n) {
		if cfg.Faults.pick(cfg.Seed, k) == FaultDrop {
			want++
		}
	}
	if dropped != want {
		t.Errorf("%d of %d requests dropped, the seeded schedule says %d", dropped, n, want)
	}
	snap := waitIdle(t, r)
	if snap.KVUsage != 0 {
		t.Errorf("KV usage %v after dropped streams", snap.KVUsage)
	}
}

func TestSlowFirstByte(t *testing.T) {
	cfg := testConfig(t)
	cfg.Faults = Faults{Rate: 1, Types: []FaultType{FaultSlowFirstByte}, SlowFirstByte: 150 * time.Millisecond}
	r := startServer(t, cfg)
	c := testClient(t)
	start := time.Now()
	status, _, body := do(t, c, "POST", r.URL()+"/v1/completions", `{"prompt":"hi","max_tokens":2}`)
	if status != 200 || !strings.Contains(string(body), `"completion_tokens":2`) {
		t.Fatalf("%d %s", status, body)
	}
	if elapsed := time.Since(start); elapsed < 150*time.Millisecond {
		t.Errorf("answered after %v, before the 150ms delay", elapsed)
	}
}

// TestClientDisconnects: clients that go away mid-stream abort their
// requests; the KV cache returns to empty and the engine to idle, and vLLM
// counts them as finished_reason="abort".
func TestClientDisconnects(t *testing.T) {
	r := startServer(t, testConfig(t))
	c := testClient(t)
	const n = 40
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			body := fmt.Sprintf(`{"prompt":"story %d","max_tokens":3000,"stream":true,"ignore_eos":true}`, i)
			req, _ := http.NewRequestWithContext(ctx, "POST", r.URL()+"/v1/completions", strings.NewReader(body))
			resp, err := c.Do(req)
			if err != nil {
				t.Errorf("request %d: %v", i, err)
				return
			}
			defer resp.Body.Close()
			rd := bufio.NewReader(resp.Body)
			for events := 0; events < 3+i%5; {
				line, err := rd.ReadString('\n')
				if err != nil {
					t.Errorf("request %d: %v", i, err)
					return
				}
				if strings.HasPrefix(line, "data: ") {
					events++
				}
			}
			cancel()
		})
	}
	wg.Wait()
	snap := waitIdle(t, r)
	if snap.KVUsage != 0 || snap.Engine.Running+snap.Engine.Waiting != 0 {
		t.Errorf("after disconnects: %+v", snap)
	}
	_, _, page := do(t, c, "GET", r.URL()+"/metrics", "")
	want := fmt.Sprintf(`vllm:request_success_total{engine="0",finished_reason="abort",model_name="test-model"} %d`, n)
	if !strings.Contains(string(page), want) {
		t.Errorf("/metrics lacks %s", want)
	}
}

// TestQueuedClientDisconnects: a client that goes away while its request
// waits in the queue (no token will wake its handler for as long as the
// running request lasts) is aborted at once and leaves the queue.
func TestQueuedClientDisconnects(t *testing.T) {
	cfg := testConfig(t)
	cfg.Engine.MaxNumSeqs = 1
	cfg.StepModel = linearModel{fixed: 20 * time.Millisecond}
	r := startServer(t, cfg)
	c := testClient(t)
	stream := func(ctx context.Context, prompt string) *http.Response {
		t.Helper()
		body := fmt.Sprintf(`{"prompt":%q,"max_tokens":3000,"stream":true,"ignore_eos":true}`, prompt)
		req, _ := http.NewRequestWithContext(ctx, "POST", r.URL()+"/v1/completions", strings.NewReader(body))
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	running := stream(t.Context(), "the running one")
	defer running.Body.Close()
	if _, err := bufio.NewReader(running.Body).ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	queued := stream(ctx, "the queued one") // its headers come before any token
	cancel()
	queued.Body.Close()
	deadline, stop := context.WithTimeout(t.Context(), 10*time.Second)
	defer stop()
	for {
		snap, err := r.Snapshot(deadline)
		if err != nil {
			t.Fatalf("the queued request was not aborted: %v (last %+v)", err, snap.Engine)
		}
		if snap.Engine.Waiting == 0 {
			if snap.Engine.Running != 1 {
				t.Errorf("after the queued client left: %d running, want the first request still running", snap.Engine.Running)
			}
			return
		}
		select {
		case <-deadline.Done():
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// TestManyConnections: 2,000 concurrent streams, far more than max_num_seqs,
// all complete with every token, and nothing is left in the engine.
func TestManyConnections(t *testing.T) {
	cfg := testConfig(t)
	cfg.StepModel = linearModel{fixed: 500 * time.Microsecond, perToken: 200 * time.Nanosecond}
	r := startServer(t, cfg)
	tr := &http.Transport{MaxIdleConnsPerHost: 2000, MaxConnsPerHost: 0, DisableCompression: true}
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr}
	const n = 2000
	var wg sync.WaitGroup
	var mu sync.Mutex
	failures := map[string]int{}
	for i := range n {
		wg.Go(func() {
			body := fmt.Sprintf(`{"prompt":"conn %d","max_tokens":6,"stream":true,"stream_options":{"include_usage":true}}`, i)
			resp, err := c.Post(r.URL()+"/v1/completions", "application/json", strings.NewReader(body))
			if err != nil {
				mu.Lock()
				failures[err.Error()]++
				mu.Unlock()
				return
			}
			b, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil || !strings.Contains(string(b), `"completion_tokens":6}}`) || !strings.HasSuffix(string(b), "data: [DONE]\n\n") {
				mu.Lock()
				failures[fmt.Sprintf("status %d err %v", resp.StatusCode, err)]++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(failures) > 0 {
		t.Errorf("failures: %v", failures)
	}
	snap := waitIdle(t, r)
	if snap.Engine.GenerationTokens != 6*n {
		t.Errorf("engine generated %d tokens, want %d", snap.Engine.GenerationTokens, 6*n)
	}
}

// smallBufferListener shrinks the send buffer of accepted connections so a
// client that stops reading blocks the server's writes within kilobytes.
type smallBufferListener struct{ net.Listener }

func (l smallBufferListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetWriteBuffer(4096)
	}
	return c, err
}

// startSmallBuffers serves s over loopback with tiny socket send buffers.
func startSmallBuffers(t *testing.T, s *Server) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	hs := &http.Server{Handler: s.Handler()}
	var wg sync.WaitGroup
	wg.Go(func() { _ = s.Run(ctx) })
	wg.Go(func() { _ = hs.Serve(smallBufferListener{ln}) })
	t.Cleanup(func() {
		cancel()
		_ = hs.Close()
		wg.Wait()
		<-s.handlers.idle()
	})
	return "http://" + ln.Addr().String()
}

// stalledRequest sends a streaming request on a raw connection with a tiny
// receive buffer and does not read the response.
func stalledRequest(t *testing.T, base, body string) net.Conn {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	// The client's receive buffer stays at the default (~128 KiB), which a
	// 1 MB stream overflows. Shrinking it below the loopback MSS (~64 KiB)
	// would stop the kernel from ever announcing a reopened window, leaving
	// the resumed stream to zero-window probes with exponential backoff.
	fmt.Fprintf(conn, "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
	return conn
}

const longStream = `{"prompt":"a very long story","max_tokens":4000,"ignore_eos":true,"stream":true,"stream_options":{"include_usage":true,"continuous_usage_stats":true}}`

// TestSlowReaderDoesNotStall: a client that stops reading a long stream
// neither stalls the step loop nor other streams: the others finish, the
// engine finishes the stalled request too (its tokens wait in the stream's
// backlog), and once the client reads again it gets every token.
func TestSlowReaderDoesNotStall(t *testing.T) {
	cfg := testConfig(t)
	cfg.StepModel = linearModel{fixed: 200 * time.Microsecond}
	// V0 writes one chunk per token (V1 would merge the stalled backlog
	// into a few large chunks), so the stalled stream is ~1 MB and surely
	// overflows the socket buffers.
	cfg.Engine = engine.Config{Version: engine.V0, BlockSize: 16, NumGPUBlocks: 4096, NumCPUBlocks: 256,
		MaxNumSeqs: 256, MaxNumBatchedTokens: 4096, MaxModelLen: 4096, Watermark: 0.01}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	base := startSmallBuffers(t, s)
	stalled := stalledRequest(t, base, longStream)
	defer stalled.Close()

	c := testClient(t)
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Go(func() {
			status, _, b := do(t, c, "POST", base+"/v1/completions", fmt.Sprintf(`{"prompt":"quick %d","max_tokens":50,"stream":true}`, i))
			if status != 200 || !strings.HasSuffix(string(b), "data: [DONE]\n\n") || strings.Count(string(b), `"text":`) == 0 {
				t.Errorf("fast stream %d: %d %q", i, status, b)
			}
		})
	}
	wg.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for {
		snap, err := s.Snapshot(ctx)
		if err != nil {
			t.Fatalf("engine did not finish the stalled request: %v", err)
		}
		if snap.Idle {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	// The engine generated all 4,000 tokens of the stalled stream, most of
	// which still wait in its backlog behind a blocked write.
	if written := s.WriteLag().Tokens; written >= 4000 {
		t.Fatalf("%d tokens written before the client read anything: the test did not stall the stream", written)
	}
	// The engine is done; the client still gets the whole stream.
	_ = stalled.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(stalled), nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading the resumed stream: %v", err)
	}
	if !strings.Contains(string(b), `"choices":[],"usage":{"prompt_tokens":4,"total_tokens":4004,"completion_tokens":4000}`) {
		t.Errorf("resumed stream incomplete (%d bytes)", len(b))
	}
}

// TestStalledReaderCutOff: a client that accepts nothing for longer than
// StreamWriteTimeout loses its connection.
func TestStalledReaderCutOff(t *testing.T) {
	cfg := testConfig(t)
	cfg.StreamWriteTimeout = 200 * time.Millisecond
	cfg.StepModel = linearModel{fixed: 200 * time.Microsecond}
	cfg.Engine = engine.Config{Version: engine.V0, BlockSize: 16, NumGPUBlocks: 4096, NumCPUBlocks: 256,
		MaxNumSeqs: 256, MaxNumBatchedTokens: 4096, MaxModelLen: 4096, Watermark: 0.01}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	base := startSmallBuffers(t, s)
	abandoned := stalledRequest(t, base, longStream)
	defer abandoned.Close()
	// Once the request is in, its handler must give up on the client.
	for {
		snap, err := s.Snapshot(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if snap.Engine.GenerationTokens > 0 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	select {
	case <-s.handlers.idle():
	case <-time.After(5 * time.Second):
		t.Fatal("the handler of a stalled client never returned")
	}
	_ = abandoned.(*net.TCPConn).SetReadBuffer(4 << 20)
	_ = abandoned.SetReadDeadline(time.Now().Add(10 * time.Second))
	rest, err := io.ReadAll(abandoned)
	if err != nil {
		t.Fatalf("reading the abandoned connection: %v", err)
	}
	if len(rest) == 0 || strings.Contains(string(rest), "[DONE]") {
		t.Errorf("the abandoned stream was not cut off (%d bytes)", len(rest))
	}
}
