package serve

import (
	"bufio"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/servebench/servebench/internal/golden"

	"github.com/servebench/servebench/engine"
)

// TestShutdownEndsStreams: Close lets requests finish for ShutdownGrace,
// then ends the rest with an error event and [DONE], and returns.
func TestShutdownEndsStreams(t *testing.T) {
	cfg := testConfig(t)
	cfg.ShutdownGrace = 100 * time.Millisecond
	r := startServer(t, cfg)
	c := testClient(t)
	const n = 5
	bodies := make([]string, n)
	var started, wg sync.WaitGroup
	started.Add(n)
	for i := range n {
		wg.Go(func() {
			resp, err := c.Post(r.URL()+"/v1/completions", "application/json",
				strings.NewReader(fmt.Sprintf(`{"prompt":"long %d","max_tokens":4000,"ignore_eos":true,"stream":true}`, i)))
			if err != nil {
				t.Errorf("request %d: %v", i, err)
				started.Done()
				return
			}
			defer resp.Body.Close()
			rd := bufio.NewReader(resp.Body)
			first, err := rd.ReadString('\n')
			started.Done()
			var sb strings.Builder
			sb.WriteString(first)
			for err == nil {
				var line string
				line, err = rd.ReadString('\n')
				sb.WriteString(line)
			}
			bodies[i] = sb.String()
		})
	}
	started.Wait()
	start := time.Now()
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 3*time.Second {
		t.Errorf("Close took %v with a 100ms grace", took)
	}
	wg.Wait()
	for i, b := range bodies {
		if !strings.Contains(b, `"code":503`) || !strings.Contains(b, "The server is shutting down") || !strings.HasSuffix(b, "data: [DONE]\n\n") {
			t.Errorf("stream %d did not end with a shutdown error event: ...%s", i, b[max(0, len(b)-300):])
		}
	}
	if _, err := r.Snapshot(context.Background()); err == nil {
		t.Error("Snapshot works after Close")
	}
}

// TestEngineDeath: V0 swap preemption with no CPU blocks left kills the
// engine as vLLM does; every request fails with vLLM's message, /health
// fails, and new requests are refused.
func TestEngineDeath(t *testing.T) {
	cfg := testConfig(t)
	cfg.Engine = engine.Config{
		Version: engine.V0, BlockSize: 16, NumGPUBlocks: 24, NumCPUBlocks: 1,
		MaxNumSeqs: 16, MaxNumBatchedTokens: 4096, MaxModelLen: 384,
		PreemptionMode: engine.PreemptSwap, Watermark: 0.01,
	}
	cfg.StepModel = linearModel{fixed: 100 * time.Microsecond}
	r := startServer(t, cfg)
	c := testClient(t)
	var wg sync.WaitGroup
	results := make([]string, 10)
	for i := range results {
		wg.Go(func() {
			status, _, body := do(t, c, "POST", r.URL()+"/v1/completions", fmt.Sprintf(`{"prompt":"request number %d","max_tokens":300,"ignore_eos":true}`, i))
			results[i] = fmt.Sprintf("%d %s", status, body)
		})
	}
	wg.Wait()
	const msg = "Aborted due to the lack of CPU swap space. Please increase the swap space to avoid this error."
	died := 0
	for i, res := range results {
		switch {
		case strings.HasPrefix(res, "500 ") && strings.Contains(res, msg) && strings.Contains(res, `"type":"EngineDeadError"`):
			died++
		case strings.HasPrefix(res, "200 "):
		default:
			t.Errorf("request %d: %s", i, res)
		}
	}
	if died == 0 {
		t.Fatalf("no request saw the engine die: %v", results)
	}
	if status, _, body := do(t, c, "GET", r.URL()+"/health", ""); status != 500 || !strings.Contains(string(body), msg) {
		t.Errorf("/health after death: %d %s", status, body)
	}
	if status, _, body := do(t, c, "POST", r.URL()+"/v1/completions", `{"prompt":"again","max_tokens":3}`); status != 500 || !strings.Contains(string(body), msg) {
		t.Errorf("request after death: %d %s", status, body)
	}
}

// recordingHandler keeps log records with their offset from a start time.
type recordingHandler struct {
	mu    sync.Mutex
	start time.Time
	lines []string
}

func (h *recordingHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *recordingHandler) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.lines = append(h.lines, fmt.Sprintf("t=%v %s %s", r.Time.Sub(h.start), levelName(r.Level), r.Message))
	return nil
}
func (h *recordingHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *recordingHandler) WithGroup(string) slog.Handler      { return h }

// TestStatsLog checks the startup lines and the periodic stats line, their
// cadence and their numbers, on a fake clock, against golden files.
func TestStatsLog(t *testing.T) {
	for _, version := range []engine.Version{engine.V1, engine.V0} {
		t.Run(string(version), func(t *testing.T) {
			cfg := testConfig(t)
			cfg.Engine.Version = version
			if version == engine.V0 {
				cfg.Engine.EnablePrefixCaching = false
				cfg.Engine.EnableChunkedPrefill = false
				cfg.Engine.NumCPUBlocks = 512
				cfg.Engine.MaxNumBatchedTokens = 4096
				cfg.Engine.Watermark = 0.01
			}
			cfg.StepModel = linearModel{fixed: 10 * time.Millisecond, perToken: 10 * time.Microsecond}
			cfg.StatsInterval = DefaultStatsInterval(version)
			var h *recordingHandler
			synctest.Test(t, func(t *testing.T) {
				h = &recordingHandler{start: time.Now()}
				cfg.Logger = slog.New(h)
				s, stop := startLoop(t, cfg, nil)
				var wg sync.WaitGroup
				for i := range 8 {
					time.Sleep(700 * time.Millisecond)
					ids := make([]int32, 100+i)
					for j := range ids {
						ids[j] = int32(500 + j)
					}
					st := newStream(engine.Request{ID: uint64(i + 1), Prompt: ids, PromptLen: len(ids), MaxTokens: 200, Arrival: s.now()}, 200, true, 0)
					if err := s.submit(st); err != nil {
						t.Fatal(err)
					}
					wg.Go(func() { consume(s, st, st.req.Arrival) })
				}
				wg.Wait()
				time.Sleep(25 * time.Second)
				stop()
			})
			got := strings.Join(h.lines, "\n") + "\n"
			golden.CheckFile(t, "testdata/stats_"+string(version)+".golden", []byte(got))
		})
	}
}
