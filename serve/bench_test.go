package serve

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/servebench/servebench/engine"
)

// streamRun is what the clients of one benchmark run saw.
type streamRun struct {
	wall   time.Duration   // first request sent → last byte received
	tokens int64           // from the final usage chunks
	gaps   []time.Duration // client-observed gaps between consecutive token chunks
}

// benchStreams runs `streams` concurrent streaming requests of `tokens`
// output tokens each against r, with a lean SSE reader in this process.
func benchStreams(b *testing.B, r *Running, streams, tokens int) streamRun {
	b.Helper()
	tr := &http.Transport{MaxIdleConnsPerHost: streams, DisableCompression: true}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	var mu sync.Mutex
	var run streamRun
	var wg sync.WaitGroup
	start := time.Now()
	for i := range streams {
		wg.Go(func() {
			body := fmt.Sprintf(`{"prompt":"stream %d says","max_tokens":%d,"ignore_eos":true,"stream":true,"stream_options":{"include_usage":true}}`, i, tokens)
			resp, err := client.Post(r.URL()+"/v1/completions", "application/json", strings.NewReader(body))
			if err != nil {
				b.Errorf("stream %d: %v", i, err)
				return
			}
			defer resp.Body.Close()
			rd := bufio.NewReaderSize(resp.Body, 64<<10)
			var last []byte
			gaps := make([]time.Duration, 0, tokens)
			var prev time.Time
			for {
				line, err := rd.ReadSlice('\n')
				if bytes.HasPrefix(line, []byte(`data: {`)) {
					if !bytes.Contains(line, []byte(`"choices":[]`)) {
						now := time.Now()
						if !prev.IsZero() {
							gaps = append(gaps, now.Sub(prev))
						}
						prev = now
					}
					last = append(last[:0], line...)
				}
				if err != nil {
					break
				}
			}
			_, after, ok := bytes.Cut(last, []byte(`"completion_tokens":`))
			if !ok {
				b.Errorf("stream %d: no usage chunk", i)
				return
			}
			n, _ := strconv.Atoi(string(bytes.TrimRight(after, "}\n")))
			mu.Lock()
			run.tokens += int64(n)
			run.gaps = append(run.gaps, gaps...)
			mu.Unlock()
		})
	}
	wg.Wait()
	run.wall = time.Since(start)
	return run
}

func pct(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[int(p*float64(len(sorted)-1))]
}

// BenchmarkStreams streams N concurrent requests of 200 tokens through a
// model whose every step takes 10 ms (the ITL of the peer comparison), with
// the client in the same process on the same cores. It reports the write
// lag (how late each token reached its connection after the model made it
// due), the client-observed inter-token gaps, and the fraction of the
// model's ideal throughput delivered (loop: steps run on the model's
// timeline; client: tokens received per second over the whole run).
//
//	go test -run '^$' -bench Streams -benchtime 1x ./serve/
func BenchmarkStreams(b *testing.B) {
	for _, streams := range []int{100, 250, 1000} {
		b.Run(fmt.Sprintf("streams=%d", streams), func(b *testing.B) { benchStreamsAt(b, streams) })
	}
}

func benchStreamsAt(b *testing.B, streams int) {
	const tokens = 200
	cfg := Config{
		Engine: engine.Config{Version: engine.V1, BlockSize: 16, NumGPUBlocks: 60000, MaxNumSeqs: 1024,
			MaxNumBatchedTokens: 8192, MaxModelLen: 4096, EnableChunkedPrefill: true, EnablePrefixCaching: true},
		StepModel: linearModel{fixed: 10 * time.Millisecond},
		Model:     "bench",
		Tokenizer: cl100k(b),
	}
	for b.Loop() {
		r, err := Start(context.Background(), cfg, "")
		if err != nil {
			b.Fatal(err)
		}
		run := benchStreams(b, r, streams, tokens)
		snap, err := r.Snapshot(context.Background())
		if err != nil {
			b.Fatal(err)
		}
		lag, wake := r.WriteLag(), r.StepWakeLag()
		if err := r.Close(); err != nil {
			b.Fatal(err)
		}
		if run.tokens != int64(streams*tokens) {
			b.Fatalf("received %d tokens, want %d", run.tokens, streams*tokens)
		}
		slices.Sort(run.gaps)
		var sum time.Duration
		for _, g := range run.gaps {
			sum += g
		}
		ideal := float64(snap.Engine.GenerationTokens) / snap.ModelTime.Seconds()
		b.ReportMetric(ms(lag.P50), "lag-p50-ms")
		b.ReportMetric(ms(lag.P99), "lag-p99-ms")
		b.ReportMetric(ms(lag.Max), "lag-max-ms")
		b.ReportMetric(ms(wake.P50), "wake-p50-ms")
		b.ReportMetric(ms(wake.P99), "wake-p99-ms")
		b.ReportMetric(ms(pct(run.gaps, 0.5)), "itl-p50-ms")
		b.ReportMetric(ms(sum/time.Duration(len(run.gaps))), "itl-mean-ms")
		b.ReportMetric(ms(pct(run.gaps, 0.99)), "itl-p99-ms")
		b.ReportMetric(snap.ModelTime.Seconds()/snap.BusyWall.Seconds(), "loop-ideal-frac")
		b.ReportMetric(float64(run.tokens)/run.wall.Seconds()/ideal, "client-ideal-frac")
		b.ReportMetric(float64(snap.ClockResets), "clock-resets")
	}
}

// BenchmarkZeroTimeModel streams as fast as the server can with a model
// whose steps take no time: the emulator's own throughput ceiling, client
// in the same process. V1 merges the tokens a reader has not yet taken into
// one chunk (as vLLM's V1 output collector does); V0 sends one chunk per
// token.
//
//	go test -run '^$' -bench ZeroTime -benchtime 3x ./serve/
func BenchmarkZeroTimeModel(b *testing.B) {
	for _, version := range []engine.Version{engine.V1, engine.V0} {
		b.Run(string(version), func(b *testing.B) {
			const streams, tokens = 256, 2000
			ec := engine.Config{Version: version, BlockSize: 16, NumGPUBlocks: 60000, MaxNumSeqs: 256,
				MaxNumBatchedTokens: 8192, MaxModelLen: 4096, EnableChunkedPrefill: true}
			if version == engine.V0 {
				ec.EnableChunkedPrefill, ec.NumCPUBlocks, ec.Watermark = false, 1000, 0.01
			}
			cfg := Config{Engine: ec, StepModel: linearModel{}, Model: "bench", Tokenizer: cl100k(b)}
			var total int64
			var elapsed time.Duration
			for b.Loop() {
				r, err := Start(context.Background(), cfg, "")
				if err != nil {
					b.Fatal(err)
				}
				run := benchStreams(b, r, streams, tokens)
				if err := r.Close(); err != nil {
					b.Fatal(err)
				}
				if run.tokens != streams*tokens {
					b.Fatalf("received %d tokens, want %d", run.tokens, streams*tokens)
				}
				total += run.tokens
				elapsed += run.wall
			}
			b.ReportMetric(float64(total)/elapsed.Seconds(), "tok/s")
		})
	}
}
