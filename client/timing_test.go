package client

import (
	"context"
	"io"
	"net/http"
	"strconv"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/servebench/servebench/metrics"
	"github.com/servebench/servebench/workload"
)

// step is one write of a scripted stream after a pause on the fake clock.
type step struct {
	after time.Duration
	data  string
}

// scriptTransport answers every request with a stream that a goroutine
// writes step by step. Like a real transport it aborts the body when the
// request's context ends.
type scriptTransport struct {
	steps      []step
	hangHeader bool // never send response headers
}

func (s scriptTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	if s.hangHeader {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	pr, pw := io.Pipe()
	context.AfterFunc(ctx, func() { pw.CloseWithError(ctx.Err()) })
	go func() {
		for _, st := range s.steps {
			select {
			case <-time.After(st.after):
			case <-ctx.Done():
				return
			}
			if _, err := io.WriteString(pw, st.data); err != nil {
				return
			}
		}
		_ = pw.Close()
	}()
	return &http.Response{
		StatusCode: http.StatusOK,
		Header:     http.Header{"Content-Type": {"text/event-stream"}},
		Body:       pr,
		Request:    req,
	}, nil
}

const ms = time.Millisecond

func usageText(text string, completion int, finish bool) string {
	fr := "null"
	if finish {
		fr = `"length"`
	}
	return `data: {"choices":[{"text":"` + text + `","finish_reason":` + fr + `}],"usage":{"prompt_tokens":3,"completion_tokens":` + itoa(completion) + "}}\n\n"
}

func itoa(n int) string { return strconv.Itoa(n) }

// TestTimingsOnFakeClock checks TTFT, ITL and E2EL exactly: synctest's
// clock only moves when every goroutine waits, so the durations the
// script sleeps are the durations the client must report.
func TestTimingsOnFakeClock(t *testing.T) {
	tests := []struct {
		name    string
		cfg     Config
		steps   []step
		hang    bool
		ctxTTL  time.Duration
		want    metrics.Record
		wantITL []time.Duration
	}{
		{
			name: "vLLM definitions: usage chunk and [DONE] excluded",
			steps: []step{
				{100 * ms, chunk("a")}, {20 * ms, chunk("b")}, {30 * ms, finishChunk}, {5 * ms, usageChunk}, {5 * ms, doneEvent},
			},
			want:    metrics.Record{TTFT: 100 * ms, Latency: 150 * ms, Success: true, Status: 200, OutputLen: 2, OutputLenSource: "usage", PromptLen: 5, CachedTokens: 4, MaxTokens: 8, GeneratedText: "ab"},
			wantITL: []time.Duration{20 * ms, 30 * ms},
		},
		{
			name: "events arriving together share a timestamp",
			steps: []step{
				{40 * ms, chunk("a") + chunk("b")}, {10 * ms, finishChunk + doneEvent},
			},
			want:    metrics.Record{TTFT: 40 * ms, Latency: 50 * ms, Success: true, Status: 200, OutputLen: 2, OutputLenSource: "chunks", PromptLen: 7, MaxTokens: 8, GeneratedText: "ab"},
			wantITL: []time.Duration{0, 10 * ms},
		},
		{
			name: "continuous usage: a 3-token chunk adds 3 equal gaps",
			cfg:  Config{ContinuousUsage: true},
			steps: []step{
				{100 * ms, usageText("a", 2, false)}, {30 * ms, usageText("bcd", 5, false)}, {10 * ms, usageText("e", 6, true)}, {0, doneEvent},
			},
			want:    metrics.Record{TTFT: 100 * ms, Latency: 140 * ms, FirstChunkTokens: 2, Success: true, Status: 200, OutputLen: 6, OutputLenSource: "usage", PromptLen: 3, MaxTokens: 8, GeneratedText: "abcde"},
			wantITL: []time.Duration{10 * ms, 10 * ms, 10 * ms, 10 * ms},
		},
		{
			name: "usage on the last chunk only is a total, not a chunk size",
			steps: []step{
				{100 * ms, chunk("a")}, {10 * ms, chunk("b")}, {10 * ms, usageText("c", 3, true)}, {0, doneEvent},
			},
			want:    metrics.Record{TTFT: 100 * ms, Latency: 120 * ms, Success: true, Status: 200, OutputLen: 3, OutputLenSource: "usage", PromptLen: 3, MaxTokens: 8, GeneratedText: "abc"},
			wantITL: []time.Duration{10 * ms, 10 * ms},
		},
		{
			name:  "stalled stream times out",
			cfg:   Config{Timeout: time.Second},
			steps: []step{{100 * ms, chunk("a")}, {time.Hour, doneEvent}},
			want:  metrics.Record{TTFT: 100 * ms, Latency: time.Second, Status: 200, PromptLen: 7, MaxTokens: 8, GeneratedText: "a", Error: "request timeout: not finished within 1s"},
		},
		{
			name: "no response headers before the timeout",
			cfg:  Config{Timeout: 2 * time.Second},
			hang: true,
			want: metrics.Record{Latency: 2 * time.Second, PromptLen: 7, MaxTokens: 8, Error: "request timeout: not finished within 2s"},
		},
		{
			name:  "one token then a stall: the chunk limit ends it, not the total",
			cfg:   Config{Timeout: time.Hour, FirstByteTimeout: 10 * time.Second, ChunkTimeout: 3 * time.Second},
			steps: []step{{100 * ms, chunk("a")}, {time.Hour, doneEvent}},
			want:  metrics.Record{TTFT: 100 * ms, Latency: 3100 * ms, Status: 200, PromptLen: 7, MaxTokens: 8, GeneratedText: "a", Error: "chunk timeout: no data for 3s while streaming"},
		},
		{
			name:    "steady chunks under the chunk limit finish",
			cfg:     Config{FirstByteTimeout: 10 * time.Second, ChunkTimeout: 3 * time.Second},
			steps:   []step{{5 * time.Second, chunk("a")}, {2 * time.Second, chunk("b")}, {2 * time.Second, chunk("c")}, {2 * time.Second, finishChunk + doneEvent}},
			want:    metrics.Record{TTFT: 5 * time.Second, Latency: 11 * time.Second, Success: true, Status: 200, OutputLen: 3, OutputLenSource: "chunks", PromptLen: 7, MaxTokens: 8, GeneratedText: "abc"},
			wantITL: []time.Duration{2 * time.Second, 2 * time.Second, 2 * time.Second},
		},
		{
			name:  "headers but no body byte: the first-byte limit",
			cfg:   Config{FirstByteTimeout: 4 * time.Second, ChunkTimeout: time.Second},
			steps: []step{{time.Hour, chunk("a")}},
			want:  metrics.Record{Latency: 4 * time.Second, Status: 200, PromptLen: 7, MaxTokens: 8, Error: "first-byte timeout: no response byte within 4s"},
		},
		{
			name: "no response headers: the first-byte limit",
			cfg:  Config{FirstByteTimeout: 4 * time.Second},
			hang: true,
			want: metrics.Record{Latency: 4 * time.Second, PromptLen: 7, MaxTokens: 8, Error: "first-byte timeout: no response byte within 4s"},
		},
		{
			name:   "caller's context ends: canceled",
			cfg:    Config{Timeout: time.Hour},
			steps:  []step{{100 * ms, chunk("a")}, {time.Hour, doneEvent}},
			ctxTTL: 500 * ms,
			// The caller's deadline is 500ms after base; the request started at 7ms.
			want: metrics.Record{TTFT: 100 * ms, Latency: 493 * ms, Status: 200, PromptLen: 7, MaxTokens: 8, GeneratedText: "a", Error: "canceled"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				cfg := tc.cfg
				cfg.BaseURL = "http://127.0.0.1:1"
				cfg.Transport = scriptTransport{steps: tc.steps, hangHeader: tc.hang}
				c, err := New(cfg)
				if err != nil {
					t.Fatal(err)
				}
				ctx := context.Background()
				if tc.ctxTTL > 0 {
					var cancel context.CancelFunc
					ctx, cancel = context.WithTimeout(ctx, tc.ctxTTL)
					defer cancel()
				}
				base := time.Now()
				time.Sleep(7 * ms) // the request starts 7ms into the run
				var rec metrics.Record
				c.Do(ctx, &workload.Request{Prompt: "p", PromptLen: 7, MaxTokens: 8}, "", base, &rec)
				want := tc.want
				want.Start = 7 * ms
				want.ITL = tc.wantITL
				if d := cmp.Diff(want, rec); d != "" {
					t.Errorf("record (-want +got):\n%s", d)
				}
				synctest.Wait()
			})
		})
	}
}
