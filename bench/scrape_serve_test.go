package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/servebench/servebench/engine"
	"github.com/servebench/servebench/perf"
	"github.com/servebench/servebench/serve"
)

// fixedStep is a step model for tests: every non-empty step takes d.
type fixedStep time.Duration

func (f fixedStep) StepTime(s perf.StepShape) time.Duration {
	if s.Tokens() == 0 {
		return 0
	}
	return time.Duration(f)
}

// TestScraperReadsServe starts servebench's own server in-process, sends
// it requests, scrapes it with the Scraper and checks every field against
// what the server itself reports: the names the scraper looks for are the
// names serve writes (both come from metrics/vllmnames.go), for vLLM V0's
// and V1's sets, the emulator's step lag included.
func TestScraperReadsServe(t *testing.T) {
	for _, version := range []engine.Version{engine.V1, engine.V0} {
		t.Run(string(version), func(t *testing.T) {
			ec := engine.Config{Version: version, BlockSize: 16, NumGPUBlocks: 1024, NumCPUBlocks: 64, MaxNumSeqs: 16,
				MaxNumBatchedTokens: 2048, MaxModelLen: 2048, EnablePrefixCaching: version == engine.V1, EnableChunkedPrefill: version == engine.V1}
			r, err := serve.Start(context.Background(), serve.Config{Engine: ec, StepModel: fixedStep(time.Millisecond), Model: "m", Seed: 1}, "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			client := &http.Client{Timeout: 10 * time.Second}
			defer client.CloseIdleConnections()
			var prompt, completion int
			for i := range 4 {
				body := fmt.Sprintf(`{"model":"m","prompt":"%s request %d","max_tokens":%d,"ignore_eos":true}`, strings.Repeat("shared prefix words ", 20), i, 5+i)
				resp, err := client.Post(r.URL()+"/v1/completions", "application/json", strings.NewReader(body))
				if err != nil {
					t.Fatal(err)
				}
				var out struct {
					Usage struct {
						PromptTokens     int `json:"prompt_tokens"`
						CompletionTokens int `json:"completion_tokens"`
					} `json:"usage"`
				}
				err = json.NewDecoder(resp.Body).Decode(&out)
				_ = resp.Body.Close()
				if err != nil || resp.StatusCode != 200 {
					t.Fatalf("request %d: %d %v", i, resp.StatusCode, err)
				}
				prompt += out.Usage.PromptTokens
				completion += out.Usage.CompletionTokens
			}
			snap, err := r.Snapshot(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			scraper := NewScraper(r.URL()+"/metrics", client, time.Second)
			if err := scraper.Probe(context.Background()); err != nil {
				t.Fatal(err)
			}
			scraper.scrapeOnce(context.Background(), time.Now())
			samples := scraper.Samples()
			if len(samples) != 1 {
				t.Fatalf("%d samples", len(samples))
			}
			got := samples[0]
			lag := r.StepLag()
			for _, c := range []struct {
				name      string
				got, want float64
			}{
				{"running", got.Running, float64(snap.Engine.Running)},
				{"waiting", got.Waiting, float64(snap.Engine.Waiting)},
				{"swapped", got.Swapped, float64(snap.Engine.Swapped)},
				{"kv usage", got.KVCacheUsage, snap.KVUsage},
				{"prefix hits", got.PrefixHits, float64(snap.Engine.PrefixHits)},
				{"prefix queries", got.PrefixQueries, float64(snap.Engine.PrefixQueries)},
				{"preemptions", got.Preemptions, float64(snap.Engine.Preemptions)},
				{"prompt tokens", got.PromptTokens, float64(prompt)},
				{"generation tokens", got.GenerationTokens, float64(completion)},
				{"step-lag steps", got.StepLag.Count, float64(lag.Tokens)},
				{"behind", got.StepLoopBehind, snap.Behind.Seconds()},
			} {
				if math.Abs(c.got-c.want) > 1e-9 {
					t.Errorf("%s: scraped %g, server says %g", c.name, c.got, c.want)
				}
			}
			if version == engine.V1 && got.PrefixHits == 0 {
				t.Error("no prefix-cache hits scraped although the prompts share a prefix")
			}
			if lag.Tokens == 0 {
				t.Error("the server recorded no steps")
			}
			sum := SummarizeServer(samples)
			if sum.EmulatorLag == nil || sum.EmulatorLag.Steps != float64(lag.Tokens) {
				t.Errorf("summary lag %+v, want %d steps", sum.EmulatorLag, lag.Tokens)
			}
		})
	}
}
